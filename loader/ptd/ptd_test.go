package ptd_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

func f32layout(sizes ...int32) *writer.PTDLayout {
	return &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: sizes}
}

// build writes p in memory, failing the test on a writer error.
func build(t testing.TB, p *writer.PTD) []byte {
	t.Helper()
	b, err := p.Bytes()
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	return b
}

func mustOpenBytes(t testing.TB, b []byte) *ptd.File {
	t.Helper()
	f, err := ptd.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatalf("NewBytes: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// wantFormatError checks that err is a *format.FormatError of format "ptd"
// wrapping sentinel, whose Field contains field and whose message contains
// every string in msgs. It returns the error.
func wantFormatError(t testing.TB, err error, sentinel error, field string, msgs ...string) *format.FormatError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %v at field %q", sentinel, field)
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *format.FormatError", err, err)
	}
	if fe.Format != "ptd" {
		t.Errorf("error %v: Format %q, want ptd", err, fe.Format)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %v does not wrap %v", err, sentinel)
	}
	if !strings.Contains(fe.Field, field) {
		t.Errorf("error %v: Field %q does not contain %q", err, fe.Field, field)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	return fe
}

func sha(t testing.TB, s segment.Segment) string {
	t.Helper()
	h, err := s.SHA256()
	if err != nil {
		t.Fatalf("SHA256 of %v: %v", s, err)
	}
	return hex.EncodeToString(h[:])
}

// checkExpected compares an open file with the independent reader's values.
func checkExpected(t *testing.T, f *ptd.File, exp testmodels.Expected) {
	t.Helper()
	if exp.Format != "ptd" {
		t.Fatalf("expected format %q", exp.Format)
	}
	if f.Size() != exp.FileSize {
		t.Errorf("Size %d, want %d", f.Size(), exp.FileSize)
	}
	if f.Legacy() != exp.Legacy {
		t.Errorf("Legacy %v, want %v", f.Legacy(), exp.Legacy)
	}
	segs := f.Segments()
	if len(segs) != len(exp.Segments) {
		t.Fatalf("%d segments, want %d", len(segs), len(exp.Segments))
	}
	for _, es := range exp.Segments {
		s := segs[es.Index]
		if s.Offset() != es.Offset || s.Len() != es.Size {
			t.Errorf("segment %d: [%d,+%d), want [%d,+%d)", es.Index, s.Offset(), s.Len(), es.Offset, es.Size)
		}
	}
	nd := f.Entries()
	if len(nd) != len(exp.NamedData) {
		t.Fatalf("%d named data, want %d", len(nd), len(exp.NamedData))
	}
	for i, en := range exp.NamedData {
		n := nd[i]
		if n.Key != en.Key || n.Segment != en.Segment || n.Data.Offset() != en.Offset || n.Data.Len() != en.Size {
			t.Errorf("named_data[%d]: %q seg %d [%d,+%d), want %+v", i, n.Key, n.Segment, n.Data.Offset(), n.Data.Len(), en)
		}
	}
	ts := f.Tensors()
	if len(ts) != len(exp.Tensors) {
		t.Fatalf("%d tensors, want %d", len(ts), len(exp.Tensors))
	}
	for i, et := range exp.Tensors {
		tt := ts[i]
		if tt.Name != et.Name || tt.DType.String() != et.DType || !slices.Equal(tt.Shape, et.Shape) ||
			tt.Location.String() != et.Location || tt.NBytes != et.NBytes || tt.NameExplicit != et.NameExplicit {
			t.Errorf("tensor %d: %q %v %v %v nbytes %d explicit %v, want %+v", i, tt.Name, tt.DType, tt.Shape, tt.Location, tt.NBytes, tt.NameExplicit, et)
		}
		if et.Offset == nil || tt.Offset != *et.Offset {
			t.Errorf("tensor %q: offset %d, want %v", tt.Name, tt.Offset, et.Offset)
		}
		if tt.Data.Offset() != tt.Offset || tt.Data.Len() != tt.NBytes {
			t.Errorf("tensor %q: Data [%d,+%d) disagrees with Offset %d NBytes %d", tt.Name, tt.Data.Offset(), tt.Data.Len(), tt.Offset, tt.NBytes)
		}
		if got := sha(t, tt.Data); got != et.SHA256 {
			t.Errorf("tensor %q: sha256 %s, want %s", tt.Name, got, et.SHA256)
		}
		// Every tensor is found by name, with the same bytes.
		e, ok := f.Entry(tt.Name)
		if !ok || e.Layout == nil || e.Data != tt.Data || e.Layout.DType != tt.DType {
			t.Errorf("Lookup(%q) = %+v, %v; want the tensor's entry", tt.Name, e, ok)
		}
	}
}

func TestRealFiles(t *testing.T) {
	for _, path := range testmodels.Files(t, "ptd") {
		exp := testmodels.Load(t, path)
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The three ways in must agree with the expected values.
			f, err := mapOpen(t, path, nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer f.Close()
			if f.Name() != path {
				t.Errorf("Name %q, want %q", f.Name(), path)
			}
			checkExpected(t, f, exp)

			fb, err := ptd.NewFile(mmapfile.NewBytes(raw), ptd.WithName("mem"))
			if err != nil {
				t.Fatalf("NewBytes: %v", err)
			}
			defer fb.Close()
			if fb.Name() != "mem" {
				t.Errorf("Name %q, want mem", fb.Name())
			}
			checkExpected(t, fb, exp)

			fr, err := ptd.NewFile(mmapfile.NewReaderAt(bytes.NewReader(raw), int64(len(raw))))
			if err != nil {
				t.Fatalf("NewReaderAt: %v", err)
			}
			defer fr.Close()
			checkExpected(t, fr, exp)

			// The header as FORMATS.md §2 says.
			h := f.Header()
			if h.Length < ptd.MinHeaderLength || h.FlatBufferOffset != 48 ||
				int64(h.SegmentBaseOffset+h.SegmentDataSize) != f.Size() ||
				h.FlatBufferLen() > int64(h.SegmentBaseOffset) {
				t.Errorf("header %+v inconsistent with a %d-byte file", h, f.Size())
			}
		})
	}
}

