package pte_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// realSeeds returns the real files in ../shared/models/<sub>, or nothing
// when the folder is absent (fuzz seeds are best effort; the conformance
// tests report absence). Large programs are shrunk by the callers rather
// than dropped (hostile.MaxFuzzSeed).
func realSeeds(sub string) [][]byte {
	var out [][]byte
	for _, s := range hostile.Real(sub) {
		out = append(out, s.Data)
	}
	return out
}

// genSeeds are writer-generated programs covering what the real files
// lack: ptecheck.Generated's, and two it does not make: richProgram (its
// own mix of tensors, values, delegates and methods) and a program whose
// only tensor is mutable (an empty constant segment before the mutable
// one).
func genSeeds(tb testing.TB) []hostile.Seed {
	out, err := ptecheck.Generated()
	if err != nil {
		tb.Fatal(err)
	}
	for _, w := range []struct {
		name string
		w    *writer.PTE
	}{
		{"rich-program.pte", richProgram()},
		{"mutable-only.pte", &writer.PTE{SegmentAlignment: 16, TensorAlignment: 4, Methods: []writer.PTEMethod{{Name: "m", Tensors: []writer.PTETensor{
			{Kind: writer.PTEMutable, ScalarType: writer.PTEInt32, Sizes: []int32{1}, Data: []byte{1, 0, 0, 0}}}}}}},
	} {
		out = append(out, hostile.Seed{Name: w.name, Data: genBytes(tb, w.w)})
	}
	return out
}

