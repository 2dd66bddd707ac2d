// Package fbverify checks that a FlatBuffer is safe to read with the
// generated Go accessors, which have no bounds checks of their own and panic
// (or read garbage) on a bad offset.
//
// A schema is described once as a graph of *Table values (cycles allowed,
// e.g. an RTen Graph inside an If operator inside a Graph). Verify walks
// every table, vector, string and union reachable from the root through the
// described fields and checks, with 64-bit arithmetic:
//
//   - every offset lands inside the buffer, and every object fits in it;
//   - vtables are well formed (even size >= 4, inside the buffer), and every
//     described field lies inside its table's inline size;
//   - vector lengths fit the remaining buffer (so a claimed 2^31 elements is
//     an error before anything is allocated or looped over);
//   - strings are NUL-terminated;
//   - union tags are known (or explicitly allowed) and carry a value;
//   - required fields are present;
//   - nesting depth is bounded, and so is the total number of objects
//     visited (a DAG of shared tables cannot make verification exponential).
//
// What it does not check is meaning: indices, sizes and offsets into the
// file's segments are the format packages' business.
package fbverify

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeload/edgeload/loader/format"
)

// Kind is the wire shape of a field.
type Kind uint8

// The field kinds.
const (
	Scalar       Kind = iota + 1 // a fixed-size scalar of Size bytes, stored inline
	String                       // an offset to a string
	TableRef                     // an offset to a table described by Table
	ScalarVector                 // an offset to a vector of Size-byte scalars
	TableVector                  // an offset to a vector of offsets to Table tables
	StringVector                 // an offset to a vector of offsets to strings
	Union                        // a u8 tag at ID and an offset at ID+1; tag k selects Union[k]
)

// Field describes one field of a table. ID is the field's id (its position
// in the schema); a union occupies ID (its tag) and ID+1 (its value).
type Field struct {
	Name     string
	ID       int
	Kind     Kind
	Size     int      // Scalar and ScalarVector: element size in bytes
	Table    *Table   // TableRef and TableVector: the target table
	Union    []*Table // Union: the table for each tag; index 0 (NONE) unused; nil = unknown tag
	Required bool     // absent is an error
	// AllowUnknown accepts union tags past the known ones (or whose entry is
	// nil), verifying their value only as a table with no described fields.
	// Use it where a format appends union members (RTen operator attributes).
	AllowUnknown bool
	// Deferred (TableVector only) verifies the vector but not its
	// elements: the caller verifies each element itself, with [Walk.Elem]
	// or its own code that checks the same things (and counts the same
	// objects with [Walk.Count]).
	Deferred bool
}

// Table describes a table: its name (for error paths) and the fields the
// loaders read. Fields that are not described are never read, so they are
// not verified beyond the vtable.
type Table struct {
	Name   string
	Fields []Field
}

// Options tune a verification.
type Options struct {
	// Format names the format in errors ("pte", "ptd", "rten").
	Format string
	// Base is the file offset of buf[0]; errors report Base+position.
	Base int64
	// MaxDepth bounds table nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// MaxObjects bounds the number of tables, vectors and strings visited;
	// 0 means len(buf)/2 + 1024, which no tree-shaped buffer reaches (every
	// object takes at least 4 bytes of its own plus a 4-byte reference).
	MaxObjects int
	// CacheVTables verifies a table whose vtable a table of its type was
	// verified through last with one range check for all its fields. It
	// changes no outcome; it pays where a buffer holds many tables of a
	// type (a .ptd's entries, an .rten's nodes), and costs a little where
	// types seldom repeat.
	CacheVTables bool
}

// DefaultMaxDepth is the nesting limit when Options.MaxDepth is 0.
const DefaultMaxDepth = 128

// MaxSize is the largest FlatBuffer: offsets are 32-bit, and the Go runtime
// converts positions to int32 when it follows a vtable.
const MaxSize = math.MaxInt32

var bare = &Table{Name: "table"}

// Verify checks the buffer whose root table (offset at buf[0:4]) is
// described by root. It returns nil or a *format.FormatError naming the
// path of the bad field, e.g. "Program.execution_plan[0].values[3].val".
func Verify(buf []byte, root *Table, opt Options) error {
	return NewWalk(buf, opt).Root(root)
}

