package loader_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/readcount"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

func TestSniff(t *testing.T) {
	cases := []struct {
		head string
		want loader.Format
	}{
		{"\x1c\x00\x00\x00ET12eh00", "pte"},
		{"\x1c\x00\x00\x00ET13", "pte"}, // a version Open then rejects
		{"\x1c\x00\x00\x00FT01FH01", "ptd"},
		{"RTEN\x02\x00\x00\x00", "rten"},
		{"RTEN", "rten"},
		{"\x1c\x00\x00\x00BP08", "bpte"},
		{"\x1c\x00\x00\x00QQ08", loader.Unknown},
		{"\x10\x00\x00\x00\x00\x00\x00\x00", loader.Unknown}, // maybe RTen V1: Open tries
		{"\x1c\x00\x00\x00ET", loader.Unknown},               // too short to tell
		{"", loader.Unknown},
	}
	for _, c := range cases {
		if got := loader.Sniff([]byte(c.head)); got != c.want {
			t.Errorf("Sniff(%q) = %v, want %v", c.head, got, c.want)
		}
	}
	if loader.Unknown.String() != "unknown" || loader.Format("pte").String() != "pte" {
		t.Error("Format strings")
	}
}

// checkModel compares a model with the independent reader's values.
func checkModel(t *testing.T, m *loader.Model, exp testmodels.Expected) {
	t.Helper()
	if string(m.Format()) != exp.Format || m.Size() != exp.FileSize {
		t.Errorf("format %s size %d, want %s %d", m.Format(), m.Size(), exp.Format, exp.FileSize)
	}
	_, isPTE := loader.As[*pte.Program](m)
	_, isPTD := loader.As[*ptd.File](m)
	_, isRTen := loader.As[*rten.Model](m)
	if isPTE != (exp.Format == "pte") || isPTD != (exp.Format == "ptd") || isRTen != (exp.Format == "rten") {
		t.Errorf("loader.As: program %v, data file %v, rten %v for %s", isPTE, isPTD, isRTen, exp.Format)
	}
	if exp.Format == "ptd" && as[*ptd.File](m).Legacy() != exp.Legacy {
		t.Errorf("legacy %v, want %v", as[*ptd.File](m).Legacy(), exp.Legacy)
	}
	segs := m.Segments()
	if len(segs) != len(exp.Segments) {
		t.Fatalf("%d segments, want %d", len(segs), len(exp.Segments))
	}
	// A format may give its segments indices of their own (a TFLite
	// buffer's); expected/ lists them by index.
	index := func(i int) int { return i }
	if ix, ok := m.Impl().(format.SegmentIndexer); ok {
		index = ix.SegmentIndex
	}
	byIndex := map[int]segment.Segment{}
	for i, s := range segs {
		byIndex[index(i)] = s
	}
	for i, e := range exp.Segments {
		g, ok := byIndex[e.Index]
		if !ok || g.Offset() != e.Offset || g.Len() != e.Size {
			t.Errorf("segment %d (index %d): [%d +%d), want [%d +%d)", i, e.Index, g.Offset(), g.Len(), e.Offset, e.Size)
		}
	}
	nd := m.NamedData()
	if exp.Format == "tflite" && len(exp.NamedData) == 0 {
		// A TFLite model's associated files are the reader's choice to
		// list (JSON.md); expected/ lists none. Their test is tflite's.
		nd = nil
	}
	if len(nd) != len(exp.NamedData) {
		t.Fatalf("%d named data, want %d", len(nd), len(exp.NamedData))
	}
	for i, e := range exp.NamedData {
		if nd[i].Key != e.Key || nd[i].Segment != e.Segment || nd[i].Data.Offset() != e.Offset || nd[i].Data.Len() != e.Size {
			t.Errorf("named data %d: %q %d [%d +%d), want %+v", i, nd[i].Key, nd[i].Segment, nd[i].Data.Offset(), nd[i].Data.Len(), e)
		}
	}
	ts := m.Tensors()
	if len(ts) != len(exp.Tensors) {
		t.Fatalf("%d tensors, want %d", len(ts), len(exp.Tensors))
	}
	views, err := m.AppendTensorBytes(nil)
	if err != nil || len(views) != len(exp.Tensors) {
		t.Fatalf("AppendTensorBytes: %d views, %v; want %d", len(views), err, len(exp.Tensors))
	}
	for i, e := range exp.Tensors {
		g := &ts[i]
		if e.Offset == nil && views[i] != nil || e.Offset != nil && hex.EncodeToString(sha256Of(views[i])) != e.SHA256 {
			t.Errorf("AppendTensorBytes: tensor %d (%q): %d bytes, not its data", i, e.Name, len(views[i]))
		}
		shape := g.Shape
		if shape == nil {
			shape = []int64{}
		}
		if g.Name != e.Name || g.DType.String() != e.DType || !reflect.DeepEqual(shape, e.Shape) ||
			g.Location.String() != e.Location || g.NBytes != e.NBytes || g.NameExplicit != e.NameExplicit {
			t.Errorf("tensor %d: %q %s %v %s %d explicit=%v, want %+v", i, g.Name, g.DType, g.Shape, g.Location, g.NBytes, g.NameExplicit, e)
		}
		if e.Offset == nil {
			if g.Resolved() {
				t.Errorf("tensor %q resolved at %d, want unresolved", g.Name, g.Offset)
			}
			continue
		}
		if g.Offset != *e.Offset {
			t.Errorf("tensor %q offset %d, want %d", g.Name, g.Offset, *e.Offset)
		}
		sum, err := g.Data.SHA256()
		if err != nil || hex.EncodeToString(sum[:]) != e.SHA256 {
			t.Errorf("tensor %q sha256 %x (%v), want %s", g.Name, sum, err, e.SHA256)
		}
		// Lookup by name finds the first tensor of that name.
		if p, ok := m.Tensor(g.Name); !ok || p.Name != g.Name {
			t.Errorf("Tensor(%q) = %v, %v", g.Name, p, ok)
		} else if first := firstIndex(ts, g.Name); p != m.TensorAt(first) || !reflect.DeepEqual(*p, ts[first]) {
			t.Errorf("Tensor(%q) is not the first tensor of that name", g.Name)
		}
	}
	if _, ok := m.Tensor("no such tensor"); ok {
		t.Error("Tensor found a missing name")
	}
}

