package loader_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/bpfb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// bundled reports whether path is a bundled program, which the reference
// rejects and edgeload opens (TestBundledProgramReal).
func bundled(path string) bool { return strings.HasSuffix(path, ".bpte") }

// writeTemp writes b to a new file in a test directory.
func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every real model, stored in a zip at an odd offset, opens through the
// entry with the expected values (offsets relative to the entry); the
// deflated copy is refused with an error that says how to fix it.
func TestZipEntryReal(t *testing.T) {
	for _, path := range testmodels.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			archive, off, err := ziptest.Model(b)
			if err != nil {
				t.Fatal(err)
			}
			zp := writeTemp(t, "app.apk", archive)
			m, err := loader.Open(zp, loader.WithZipEntry(ziptest.Stored))
			if err != nil {
				t.Fatalf("stored entry at %d: %v", off, err)
			}
			defer m.Close()
			if m.Name() != zp+"!/"+ziptest.Stored {
				t.Errorf("Name = %q", m.Name())
			}
			if bundled(path) {
				checkBundled(t, m, b)
				bo, bn := as[*bundle.Program](m).Bundle.File().Section()
				if bo != off || bn != int64(len(b)) {
					t.Errorf("bundle section [%d +%d), want [%d +%d)", bo, bn, off, len(b))
				}
			} else {
				checkModel(t, m, testmodels.Load(t, path))
				if so, sn := m.File().Section(); so != off || sn != int64(len(b)) {
					t.Errorf("section [%d +%d), want [%d +%d)", so, sn, off, len(b))
				}
			}
			if _, err := m.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}

			_, err = loader.Open(zp, loader.WithZipEntry(ziptest.Deflated))
			if !errors.Is(err, loader.ErrCompressed) {
				t.Fatalf("deflated entry: %v, want ErrCompressed", err)
			}
			for _, s := range []string{"compressed", "zip -0", "noCompress", ziptest.Deflated} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("deflated entry: error %q does not say %q", err, s)
				}
			}
			if _, err := loader.Open(zp, loader.WithZipEntry("assets/none.pte")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing entry: %v, want fs.ErrNotExist", err)
			}
		})
	}
	if _, err := loader.Open(filepath.Join(t.TempDir(), "none.zip"), loader.WithZipEntry("x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing archive: %v", err)
	}
}

// A section whose model claims bytes past its end is rejected, although
// the file goes on (with a copy of those very bytes).
func TestSectionPastEnd(t *testing.T) {
	for _, path := range testmodels.All(t) {
		exp := testmodels.Load(t, path)
		var end int64
		for _, s := range exp.Segments {
			end = max(end, s.Offset+s.Size)
		}
		if end == 0 || bundled(path) {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			const prefix = 333
			outer := slices.Concat(bytes.Repeat([]byte{0xAB}, prefix), b, b)
			p := writeTemp(t, "outer.bin", outer)
			m, err := loader.Open(p, loader.WithSection(prefix, int64(len(b))))
			if err != nil {
				t.Fatalf("the whole model: %v", err)
			}
			checkModel(t, m, exp)
			m.Close()
			m, err = loader.Open(p, loader.WithSection(prefix, end-1))
			if err == nil {
				m.Close()
				t.Fatalf("a section ending 1 byte before the last segment's end (%d) opened", end)
			}
			if !errors.Is(err, loader.ErrTruncated) {
				t.Errorf("section too short: %v, want ErrTruncated", err)
			}
		})
	}
}

// OpenFile and NewSection open a model through a descriptor the caller
// owns, which stays open after Close.
func TestOpenFileAndNewSection(t *testing.T) {
	for _, path := range testmodels.All(t) {
		if bundled(path) {
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			exp := testmodels.Load(t, path)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			mf, err := mmapfile.NewFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := loader.New(mf)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, m, exp)
			if m.Name() != path {
				t.Errorf("Name = %q", m.Name())
			}
			m.Close()
			if _, err := f.Stat(); err != nil {
				t.Fatalf("the caller's file after Close: %v", err)
			}

			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			outer := slices.Concat([]byte("12345"), b, []byte("tail"))
			g, err := os.Open(writeTemp(t, "outer.bin", outer))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			mf, err = mmapfile.NewFile(g, mmapfile.WithSection(5, int64(len(b))))
			if err != nil {
				t.Fatal(err)
			}
			m, err = loader.New(mf)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, m, exp)
			m.Close()
		})
	}
}