// TestAddmulValues reads the real addmul-external.ptd through float32 views.
func TestAddmulValues(t *testing.T) {
	f, err := mapOpen(t, testmodels.Path(t, "ptd/addmul-external.ptd"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for key, want := range map[string]float32{"a": 3, "b": 2} {
		e, ok := f.Entry(key)
		if !ok {
			t.Fatalf("Lookup(%q) failed", key)
		}
		if e.Layout == nil || e.Layout.DType != format.Float32 || !slices.Equal(e.Layout.Sizes, []int64{2, 2}) ||
			!slices.Equal(e.Layout.DimOrder, []uint8{0, 1}) {
			t.Errorf("%q: layout %+v, want float32 [2 2] dim order [0 1]", key, e.Layout)
		}
		v, copied, err := e.Data.Float32()
		if err != nil || copied {
			t.Fatalf("%q: Float32: copied %v, %v", key, copied, err)
		}
		w, _, err := segment.As[float32](e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v, []float32{want, want, want, want}) || !slices.Equal(w, v) {
			t.Errorf("%q = %v / %v, want 4×%v", key, v, w, want)
		}
	}
	if _, ok := f.Entry("c"); ok {
		t.Error("Lookup(c) found a key the file does not have")
	}
}

// TestLegacyReal checks the 2025-layout file beyond the expected JSON.
func TestLegacyReal(t *testing.T) {
	f, err := mapOpen(t, testmodels.Path(t, "ptd/linear-legacy-2025.ptd"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.Legacy() || f.TensorAlignment() != 16 || f.Version() != 0 {
		t.Errorf("Legacy %v, TensorAlignment %d, Version %d; want true, 16, 0", f.Legacy(), f.TensorAlignment(), f.Version())
	}
	if len(f.Entries()) != 0 {
		t.Errorf("NamedData() = %d entries, want none (the file's named_data list is absent)", len(f.Entries()))
	}
	b, ok := f.Entry("linear.bias")
	if !ok || b.Layout == nil || !slices.Equal(b.Layout.Sizes, []int64{3}) || b.Segment != 0 {
		t.Fatalf("Lookup(linear.bias) = %+v, %v", b, ok)
	}
	// The bias sits at offset 48 inside segment 0: a sub-range of it.
	seg := f.Segments()[0]
	if b.Data.Offset() != seg.Offset()+48 || b.Data.Len() != 12 {
		t.Errorf("bias data [%d,+%d), want [%d,+12)", b.Data.Offset(), b.Data.Len(), seg.Offset()+48)
	}
	v, _, err := b.Data.Float32()
	if err != nil || len(v) != 3 || v[0] < 0.25 || v[0] > 0.26 {
		t.Errorf("bias = %v, %v; want [0.2543... ...]", v, err)
	}
}

// TestGenerated covers writer-made files: opaque blobs, tensors, alignments
// and header lengths.
func TestGenerated(t *testing.T) {
	blob := []byte("opaque backend blob \x00\x01\x02")
	for _, align := range []int64{16, 128, 16384} {
		for _, hlen := range []uint32{40, 48, 56, 100} {
			p := &writer.PTD{
				Alignment:    align,
				HeaderLength: hlen,
				Entries: []writer.PTDEntry{
					{Key: "blob", Data: blob},
					{Key: "w", Layout: f32layout(2, 3), Data: hostile.F32(1, 2, 3, 4, 5, 6)},
					{Key: "empty", Data: []byte{}},
					{Key: "i64", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarInt64, Sizes: []int32{2}, DimOrder: []uint8{0}},
						Fill: func(p []byte, off int64) {
							for i := range p {
								p[i] = byte(int64(i) + off)
							}
						}},
					{Key: "shared", SegmentRef: 1},               // the blob's segment under a second key
					{Key: "big", Layout: f32layout(1), Size: 64}, // segment larger than its layout
				},
			}
			raw := build(t, p)
			f := mustOpenBytes(t, raw)
			info, _ := p.Plan()
			h := f.Header()
			if h.Length != hlen || h.FlatBufferOffset != info.FlatBufferOffset || h.SegmentBaseOffset != info.SegmentBaseOffset {
				t.Errorf("align %d hlen %d: header %+v, writer laid out %+v", align, hlen, h, info)
			}
			if f.Legacy() {
				t.Errorf("align %d hlen %d: current file detected as legacy", align, hlen)
			}
			segs := f.Segments()
			if len(segs) != 5 {
				t.Fatalf("align %d: %d segments, want 5", align, len(segs))
			}
			for i, s := range segs {
				if (s.Offset()-int64(h.SegmentBaseOffset))%align != 0 || s.Offset()%align != 0 {
					t.Errorf("align %d: segment %d at %d is not aligned", align, i, s.Offset())
				}
				if s.Offset() != info.Segments[i][0] || s.Len() != info.Segments[i][1] {
					t.Errorf("align %d: segment %d [%d,+%d), writer put it at %v", align, i, s.Offset(), s.Len(), info.Segments[i])
				}
			}
			// Opaque blob: whole segment, no layout, bytes as written.
			e, ok := f.Entry("blob")
			got, _ := e.Data.Bytes()
			if !ok || e.Layout != nil || !bytes.Equal(got, blob) {
				t.Errorf("blob: %v %+v %q", ok, e.Layout, got)
			}
			sh, ok := f.Entry("shared")
			if !ok || sh.Data != e.Data || sh.Segment != e.Segment {
				t.Errorf("shared: %+v, want the blob's segment %+v", sh, e)
			}
			w, ok := f.Entry("w")
			v, _, _ := w.Data.Float32()
			if !ok || w.Layout == nil || !slices.Equal(w.Layout.Sizes, []int64{2, 3}) || !slices.Equal(v, []float32{1, 2, 3, 4, 5, 6}) {
				t.Errorf("w: %+v %v", w.Layout, v)
			}
			i64, _ := f.Entry("i64")
			ib, _ := i64.Data.Bytes()
			if len(ib) != 16 || ib[0] != 0 || ib[15] != 15 {
				t.Errorf("i64 bytes %v, want 0..15 from the Fill func", ib)
			}
			if em, ok := f.Entry("empty"); !ok || em.Data.Len() != 0 {
				t.Errorf("empty: %v %+v", ok, em)
			}
			// A segment larger than its layout: the named data is the whole
			// segment, the tensor only numel × elemsize of it.
			bg, _ := f.Entry("big")
			if bg.Data.Len() != 64 {
				t.Errorf("big: named data %d bytes, want the whole 64-byte segment", bg.Data.Len())
			}
			var names []string
			for _, tt := range f.Tensors() {
				names = append(names, tt.Name)
				if tt.Name == "big" && (tt.NBytes != 4 || tt.Data.Len() != 4 || tt.Offset != bg.Data.Offset()) {
					t.Errorf("big tensor: %+v", tt)
				}
			}
			if !slices.Equal(names, []string{"w", "i64", "big"}) {
				t.Errorf("tensors %v, want the three entries with a layout", names)
			}
			if nd := f.Entries(); len(nd) != 6 || nd[0].Key != "blob" || nd[5].Key != "big" {
				t.Errorf("NamedData() has %d entries", len(nd))
			}
		}
	}
}

func TestEmptyFile(t *testing.T) {
	for _, omit := range []bool{false, true} {
		f := mustOpenBytes(t, build(t, &writer.PTD{OmitEmptyVectors: omit}))
		if f.Legacy() || len(f.Segments()) != 0 || len(f.Entries()) != 0 || len(f.Tensors()) != 0 {
			t.Errorf("omit %v: empty file read as legacy %v, %d segments, %d named", omit, f.Legacy(), len(f.Segments()), len(f.Entries()))
		}
	}
}

func TestIdentifiers(t *testing.T) {
	ok := &writer.PTD{Entries: []writer.PTDEntry{{Key: "k", Data: []byte{1}}}}
	for _, tc := range []struct {
		ident, magic string
		sentinel     error
		field        string
	}{
		{"FT02", "", format.ErrUnsupportedVersion, "identifier"},
		{"FT99", "", format.ErrUnsupportedVersion, "identifier"},
		{"ET12", "", format.ErrUnknownFormat, "identifier"},
		{"FTxx", "", format.ErrUnknownFormat, "identifier"},
		{"", "FH02", format.ErrUnsupportedVersion, "header.magic"},
		{"", "XXXX", format.ErrMalformed, "header.magic"},
	} {
		p := *ok
		p.Identifier, p.HeaderMagic = tc.ident, tc.magic
		_, err := ptd.NewFile(mmapfile.NewBytes(build(t, &p)))
		seen := tc.ident
		if seen == "" {
			seen = tc.magic
		}
		fe := wantFormatError(t, err, tc.sentinel, tc.field, seen)
		if want := int64(4); tc.ident == "" {
			if fe.Offset != 8 {
				t.Errorf("%s: offset %d, want 8", seen, fe.Offset)
			}
		} else if fe.Offset != want {
			t.Errorf("%s: offset %d, want %d", seen, fe.Offset, want)
		}
	}
	// Too short to identify, and short but identified.
	_, err := ptd.NewFile(mmapfile.NewBytes([]byte("abc")))
	wantFormatError(t, err, format.ErrUnknownFormat, "identifier")
	good := build(t, ok)
	_, err = ptd.NewFile(mmapfile.NewBytes(good[:30]))
	wantFormatError(t, err, format.ErrTruncated, "header")
}

func TestHeaderErrors(t *testing.T) {
	p := &writer.PTD{Entries: []writer.PTDEntry{
		{Key: "a", Layout: f32layout(4), Data: hostile.F32(1, 2, 3, 4)},
		{Key: "b", Data: []byte("xyz")},
	}}
	good := build(t, p)
	le := binary.LittleEndian
	patch := func(off int, v uint64, size int) []byte {
		b := slices.Clone(good)
		if size == 4 {
			le.PutUint32(b[off:], uint32(v))
		} else {
			le.PutUint64(b[off:], v)
		}
		return b
	}
	size := uint64(len(good))
	base := le.Uint64(good[32:])
	fbEnd := le.Uint64(good[16:]) + le.Uint64(good[24:])
	for _, tc := range []struct {
		name     string
		b        []byte
		sentinel error
		field    string
		off      int64
	}{
		{"length<40", patch(12, 39, 4), format.ErrMalformed, "header.length", 12},
		{"fboffset<header", patch(16, 40, 8), format.ErrMalformed, "header.flatbuffer_offset", 16},
		{"fb past EOF", patch(24, size, 8), format.ErrTruncated, "header.flatbuffer_size", 24},
		{"fb over 2GiB", patch(24, 1<<31, 8), format.ErrMalformed, "header.flatbuffer_size", 24},
		{"fb size wraps", patch(24, math.MaxUint64-10, 8), format.ErrMalformed, "header.flatbuffer_size", 24},
		{"data past EOF", patch(40, size-base+1, 8), format.ErrTruncated, "header.segment_data_size", 40},
		{"base+size wraps", patch(32, math.MaxUint64-4, 8), format.ErrMalformed, "header.segment_data_size", 40},
		{"data over FlatBuffer", patch(32, fbEnd-16, 8), format.ErrMalformed, "header.segment_base_offset", 32},
		{"truncated file", good[:len(good)-1], format.ErrTruncated, "header.segment_data_size", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ptd.NewFile(mmapfile.NewBytes(tc.b))
			fe := wantFormatError(t, err, tc.sentinel, tc.field)
			if fe.Offset != tc.off {
				t.Errorf("offset %d, want %d", fe.Offset, tc.off)
			}
		})
	}
	// A header claiming more segment data than written (the writer knob).
	q := *p
	q.SegmentDataSize = 1 << 40
	_, err := ptd.NewFile(mmapfile.NewBytes(build(t, &q)))
	wantFormatError(t, err, format.ErrTruncated, "segment_data_size", "too small")
}

// TestEntryErrors covers the named-data checks, each naming the key and
// pointing at the offending field in the file.
func TestEntryErrors(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name     string
		p        writer.PTD
		sentinel error
		field    string
		msgs     []string
		// check, when set, verifies the bytes at the error offset
		check func(b []byte, off int64) bool
	}{
		{name: "key twice", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "x", Data: []byte{1}}, {Key: "y", Data: []byte{2}}, {Key: "x", Data: []byte{3}}}},
			sentinel: format.ErrMalformed, field: "named_data[2].key", msgs: []string{`"x"`, "twice", "named_data[0]"}},
		{name: "layout larger than segment", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32layout(4, 4), Size: 60}}},
			sentinel: format.ErrMalformed, field: "named_data[0].tensor_layout.sizes", msgs: []string{`"w"`, "64 bytes", "segment 0 holds 60"}},
		{name: "segment index out of range", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "a", Data: []byte{1}}, {Key: "z", SegmentRef: 8}}},
			sentinel: format.ErrMalformed, field: "named_data[1].segment_index", msgs: []string{`"z"`, "7", "1 segments"},
			check: func(b []byte, off int64) bool { return le.Uint32(b[off:]) == 7 }},
		{name: "reserved scalar type", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "c", Layout: &writer.PTDLayout{ScalarType: 9, Sizes: []int32{1}}, Size: 8}}},
			sentinel: format.ErrMalformed, field: "tensor_layout.scalar_type", msgs: []string{`"c"`, "9"},
			check: func(b []byte, off int64) bool { return b[off] == 9 }},
		{name: "negative size", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "n", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, -1}}, Size: 8}}},
			sentinel: format.ErrMalformed, field: "tensor_layout.sizes", msgs: []string{`"n"`, "-1"}},
		{name: "bad dim order", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "d", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}, DimOrder: []uint8{1, 1}}, Size: 16}}},
			sentinel: format.ErrMalformed, field: "tensor_layout.dim_order", msgs: []string{`"d"`, "permutation"}},
		{name: "dim order length", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "d", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}, DimOrder: []uint8{0}}, Size: 16}}},
			sentinel: format.ErrMalformed, field: "tensor_layout.dim_order", msgs: []string{`"d"`, "1 entries for 2"}},
		{name: "numel overflow", p: writer.PTD{Entries: []writer.PTDEntry{
			{Key: "o", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat64, Sizes: []int32{math.MaxInt32, math.MaxInt32, math.MaxInt32}}, Size: 8}}},
			sentinel: format.ErrMalformed, field: "tensor_layout.sizes", msgs: []string{`"o"`}},
		{name: "version 1", p: writer.PTD{Version: 1},
			sentinel: format.ErrUnsupportedVersion, field: "FlatTensor.version", msgs: []string{"version 1"},
			check: func(b []byte, off int64) bool { return le.Uint32(b[off:]) == 1 }},
		{name: "legacy key twice", p: writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "t", Layout: f32layout(1)}, {Key: "t", Data: []byte{1}}}},
			sentinel: format.ErrMalformed, field: "tensors[0].fully_qualified_name", msgs: []string{`"t"`, "twice", "named_data[0]"}},
		{name: "legacy version 3", p: writer.PTD{Legacy: true, Version: 3, Entries: []writer.PTDEntry{{Key: "t", Layout: f32layout(1)}}},
			sentinel: format.ErrUnsupportedVersion, field: "FlatTensor.version", msgs: []string{"version 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build(t, &tc.p)
			_, err := ptd.NewFile(mmapfile.NewBytes(b))
			fe := wantFormatError(t, err, tc.sentinel, tc.field, tc.msgs...)
			h := int64(le.Uint64(b[16:]) + le.Uint64(b[24:]))
			if fe.Offset < 48 || fe.Offset >= h {
				t.Errorf("offset %#x outside the FlatBuffer body [48,%#x)", fe.Offset, h)
			}
			if tc.check != nil && !tc.check(b, fe.Offset) {
				t.Errorf("offset %#x does not hold the offending value", fe.Offset)
			}
		})
	}
}

