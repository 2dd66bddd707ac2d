package pte_test

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// checkExpected compares a program with the independent reader's values.
func checkExpected(t *testing.T, p *pte.Program, exp testmodels.Expected) {
	t.Helper()
	if exp.Format != "pte" {
		t.Fatalf("expected format %q", exp.Format)
	}
	if p.FileSize() != exp.FileSize {
		t.Errorf("file size %d, want %d", p.FileSize(), exp.FileSize)
	}
	segs := p.Segments()
	if len(segs) != len(exp.Segments) {
		t.Fatalf("%d segments, want %d", len(segs), len(exp.Segments))
	}
	for i, es := range exp.Segments {
		if es.Index != i || segs[i].Offset() != es.Offset || segs[i].Len() != es.Size {
			t.Errorf("segment %d: [%d +%d), want index %d [%d +%d)", i, segs[i].Offset(), segs[i].Len(), es.Index, es.Offset, es.Size)
		}
	}
	nd := p.NamedData()
	if len(nd) != len(exp.NamedData) {
		t.Fatalf("%d named data, want %d", len(nd), len(exp.NamedData))
	}
	for i, en := range exp.NamedData {
		g := nd[i]
		if g.Key != en.Key || g.Segment != en.Segment || g.Data.Offset() != en.Offset || g.Data.Len() != en.Size {
			t.Errorf("named data %d: %q seg %d [%d +%d), want %+v", i, g.Key, g.Segment, g.Data.Offset(), g.Data.Len(), en)
		}
	}
	ts := p.Tensors()
	if len(ts) != len(exp.Tensors) {
		t.Fatalf("%d tensors, want %d", len(ts), len(exp.Tensors))
	}
	for i, et := range exp.Tensors {
		g := &ts[i]
		if g.Name != et.Name || g.NameExplicit != et.NameExplicit || g.DType.String() != et.DType ||
			g.Location.String() != et.Location || g.NBytes != et.NBytes || !equal(g.Shape, et.Shape) {
			t.Errorf("tensor %d: %q explicit=%v %s %v %s nbytes=%d, want %+v", i, g.Name, g.NameExplicit, g.DType, g.Shape, g.Location, g.NBytes, et)
		}
		if g.Shape == nil {
			t.Errorf("tensor %q: nil shape (want an empty, non-nil slice for JSON)", g.Name)
		}
		if et.Offset == nil {
			if g.Offset != -1 || g.Data.Len() != 0 || g.Resolved() {
				t.Errorf("tensor %q: offset %d data %d, want unresolved", g.Name, g.Offset, g.Data.Len())
			}
			continue
		}
		if g.Offset != *et.Offset || g.Data.Offset() != *et.Offset || g.Data.Len() != et.NBytes {
			t.Errorf("tensor %q: offset %d view [%d +%d), want %d +%d", g.Name, g.Offset, g.Data.Offset(), g.Data.Len(), *et.Offset, et.NBytes)
		}
		sum, err := g.Data.SHA256()
		if err != nil {
			t.Fatalf("tensor %q: sha256: %v", g.Name, err)
		}
		if hex.EncodeToString(sum[:]) != et.SHA256 {
			t.Errorf("tensor %q: sha256 %x, want %s", g.Name, sum, et.SHA256)
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRealFiles opens every real program file, in each way a program can
// be opened, and compares it with the expected values.
func TestRealFiles(t *testing.T) {
	for _, path := range testmodels.Files(t, "pte") {
		name := filepath.Base(path)
		exp := testmodels.Load(t, path)
		t.Run(name, func(t *testing.T) {
			if exp.ExitCode != 0 {
				_, err := mapOpen(t, path, nil)
				if err == nil {
					t.Fatalf("Open succeeded; the oracle says: %s", exp.Error)
				}
				return
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opens := map[string]func() (*pte.Program, error){
				"Open": func() (*pte.Program, error) { return mapOpen(t, path, nil) },
				"Windowed": func() (*pte.Program, error) {
					return mapOpen(t, path, []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeWindowed)})
				},
				"NewBytes": func() (*pte.Program, error) { return pte.NewFile(mmapfile.NewBytes(raw)) },
				"NewReaderAt": func() (*pte.Program, error) {
					return pte.NewFile(mmapfile.NewReaderAt(strings.NewReader(string(raw)), int64(len(raw))))
				},
			}
			for how, open := range opens {
				t.Run(how, func(t *testing.T) {
					p, err := open()
					if err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					checkExpected(t, p, exp)
				})
			}
		})
	}
}

// TestBundledProgramRejected: a bundled program (BP08) is not a program.
func TestBundledProgramRejected(t *testing.T) {
	path := testmodels.Path(t, "pte/bundled-program.bpte")
	_, err := mapOpen(t, path, nil)
	if !errors.Is(err, format.ErrUnknownFormat) {
		t.Fatalf("err = %v, want ErrUnknownFormat", err)
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) || fe.Offset != 4 {
		t.Fatalf("err = %#v, want a *FormatError at offset 4", err)
	}
	if !strings.Contains(err.Error(), `not an ExecuTorch program (identifier "BP08" at offset 4)`) {
		t.Errorf("error %q does not say what was seen", err)
	}
}
