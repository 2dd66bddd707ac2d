package fbverify

import (
	"encoding/binary"
	"math"
)

// T is a table being verified: its position and vtable, and its size as
// far as it lies in the buffer (the generated verifiers' fast paths compare
// a field's end with it; a field past it is checked against the buffer).
type T struct {
	pos, vt, vtsize, tsize int64
}

// FetchBytes makes the walk fill the elements of vectors of 1-byte
// elements it accepts from now on, as those of any other (Options.Fetch).
func (w *Walk) FetchBytes() {
	if w.v.f != nil {
		w.v.f.bytes = true
	}
}

// Lazy reports whether the walk leaves the elements of the vectors the
// schema marks (lazy) to its caller ([Walk.Elem]).
func (w *Walk) Lazy() bool { return w.lazy }

// SetLazy makes the walk leave the elements of (lazy) vectors to its
// caller (true), or verify them as any other (false, the default).
func (w *Walk) SetLazy(lazy bool) { w.lazy = lazy }

// Start counts the table at pos, checks the nesting depth and its vtable,
// and enters it: [Walk.Leave] leaves it once its fields are verified (a
// walk that failed is left as it is: Verify and Elem reset the depth).
func (w *Walk) Start(pos int64) (T, error) {
	v := &w.v
	if err := v.enter(pos); err != nil {
		return T{}, err
	}
	if v.depth >= v.opt.MaxDepth {
		return T{}, v.fail(pos, "tables nested more than %d deep (want at most %d levels)", v.opt.MaxDepth, v.opt.MaxDepth)
	}
	if v.tables++; v.tables > v.maxTables {
		return T{}, v.fail(pos, "more than %d tables (want at most %d, counting a shared table at each visit)", v.opt.MaxTables, v.opt.MaxTables)
	}
	if v.f != nil && !v.table(pos) {
		return T{}, v.f.err
	}
	// vtable's checks, without a call.
	if pos&3 == 0 && v.in(pos, 4) {
		vt := pos - int64(int32(v.u32(pos)))
		if vt&1 == 0 && v.in(vt, 2) {
			if vtsize := v.u16(vt); vtsize&1 == 0 && v.in(vt, vtsize) {
				var tsize int64
				if vtsize >= 4 {
					tsize = min(v.u16(vt+2), v.n-pos)
				}
				v.depth++
				return T{pos, vt, vtsize, tsize}, nil
			}
		}
	}
	return T{}, v.vtableFail(pos)
}

// A Memo is what a generated verifier keeps of the last vtable of its table
// type whose table passed its scalar fields' checks: a table elsewhere with
// that vtable (a writer shares one among a vector's elements) passes them
// too when it lies far enough from the end, aligned alike.
type Memo struct {
	vt, vtsize int64
	ts         int64 // the table size the vtable records (0: none)
	// lim bounds the positions of the tables whose scalar fields and table
	// size, as far as m's went (at least 4 bytes), lie in the buffer: pos
	// < lim (0 while nothing is learned).
	lim int64
	// A table at pos is aligned as m's was when pos&mask == sel: mask 3,
	// or 7 with an 8-byte field.
	mask, sel int64
}

// MemoHit starts the table at pos as [Walk.Start] does and reports true
// when the table's vtable and scalar fields pass their checks as m says
// (the caller then skips them); otherwise it does nothing and reports
// false, and the caller calls Walk.Start. It is small enough to inline.
func (w *Walk) MemoHit(pos int64, m *Memo) (t T, hit bool) {
	v := &w.v
	if pos&m.mask == m.sel && uint64(pos) < uint64(m.lim) &&
		v.objects < v.tabLim && v.depth < v.opt.MaxDepth {
		// 4 bytes at pos lie in the buffer: the vtable offset.
		if t.vt = pos - int64(int32(binary.LittleEndian.Uint32(v.buf[pos:]))); t.vt == m.vt {
			v.objects++
			v.tables++
			v.depth++
			t.pos, t.vtsize, t.tsize = pos, m.vtsize, m.ts
			return t, true
		}
	}
	return
}