// TestSegmentErrors edits a DataSegment of a valid file: offsets past the
// segment data, and overflowing ones.
func TestSegmentErrors(t *testing.T) {
	p := &writer.PTD{Entries: []writer.PTDEntry{{Key: "a", Data: []byte("0123456789abcdef")}, {Key: "b", Data: []byte("xy")}}}
	good := build(t, p)
	info, _ := p.Plan()
	le := binary.LittleEndian
	// The Go builder stores a DataSegment's size (2) before its offset (16);
	// find segment 1's fields by their values.
	idx := bytes.Index(good[48:info.SegmentBaseOffset], le.AppendUint64(le.AppendUint64(nil, 2), 16))
	if idx < 0 {
		t.Fatal("segment 1's fields not found in the FlatBuffer")
	}
	sizePos, offPos := 48+idx, 48+idx+8
	for _, tc := range []struct {
		name  string
		pos   int
		val   uint64
		field string
	}{
		{"offset past data", offPos, 1000, "segments[1].offset"},
		{"offset wraps", offPos, math.MaxUint64 - 100, "segments[1].offset"},
		{"size past data", sizePos, 17, "segments[1].size"},
		{"size huge", sizePos, math.MaxUint64, "segments[1].size"},
	} {
		b := slices.Clone(good)
		le.PutUint64(b[tc.pos:], tc.val)
		_, err := ptd.NewFile(mmapfile.NewBytes(b))
		fe := wantFormatError(t, err, format.ErrMalformed, tc.field)
		if fe.Offset != int64(tc.pos) {
			t.Errorf("%s: offset %d, want %d", tc.name, fe.Offset, tc.pos)
		}
	}
}

