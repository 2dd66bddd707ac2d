package hostile

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// FB navigates the FlatBuffer at the start of a valid file so that a test
// can patch one chosen field into something hostile (a vector length of
// 2^31, an offset that loops, an unknown union tag) and leave the rest of
// the file intact. Positions are byte offsets into B. It panics on a
// buffer that does not have the field asked for: it is for tests, on files
// a writer made.
type FB struct{ B []byte }

func (f FB) u32(p int) int   { return int(binary.LittleEndian.Uint32(f.B[p:])) }
func (f FB) u16(p int) int   { return int(binary.LittleEndian.Uint16(f.B[p:])) }
func (f FB) i32(p int) int32 { return int32(binary.LittleEndian.Uint32(f.B[p:])) }

// Root returns the position of the root table.
func (f FB) Root() int { return f.u32(0) }

// Deref follows the unsigned offset stored at p.
func (f FB) Deref(p int) int { return p + f.u32(p) }

// VTable returns the position of table t's vtable.
func (f FB) VTable(t int) int { return t - int(f.i32(t)) }

// Field returns the position of field id's value in table t, or -1 when
// the field is absent.
func (f FB) Field(t, id int) int {
	vt := f.VTable(t)
	e := 4 + 2*id
	if e+2 > f.u16(vt) {
		return -1
	}
	o := f.u16(vt + e)
	if o == 0 {
		return -1
	}
	return t + o
}

// MustField is Field, panicking when the field is absent.
func (f FB) MustField(t, id int) int {
	p := f.Field(t, id)
	if p < 0 {
		panic(fmt.Sprintf("hostile.FB: table at %#x has no field %d", t, id))
	}
	return p
}

// Table returns the position of the table (or vector, or string) that
// field id of table t refers to.
func (f FB) Table(t, id int) int { return f.Deref(f.MustField(t, id)) }

// Vector returns the position of the length word of the vector field id
// of table t, and its length.
func (f FB) Vector(t, id int) (pos, n int) {
	pos = f.Table(t, id)
	return pos, f.u32(pos)
}

// Elem returns the position of the table that element i of the table
// vector field id of table t refers to.
func (f FB) Elem(t, id, i int) int {
	pos, n := f.Vector(t, id)
	if i >= n {
		panic(fmt.Sprintf("hostile.FB: element %d of a %d-element vector", i, n))
	}
	return f.Deref(pos + 4 + 4*i)
}

// Path follows a path of (field id, element index) steps from the root:
// index -1 follows a table field, index >= 0 an element of a table
// vector. It returns the position of the table reached.
func (f FB) Path(steps ...[2]int) int {
	t := f.Root()
	for _, s := range steps {
		if s[1] < 0 {
			t = f.Table(t, s[0])
		} else {
			t = f.Elem(t, s[0], s[1])
		}
	}
	return t
}

// PutU8, PutU16, PutU32 and PutU64 store little-endian values at p.
func (f FB) PutU8(p int, v uint8)   { f.B[p] = v }
func (f FB) PutU16(p int, v uint16) { binary.LittleEndian.PutUint16(f.B[p:], v) }
func (f FB) PutU32(p int, v uint32) { binary.LittleEndian.PutUint32(f.B[p:], v) }
func (f FB) PutU64(p int, v uint64) { binary.LittleEndian.PutUint64(f.B[p:], v) }

// Case runs one hostile input through tg with the sweep's time and
// allocation bounds and checks it the same way (see Sweep). It returns the
// open error, nil when the input opened and passed the exercise.
func Case(t *testing.T, tg Target, name string, b []byte) error {
	t.Helper()
	res := newRunner(t, tg).run(name, b)
	if res.opened {
		return nil
	}
	return res.openErr
}