// External weights in a zip entry resolve like a .ptd on disk, with the
// offsets of the entry.
func TestWithDataZipEntry(t *testing.T) {
	pteB, err := os.ReadFile(testmodels.Path(t, "pte/addmul-external.pte"))
	if err != nil {
		t.Fatal(err)
	}
	ptdPath := testmodels.Path(t, "ptd/addmul-external.ptd")
	ptdB, err := os.ReadFile(ptdPath)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := ziptest.Bytes(
		ziptest.Entry{Name: "p", Data: []byte("pad")},
		ziptest.Entry{Name: "model.pte", Data: pteB},
		ziptest.Entry{Name: "weights.ptd", Data: ptdB},
		ziptest.Entry{Name: "packed.ptd", Data: ptdB, Deflate: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	zp := writeTemp(t, "app.zip", archive)
	m, err := loader.Open(zp, loader.WithZipEntry("model.pte"), loader.WithDataFiles(mapData(t, zp, mmapfile.WithZipEntry("weights.ptd"))))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dexp := testmodels.Load(t, ptdPath)
	if len(m.Tensors()) == 0 {
		t.Fatal("no tensors")
	}
	for _, tn := range m.Tensors() {
		i := slices.IndexFunc(dexp.Tensors, func(e testmodels.Tensor) bool { return e.Name == tn.Name })
		if i < 0 {
			t.Fatalf("%q not in the expected tensors", tn.Name)
		}
		want := dexp.Tensors[i]
		sum, err := tn.Data.SHA256()
		if !tn.Resolved() || tn.Offset != *want.Offset || tn.DataFile != zp+"!/weights.ptd" || err != nil || hex.EncodeToString(sum[:]) != want.SHA256 {
			t.Errorf("%q: offset %d file %q sha %x (%v), want %d %s", tn.Name, tn.Offset, tn.DataFile, sum, err, *want.Offset, want.SHA256)
		}
	}
	if r, err := m.Verify(); err != nil || r.Unresolved != 0 {
		t.Errorf("Verify %+v %v", r, err)
	}
	_, err = mmapfile.Open(zp, mmapfile.WithZipEntry("packed.ptd"))
	if !errors.Is(err, loader.ErrCompressed) {
		t.Errorf("deflated data entry: %v, want ErrCompressed", err)
	}
	d, err := os.ReadFile(ptdPath)
	if err != nil {
		t.Fatal(err)
	}
	p := writeTemp(t, "outer.bin", slices.Concat([]byte("abc"), d))
	m2, err := loader.Open(zp, loader.WithZipEntry("model.pte"), loader.WithDataFiles(mapData(t, p, mmapfile.WithSection(3, int64(len(d))))))
	if err != nil {
		t.Fatalf("a data file in a section: %v", err)
	}
	m2.Close()
}

// checkBundled checks a model opened from the bundled program b against
// what a reader of the bundle's FlatBuffer finds (the generated bpfb code,
// without edgeload's verification) and against the embedded program
// opened from a copy of its bytes.
func checkBundled(t *testing.T, m *loader.Model, b []byte) {
	t.Helper()
	root := bpfb.GetRootAsBundledProgram(b, 0)
	prog := bytes.Clone(root.ProgramBytes())
	want, err := loader.New(mmapfile.NewBytes(prog))
	if err != nil {
		t.Fatalf("the embedded program, copied out: %v", err)
	}
	defer want.Close()

	bf := as[*bundle.Program](m).Bundle
	if bf == nil || m.Format() != "bpte" || as[*pte.Program](m) == nil || m.Size() != int64(len(prog)) {
		t.Fatalf("bundle %v format %s size %d, want a %d-byte program", bf != nil, m.Format(), m.Size(), len(prog))
	}
	if off, n := bf.ProgramSection(); n != int64(len(prog)) || !bytes.Equal(b[off:off+n], prog) {
		t.Fatalf("ProgramSection [%d +%d) is not the program vector", off, n)
	}
	if bf.Version() != root.Version() {
		t.Errorf("Version %d, want %d", bf.Version(), root.Version())
	}
	gt, wt := m.Tensors(), want.Tensors()
	if len(gt) != len(wt) {
		t.Fatalf("%d tensors, want %d", len(gt), len(wt))
	}
	for i := range wt {
		g, w := &gt[i], &wt[i]
		gs, gerr := g.Data.SHA256()
		ws, werr := w.Data.SHA256()
		if g.Name != w.Name || g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || g.Offset != w.Offset || g.NBytes != w.NBytes || gs != ws || gerr != nil || werr != nil {
			t.Errorf("tensor %d: %q %v %v at %d, want %q %v %v at %d", i, g.Name, g.DType, g.Shape, g.Offset, w.Name, w.DType, w.Shape, w.Offset)
		}
	}
	gs, ws := m.Segments(), want.Segments()
	if len(gs) != len(ws) {
		t.Fatalf("%d segments, want %d", len(gs), len(ws))
	}
	for i := range ws {
		if gs[i].Offset() != ws[i].Offset() || gs[i].Len() != ws[i].Len() {
			t.Errorf("segment %d: [%d +%d), want [%d +%d)", i, gs[i].Offset(), gs[i].Len(), ws[i].Offset(), ws[i].Len())
		}
	}

	suites := bf.TestSuites()
	if len(suites) != root.MethodTestSuitesLength() || len(suites) == 0 {
		t.Fatalf("%d test suites, want %d", len(suites), root.MethodTestSuitesLength())
	}
	var ns, nt int
	var suite bpfb.BundledMethodTestSuite
	var tc bpfb.BundledMethodTestCase
	var v bpfb.Value
	for i, s := range suites {
		root.MethodTestSuites(&suite, i)
		if s.Method != string(suite.MethodName()) || len(s.Cases) != suite.TestCasesLength() {
			t.Fatalf("suite %d: %q with %d cases, want %q with %d", i, s.Method, len(s.Cases), suite.MethodName(), suite.TestCasesLength())
		}
		for j, c := range s.Cases {
			suite.TestCases(&tc, j)
			lists := []struct {
				got []bundle.Value
				n   int
				get func(*bpfb.Value, int) bool
			}{{c.Inputs, tc.InputsLength(), tc.Inputs}, {c.ExpectedOutputs, tc.ExpectedOutputsLength(), tc.ExpectedOutputs}}
			for _, l := range lists {
				if len(l.got) != l.n {
					t.Fatalf("suite %d case %d: %d values, want %d", i, j, len(l.got), l.n)
				}
				for k, g := range l.got {
					l.get(&v, k)
					if int(v.ValType()) != int(g.Kind) {
						t.Fatalf("suite %d case %d value %d: kind %v, want %d", i, j, k, g.Kind, v.ValType())
					}
					if v.ValType() != bpfb.ValueUnionTensor {
						continue
					}
					var ut flatbuffers.Table
					var x bpfb.Tensor
					v.Val(&ut)
					x.Init(ut.Bytes, ut.Pos)
					data := x.DataBytes()
					sizes := make([]int64, x.SizesLength())
					for d := range sizes {
						sizes[d] = int64(x.Sizes(d))
					}
					got, err := g.Tensor.Data.Bytes()
					if err != nil || !bytes.Equal(got, data) || !reflect.DeepEqual(g.Tensor.Shape, sizes) || !scalarTypeIs(g.Tensor.DType, x.ScalarType()) {
						t.Errorf("suite %d case %d value %d: %v %d bytes, want %v %d bytes (%v)", i, j, k, g.Tensor.Shape, len(got), sizes, len(data), err)
					}
					nt++
				}
			}
			ns++
		}
	}
	r, err := m.Verify()
	if err != nil || r.TestTensors != nt {
		t.Errorf("Verify: %d test tensors (want %d), %v", r.TestTensors, nt, err)
	}
	t.Logf("%d test cases, %d test tensors", ns, nt)
}

// scalarTypeIs reports whether d is the ExecuTorch ScalarType st.
func scalarTypeIs(d format.DType, st int8) bool {
	got, ok := pte.ScalarTypeOf(d)
	return ok && got == st
}

// TestBundledProgramReal opens the real bundled program through Open,
// NewBytes and NewReaderAt and checks it against a reader of its bytes.
func TestBundledProgramReal(t *testing.T) {
	path := testmodels.Path(t, "pte/bundled-program.bpte")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if loader.Sniff(b) != "bpte" {
		t.Fatalf("Sniff = %v", loader.Sniff(b))
	}
	for how, open := range map[string]func() (*loader.Model, error){
		"Open":     func() (*loader.Model, error) { return loader.Open(path) },
		"NewBytes": func() (*loader.Model, error) { return loader.New(mmapfile.NewBytes(b)) },
		"NewReaderAt": func() (*loader.Model, error) {
			return loader.New(mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))))
		},
	} {
		t.Run(how, func(t *testing.T) {
			m, err := open()
			if err != nil {
				t.Fatal(err)
			}
			checkBundled(t, m, b)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The program sits inside the bundle: a model of the program alone
	// must not be able to read the bundle around it.
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.File().View(0, m.Size()+1); err == nil {
		t.Error("the program's file reads past the program")
	}
}

// A zip entry opens alike in every mapping mode and page size, and its
// pages can be released and counted.
func TestZipEntryModes(t *testing.T) {
	modes := map[string][]mmapfile.Option{
		"windowed":        {mmapfile.WithMode(mmapfile.ModeWindowed)},
		"windowed-ps64k":  {mmapfile.WithMode(mmapfile.ModeWindowed), mmapfile.WithPageSize(64 << 10)},
		"whole-ps16k":     {mmapfile.WithMode(mmapfile.ModeWhole), mmapfile.WithPageSize(16 << 10)},
		"copy":            {mmapfile.WithMode(mmapfile.ModeCopy)},
		"memory":          {mmapfile.WithMode(mmapfile.ModeMemory)},
		"auto-budget-one": {mmapfile.WithBudget(1)},
	}
	for _, path := range testmodels.All(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		archive, _, err := ziptest.Model(b)
		if err != nil {
			t.Fatal(err)
		}
		zp := writeTemp(t, "app.apk", archive)
		for name, opts := range modes {
			if len(opts) > 1 && platform.PageSize() > 16<<10 {
				continue // the injected page size must be a multiple of the OS's
			}
			t.Run(filepath.Base(path)+"/"+name, func(t *testing.T) {
				m, err := loader.Open(zp, loader.WithZipEntry(ziptest.Stored), loader.WithMmapOptions(opts...))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				if bundled(path) {
					checkBundled(t, m, b)
				} else {
					checkModel(t, m, testmodels.Load(t, path))
				}
				for _, s := range m.Segments() {
					if err := s.Prefetch(); err != nil {
						t.Errorf("Prefetch: %v", err)
					}
					if err := s.Release(); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
				if r, tot, err := m.Resident(); err != nil || r > tot {
					t.Errorf("Resident = %d/%d, %v", r, tot, err)
				}
				if _, err := m.Verify(); err != nil {
					t.Errorf("Verify after Release: %v", err)
				}
			})
		}
	}
}

// mapData maps a data file for WithDataFiles.
func mapData(t *testing.T, path string, opts ...mmapfile.Option) *mmapfile.File {
	t.Helper()
	mf, err := mmapfile.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}