func sha256Of(b []byte) []byte {
	sum := sha256.Sum256(b)
	return sum[:]
}

func firstIndex(ts []format.Tensor, name string) int {
	for i := range ts {
		if ts[i].Name == name {
			return i
		}
	}
	return -1
}

// TestOpenReal opens every real file through Open, NewBytes and NewReaderAt
// and compares with the expected values.
func TestOpenReal(t *testing.T) {
	for _, path := range append(testmodels.All(t), testmodels.Refused(t)...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			exp := testmodels.Load(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opens := map[string]func() (*loader.Model, error){
				"Open":     func() (*loader.Model, error) { return loader.Open(path) },
				"NewBytes": func() (*loader.Model, error) { return loader.New(mmapfile.NewBytes(b)) },
				"NewReaderAt": func() (*loader.Model, error) {
					return loader.New(mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))))
				},
			}
			for how, open := range opens {
				m, err := open()
				if bundled(path) {
					// The reference rejects bundled programs; edgeload opens
					// the program inside (TestBundledProgramReal).
					if err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					m.Close()
					continue
				}
				if exp.ExitCode != 0 {
					if err == nil {
						m.Close()
						t.Fatalf("%s: opened a file the reference rejects (%s)", how, exp.Error)
					}
					var fe *loader.FormatError
					if !errors.As(err, &fe) || fe.Format != string(loader.Sniff(b)) {
						t.Errorf("%s: %v, want a FormatError of the format the file sniffs as", how, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				checkModel(t, m, exp)
				r, err := m.Verify()
				if err != nil {
					t.Errorf("%s: Verify: %v", how, err)
				}
				if r.Tensors != len(exp.Tensors) || r.Segments != len(exp.Segments) {
					t.Errorf("%s: Verify counted %+v", how, r)
				}
				if err := m.Close(); err != nil {
					t.Errorf("%s: Close: %v", how, err)
				}
				if err := m.Close(); err != nil {
					t.Errorf("%s: second Close: %v", how, err)
				}
				if _, err := m.Verify(); !errors.Is(err, loader.ErrClosed) {
					t.Errorf("%s: Verify after Close: %v, want ErrClosed", how, err)
				}
			}
		})
	}
}