// Learn makes m remember the vtable of t, a table whose scalar fields the
// caller found in the buffer and aligned, the furthest ending at table
// offset ext (at least 4), one of them of 8 bytes when has8.
func (w *Walk) Learn(t *T, m *Memo, ext int64, has8 bool) {
	var ts int64
	if t.vtsize >= 4 {
		ts = w.v.u16(t.vt + 2)
	}
	mask := int64(3)
	if has8 {
		mask = 7
	}
	lim := max(w.v.n-max(ext, ts, 4)+1, 0)
	if w.v.f != nil {
		lim = 0 // no hit under Options.Fetch: Start fetches what it reads
	}
	*m = Memo{vt: t.vt, vtsize: t.vtsize, ts: ts, lim: lim, mask: mask, sel: t.pos & mask}
}

// Slots returns the number of field slots of t's vtable.
func (t *T) Slots() int { return int((t.vtsize - 4) / 2) }

// SetVisitor makes the walk tell visit of each table of the types the
// schema marks (visit) once it has verified it and everything it refers to
// (kind: the generated Visit<Table> constant), in the order it meets them:
// a table reached twice is told twice. visit reads the table's fields with
// the walk's [Walk.Uint8], [Walk.Uint32], [Walk.Uint64] and [Walk.Vec], which
// use the vtable the walk found. A walk that fails may have told some
// tables before.
func (w *Walk) SetVisitor(visit func(kind int, t T)) { w.visit = visit }

// Visiting reports whether the walk has a visitor.
func (w *Walk) Visiting() bool { return w.visit != nil }

// Visit tells the visitor of table t of the given kind. (The visitor gets
// a copy: t stays on its verifier's stack.)
func (w *Walk) Visit(kind int, t *T) { w.visit(kind, *t) }

// Uint8, Uint32 and Uint64 return scalar field id of t, a table the walk
// has verified, or def when it is absent.
func (w *Walk) Uint8(t *T, id int, def uint8) uint8 {
	if fo := w.v.slot(t.vt, t.vtsize, id); fo != 0 {
		return w.v.buf[t.pos+fo]
	}
	return def
}

// Uint32 is [Walk.Uint8] for 4-byte fields.
func (w *Walk) Uint32(t *T, id int, def uint32) uint32 {
	if fo := w.v.slot(t.vt, t.vtsize, id); fo != 0 {
		return w.v.u32(t.pos + fo)
	}
	return def
}

// Uint64 is [Walk.Uint8] for 8-byte fields.
func (w *Walk) Uint64(t *T, id int, def uint64) uint64 {
	if fo := w.v.slot(t.vt, t.vtsize, id); fo != 0 {
		return binary.LittleEndian.Uint64(w.v.buf[t.pos+fo:])
	}
	return def
}

// Vec returns the position of the first element of vector (or string)
// field id of t, a table the walk has verified, and its length; ok is
// false when the field is absent.
func (w *Walk) Vec(t *T, id int) (start, n int64, ok bool) {
	if fo := w.v.slot(t.vt, t.vtsize, id); fo != 0 {
		p := t.pos + fo
		q := p + int64(w.v.u32(p))
		return q + 4, int64(w.v.u32(q)), true
	}
	return 0, 0, false
}

// Has reports whether field id of t is present.
func (w *Walk) Has(t *T, id int) bool { return w.v.slot(t.vt, t.vtsize, id) != 0 }

// Leave leaves the table Start entered.
func (w *Walk) Leave() { w.v.depth-- }

// Bare verifies the table at pos as a table with no fields (a union
// member the schema does not know).
func (w *Walk) Bare(pos int64) error {
	_, err := w.Start(pos)
	w.Leave()
	return err
}

// Scalar checks that field id of t, size bytes (1, 2, 4 or 8), lies in
// the buffer, aligned to its size, when present. A field inside the
// table's own bytes (which lie in the buffer) is the common case, a
// comparison and an alignment test; any other is checked against the
// buffer.
func (w *Walk) Scalar(t *T, id int, size int64) error {
	if fo := w.v.slot(t.vt, t.vtsize, id); fo != 0 && (fo+size > t.tsize || (t.pos+fo)&(size-1) != 0) {
		return w.ScalarOutside(t, fo, size)
	}
	return nil
}

// Slot returns the table offset of field id of t (0 when absent): the
// generated verifiers check a scalar field inline, comparing its end with
// t's size and testing its alignment, and call [Walk.ScalarOutside] for
// any other case, as Scalar does.
func (w *Walk) Slot(t *T, id int) int64 { return w.v.slot(t.vt, t.vtsize, id) }