// TestLegacyGenerated writes the 2025 layout with tensors and named data.
func TestLegacyGenerated(t *testing.T) {
	for _, align := range []int64{16, 128} {
		p := &writer.PTD{Legacy: true, Alignment: align, Entries: []writer.PTDEntry{
			{Key: "l.weight", Layout: f32layout(2, 2), Data: hostile.F32(1, 2, 3, 4)},
			{Key: "blob", Data: []byte("backend")},
			{Key: "l.bias", Layout: f32layout(3), Data: hostile.F32(7, 8, 9)},
		}}
		f := mustOpenBytes(t, build(t, p))
		if !f.Legacy() || f.TensorAlignment() != uint32(align) {
			t.Fatalf("align %d: Legacy %v TensorAlignment %d", align, f.Legacy(), f.TensorAlignment())
		}
		if len(f.Segments()) != 2 {
			t.Fatalf("%d segments, want 2 (tensors share one)", len(f.Segments()))
		}
		nd := f.Entries()
		if len(nd) != 1 || nd[0].Key != "blob" || nd[0].Layout != nil || nd[0].Segment != 1 {
			t.Errorf("NamedData() = %+v, want only the legacy named_data blob", nd)
		}
		ts := f.Tensors()
		if len(ts) != 2 || ts[0].Name != "l.weight" || ts[1].Name != "l.bias" {
			t.Fatalf("tensors %+v", ts)
		}
		seg0 := f.Segments()[0]
		if ts[1].Offset != seg0.Offset()+align || ts[1].NBytes != 12 {
			t.Errorf("bias at %d (+%d), want %d (+12)", ts[1].Offset, ts[1].NBytes, seg0.Offset()+align)
		}
		for key, want := range map[string][]float32{"l.weight": {1, 2, 3, 4}, "l.bias": {7, 8, 9}} {
			e, ok := f.Entry(key)
			v, _, _ := e.Data.Float32()
			if !ok || e.Layout == nil || !slices.Equal(v, want) {
				t.Errorf("Lookup(%q) = %v %v, want %v", key, ok, v, want)
			}
		}
		if e, ok := f.Entry("blob"); !ok || e.Layout != nil {
			t.Errorf("Lookup(blob) = %+v %v", e, ok)
		}
	}
	// A legacy tensor whose offset + size leaves its segment.
	p := &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
		{Key: "x", Layout: f32layout(4), Size: 16},
		{Key: "y", Layout: f32layout(4), Size: 8}, // shares segment 0, but needs 16 bytes at offset 16
	}}
	_, err := ptd.NewFile(mmapfile.NewBytes(build(t, p)))
	wantFormatError(t, err, format.ErrMalformed, "tensors[1].sizes", `"y"`, "16 bytes", "8 past offset 16")
}