// TestWithData resolves the external tensors of the real programs through
// their .ptd files: the offsets and bytes are those of the .ptd.
func TestWithData(t *testing.T) {
	for _, c := range []struct{ pte, ptd string }{
		{"pte/linear-external.pte", "ptd/linear-legacy-2025.ptd"},
		{"pte/addmul-external.pte", "ptd/addmul-external.ptd"},
	} {
		ptdPath := testmodels.Path(t, c.ptd)
		m, err := loader.Open(testmodels.Path(t, c.pte), loader.WithData(ptdPath))
		if err != nil {
			t.Fatalf("%s: %v", c.pte, err)
		}
		dexp := testmodels.Load(t, ptdPath)
		if len(m.Tensors()) == 0 || len(m.DataFiles()) != 1 {
			t.Fatalf("%s: %d tensors, %d data files", c.pte, len(m.Tensors()), len(m.DataFiles()))
		}
		for _, tn := range m.Tensors() {
			var want *testmodels.Tensor
			for i := range dexp.Tensors {
				if dexp.Tensors[i].Name == tn.Name {
					want = &dexp.Tensors[i]
				}
			}
			if want == nil {
				t.Fatalf("%s: %q not in %s's expected tensors", c.pte, tn.Name, c.ptd)
			}
			sum, err := tn.Data.SHA256()
			if !tn.Resolved() || tn.Offset != *want.Offset || tn.DataFile != ptdPath || err != nil || hex.EncodeToString(sum[:]) != want.SHA256 {
				t.Errorf("%s %q: offset %d file %q sha %x (%v), want %d %q %s", c.pte, tn.Name, tn.Offset, tn.DataFile, sum, err, *want.Offset, ptdPath, want.SHA256)
			}
		}
		if r, err := m.Verify(); err != nil || r.Unresolved != 0 {
			t.Errorf("%s: Verify %+v %v", c.pte, r, err)
		}
		m.Close()
	}
	// A data file without the program's keys fails the open.
	_, err := loader.Open(testmodels.Path(t, "pte/linear-external.pte"), loader.WithData(testmodels.Path(t, "ptd/addmul-external.ptd")))
	if !errors.Is(err, loader.ErrNotFound) {
		t.Errorf("mismatched data file: %v, want ErrNotFound", err)
	}
	// Data files apply to programs only.
	_, err = loader.Open(testmodels.Path(t, "rten/mnist-v2.rten"), loader.WithData(testmodels.Path(t, "ptd/addmul-external.ptd")))
	if err == nil {
		t.Error("WithData on an rten file: no error")
	}
	_, err = loader.Open(testmodels.Path(t, "pte/linear-external.pte"), loader.WithData(filepath.Join(t.TempDir(), "missing.ptd")))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing data file: %v", err)
	}
}