// exercise calls every accessor of an opened program and checks the
// invariants a successful Open promises.
func exercise(t *testing.T, p *pte.Program, size int64) {
	h := p.Header()
	if h.ProgramSize <= 0 || h.ProgramSize > size || p.FileSize() != size {
		t.Fatalf("header %+v for a %d-byte file", h, size)
	}
	if b, err := p.ProgramData().Bytes(); err != nil || int64(len(b)) != h.ProgramSize {
		t.Fatalf("program data: %d bytes, %v", len(b), err)
	}
	for i, s := range p.Segments() {
		if s.Offset() < 0 || s.Offset()+s.Len() > size {
			t.Fatalf("segment %d %v outside the file", i, s)
		}
		if _, err := s.Bytes(); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	for _, m := range p.Methods() {
		if mm, ok := p.Method(m.Name); !ok || mm.Name != m.Name {
			t.Fatalf("Method(%q) not found", m.Name)
		}
		vals, err := m.Values()
		if err != nil {
			// Values that fail the checks Open leaves must fail the
			// method's check too.
			var fe *format.FormatError
			if !errors.As(err, &fe) || p.VerifyMethods() == nil {
				t.Fatalf("Values of %q: %v", m.Name, err)
			}
			continue
		}
		for v := range vals {
			val := &vals[v]
			tt, ok := p.ValueTensor(m.Name, v)
			if ok != (val.Tensor != nil && val.Tensor.Tensor >= 0) {
				t.Fatalf("TensorAt(%q, %d) = %v, value %+v", m.Name, v, ok, val)
			}
			if ok && (tt.Method != m.Name || tt.Value != v) {
				t.Fatalf("TensorAt(%q, %d) returned %s/%d", m.Name, v, tt.Method, tt.Value)
			}
			for _, it := range val.Items {
				if int(it) >= len(vals) || it < -1 {
					t.Fatalf("list item %d out of range", it)
				}
			}
		}
		for _, x := range append(append([]int32(nil), m.Inputs...), m.Outputs...) {
			if x < 0 || int(x) >= len(vals) {
				t.Fatalf("input/output %d out of range", x)
			}
		}
		for _, d := range m.Delegates {
			if d < 0 || d >= len(p.Delegates()) {
				t.Fatalf("delegate index %d out of range", d)
			}
		}
	}
	if err := pte.ListMatchesAccessors(p); err != nil {
		t.Fatal(err)
	}
	if err := appendMatchesTensorData(p); err != nil {
		t.Fatal(err)
	}
	for i := range p.Tensors() {
		tt := &p.Tensors()[i]
		if g, ok := p.Tensor(tt.Name); !ok || g.Name != tt.Name {
			t.Fatalf("Tensor(%q) not found", tt.Name)
		}
		if !tt.DType.Valid() || tt.NBytes < 0 || tt.Shape == nil {
			t.Fatalf("tensor %q: %s nbytes %d shape %v", tt.Name, tt.DType, tt.NBytes, tt.Shape)
		}
		if tt.Location == format.LocExternal && !tt.Resolved() {
			if tt.Data.Len() != 0 {
				t.Fatalf("unresolved tensor %q has data", tt.Name)
			}
			continue
		}
		if tt.Offset < 0 || tt.Offset+tt.NBytes > size || tt.Data.Len() != tt.NBytes || tt.Data.Offset() != tt.Offset {
			t.Fatalf("tensor %q: offset %d nbytes %d view %v in a %d-byte file", tt.Name, tt.Offset, tt.NBytes, tt.Data, size)
		}
		if _, err := tt.Data.SHA256(); err != nil {
			t.Fatalf("tensor %q: %v", tt.Name, err)
		}
	}
	for _, nd := range p.NamedData() {
		e, ok := p.NamedDataByKey(nd.Key)
		if !ok || e.Key != nd.Key || nd.Segment < 0 || nd.Segment >= len(p.Segments()) {
			t.Fatalf("named data %q: %+v %v", nd.Key, e, ok)
		}
	}
	for _, d := range p.Delegates() {
		if _, err := d.Data.Bytes(); err != nil {
			t.Fatalf("delegate %s: %v", d.ID, err)
		}
		if d.Location == pte.DelegateSegment && (d.SegmentIndex < 0 || d.SegmentIndex >= len(p.Segments())) {
			t.Fatalf("delegate %s: segment %d", d.ID, d.SegmentIndex)
		}
	}
	p.External()
}

// shrinkSeed returns a copy of a large real program with its segments cut
// to at most 64 bytes each (sizes patched in the FlatBuffer and the
// header), so that the fuzzer mutates the program's tables rather than
// megabytes of weights; nil when that cannot be done.
func shrinkSeed(b []byte) []byte {
	p, err := pte.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return nil
	}
	defer p.Close()
	h := p.Header()
	if !h.Extended || h.SegmentBase == 0 {
		return nil
	}
	out := bytes.Clone(b[:h.ProgramSize])
	var end int64
	for _, s := range p.Segments() {
		n := min(s.Len(), 64)
		if s.Len() > 64 {
			var old, repl [8]byte
			binary.LittleEndian.PutUint64(old[:], uint64(s.Len()))
			binary.LittleEndian.PutUint64(repl[:], uint64(n))
			i := bytes.Index(out[40:], old[:])
			if i < 0 {
				return nil
			}
			copy(out[40+i:], repl[:])
		}
		end = max(end, s.Offset()-h.SegmentBase+n)
	}
	if h.SegmentDataSizeKnown {
		binary.LittleEndian.PutUint64(out[32:], uint64(end))
	}
	out = append(out, make([]byte, h.SegmentBase-h.ProgramSize)...)
	out = append(out, b[h.SegmentBase:h.SegmentBase+end]...)
	q, err := pte.NewFile(mmapfile.NewBytes(out))
	if err != nil {
		return nil
	}
	defer q.Close()
	if len(q.Methods()) != len(p.Methods()) {
		return nil
	}
	return out
}

