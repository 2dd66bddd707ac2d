package ptn_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptn"
	"github.com/edgeload/edgeload/mmapfile"
)

// checkFile exercises every accessor and view of an open package.
func checkFile(f *ptn.File) error {
	for i := range f.NumTensors() {
		t := f.TensorAt(i)
		c := *t
		if el, _ := t.DType.Block(); el != 1 || t.DType == format.Complex64 {
			c.DType, c.Shape = format.Uint8, []int64{t.NBytes}
		}
		if err := hostile.FileTensor(&c, i); err != nil {
			return err
		}
		if k, ok := f.Lookup(t.Name); !ok || k != i {
			return fmt.Errorf("Lookup(%q) = %d, %v; want %d", t.Name, k, ok, i)
		}
		if o, alias := f.AliasOf(i); alias && !hostile.SameView(f.TensorAt(o).Data, t.Data) {
			return fmt.Errorf("alias %q does not share its owner's bytes", t.Name)
		}
	}
	for i, s := range f.Segments() {
		if err := hostile.Segment(fmt.Sprint("segment ", i), s); err != nil {
			return err
		}
	}
	// Group "" lists every tensor once; a method, each tensor it binds (its
	// constants and their quantization keys) once, and no other.
	for _, g := range append(f.Groups(), "") {
		o, err := f.UseOrder(g)
		if err != nil {
			return fmt.Errorf("UseOrder(%q): %v", g, err)
		}
		bound := make([]bool, f.NumTensors())
		if m, ok := f.Method(g); ok {
			for _, c := range m.Constants {
				bound[c.Tensor] = true
				for _, k := range c.QuantKeys {
					if i, ok := f.Lookup(k); ok {
						bound[i] = true
					}
				}
			}
		} else {
			for i := range bound {
				bound[i] = true
			}
		}
		seen := make([]bool, f.NumTensors())
		for _, i := range o {
			if i < 0 || i >= len(seen) || seen[i] || !bound[i] {
				return fmt.Errorf("UseOrder(%q) = %v: index %d out of range, listed twice or not bound by the group", g, o, i)
			}
			seen[i] = true
		}
		if !slices.Equal(seen, bound) {
			return fmt.Errorf("UseOrder(%q) = %v: want each tensor the group binds", g, o)
		}
	}
	for _, m := range f.Methods() {
		for _, c := range m.Constants {
			if c.Tensor < 0 || c.Tensor >= f.NumTensors() || f.TensorAt(c.Tensor).Name != c.DataKey {
				return fmt.Errorf("method %q constant %q: tensor %d", m.Name, c.DataKey, c.Tensor)
			}
		}
	}
	_ = f.ReportFields()
	return f.ReportText(io.Discard)
}

// checkErr accepts a ptn FormatError (ErrCompressed included).
func checkErr(err error) error {
	if errors.Is(err, ptn.ErrCompressed) {
		var fe *format.FormatError
		if errors.As(err, &fe) && fe.Format == "ptn" {
			return nil
		}
	}
	return hostile.CheckError("ptn", err)
}

func seeds(tb testing.TB) []hostile.Seed {
	tiny, err := os.ReadFile("testdata/tiny.ptn")
	if err != nil {
		tb.Fatal(err)
	}
	seeds := []hostile.Seed{
		{Name: "gen/package", Data: testPackage(tb, false)},
		{Name: "gen/package-raw", Data: testPackage(tb, true)},
		{Name: "testdata/tiny.ptn", Data: tiny},
	}
	// Packages ExecuTorch wrote: aliases.json and quantization keys.
	for _, name := range []string{"dedup", "quant"} {
		b, err := os.ReadFile("testdata/real/" + name + ".ptn")
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, hostile.Seed{Name: "testdata/real/" + name + ".ptn", Data: b})
	}
	return seeds
}

// FuzzOpen opens any bytes: a package that passes checkFile, or a ptn
// *FormatError.
func FuzzOpen(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s.Data)
	}
	for _, name := range []string{"mlp", "multi", "mutable", "aliases", "parts"} {
		if b, err := os.ReadFile("testdata/real/" + name + ".ptn"); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ptn.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			if err := checkErr(err); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := checkFile(p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSweep opens every truncation and every single-byte mutation of the
// generated packages: each opens and passes checkFile, or is refused with
// a ptn *FormatError, within the sweep's time and memory bounds.
func TestSweep(t *testing.T) {
	files := hostile.SweepFiles(t, "", seeds(t), func(b []byte) (int64, error) { return int64(len(b)), nil })
	hostile.Sweep(t, hostile.Target{Format: "ptn", Open: func(b []byte) (func() error, error) {
		p, err := ptn.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			if errors.Is(err, ptn.ErrCompressed) && checkErr(err) == nil {
				// a sweep target's errors must wrap a format sentinel;
				// ErrCompressed is this package's own
				return nil, &format.FormatError{Format: "ptn", Msg: err.Error(), Err: format.ErrUnsupportedVersion}
			}
			return nil, err
		}
		return func() error { return checkFile(p) }, nil
	}}, files...)
}
