package fbread

import (
	"bytes"
	"encoding/binary"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"
)

// table writes a table with an int32 at field 0 (when x != 0), a string at
// field 1 (when s != "") and a vector of int32 at field 4 (when v != nil).
func table(b *flatbuffers.Builder, x int32, s string, v []int32) flatbuffers.UOffsetT {
	var so, vo flatbuffers.UOffsetT
	if s != "" {
		so = b.CreateString(s)
	}
	if v != nil {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependInt32(v[i])
		}
		vo = b.EndVector(len(v))
	}
	b.StartObject(5)
	if x != 0 {
		b.PrependInt32Slot(0, x, 0)
	}
	if so != 0 {
		b.PrependUOffsetTSlot(1, so, 0)
	}
	if vo != 0 {
		b.PrependUOffsetTSlot(4, vo, 0)
	}
	return b.EndObject()
}

type want struct {
	x int32
	s string
	v []int32
}

// Tables whose vtables alternate, repeat and differ in length read back
// what was written, through one Fields.
func TestFields(t *testing.T) {
	ws := []want{
		{7, "a", []int32{1, 2}}, {8, "bc", []int32{3}}, // one vtable
		{0, "d", nil},                // another, shorter (fields 0 and 4 absent)
		{9, "", []int32{}},           // another
		{10, "ef", []int32{4, 5, 6}}, // the first again
		{0, "", nil},                 // an empty table
		{11, "g", []int32{7}},
	}
	b := flatbuffers.NewBuilder(0)
	offs := make([]flatbuffers.UOffsetT, len(ws))
	for i, w := range ws {
		offs[i] = table(b, w.x, w.s, w.v)
	}
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	b.Finish(b.EndVector(len(offs)))
	fb := b.FinishedBytes()

	start, n := Vector(fb, 0) // the root offset refers to the vector
	if n != int64(len(ws)) {
		t.Fatalf("root vector has %d elements, want %d", n, len(ws))
	}
	var f Fields // the zero value
	decoded := map[int64]bool{}
	for i, w := range ws {
		tp := Deref(fb, start+4*int64(i))
		fo := f.Of(fb, tp)
		decoded[f.vt1] = true
		var x int32
		if fo[0] != 0 {
			x = int32(binary.LittleEndian.Uint32(fb[tp+fo[0]:]))
		}
		s := FieldBytes(fb, tp, fo[1], 1) // nil when absent
		var v []int32
		if vs, vn := FieldVector(fb, tp, fo[4]); fo[4] != 0 {
			vb := FieldBytes(fb, tp, fo[4], 4)
			if int64(len(vb)) != 4*vn || (vn > 0 && &vb[0] != &fb[vs]) {
				t.Errorf("table %d: FieldBytes and FieldVector disagree", i)
			}
			v = []int32{}
			for k := 0; k < len(vb); k += 4 {
				v = append(v, int32(binary.LittleEndian.Uint32(vb[k:])))
			}
		} else if vs != 0 || vn != 0 || FieldBytes(fb, tp, fo[4], 4) != nil {
			t.Errorf("table %d: an absent vector reads as %d, %d", i, vs, vn)
		}
		if x != w.x || !bytes.Equal(s, []byte(w.s)) || !equal(v, w.v) {
			t.Errorf("table %d: read %d %q %v, want %d %q %v", i, x, s, v, w.x, w.s, w.v)
		}
		for id := 5; id < MaxFields; id++ {
			if fo[id] != 0 {
				t.Errorf("table %d: field %d (not in the schema) at offset %d", i, id, fo[id])
			}
		}
	}
	if len(decoded) < 4 {
		t.Errorf("the tables used %d vtables, want at least 4 (the test needs them to differ)", len(decoded))
	}
}

func equal(a, b []int32) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