// finish completes the error that stopped a walk: the path of the bad
// field was collected frame by frame as the error travelled up (nothing is
// recorded on the way down, so a good buffer costs no bookkeeping).
func (v *verifier) finish(err error, root string) error {
	if err == nil || v.err == nil {
		return err
	}
	v.path = append(v.path, frame{root, -1})
	slices.Reverse(v.path)
	v.err.Field = v.pathString()
	return err
}

// A Walk is a verification that a caller continues itself: it verifies
// from the root with [Walk.Root] (skipping Deferred fields), then the
// caller verifies the deferred elements with [Walk.Elem] or with its own
// checks, charging every object it visits with [Walk.Count], so that the
// object limit applies to the whole buffer exactly as in [Verify].
type Walk struct {
	v    *verifier
	lazy bool
}

// NewWalk starts a verification of buf.
func NewWalk(buf []byte, opt Options) *Walk {
	return &Walk{v: newVerifier(buf, opt)}
}

// Root verifies the buffer from its root table, as [Verify] does.
func (w *Walk) Root(root *Table) error {
	v := w.v
	if int64(len(v.buf)) > MaxSize {
		return v.fail(0, "FlatBuffer of %d bytes exceeds the 2 GiB FlatBuffer limit", len(v.buf))
	}
	if len(v.buf) < 8 {
		return v.fail(0, "FlatBuffer of %d bytes is shorter than its 8-byte prefix (want at least 8 bytes)", len(v.buf))
	}
	pos, err := v.deref(0)
	if err == nil {
		err = v.table(pos, root)
	}
	return v.finish(err, root.Name)
}

// Elem verifies the table that element i of a Deferred vector of
// tables refers to (the vector's first element at start), described by t,
// as the walk from the root verifies an element it does not defer: the
// element's offset is followed with 64-bit arithmetic and its target
// checked against the buffer. depth is the table's nesting depth (the
// root table is at depth 1). It returns the table's position; its errors
// name the field path from t.
func (w *Walk) Elem(start int64, i int, t *Table, depth int) (int64, error) {
	v := w.v
	v.depth = depth - 1
	pos, err := v.deref(start + 4*int64(i))
	if err == nil {
		err = v.table(pos, t)
	}
	v.depth = 0
	return pos, v.finish(err, t.Name)
}

// Count charges n objects the caller verified itself; [Walk.Left] then
// says whether the walk is still within Options.MaxObjects.
func (w *Walk) Count(n int) { w.v.objects += n }

// Left returns how many more objects the walk may visit within
// Options.MaxObjects (negative once it has visited more).
func (w *Walk) Left() int { return w.v.opt.MaxObjects - w.v.objects }

// RootFieldSlots returns the number of field slots in the root table's
// vtable (how many field ids its writer knew of, less trailing absent
// ones). Format packages use it to tell schema generations apart. It
// checks only what it reads.
func RootFieldSlots(buf []byte, opt Options) (int, error) {
	v := newVerifier(buf, opt)
	if len(buf) < 8 || int64(len(buf)) > MaxSize {
		return 0, v.fail(0, "FlatBuffer of %d bytes is not of a valid size", len(buf))
	}
	pos, err := v.deref(0)
	if err != nil {
		return 0, err
	}
	vt, vtsize, _, err := v.vtable(pos)
	if err != nil {
		return 0, err
	}
	_ = vt
	return int((vtsize - 4) / 2), nil
}

type frame struct {
	name string
	idx  int // -1: not an element
}

type verifier struct {
	buf     []byte
	n       int64
	opt     Options
	depth   int
	objects int
	// path is filled only on failure, innermost frame first, as the error
	// returns through the walk; err is the error it belongs to.
	path []frame
	err  *format.FormatError

	// cache holds the vtables tables were last verified through; nil
	// when Options.CacheVTables is off (every table the general way).
	cache *vtCache
}

// vtCache holds, for cacheSlots table types (replaced in turn), the
// vtable a table of the type was last verified through.
type vtCache struct {
	seen [cacheSlots]vtSeen
	next int
}