// Size returns the size of t's own bytes as far as they lie in the buffer
// (0 when its vtable records none).
func (t *T) Size() int64 { return t.tsize }

// Pos returns t's position (4-aligned: Start checked it).
func (t *T) Pos() int64 { return t.pos }

// ScalarOutside checks field id of t, size bytes at table offset fo, that
// lies past t's own bytes or is not aligned to its size: against the buffer
// and its size.
func (w *Walk) ScalarOutside(t *T, fo, size int64) error {
	if v := &w.v; (t.pos+fo)&(size-1) != 0 || !v.in(t.pos+fo, size) {
		return v.fieldFail(t.pos, fo, size)
	}
	return nil
}

// NoField is no field id: what a generated verifier's record of the first
// scalar field that failed its checks holds while none has.
const NoField = math.MaxInt32

// ScalarIn reports whether the field of size bytes at table offset fo of t
// lies in the buffer, aligned to its size: the check of a scalar field
// that does not lie aligned in t's own bytes.
func (w *Walk) ScalarIn(t *T, fo, size int64) bool {
	return (t.pos+fo)&(size-1) == 0 && w.v.in(t.pos+fo, size)
}

// ScalarError is the error of scalar field id of t, which [Walk.ScalarIn]
// found outside the buffer or misaligned; desc describes t's table type
// (the field's size and name).
func (w *Walk) ScalarError(t *T, id int, desc *TableDesc) error {
	for _, f := range desc.Fields {
		if f.ID == id {
			return w.At(w.ScalarOutside(t, w.v.slot(t.vt, t.vtsize, id), int64(f.Size)), f.Name, -1)
		}
	}
	panic("fbverify: ScalarError of a field the table's description lacks")
}

// Ref follows the offset field id of t and returns its target; 0 when the
// field is absent (an error when required).
func (w *Walk) Ref(t *T, id int, required bool) (int64, error) {
	v := &w.v
	fo := v.slot(t.vt, t.vtsize, id)
	if fo == 0 {
		if required {
			return 0, w.Missing(t)
		}
		return 0, nil
	}
	if fo&3 != 0 || !v.in(t.pos+fo, 4) {
		return 0, v.fieldFail(t.pos, fo, 4)
	}
	return v.deref(t.pos + fo)
}

// RefAt is Ref's common case, inline in the generated verifiers: the
// offset field at table offset fo of t (from [Walk.Slot]) inside t's own
// bytes, whose target lies in the buffer. It returns the target and true;
// false in any other case (an absent field too), which the caller leaves
// to Ref.
func (w *Walk) RefAt(t *T, fo int64) (int64, bool) {
	if fo != 0 && fo+4 <= t.tsize && fo&3 == 0 {
		v := &w.v
		p := t.pos + fo
		off := int64(v.u32(p))
		if q := p + off; off != 0 && q < v.n {
			return q, true
		}
	}
	return 0, false
}

// VectorAt is Vector's common case, inline in the generated verifiers:
// the object limit not reached and the vector inside the buffer. It counts
// the vector and returns the position of its first element, its length
// and true; false in any other case, which the caller leaves to Vector.
func (w *Walk) VectorAt(pos, elem int64) (start, n int64, ok bool) {
	v := &w.v
	if v.objects < v.opt.MaxObjects && pos&3 == 0 && uint64(pos) < uint64(v.lim4) {
		// n < 2^32 and elem < 2^31: the product does not overflow.
		if n, start = int64(v.u32(pos)), pos+4; uint64(n)*uint64(elem) <= uint64(v.n-start) {
			v.objects++
			v.vbytes += n * elem
			return start, n, true
		}
	}
	return 0, 0, false
}

// Vector checks the vector at pos of elem-byte elements and returns the
// position of its first element and its length.
func (w *Walk) Vector(pos, elem int64) (start, n int64, err error) { return w.v.vector(pos, elem) }

// String checks the string at pos.
func (w *Walk) String(pos int64) error {
	if w.StringAt(pos) {
		return nil
	}
	return w.v.str(pos)
}