// TestSharedMapping: one .ptd mapped once serves several readers; Lookup
// returns views into that single mapping, and NewFile leaves the mapping
// to its owner.
func TestSharedMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.ptd")
	p := &writer.PTD{Alignment: 128, Entries: []writer.PTDEntry{
		{Key: "w", Layout: f32layout(8), Data: hostile.F32(1, 2, 3, 4, 5, 6, 7, 8)}}}
	if _, err := p.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	f, err := ptd.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if f.MappedFile() != mf || f.Name() != path {
		t.Errorf("MappedFile/Name: %p %q", f.MappedFile(), f.Name())
	}
	// Two "programs" look the same key up: same bytes, same address.
	e1, _ := f.Entry("w")
	e2, _ := f.Entry("w")
	b1, _ := e1.Data.Bytes()
	b2, _ := e2.Data.Bytes()
	whole, _ := mf.View(0, mf.Len())
	if unsafe.SliceData(b1) != unsafe.SliceData(b2) || unsafe.SliceData(b1) != &whole[e1.Data.Offset()] {
		t.Error("lookups do not share the one mapping")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The caller's mapping survives the File's Close.
	if v, _, err := e1.Data.Float32(); err != nil || v[7] != 8 {
		t.Errorf("after ptd Close, the caller's mapping reads %v, %v", v, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestOpenClose: a File over a windowed mapping reads through it; its
// Close leaves the mapping to the caller, whose Close ends the views.
func TestOpenClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.ptd")
	p := &writer.PTD{Entries: []writer.PTDEntry{{Key: "k", Data: []byte("v")}}}
	if _, err := p.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWindowed))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	f, err := ptd.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if f.MappedFile().Mode() != mmapfile.ModeWindowed {
		t.Errorf("mode %v, want windowed", f.MappedFile().Mode())
	}
	e, _ := f.Entry("k")
	if b, err := e.Data.Bytes(); err != nil || string(b) != "v" {
		t.Errorf("windowed read %q %v", b, err)
	}
	f.Close()
	if _, err := e.Data.Bytes(); err != nil {
		t.Errorf("view after the File's Close: %v, want the bytes (the mapping is open)", err)
	}
	mf.Close()
	if _, err := e.Data.Bytes(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("view after Close: %v, want ErrClosed", err)
	}
	if _, err := mapOpen(t, filepath.Join(dir, "missing.ptd"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestSharedSizesVector: named data whose layouts all point at one long
// sizes vector must not make a small file allocate without bound.
func TestSharedSizesVector(t *testing.T) {
	const dims, entries = 20000, 3000 // unchecked: 60M int64s from a ~200 KB file
	b := flatbuffers.NewBuilder(1 << 16)
	b.StartVector(4, dims, 4)
	for range dims {
		b.PrependInt32(1)
	}
	sizes := b.EndVector(dims)
	ptdfb.TensorLayoutStart(b)
	ptdfb.TensorLayoutAddScalarType(b, writer.PTDScalarUint8)
	ptdfb.TensorLayoutAddSizes(b, sizes)
	layout := ptdfb.TensorLayoutEnd(b)
	nds := make([]flatbuffers.UOffsetT, entries)
	for i := range nds {
		k := b.CreateString("k" + strconv.Itoa(i))
		ptdfb.NamedDataStart(b)
		ptdfb.NamedDataAddKey(b, k)
		ptdfb.NamedDataAddTensorLayout(b, layout)
		nds[i] = ptdfb.NamedDataEnd(b)
	}
	ptdfb.FlatTensorStartNamedDataVector(b, entries)
	for i := entries - 1; i >= 0; i-- {
		b.PrependUOffsetT(nds[i])
	}
	ndv := b.EndVector(entries)
	ptdfb.DataSegmentStart(b)
	ptdfb.DataSegmentAddSize(b, 1)
	seg := ptdfb.DataSegmentEnd(b)
	ptdfb.FlatTensorStartSegmentsVector(b, 1)
	b.PrependUOffsetT(seg)
	segv := b.EndVector(1)
	ptdfb.FlatTensorStart(b)
	ptdfb.FlatTensorAddSegments(b, segv)
	ptdfb.FlatTensorAddNamedData(b, ndv)
	b.FinishWithFileIdentifier(ptdfb.FlatTensorEnd(b), []byte("FT01"))

	raw := build(t, &writer.PTD{FlatBuffer: b.FinishedBytes(), Entries: []writer.PTDEntry{{Key: "data", Size: 1}}})
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	_, err := ptd.NewFile(mmapfile.NewBytes(raw))
	runtime.ReadMemStats(&ms1)
	wantFormatError(t, err, format.ErrMalformed, "tensor_layout.sizes", "shared sizes vectors")
	if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 20*uint64(len(raw)) {
		t.Errorf("rejecting a %d-byte file allocated %d bytes", len(raw), grew)
	}
}