// FlatBuffers writers share one vtable among the tables of a type that
// have the same fields, so the hundreds of tables of one type in a model
// use a handful of vtables. A table whose vtable is one a table of its
// type was verified through has its fields at the same offsets: one range
// check covers its inline size and every field, and only its references
// need following. Whatever fails that check goes the general way, which
// reports it as before, so the cache changes no outcome and no error.
const (
	cacheSlots = 8
	maxRefs    = 12 // tables with more reference fields are not cached
)

// vtSeen is what a vtable says of the tables of type t that use it.
type vtSeen struct {
	t                 *Table
	vt, vtsize, tsize int64
	need              int64 // a table at pos and its fields lie in the buffer iff in(pos, need)
	nrefs             int
	refs              [maxRefs]uint8  // the fields to follow (indices in t.Fields), in order
	refFo             [maxRefs]uint16 // their table offsets (0 for a union: union finds its own)
	// leaf reports that every field to follow is a string or a vector of
	// scalars (no table below can replace this entry); elem holds their
	// element sizes, 0 for a string.
	leaf bool
	elem [maxRefs]int64
}

// seenFor returns what the cache holds for tables of type t, or nil.
func (v *verifier) seenFor(t *Table) *vtSeen {
	if v.cache == nil {
		return nil
	}
	for i := range v.cache.seen {
		if v.cache.seen[i].t == t {
			return &v.cache.seen[i]
		}
	}
	return nil
}

// remember records the vtable at vt (vtsize bytes, tables of tsize bytes)
// through which a table of type t has just been verified.
func (v *verifier) remember(t *Table, vt, vtsize, tsize int64) {
	if v.cache == nil || len(t.Fields) > 256 {
		return
	}
	c := vtSeen{t: t, vt: vt, vtsize: vtsize, tsize: tsize, need: tsize, leaf: true}
	for i := range t.Fields {
		f := &t.Fields[i]
		if f.Kind == Union {
			c.leaf = false
			if c.nrefs == maxRefs {
				return
			}
			c.refs[c.nrefs] = uint8(i)
			c.nrefs++
			continue
		}
		fo := v.slot(vt, vtsize, f.ID)
		if fo == 0 {
			continue
		}
		size := int64(4)
		if f.Kind == Scalar {
			size = int64(f.Size)
		} else {
			if c.nrefs == maxRefs {
				return
			}
			c.refs[c.nrefs], c.refFo[c.nrefs] = uint8(i), uint16(fo)
			switch f.Kind {
			case String:
				c.elem[c.nrefs] = 0
			case ScalarVector:
				c.elem[c.nrefs] = int64(f.Size)
			default:
				c.leaf = false
			}
			c.nrefs++
		}
		c.need = max(c.need, fo+size)
	}
	slot := v.seenFor(t)
	if slot == nil {
		vc := v.cache
		slot = &vc.seen[vc.next]
		vc.next = (vc.next + 1) % cacheSlots
	}
	*slot = c
}

func newVerifier(buf []byte, opt Options) *verifier {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = DefaultMaxDepth
	}
	if opt.MaxObjects <= 0 {
		opt.MaxObjects = len(buf)/2 + 1024
	}
	v := verifier{buf: buf, n: int64(len(buf)), opt: opt}
	if !opt.CacheVTables {
		return &v
	}
	// With its cache, in one allocation: a verifier without one (a .pte's)
	// zeroes none of it.
	w := &struct {
		verifier
		c vtCache
	}{verifier: v}
	w.cache = &w.c
	return &w.verifier
}

// at records, on the way up, that the failing object was field name (idx
// < 0) or element idx of its parent, and passes err on.
func (v *verifier) at(err error, name string, idx int) error {
	v.path = append(v.path, frame{name, idx})
	return err
}