// StringAt is String's common case, inline in the generated verifiers: the
// object limit not reached, the string inside the buffer, its NUL too. It
// counts the string and reports true; false in any other case, which the
// caller leaves to String.
func (w *Walk) StringAt(pos int64) bool {
	v := &w.v
	if v.objects < v.opt.MaxObjects && pos&3 == 0 && uint64(pos) < uint64(v.lim4) {
		n := int64(v.u32(pos))
		if end := pos + 4 + n; end < v.n && v.buf[end] == 0 {
			v.objects++
			v.vbytes += n
			return true
		}
	}
	return false
}

// DerefAt is Deref's common case, inline in the generated verifiers: the
// offset at q inside the buffer, its target in it. It returns the target
// and true; false in any other case, which the caller leaves to Deref.
func (w *Walk) DerefAt(q int64) (int64, bool) {
	v := &w.v
	if uint64(q) < uint64(v.lim4) {
		off := int64(v.u32(q))
		if t := q + off; off != 0 && t < v.n {
			return t, true
		}
	}
	return 0, false
}

// Deref follows the offset at q, an element of a verified vector of tables
// or strings, in 64-bit arithmetic (an offset of 0 only under
// Options.CxxRules).
func (w *Walk) Deref(q int64) (int64, error) { return w.v.elemDeref(q) }

// Union reads the union whose tag is field id of t and value field id+1:
// its tag (0, NONE, when absent) and the value's target (0 for NONE, and
// for a tag without a value, which only Options.CxxRules accepts). The
// value's offset is checked whatever the tag.
func (w *Walk) Union(t *T, id int) (tag int, pos int64, err error) {
	return w.UnionAt(t, w.v.slot(t.vt, t.vtsize, id), w.v.slot(t.vt, t.vtsize, id+1))
}

// UnionAt is [Walk.Union] with the table offsets of the union's tag (to)
// and value (vo) read from t's vtable by the caller (0: absent).
func (w *Walk) UnionAt(t *T, to, vo int64) (tag int, pos int64, err error) {
	if tag, pos, ok := w.UnionHit(t, to, vo); ok {
		if tag == 0 {
			pos = 0
		}
		return tag, pos, nil
	}
	return w.union(t, to, vo)
}

// UnionHit is UnionAt's common case, small enough for the compiler to
// inline: the tag and the value inside t's own bytes, the value aligned
// and its target in the buffer. It returns the tag, the value's target
// and true; false in any other case, which the caller leaves to UnionAt.
func (w *Walk) UnionHit(t *T, to, vo int64) (tag int, pos int64, ok bool) {
	if to != 0 && vo != 0 && to < t.tsize && vo+4 <= t.tsize && vo&3 == 0 {
		p := t.pos + vo
		if q := p + int64(binary.LittleEndian.Uint32(w.v.buf[p:])); q != p && q < w.v.n {
			return int(w.v.buf[t.pos+to]), q, true
		}
	}
	return 0, 0, false
}

// union is Union for any case but the common one.
func (w *Walk) union(t *T, to, vo int64) (tag int, pos int64, err error) {
	v := &w.v
	if to != 0 {
		if !v.in(t.pos+to, 1) {
			return 0, 0, v.fail(t.pos+to, "union tag lies outside the FlatBuffer (want it before %#x)", v.opt.Base+v.n)
		}
		tag = int(v.buf[t.pos+to])
	}
	if vo != 0 {
		if vo&3 != 0 || !v.in(t.pos+vo, 4) {
			return 0, 0, v.fieldFail(t.pos, vo, 4)
		}
		if pos, err = v.deref(t.pos + vo); err != nil {
			return 0, 0, err
		}
	}
	switch {
	case tag == 0:
		return 0, 0, nil
	case vo == 0 && !v.opt.CxxRules:
		return 0, 0, v.fail(t.pos, "union tag %d has no value (want a value offset with any tag but NONE)", tag)
	}
	return tag, pos, nil
}

// UnknownTag is the error of a union tag past the n-1 known members of
// union field id of t.
func (w *Walk) UnknownTag(t *T, id, tag, n int) error {
	v := &w.v
	return v.fail(t.pos+v.slot(t.vt, t.vtsize, id), "unknown union tag %d (known: 1..%d)", tag, n-1)
}

// At records, as the error travels up, that it was met in field name
// (idx < 0) or in element idx of the vector the field holds.
func (w *Walk) At(err error, name string, idx int) error {
	w.v.path = append(w.v.path, frame{name, idx})
	return err
}

