package ptd_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// fuzzSeeds are writer-made files covering both layouts and the options.
func fuzzSeeds(tb testing.TB) [][]byte {
	f32 := func(s ...int32) *writer.PTDLayout {
		return &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: s}
	}
	ps := []*writer.PTD{
		{},
		{Entries: []writer.PTDEntry{{Key: "blob", Data: []byte("opaque")}}},
		{Alignment: 128, HeaderLength: 56, Entries: []writer.PTDEntry{
			{Key: "a", Layout: f32(2, 2), Data: hostile.F32(3, 3, 3, 3)},
			{Key: "b", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarInt8, Sizes: []int32{3, 1}, DimOrder: []uint8{1, 0}}, Data: []byte{1, 2, 3}},
			{Key: "s", SegmentRef: 1},
		}},
		{RootVTablePad: 2, Entries: []writer.PTDEntry{{Key: "x", Layout: f32(1), Size: 16}}},
		{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32(3, 3), Data: hostile.F32(1, 2, 3, 4, 5, 6, 7, 8, 9)},
			{Key: "bias", Layout: f32(3), Data: hostile.F32(1, 2, 3)},
			{Key: "nd", Data: []byte("blob")},
		}},
		{Legacy: true, OmitEmptyVectors: true, Entries: []writer.PTDEntry{{Key: "t", Layout: f32(2)}}},
	}
	var out [][]byte
	for _, p := range ps {
		b, err := p.Bytes()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// exercise uses every accessor and view of an open file; it must not
// panic, and what it reads must be consistent.
func exercise(t *testing.T, f *ptd.File, size int64) {
	h := f.Header()
	if h.FlatBufferLen() > size || h.Length < ptd.MinHeaderLength {
		t.Fatalf("header %+v accepted for a %d-byte file", h, size)
	}
	_ = f.Legacy()
	_ = f.Name()
	_ = f.Version()
	_ = f.TensorAlignment()
	if f.MappedFile() == nil || f.Size() != size {
		t.Fatal("MappedFile/Size")
	}
	for i, s := range f.Segments() {
		if s.Offset() < int64(h.SegmentBaseOffset) || s.Offset()+s.Len() > size {
			t.Fatalf("segment %d [%d,+%d) outside the file", i, s.Offset(), s.Len())
		}
		if _, err := s.Bytes(); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	check := func(e ptd.NamedData) {
		b, err := e.Data.Bytes()
		if err != nil || int64(len(b)) != e.Data.Len() {
			t.Fatalf("%q: view %d bytes, %v", e.Key, len(b), err)
		}
		if e.Segment < 0 || e.Segment >= len(f.Segments()) {
			t.Fatalf("%q: segment %d of %d", e.Key, e.Segment, len(f.Segments()))
		}
		if e.Layout != nil && e.Layout.NBytes() > e.Data.Len() {
			t.Fatalf("%q: layout of %d bytes over %d", e.Key, e.Layout.NBytes(), e.Data.Len())
		}
		g, ok := f.Entry(e.Key)
		if !ok {
			t.Fatalf("Lookup(%q) failed for a listed key", e.Key)
		}
		if g.Key != e.Key {
			t.Fatalf("Lookup(%q) returned %q", e.Key, g.Key)
		}
	}
	for _, e := range f.Entries() {
		check(e)
	}
	for _, tt := range f.Tensors() {
		if tt.Data.Len() != tt.NBytes || tt.Offset != tt.Data.Offset() || !tt.DType.Valid() {
			t.Fatalf("tensor %q: %+v", tt.Name, tt)
		}
		if _, err := tt.Data.SHA256(); err != nil {
			t.Fatalf("tensor %q: %v", tt.Name, err)
		}
		if _, _, err := tt.Data.Uint8(); err != nil {
			t.Fatalf("tensor %q: %v", tt.Name, err)
		}
		e, ok := f.Entry(tt.Name)
		if !ok || e.Layout == nil {
			t.Fatalf("tensor %q not found by Lookup", tt.Name)
		}
		check(e)
	}
}

func FuzzOpen(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	gen, err := ptdcheck.Generated()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range gen {
		f.Add(s.Data)
	}
	// The real files, when they are there (testmodels.Files would skip the
	// whole target otherwise, losing the generated seeds).
	for _, b := range hostile.RealSeeds("ptd") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := ptd.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) || fe.Format != "ptd" {
				t.Fatalf("error %v is not a ptd *FormatError", err)
			}
			return
		}
		exercise(t, file, int64(len(b)))
		// Every accessor and view, through every read path (typed views,
		// checksums, copies).
		if err := ptdcheck.File(file); err != nil {
			t.Fatal(err)
		}
		// The copying reader must agree with the in-memory one.
		r, err := ptd.NewFile(mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))))
		if err != nil {
			t.Fatalf("NewBytes accepted, NewReaderAt rejected: %v", err)
		}
		exercise(t, r, int64(len(b)))
		if err := ptdcheck.File(r); err != nil {
			t.Fatalf("NewReaderAt: %v", err)
		}
		if len(r.Entries()) != len(file.Entries()) || len(r.Tensors()) != len(file.Tensors()) {
			t.Fatal("NewReaderAt and NewBytes disagree")
		}
		r.Close()
		if err := file.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
