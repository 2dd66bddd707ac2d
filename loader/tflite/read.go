package tflite

// reader gives Relayout (relayout.go), which patches the FlatBuffer in
// place and needs the positions of its fields, those positions in a
// FlatBuffer that verify has accepted. The model itself is read through
// the accessors flatc generates (tflitefb).
type reader []byte

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

func (r reader) fieldU64(t int64, id int) uint64 {
	if fo := r.slot(t, id); fo != 0 {
		return r.u64(t + fo)
	}
	return 0
}

// deref follows the offset stored at p.
func (r reader) deref(p int64) int64 { return p + int64(r.u32(p)) }

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
