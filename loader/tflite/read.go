package tflite

// reader reads fields of a FlatBuffer that verify has accepted, at
// positions (int64) inside it. It reads only the fields verify.go
// describes; offsets are added in 64 bits and Go's bounds checks stop a
// read outside the buffer should a caller get that wrong.
type reader []byte

func (r reader) u8(p int64) uint8   { return r[p] }
func (r reader) u32(p int64) uint32 { return le.Uint32(r[p : p+4]) }
func (r reader) u64(p int64) uint64 { return le.Uint64(r[p : p+8]) }

// root returns the position of the root table.
func (r reader) root() int64 { return int64(r.u32(0)) }

// slot returns the table offset of field id of the table at t, 0 when
// the field is absent.
func (r reader) slot(t int64, id int) int64 {
	vt := t - int64(int32(r.u32(t)))
	vtsize := int64(le.Uint16(r[vt : vt+2]))
	e := 4 + 2*int64(id)
	if e+2 > vtsize {
		return 0
	}
	return int64(le.Uint16(r[vt+e : vt+e+2]))
}

// has reports whether field id of the table at t is present.
func (r reader) has(t int64, id int) bool { return r.slot(t, id) != 0 }

func (r reader) fieldU8(t int64, id int, def uint8) uint8 {
	if fo := r.slot(t, id); fo != 0 {
		return r.u8(t + fo)
	}
	return def
}

func (r reader) fieldU32(t int64, id int, def uint32) uint32 {
	if fo := r.slot(t, id); fo != 0 {
		return r.u32(t + fo)
	}
	return def
}

func (r reader) fieldI32(t int64, id int, def int32) int32 {
	return int32(r.fieldU32(t, id, uint32(def)))
}

func (r reader) fieldU64(t int64, id int) uint64 {
	if fo := r.slot(t, id); fo != 0 {
		return r.u64(t + fo)
	}
	return 0
}

// deref follows the offset stored at p.
func (r reader) deref(p int64) int64 { return p + int64(r.u32(p)) }

// table returns the position of the table field id refers to, 0 when
// absent.
func (r reader) table(t int64, id int) int64 {
	if fo := r.slot(t, id); fo != 0 {
		return r.deref(t + fo)
	}
	return 0
}

// vector returns the position of the first element and the length of
// vector field id; 0, 0 when absent.
func (r reader) vector(t int64, id int) (start, n int64) {
	if fo := r.slot(t, id); fo != 0 {
		v := r.deref(t + fo)
		return v + 4, int64(r.u32(v))
	}
	return 0, 0
}

// elem returns the position of table i of the vector of tables at start.
func (r reader) elem(start, i int64) int64 { return r.deref(start + 4*i) }

// bytes returns the bytes of string or byte-vector field id (nil when
// absent), pointing into the buffer.
func (r reader) bytes(t int64, id int) []byte {
	start, n := r.vector(t, id)
	if start == 0 {
		return nil
	}
	return r[start : start+n : start+n]
}

// union returns the tag and value position of the union at ids id, id+1
// (0, 0 for NONE, and for a tag without a value, which the verifier
// accepts as the C++ Verifier does).
func (r reader) union(t int64, id int) (tag uint8, v int64) {
	tag = r.fieldU8(t, id, 0)
	if tag == 0 {
		return 0, 0
	}
	if v = r.table(t, id+1); v == 0 {
		return 0, 0
	}
	return tag, v
}

// i32s appends the int32 elements of vector field id to dst.
func (r reader) i32s(t int64, id int) []int32 {
	start, n := r.vector(t, id)
	if start == 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(r.u32(start + 4*int64(i)))
	}
	return out
}
