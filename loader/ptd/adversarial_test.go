package ptd_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// ptdTarget opens with NewBytes and exercises every accessor and view.
var ptdTarget = hostile.Target{Format: "ptd", Open: func(b []byte) (func() error, error) {
	f, err := ptd.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return nil, err
	}
	return func() error {
		defer f.Close()
		return ptdcheck.File(f)
	}, nil
}}

// Field ids of the FlatTensor schema (FORMATS.md §2).
const (
	ftSegments    = 1
	ftNamedData   = 2
	ndKey         = 0
	ndSegmentIdx  = 1
	ndLayout      = 2
	tlScalarType  = 0
	tlSizes       = 1
	dsOffset      = 0
	dsSize        = 1
	hdrFBOffset   = 16
	hdrFBSize     = 24
	hdrSegBase    = 32
	hdrSegDataLen = 40
)

type ptdCase struct {
	name  string
	patch func(fb hostile.FB)
	want  error  // sentinel
	field string // expected in the error text
}

// TestAdversarial builds hostile .ptd files by patching one field of a
// valid one (mixed.ptd of ptdcheck.Generated: tensors, a blob, a shared
// segment): header offsets and sizes overflowing uint64 and int on 32-bit,
// vectors claiming 2^31 elements, offsets looping back, strings without
// terminators, segments overlapping the header, numel × element size
// overflowing, negative dims, reserved scalar types. Each must be rejected
// with a ptd *FormatError naming the field, within the sweep's bounds.
func TestAdversarial(t *testing.T) {
	gen, err := ptdcheck.Generated()
	if err != nil {
		t.Fatal(err)
	}
	var base []byte
	for _, s := range gen {
		if s.Name == "mixed.ptd" {
			base = s.Data
		}
	}
	if err := hostile.Case(t, ptdTarget, "base", bytes.Clone(base)); err != nil {
		t.Fatalf("base file: %v", err)
	}
	layout := func(fb hostile.FB, i int) int { return fb.Table(fb.Path([2]int{ftNamedData, i}), ndLayout) }
	cases := []ptdCase{
		{"flatbuffer_offset 2^64-1", func(fb hostile.FB) { fb.PutU64(hdrFBOffset, 1<<64-1) }, format.ErrMalformed, "flatbuffer_offset"},
		{"flatbuffer_size 2^63", func(fb hostile.FB) { fb.PutU64(hdrFBSize, 1<<63) }, format.ErrMalformed, "flatbuffer_size"},
		{"flatbuffer_size 2^32 (int on 32-bit)", func(fb hostile.FB) { fb.PutU64(hdrFBSize, 1<<32) }, format.ErrMalformed, "flatbuffer_size"},
		{"segment_base_offset 2^64-8", func(fb hostile.FB) { fb.PutU64(hdrSegBase, 1<<64-8) }, format.ErrMalformed, "segment_base_offset"},
		{"segment_data_size 2^64-1", func(fb hostile.FB) { fb.PutU64(hdrSegDataLen, 1<<64-1) }, format.ErrMalformed, "segment_data_size"},
		{"segment_data_size wraps base+size", func(fb hostile.FB) { fb.PutU64(hdrSegDataLen, 1<<64-100) }, format.ErrMalformed, "segment_data_size"},
		{"segments overlapping the header", func(fb hostile.FB) { fb.PutU64(hdrSegBase, 8) }, format.ErrMalformed, "segment_base_offset"},
		{"header length 2^32-1", func(fb hostile.FB) { fb.PutU32(12, 1<<32-1) }, format.ErrMalformed, "length"},
		{"segment offset 2^64-1", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{ftSegments, 1}), dsOffset), 1<<64-1)
		}, format.ErrMalformed, "segments[1]"},
		{"segment size 2^63", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{ftSegments, 1}), dsSize), 1<<63)
		}, format.ErrMalformed, "segments[1]"},
		{"segment offset past int32", func(fb hostile.FB) {
			fb.PutU64(fb.MustField(fb.Path([2]int{ftSegments, 1}), dsOffset), 1<<31+16)
		}, format.ErrMalformed, "segments[1]"},
		{"named_data claims 2^31 entries", func(fb hostile.FB) {
			p, _ := fb.Vector(fb.Root(), ftNamedData)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "named_data"},
		{"sizes claims 2^31 dims", func(fb hostile.FB) {
			p, _ := fb.Vector(layout(fb, 0), tlSizes)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "sizes"},
		{"key length 2^32-1", func(fb hostile.FB) {
			fb.PutU32(fb.Table(fb.Path([2]int{ftNamedData, 0}), ndKey), 1<<32-1)
		}, format.ErrMalformed, "key"},
		{"key without terminator", func(fb hostile.FB) {
			s := fb.Table(fb.Path([2]int{ftNamedData, 0}), ndKey)
			fb.PutU8(s+4+int(fb.B[s]), 'x')
		}, format.ErrMalformed, "key"},
		{"offset looping back (wraps in 32 bits)", func(fb hostile.FB) {
			p := fb.MustField(fb.Root(), ftNamedData)
			fb.PutU32(p, -uint32(p))
		}, format.ErrMalformed, "named_data"},
		{"element offset to itself", func(fb hostile.FB) {
			p, _ := fb.Vector(fb.Root(), ftNamedData)
			fb.PutU32(p+4, 0)
		}, format.ErrMalformed, "named_data[0]"},
		{"vtable at the table itself", func(fb hostile.FB) {
			fb.PutU32(fb.Path([2]int{ftNamedData, 0}), 0)
		}, format.ErrMalformed, "named_data[0]"},
		{"segment_index 2^32-1", func(fb hostile.FB) {
			fb.PutU32(fb.MustField(fb.Path([2]int{ftNamedData, 1}), ndSegmentIdx), 1<<32-1)
		}, format.ErrMalformed, "segment_index"},
		{"numel × element size overflows", func(fb hostile.FB) {
			p, n := fb.Vector(layout(fb, 0), tlSizes)
			for i := 0; i < n; i++ {
				fb.PutU32(p+4+4*i, 1<<31-1)
			}
		}, format.ErrMalformed, "sizes"},
		{"negative dim", func(fb hostile.FB) {
			p, _ := fb.Vector(layout(fb, 0), tlSizes)
			fb.PutU32(p+4, 1<<32-3)
		}, format.ErrMalformed, "sizes"},
	}
	for _, st := range []int8{8, 9, 10, 18, 19, 20, 21, 30, 127, -1, -128} {
		st := st
		cases = append(cases, ptdCase{fmt.Sprintf("scalar type %d", st), func(fb hostile.FB) {
			fb.PutU8(fb.MustField(layout(fb, 0), tlScalarType), uint8(st))
		}, format.ErrMalformed, "scalar_type"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(base)
			c.patch(hostile.FB{B: b})
			checkRejected(t, b, c.want, c.field)
		})
	}
}