func FuzzOpen(f *testing.F) {
	for _, b := range realSeeds("pte") {
		if len(b) > hostile.MaxFuzzSeed {
			// Megabytes of segment data make every mutation and
			// minimisation slow: fuzz a shrunk copy instead.
			if b = shrinkSeed(b); b == nil {
				continue
			}
		}
		f.Add(b)
	}
	for _, s := range genSeeds(f) {
		f.Add(s.Data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := pte.NewFile(mmapfile.NewBytes(b), pte.WithName("fuzz.pte"))
		if cerr := pte.CheckVerified(b, p, err); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *format.FormatError", err, err)
			}
			if fe.Format != "pte" {
				t.Fatalf("error %v has format %q", err, fe.Format)
			}
			return
		}
		defer p.Close()
		exercise(t, p, int64(len(b)))
		if err := checkUseOrder(p); err != nil {
			t.Fatal(err)
		}
		// Every accessor and view through every read path (typed views,
		// checksums, copies, Touch).
		if err := ptecheck.Program(p); err != nil {
			t.Fatal(err)
		}
		// The same bytes through the ReaderAt form (its program region
		// read into a pooled buffer that earlier inputs used: loader/internal/region)
		// must agree.
		q, err := pte.NewFile(mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))))
		if err != nil {
			t.Fatalf("NewBytes accepted what NewReaderAt refused: %v", err)
		}
		defer q.Close()
		if !slices.Equal(summary(q), summary(p)) || len(q.Segments()) != len(p.Segments()) {
			t.Fatal("NewReaderAt and NewBytes disagree")
		}
	})
}

func FuzzLink(f *testing.F) {
	progs := realSeeds("pte")
	datas := realSeeds("ptd")
	for _, p := range progs {
		if len(p) > hostile.MaxFuzzSeed {
			if p = shrinkSeed(p); p == nil {
				continue
			}
		}
		for _, d := range datas {
			f.Add(p, d)
		}
	}
	gp := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "w"},
		{Kind: writer.PTEExternal, ScalarType: writer.PTEInt8, Sizes: []int32{3}, Name: "v", DimOrder: []uint8{0}},
	}}}}
	gd := &writer.PTD{Entries: []writer.PTDEntry{
		{Key: "w", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2}}, Data: hostile.F32(1, 2)},
		{Key: "v", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarInt8, Sizes: []int32{3}}, Data: []byte{1, 2, 3}},
	}}
	pb, err := gp.Bytes()
	if err != nil {
		f.Fatal(err)
	}
	db, err := gd.Bytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pb, db)
	f.Fuzz(func(t *testing.T, pbytes, dbytes []byte) {
		p, err := pte.NewFile(mmapfile.NewBytes(pbytes))
		if err != nil {
			return
		}
		defer p.Close()
		d, err := ptd.NewFile(mmapfile.NewBytes(dbytes))
		if err != nil {
			return
		}
		defer d.Close()
		before := make([]int64, len(p.Tensors()))
		for i := range p.Tensors() {
			before[i] = p.Tensors()[i].Offset
		}
		err = p.Link(d)
		for i := range p.Tensors() {
			tt := &p.Tensors()[i]
			if err != nil {
				if tt.Offset != before[i] {
					t.Fatalf("failed Link changed tensor %q", tt.Name)
				}
				continue
			}
			if tt.Location != format.LocExternal {
				continue
			}
			nd, ok := d.Entry(tt.Name)
			if !ok || !tt.Resolved() || tt.Data.Len() != tt.NBytes || tt.Data.Offset() != nd.Data.Offset() || tt.DataFile != d.Name() {
				t.Fatalf("linked tensor %q: %+v", tt.Name, tt)
			}
			if nd.Layout == nil || nd.Layout.DType != tt.DType {
				t.Fatalf("linked tensor %q to a mismatching entry", tt.Name)
			}
			if _, err := tt.Data.SHA256(); err != nil {
				t.Fatal(err)
			}
		}
		// A linked program still passes every accessor and view (linked
		// tensors now view the .ptd).
		if perr := ptecheck.Program(p); perr != nil {
			t.Fatalf("after Link (Link error: %v): %v", err, perr)
		}
		if err != nil && !errors.Is(err, format.ErrNotFound) && !errors.Is(err, pte.ErrMismatch) {
			t.Fatalf("Link error %v wraps neither ErrNotFound nor ErrMismatch", err)
		}
	})
}