// Fail is the error of the object at pos, for a walk of the caller's own:
// At adds the path to it as it returns, Finish completes it.
func (w *Walk) Fail(pos int64, msg string, args ...any) error { return w.v.fail(pos, msg, args...) }

// Finish completes an error that stopped a walk of the caller's own
// (made of Start, Ref, Vector, ... and At as it returns) whose root table
// type is named root: the field path it collected goes into the
// *format.FormatError. Other errors are returned as they are.
func (w *Walk) Finish(err error, root string) error {
	w.v.depth = 0
	return w.v.finish(err, root)
}

// Verify verifies the buffer from its root table with verify, the
// generated verifier of the root type named name.
func (w *Walk) Verify(name string, verify func(*Walk, int64) error) error {
	v := &w.v
	v.depth = 0
	if int64(len(v.buf)) > MaxSize {
		return v.fail(0, "FlatBuffer of %d bytes exceeds the 2 GiB FlatBuffer limit", len(v.buf))
	}
	if len(v.buf) < 8 {
		return v.fail(0, "FlatBuffer of %d bytes is shorter than its 8-byte prefix (want at least 8 bytes)", len(v.buf))
	}
	pos, err := v.deref(0)
	if err == nil {
		err = verify(w, pos)
	}
	return v.finish(err, name)
}

// Elem verifies, with verify (the generated verifier of the table type
// named name), the table that element i of a lazy vector refers to (its
// first element at start), as a walk that is not lazy does: the offset is
// followed in 64-bit arithmetic. depth is the table's nesting depth (the
// root table's is 1). It returns the table's position.
func (w *Walk) Elem(start int64, i int, name string, verify func(*Walk, int64) error, depth int) (int64, error) {
	v := &w.v
	v.depth = depth - 1
	pos, err := v.elemDeref(start + 4*int64(i))
	if err == nil {
		err = verify(w, pos)
	}
	v.depth = 0
	return pos, v.finish(err, name)
}

// Missing is the error of a required field that t lacks.
func (w *Walk) Missing(t *T) error {
	return w.v.fail(t.pos, "required field is missing (the schema says it must be present)")
}

// StringField verifies the string field id of t.
func (w *Walk) StringField(t *T, id int, required bool) error {
	q, err := w.Ref(t, id, required)
	if err != nil || q == 0 {
		return err
	}
	return w.v.str(q)
}

// VectorField verifies the vector field id of t, of elem-byte elements,
// and returns the position of its first element and its length (0, 0 when
// absent).
func (w *Walk) VectorField(t *T, id int, required bool, elem int64) (start, n int64, err error) {
	q, err := w.Ref(t, id, required)
	if err != nil || q == 0 {
		return 0, 0, err
	}
	return w.v.vector(q, elem)
}

// TableField verifies the table field id of t with verify.
func (w *Walk) TableField(t *T, id int, required bool, verify func(*Walk, int64) error) error {
	q, err := w.Ref(t, id, required)
	if err != nil || q == 0 {
		return err
	}
	return verify(w, q)
}

// Elements verifies the n elements of a vector of offsets whose first
// element is at start: each a table verify verifies, or a string when
// verify is nil.
func (w *Walk) Elements(start, n int64, verify func(*Walk, int64) error) error {
	for i := int64(0); i < n; i++ {
		e, err := w.v.elemDeref(start + 4*i)
		if err == nil {
			if verify == nil {
				err = w.v.str(e)
			} else {
				err = verify(w, e)
			}
		}
		if err != nil {
			return w.At(err, "", int(i))
		}
	}
	return nil
}

// UnionField verifies the union field id of t (tag at id, value at id+1),
// whose members are tags 1..n: members verifies the value of one of them;
// open verifies an unknown tag's value as a table without fields instead
// of refusing it.
func (w *Walk) UnionField(t *T, id int, required, open bool, n int, members func(w *Walk, tag int, pos int64) error) error {
	tag, q, err := w.Union(t, id)
	switch {
	case err != nil:
		return err
	case tag == 0 && required:
		return w.Missing(t)
	case tag == 0 || q == 0:
		return nil
	case tag <= n:
		return members(w, tag, q)
	case open:
		return w.Bare(q)
	}
	return w.UnknownTag(t, id, tag, n+1)
}