func checkRejected(t *testing.T, b []byte, want error, field string) {
	t.Helper()
	err := hostile.Case(t, ptdTarget, t.Name(), b)
	if err == nil {
		t.Fatalf("opened")
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, want) {
		t.Errorf("error %v (%T), want a *FormatError wrapping %v", err, err, want)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("error %q does not name %q", err, field)
	}
	t.Log(err)
}

// A key listed twice is an error naming both entries, in both layouts; so
// is a legacy tensor whose offset overflows.
func TestAdversarialWriter(t *testing.T) {
	f32 := &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{1}}
	huge := uint64(1<<64 - 1)
	for _, c := range []struct {
		name  string
		w     *writer.PTD
		field string
	}{
		{"key listed twice", &writer.PTD{Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "b", Data: []byte{1}}, {Key: "w", Data: []byte{2}},
		}}, "named_data[2].key at offset 0x"},
		{"key listed twice: the first named", &writer.PTD{Entries: []writer.PTDEntry{
			{Key: "a", Data: []byte{1}}, {Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "w", Data: []byte{2}},
		}}, "first in FlatTensor.named_data[1])"},
		{"legacy key listed twice", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "w", Layout: f32, Data: make([]byte, 4)},
		}}, "tensors[1].fully_qualified_name at offset 0x"},
		{"legacy key listed twice: the first named", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "w", Layout: f32, Data: make([]byte, 4)},
		}}, "first in FlatTensor.tensors[0])"},
		{"legacy key listed twice after named data", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "n", Data: []byte{1}}, {Key: "x", Layout: f32, Data: make([]byte, 4)},
			{Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "w", Layout: f32, Data: make([]byte, 4)},
		}}, "first in FlatTensor.tensors[1])"},
		{"legacy tensor listing a named key", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32, Data: make([]byte, 4)}, {Key: "n", Data: []byte{1}}, {Key: "w", Data: []byte{2}},
		}}, "first in FlatTensor.named_data[1])"},
		{"legacy tensor offset 2^64-1", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: f32, Data: make([]byte, 4), LegacyOffset: &huge},
		}}, "tensors[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.w.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			checkRejected(t, b, format.ErrMalformed, c.field)
		})
	}
}

// A scalar (0-dimension) tensor has an empty shape, never nil, whether or
// not an earlier layout had dimensions (regression: the first layout's
// shape was nil, a later scalar's empty; found by FuzzOpen, corpus entry
// 03ac15101f30a3ad).
func TestScalarShapeNotNil(t *testing.T) {
	scalar := &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{}}
	vec := &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2}}
	for _, entries := range [][]writer.PTDEntry{
		{{Key: "s", Layout: scalar, Data: make([]byte, 4)}},
		{{Key: "v", Layout: vec, Data: make([]byte, 8)}, {Key: "s", Layout: scalar, Data: make([]byte, 4)}},
	} {
		b, err := (&writer.PTD{Entries: entries}).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		f, err := ptd.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatal(err)
		}
		e, ok := f.Entry("s")
		if !ok || e.Layout.Sizes == nil || len(e.Layout.Sizes) != 0 {
			t.Errorf("%d entries: scalar layout sizes %#v", len(entries), e.Layout.Sizes)
		}
		for _, tn := range f.Tensors() {
			if tn.Name == "s" && (tn.Shape == nil || tn.NBytes != 4) {
				t.Errorf("%d entries: scalar tensor shape %#v, %d bytes", len(entries), tn.Shape, tn.NBytes)
			}
		}
		if err := ptdcheck.File(f); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}
