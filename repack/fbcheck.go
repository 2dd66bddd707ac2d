package repack

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// The loaders verify every field they read. The object API's UnPack reads
// every field of the schema, so the few a loader skips (a program's stack
// traces and non-constant buffer devices) are checked here before UnPack
// runs: each vector must fit in the buffer, so no length read from the file
// can make UnPack allocate more than the buffer holds. Any other fault in
// those fields (a scalar outside the buffer) panics inside the generated
// code's slice expressions and is recovered by unpackSafe.

// fbVtable returns the position and byte length of the vtable of the table
// at tab; ok is false when the table or the vtable's header does not fit in
// buf.
func fbVtable(buf []byte, tab int64) (vt, vlen int64, ok bool) {
	n := int64(len(buf))
	if tab < 0 || tab+4 > n {
		return 0, 0, false
	}
	vt = tab - int64(int32(binary.LittleEndian.Uint32(buf[tab:])))
	if vt < 0 || vt+4 > n {
		return 0, 0, false
	}
	return vt, int64(binary.LittleEndian.Uint16(buf[vt:])), true
}

// fbSlot returns the offset from its table of field id, read from the
// vtable at vt of vlen bytes, or 0 when the field is absent or its slot lies
// outside the vtable or buf.
func fbSlot(buf []byte, vt, vlen, id int64) int64 {
	slot := 4 + 2*id
	if slot+2 > vlen || vt+slot+2 > int64(len(buf)) {
		return 0
	}
	return int64(binary.LittleEndian.Uint16(buf[vt+slot:]))
}

// fbField returns the absolute position of field id of the table at tab, or
// 0 when the field is absent or the table does not fit in buf.
func fbField(buf []byte, tab int64, id int) int64 {
	vt, vlen, ok := fbVtable(buf, tab)
	if !ok {
		return 0
	}
	off := fbSlot(buf, vt, vlen, int64(id))
	if off == 0 {
		return 0
	}
	return tab + off
}

// fbMaxField returns the largest id of a field present in the table at tab
// (as fbField finds it), or -1 when there is none or the table does not fit
// in buf.
func fbMaxField(buf []byte, tab int64) int {
	vt, vlen, ok := fbVtable(buf, tab)
	if !ok {
		return -1
	}
	for id := (vlen-4)/2 - 1; id >= 0; id-- {
		if fbSlot(buf, vt, vlen, id) != 0 {
			return int(id)
		}
	}
	return -1
}

// fbRef returns the position the offset field at pos points to, which
// must lie in buf: added in 64 bits, so that an offset past 4 GiB is
// refused rather than wrapped to another table as the generated code's
// 32-bit arithmetic would.
func fbRef(buf []byte, pos int64) (int64, error) {
	n := int64(len(buf))
	if pos < 0 || pos+4 > n {
		return 0, fmt.Errorf("offset at %d outside the buffer", pos)
	}
	t := pos + int64(binary.LittleEndian.Uint32(buf[pos:]))
	if t >= n {
		return 0, fmt.Errorf("offset at %d points to %d, past the buffer's %d bytes", pos, t, n)
	}
	return t, nil
}

// fbVector checks the vector the offset field at pos points to: its length
// and elem-byte elements fit in buf. It returns the position of the first
// element and the length.
func fbVector(buf []byte, pos int64, elem int64) (start, length int64, err error) {
	v, err := fbRef(buf, pos)
	if err != nil {
		return 0, 0, err
	}
	n := int64(len(buf))
	if v+4 > n {
		return 0, 0, fmt.Errorf("vector at %d outside the buffer", v)
	}
	length = int64(binary.LittleEndian.Uint32(buf[v:]))
	if length*elem > n-v-4 {
		return 0, 0, fmt.Errorf("vector at %d: %d elements do not fit", v, length)
	}
	return v + 4, length, nil
}

// fbTableVector checks a vector of tables and calls fn with each table's
// position.
func fbTableVector(buf []byte, pos int64, fn func(tab int64) error) error {
	start, n, err := fbVector(buf, pos, 4)
	if err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		tab, err := fbRef(buf, start+4*i)
		if err != nil {
			return err
		}
		if err := fn(tab); err != nil {
			return err
		}
	}
	return nil
}

// unpackSafe runs fn, turning a panic of the generated code into an error.
func unpackSafe(what string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("repack: %s: unreadable FlatBuffer field: %v", what, r)
		}
	}()
	fn()
	return nil
}

func tablePos(t flatbuffers.Table) int64 { return int64(t.Pos) }
