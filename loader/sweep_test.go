package loader_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestSweep runs the mutation sweep through loader.NewBytes, format
// sniffing included, over the committed fixtures of testdata/ (one file of
// each format and layout; the format packages sweep the real files): every
// truncation length and every single-byte mutation of the header and
// FlatBuffer region must give a Model whose program methods check (pte
// Program.VerifyMethods) and that passes loadercheck.Model (every
// accessor, every view, Verify) or an error wrapping a sentinel that names
// the format, within the sweep's time and allocation bounds.
func TestSweep(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testmodels.Root(), "testdata", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []hostile.Seed
	for _, p := range paths {
		if !testmodels.IsModel(p) {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, hostile.Seed{Name: "testdata/" + filepath.Base(p), Data: b})
	}
	if len(seeds) < 5 {
		t.Fatalf("%d fixtures in testdata/, want the 5 the writer generates", len(seeds))
	}
	files := hostile.SweepFiles(t, "", seeds, loadercheck.RegionEnd)
	hostile.Sweep(t, hostile.Target{Format: "", Open: func(b []byte) (func() error, error) {
		m, err := loader.New(mmapfile.NewBytes(b))
		if err != nil {
			return nil, err
		}
		if p := as[*pte.Program](m); p != nil {
			// A program's instructions are checked at each method's
			// first use: the file is accepted when they pass too.
			if err := p.VerifyMethods(); err != nil {
				m.Close()
				return nil, err
			}
		}
		return func() error {
			defer m.Close()
			return loadercheck.Model(m)
		}, nil
	}}, files...)
}

// TestVerifyConstantWithoutData: an RTen constant with neither inline data
// nor a data_offset loads (rten.NewFile warns: "constant ... has no data"), so
// Verify must accept it too, as it promises for every file Open accepted
// (found by TestSweep: one flipped union tag of tiny-v2.rten). The tensor
// has location none and no view; with no dtype declared, its dtype is
// invalid.
func TestVerifyConstantWithoutData(t *testing.T) {
	for _, noDType := range []bool{false, true} {
		b, _, err := (&writer.RTen{Graph: writer.RTenGraph{
			Nodes:   []writer.RTenNode{{Name: "w", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{2}, NoData: true, NoDType: noDType}}},
			Outputs: []uint32{0},
		}}).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		m, err := loader.New(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatalf("no dtype %v: %v", noDType, err)
		}
		if w := as[*rten.Model](m).Warnings(); len(w) == 0 {
			t.Errorf("no dtype %v: no warning for a constant without data", noDType)
		}
		if tn := m.Tensors(); len(tn) != 1 || tn[0].Location != format.LocNone {
			t.Fatalf("no dtype %v: tensors %+v", noDType, tn)
		}
		if _, err := m.Verify(); err != nil {
			t.Errorf("no dtype %v: Open accepted the model but Verify rejects it: %v", noDType, err)
		}
		m.Close()
	}
}