// TestWithDataFiles links a program to a .ptd the caller mapped (here a
// section of a larger file); the model takes the mapping and its Close
// closes it.
func TestWithDataFiles(t *testing.T) {
	dir := filepath.Join(testmodels.Root(), "testdata")
	ptdBytes, err := os.ReadFile(filepath.Join(dir, "tiny.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	outer := filepath.Join(t.TempDir(), "outer.bin")
	if err := os.WriteFile(outer, append(bytes.Repeat([]byte{0xAB}, 100), ptdBytes...), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := mmapfile.Open(outer, mmapfile.WithSection(100, int64(len(ptdBytes))))
	if err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(filepath.Join(dir, "tiny-external.pte"), loader.WithDataFiles(d))
	if err != nil {
		t.Fatal(err)
	}
	w, ok := m.Tensor("linear.weight")
	if !ok || !w.Resolved() || w.Data.File() != d {
		t.Fatalf("linear.weight not resolved into the caller's file: %+v", w)
	}
	m.Close()
	if _, err := d.View(0, 8); !errors.Is(err, mmapfile.ErrClosed) {
		t.Errorf("the data mapping after the model's Close: %v, want ErrClosed", err)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tiny, err := os.ReadFile(filepath.Join(testmodels.Root(), "testdata", "tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	et13 := bytes.Clone(tiny)
	copy(et13[4:8], "ET13")
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, loader.ErrUnknownFormat},
		{"short", []byte("abc"), loader.ErrUnknownFormat},
		{"text", []byte("this is a text file, not a model at all\n"), loader.ErrUnknownFormat},
		{"et13", et13, loader.ErrUnsupportedVersion},
		{"truncated", tiny[:len(tiny)/2], loader.ErrMalformed},
		{"rten-v3", []byte("RTEN\x03\x00\x00\x00" + string(make([]byte, 40))), loader.ErrUnsupportedVersion},
	}
	for _, c := range cases {
		p := write(c.name, c.data)
		m, err := loader.Open(p)
		if err == nil {
			m.Close()
			t.Errorf("%s: opened", c.name)
			continue
		}
		if !errors.Is(err, c.want) && !(c.want == loader.ErrMalformed && errors.Is(err, loader.ErrTruncated)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		var fe *loader.FormatError
		if c.want != loader.ErrUnknownFormat && !errors.As(err, &fe) {
			t.Errorf("%s: %T is not a *FormatError", c.name, err)
		}
	}
	if _, err := loader.Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := loader.Open(dir); err == nil {
		t.Error("opened a directory")
	}
}

// TestVerifyTruncatedUnderMapping truncates a file while it is mapped:
// Verify must report ErrTruncated, not die of SIGBUS.
func TestVerifyTruncatedUnderMapping(t *testing.T) {
	w := &writer.PTE{Methods: []writer.PTEMethod{{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{256, 1024}, Fill: func(p []byte, off int64) {
				for i := range p {
					p[i] = byte(off + int64(i))
				}
			}},
		},
	}}}
	path := filepath.Join(t.TempDir(), "big.pte")
	info, err := w.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWhole)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Verify(); err != nil {
		t.Fatalf("before truncation: %v", err)
	}
	if err := os.Truncate(path, info.ProgramSize); err != nil {
		t.Fatal(err)
	}
	_, err = m.Verify()
	if !errors.Is(err, loader.ErrTruncated) {
		t.Fatalf("Verify of a file truncated under the mapping: %v, want ErrTruncated", err)
	}
}

// TestVerifyCountsBytes: Verify reads each segment once and each tensor
// that is outside the segments (inline) once.
func TestVerifyCountsBytes(t *testing.T) {
	for name, want := range map[string]int64{
		"tiny.pte":     52 + 58 + 29, // the three segments
		"tiny-v2.rten": 24 + 12,      // the data section and the inline bias
		"tiny-v1.rten": 24 + 12,      // both inline
	} {
		m, err := loader.Open(filepath.Join(testmodels.Root(), "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Verify()
		m.Close()
		if err != nil || r.BytesRead != want {
			t.Errorf("%s: read %d bytes (%v), want %d", name, r.BytesRead, err, want)
		}
	}
}

// TestNewAllocs: New of a program in memory (one without tensors)
// allocates the mapping, the Model and the Program, nothing more.
func TestNewAllocs(t *testing.T) {
	data, err := os.ReadFile(testmodels.Path(t, "pte/stories260k-qnn.pte"))
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		m, err := loader.New(mmapfile.NewBytes(data))
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
	})
	if n != 3 {
		t.Errorf("New allocates %v times, want 3", n)
	}
}

// TestTensorAllocs proves that lookups by name allocate nothing.
func TestTensorAllocs(t *testing.T) {
	m, err := loader.Open(filepath.Join(testmodels.Root(), "testdata", "tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	name := string([]byte("linear.bias")) // not a constant the compiler could fold
	var found bool
	n := testing.AllocsPerRun(100, func() {
		_, found = m.Tensor(name)
		_ = m.Tensors()
		_ = m.Segments()
		_ = m.Format()
	})
	if n != 0 || !found {
		t.Errorf("Tensor: %v allocs per run (found %v), want 0", n, found)
	}
}

func BenchmarkTensor(b *testing.B) {
	m, err := loader.Open(filepath.Join(testmodels.Root(), "testdata", "tiny.pte"))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := m.Tensor("linear.bias"); !ok {
			b.Fatal("not found")
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(testmodels.Root(), "testdata", "tiny.pte")
	b.ReportAllocs()
	for b.Loop() {
		m, err := loader.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// TestWriterLayouts opens files the writer builds with the layouts the real
// files lack, through loader.Open, and checks the format-neutral lists.
func TestWriterLayouts(t *testing.T) {
	dir := t.TempDir()
	f32 := func(n int) []byte {
		b := make([]byte, 4*n)
		for i := range b {
			b[i] = byte(i)
		}
		return b
	}
	t.Run("pte mutable, inline delegate, 16 KiB segments, 24-byte header", func(t *testing.T) {
		w := &writer.PTE{SegmentAlignment: 16384, HeaderLength: 24, Methods: []writer.PTEMethod{{
			Name: "step",
			Tensors: []writer.PTETensor{
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "w", Data: f32(4)},
				{Kind: writer.PTEMutable, ScalarType: writer.PTEInt64, Sizes: []int32{2}, Name: "state", Data: make([]byte, 16)},
				{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{3}, Name: "ext"},
				{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4}},
			},
			Delegates: []writer.PTEDelegate{{ID: "Inline", Inline: true, Blob: writer.PTEBlob{Data: []byte("blob")}}},
		}}, NamedData: []writer.PTEBlob{{Key: "k", Data: []byte("named")}}}
		path := filepath.Join(dir, "mut.pte")
		info, err := w.WriteFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := loader.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		want := []struct {
			name string
			loc  format.Location
		}{{"w", format.LocSegment}, {"state", format.LocMutable}, {"ext", format.LocExternal}}
		if len(m.Tensors()) != len(want) {
			t.Fatalf("%d tensors", len(m.Tensors()))
		}
		for i, w := range want {
			if tn := m.Tensors()[i]; tn.Name != w.name || tn.Location != w.loc {
				t.Errorf("tensor %d: %s %s, want %s %s", i, tn.Name, tn.Location, w.name, w.loc)
			}
		}
		if len(m.Segments()) != len(info.Segments) || len(m.NamedData()) != 1 || m.NamedData()[0].Key != "k" {
			t.Errorf("%d segments (writer: %d), named data %+v", len(m.Segments()), len(info.Segments), m.NamedData())
		}
		for i, s := range m.Segments() {
			if s.Offset()%16384 != 0 || s.Offset() != info.Segments[i][0] {
				t.Errorf("segment %d at %d, writer placed it at %d (16 KiB alignment)", i, s.Offset(), info.Segments[i][0])
			}
		}
		if h := as[*pte.Program](m).Header(); h.Length != 24 || h.SegmentDataSizeKnown {
			t.Errorf("header %+v, want a 24-byte header without segment_data_size", h)
		}
		r, err := m.Verify()
		if err != nil || r.Unresolved != 1 || r.Named != 1 {
			t.Errorf("Verify: %+v %v", r, err)
		}
	})
	t.Run("rten subgraphs", func(t *testing.T) {
		branch := func(name string, v float32) *writer.RTenGraph {
			return &writer.RTenGraph{Nodes: []writer.RTenNode{
				{Name: name, Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{2}, Data: f32(2)}},
				{Constant: &writer.RTenConstant{DType: format.Int32, Shape: []uint32{1}, Inline: true, Data: []byte{1, 0, 0, 0}}},
			}, Outputs: []uint32{0}}
		}
		w := &writer.RTen{Graph: writer.RTenGraph{Nodes: []writer.RTenNode{
			{Name: "cond", Value: &writer.RTenValue{DType: format.Int32}},
			{Name: "if", Operator: &writer.RTenOperator{Type: uint8(rten.OpIf), Inputs: []int32{0}, Outputs: []int32{2}, Then: branch("then_w", 1), Else: branch("else_w", 2)}},
			{Name: "out", Value: &writer.RTenValue{}},
		}, Inputs: []uint32{0}, Outputs: []uint32{2}}}
		b, info, err := w.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		m, err := loader.New(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ts := m.Tensors()
		if len(ts) != 4 || len(info.Constants) != 4 {
			t.Fatalf("%d tensors (writer placed %d), want the 4 constants of both branches", len(ts), len(info.Constants))
		}
		names := map[string]bool{}
		for i, tn := range ts {
			if names[tn.Name] {
				t.Errorf("duplicate tensor name %q", tn.Name)
			}
			names[tn.Name] = true
			if tn.Offset != info.Constants[i].Offset {
				t.Errorf("tensor %q at %d, writer placed it at %d", tn.Name, tn.Offset, info.Constants[i].Offset)
			}
			if p, ok := m.Tensor(tn.Name); !ok || p.Offset != tn.Offset {
				t.Errorf("Tensor(%q) lookup failed", tn.Name)
			}
		}
		if !names["then_w"] || !names["else_w"] || ts[1].NameExplicit || ts[1].Name == "" {
			t.Errorf("names %v; unnamed constants need a made-up unique path", names)
		}
		if _, err := m.Verify(); err != nil {
			t.Error(err)
		}
	})
}

// Open reads the file's first page once: the format package takes the
// sniffer's bytes (WithHead) and reads only the rest of its region. A
// model whose metadata lies in the first page costs one read, a larger
// one two.
func TestOpenReads(t *testing.T) {
	big, err := (&writer.PTE{Methods: []writer.PTEMethod{writer.MixedMethod("forward", 300, 5)}, SegmentAlignment: 128}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"big.pte (region over a page)": big}
	for _, name := range []string{"tiny.pte", "tiny.ptd", "tiny-v2.rten", "tiny-v1.rten"} {
		b, err := os.ReadFile(filepath.Join(testmodels.Root(), "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	for name, b := range files {
		cr := &readcount.ReaderAt{R: bytes.NewReader(b)}
		m, err := loader.New(mmapfile.NewReaderAt(cr, int64(len(b))))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reads := cr.Reads
		want := 1
		if strings.HasPrefix(name, "big") {
			want = 2
		}
		if reads != want {
			t.Errorf("%s: Open made %d reads, want %d", name, reads, want)
		}
		// The same model as Open without the sniffer's bytes.
		want2, _ := loader.New(mmapfile.NewBytes(b))
		if got, exp := len(m.Tensors()), len(want2.Tensors()); got != exp || got == 0 {
			t.Errorf("%s: %d tensors, NewBytes %d", name, got, exp)
		}
		want2.Close()
		m.Close()
	}
}

// as is loader.As without its ok: the zero T when m holds none.
func as[T any](m *loader.Model) T {
	t, _ := loader.As[T](m)
	return t
}