func (v *verifier) pathString() string {
	var b strings.Builder
	for i, f := range v.path {
		if i > 0 && f.idx < 0 {
			b.WriteByte('.')
		}
		if f.idx < 0 {
			b.WriteString(f.name)
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (v *verifier) fail(pos int64, msg string, args ...any) error {
	v.err = &format.FormatError{
		Format: v.opt.Format,
		Offset: v.opt.Base + pos,
		Msg:    fmt.Sprintf(msg, args...),
	}
	v.path = v.path[:0]
	return v.err
}

// The checks a valid buffer passes come first, in a few instructions
// each; the messages of those that fail are built by functions of their
// own (derefFail, tooMany, vtableFail, fieldOutside, vectorFail), which
// make the same checks again in the same order, so that the common path
// keeps few values live across calls (TestOutcomesUnchanged checks that
// the outcomes are those of the plain checks).

// in reports whether [pos, pos+size) lies inside the buffer. (As
// unsigned numbers a negative pos or size is above any length; with pos
// at most n, n-pos is not negative.)
func (v *verifier) in(pos, size int64) bool {
	return uint64(pos) <= uint64(v.n) && uint64(size) <= uint64(v.n-pos)
}

func (v *verifier) u32(pos int64) uint32 { return binary.LittleEndian.Uint32(v.buf[pos : pos+4]) }
func (v *verifier) u16(pos int64) int64  { return int64(binary.LittleEndian.Uint16(v.buf[pos : pos+2])) }

// deref follows the unsigned offset stored at pos.
func (v *verifier) deref(pos int64) (int64, error) {
	if v.in(pos, 4) {
		off := int64(v.u32(pos))
		if t := pos + off; off != 0 && t < v.n {
			return t, nil
		}
	}
	return 0, v.derefFail(pos)
}

// derefFail reports why the offset at pos cannot be followed.
func (v *verifier) derefFail(pos int64) error {
	if !v.in(pos, 4) {
		return v.fail(pos, "offset field runs past the end of the FlatBuffer (%d bytes); want 4 bytes inside it", v.n)
	}
	off := int64(v.u32(pos))
	if off == 0 {
		return v.fail(pos, "offset 0 points at itself (want a positive offset)")
	}
	t := pos + off
	return v.fail(pos, "offset %d points to %#x, past the end of the FlatBuffer (%d bytes); want a target below %#x", off, v.opt.Base+t, v.n, v.opt.Base+v.n)
}

// enter counts one more object against Options.MaxObjects.
func (v *verifier) enter(pos int64) error {
	v.objects++
	if v.objects > v.opt.MaxObjects {
		return v.tooMany(pos)
	}
	return nil
}

//go:noinline (keeps enter small enough to inline)
func (v *verifier) tooMany(pos int64) error {
	return v.fail(pos, "more than %d objects: shared or looping references (want at most %d, one per 2 bytes of FlatBuffer)", v.opt.MaxObjects, v.opt.MaxObjects)
}

// vtable checks the table header at pos and its vtable.
func (v *verifier) vtable(pos int64) (vt, vtsize, tsize int64, err error) {
	if v.in(pos, 4) {
		vt = pos - int64(int32(v.u32(pos)))
		if v.in(vt, 4) {
			vtsize, tsize = v.u16(vt), v.u16(vt+2)
			if vtsize >= 4 && vtsize%2 == 0 && v.in(vt, vtsize) && tsize >= 4 && v.in(pos, tsize) {
				return vt, vtsize, tsize, nil
			}
		}
	}
	return 0, 0, 0, v.vtableFail(pos)
}

// vtableFail reports what is wrong with the table header at pos or its
// vtable.
func (v *verifier) vtableFail(pos int64) error {
	if !v.in(pos, 4) {
		return v.fail(pos, "table runs past the end of the FlatBuffer (want 4 bytes before %#x)", v.opt.Base+v.n)
	}
	vt := pos - int64(int32(v.u32(pos)))
	if !v.in(vt, 4) {
		return v.fail(pos, "vtable offset points to %#x, outside the FlatBuffer (want [%#x, %#x))", v.opt.Base+vt, v.opt.Base, v.opt.Base+v.n)
	}
	vtsize, tsize := v.u16(vt), v.u16(vt+2)
	if vtsize < 4 || vtsize%2 != 0 || !v.in(vt, vtsize) {
		return v.fail(vt, "bad vtable size %d (want an even size >= 4 inside the FlatBuffer)", vtsize)
	}
	// (tsize < 4 or the table runs past the end: what vtable found.)
	return v.fail(pos, "table size %d runs past the end of the FlatBuffer (want at least 4 and at most %d)", tsize, v.n-pos)
}

func (v *verifier) table(pos int64, t *Table) error {
	if err := v.enter(pos); err != nil {
		return err
	}
	if v.depth >= v.opt.MaxDepth {
		return v.fail(pos, "tables nested more than %d deep (want at most %d levels)", v.opt.MaxDepth, v.opt.MaxDepth)
	}
	if c := v.seenFor(t); c != nil && v.in(pos, 4) && pos-int64(int32(v.u32(pos))) == c.vt && v.in(pos, c.need) {
		// A vtable seen before: every field lies in the buffer.
		if c.leaf && v.leaf(pos, c) {
			return nil
		}
		// (A copy: the tables below may replace the cache entry.)
		c := *c
		v.depth++
		for k, i := range c.refs[:c.nrefs] {
			f := &t.Fields[i]
			// Present, and inside the buffer: c.need covers it.
			if err := v.field(pos, c.tsize, c.vt, c.vtsize, f, int64(c.refFo[k])); err != nil {
				v.depth--
				return v.at(err, f.Name, -1)
			}
		}
		v.depth--
		return nil
	}
	vt, vtsize, tsize, err := v.vtable(pos)
	if err != nil {
		return err
	}
	v.depth++
	for i := range t.Fields {
		f := &t.Fields[i]
		if err := v.field(pos, tsize, vt, vtsize, f, 0); err != nil {
			v.depth--
			return v.at(err, f.Name, -1)
		}
	}
	v.depth--
	v.remember(t, vt, vtsize, tsize)
	return nil
}

// leaf verifies the strings and scalar vectors of the table at pos, whose
// vtable c describes, and reports whether they all lie in the buffer.
// When one does not it leaves the object count as it found it, so that the
// general way verifies the table again and reports what is wrong.
func (v *verifier) leaf(pos int64, c *vtSeen) bool {
	objects := v.objects
	for k := range c.nrefs {
		p := pos + int64(c.refFo[k]) // in the buffer: c.need covers it
		off := int64(v.u32(p))
		q := p + off
		v.objects++
		if off == 0 || q > v.n-4 || v.objects > v.opt.MaxObjects {
			v.objects = objects
			return false
		}
		n, elem := int64(v.u32(q)), c.elem[k]
		start := q + 4
		ok := uint64(n)*uint64(elem) <= uint64(v.n-start) // n < 2^32, elem < 2^31: no overflow
		if elem == 0 {
			// A string: its bytes and a NUL after them.
			ok = n < v.n-start && v.buf[start+n] == 0
		}
		if !ok {
			v.objects = objects
			return false
		}
	}
	return true
}

// slot returns the table offset of field id from the vtable at vt of
// vtsize bytes; 0 when absent.
func (v *verifier) slot(vt, vtsize int64, id int) int64 {
	e := 4 + 2*int64(id)
	if e+2 > vtsize {
		return 0
	}
	return v.u16(vt + e)
}

// field verifies field f of the table at pos. known is its table offset
// when the vtable cache knows it to be present and inside the buffer (the
// checks are then skipped), 0 otherwise.
func (v *verifier) field(pos, tsize, vt, vtsize int64, f *Field, known int64) error {
	if f.Kind == Union {
		return v.union(pos, vt, vtsize, f)
	}
	fo := known
	if fo == 0 {
		if fo = v.slot(vt, vtsize, f.ID); fo == 0 {
			if f.Required {
				return v.fail(pos, "required field is missing (the schema says it must be present)")
			}
			return nil
		}
		size := int64(4)
		if f.Kind == Scalar {
			size = int64(f.Size)
		}
		// Check the field against the buffer, as the reference verifier
		// does, not against the table's inline size: flatc's JSON path
		// writes object sizes that do not cover an 8-byte field at offset
		// 4 (real .pte files: DataSegment, Int, Double tables), and the
		// accessors only need the bytes to be in the buffer.
		if !v.in(pos+fo, size) {
			return v.fieldOutside(pos, fo, size, tsize)
		}
	}
	p := pos + fo
	switch {
	case f.Kind == Scalar:
		return nil
	case f.Kind < String || f.Kind > StringVector:
		return v.fail(pos, "fbverify: field kind %d not handled", f.Kind)
	}
	// An offset, whose 4 bytes lie in the buffer (checked above): deref
	// without its range check.
	off := int64(v.u32(p))
	t := p + off
	if off == 0 || t >= v.n {
		return v.derefFail(p)
	}
	switch f.Kind {
	case String:
		return v.str(t)
	case TableRef:
		return v.table(t, f.Table)
	case ScalarVector:
		_, _, err := v.vector(t, int64(f.Size))
		return err
	}
	// TableVector, StringVector.
	start, n, err := v.vector(t, 4)
	if err != nil || f.Deferred {
		return err
	}
	for i := int64(0); i < n; i++ {
		// The element's offset lies in the vector, so in the buffer.
		q := start + 4*i
		off := int64(v.u32(q))
		e := q + off
		if off == 0 || e >= v.n {
			err = v.derefFail(q)
		} else if f.Kind == TableVector {
			err = v.table(e, f.Table)
		} else {
			err = v.str(e)
		}
		if err != nil {
			return v.at(err, "", int(i))
		}
	}
	return nil
}

//go:noinline (keeps field's frame small)
func (v *verifier) fieldOutside(pos, fo, size, tsize int64) error {
	return v.fail(pos+fo, "field at table offset %d (%d bytes) lies outside the FlatBuffer (table of %d bytes); want it to end by %#x", fo, size, tsize, v.opt.Base+v.n)
}

func (v *verifier) union(pos, vt, vtsize int64, f *Field) error {
	to, vo := v.slot(vt, vtsize, f.ID), v.slot(vt, vtsize, f.ID+1)
	tag := 0
	if to != 0 {
		if !v.in(pos+to, 1) {
			return v.fail(pos+to, "union tag lies outside the FlatBuffer (want it before %#x)", v.opt.Base+v.n)
		}
		tag = int(v.buf[pos+to])
	}
	if tag == 0 {
		return nil // NONE: the value is never read
	}
	if vo == 0 {
		return v.fail(pos, "union tag %d has no value (want a value offset with any tag but NONE)", tag)
	}
	if !v.in(pos+vo, 4) {
		return v.fail(pos+vo, "union value lies outside the FlatBuffer (want it before %#x)", v.opt.Base+v.n)
	}
	t, err := v.deref(pos + vo)
	if err != nil {
		return err
	}
	var target *Table
	if tag < len(f.Union) {
		target = f.Union[tag]
	}
	if target == nil {
		if !f.AllowUnknown {
			return v.fail(pos+to, "unknown union tag %d (known: 1..%d)", tag, len(f.Union)-1)
		}
		target = bare
	}
	return v.table(t, target)
}

// vector checks a vector header at pos with elements of size elem (0 <=
// elem < 2^31: a schema's scalar size, or 4) and returns the position of
// its first element and its length.
func (v *verifier) vector(pos, elem int64) (start, n int64, err error) {
	if err := v.enter(pos); err != nil {
		return 0, 0, err
	}
	if v.in(pos, 4) {
		// n < 2^32 and elem < 2^31: the product does not overflow.
		if n, start = int64(v.u32(pos)), pos+4; uint64(n)*uint64(elem) <= uint64(v.n-start) {
			return start, n, nil
		}
	}
	return 0, 0, v.vectorFail(pos, elem)
}

// vectorFail reports why the vector at pos does not lie in the buffer.
func (v *verifier) vectorFail(pos, elem int64) error {
	if !v.in(pos, 4) {
		return v.fail(pos, "vector length runs past the end of the FlatBuffer (want 4 bytes before %#x)", v.opt.Base+v.n)
	}
	n := int64(v.u32(pos))
	start := pos + 4
	return v.fail(pos, "vector of %d elements of %d bytes runs past the end of the FlatBuffer (%d bytes left: want at most %d elements)", n, elem, v.n-start, (v.n-start)/elem)
}

func (v *verifier) str(pos int64) error {
	start, n, err := v.vector(pos, 1)
	if err != nil {
		return err
	}
	if end := start + n; end < v.n && v.buf[end] == 0 {
		return nil
	}
	return v.fail(pos, "string of %d bytes has no NUL terminator (want a 0 byte at %#x)", n, v.opt.Base+start+n)
}
