// Package fbverify holds the steps of FlatBuffer verification, of which
// the verifiers internal/schema/fbgen generates (one straight-line function
// per table) are made. It checks, in 64-bit arithmetic, what the C++
// flatbuffers::Verifier checks with its default options: offsets non-zero,
// below 2^31 and inside the buffer; tables, vtables, fields, vectors and
// strings aligned and inside it (the table size a vtable records is not
// checked: readers never use it); strings NUL-terminated; union values
// verified as their tag's member, their offset whatever the tag; required
// fields present; nesting depth, tables and objects visited bounded (so
// shared tables cannot make a walk exponential). By default it also
// refuses a union tag without a value and a zero offset in a vector of
// tables or strings, which Options.CxxRules accepts. It does not check
// meaning: indices and offsets into a file's segments are the format
// packages' business.
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

// Options tune a verification.
type Options struct {
	// Format names the format in errors ("pte", "ptd", "rten").
	Format string
	// Base is the file offset of buf[0]; errors report Base+position.
	Base int64
	// MaxDepth bounds table nesting; 0 means DefaultMaxDepth.
	MaxDepth int
	// AtEOF says the buffer ends where the file ends (a format whose
	// FlatBuffer has no recorded length runs to the end of the file): an
	// object past its end then means a file cut short, and the error wraps
	// ErrTruncated.
	AtEOF bool
	// MaxObjects bounds the number of tables, vectors and strings visited;
	// 0 means len(buf)/2 + 1024, which no tree-shaped buffer reaches (every
	// object takes at least 4 bytes of its own plus a 4-byte reference).
	MaxObjects int
	// MaxTables bounds the number of tables visited (a shared table counts
	// once per visit, as in the C++ Verifier, whose default bound is
	// 1,000,000); 0 means no bound but MaxObjects.
	MaxTables int
	// CxxRules accepts what the C++ Verifier accepts and the default
	// refuses: a union tag without a value (a reader sees no value), and an
	// element of a vector of tables or strings whose offset is 0 (the object
	// starts at the element itself: a table whose vtable has size 0, or an
	// empty string when the next byte is 0).
	CxxRules bool
	// Fetch, when not nil, makes buf a sparse copy of the FlatBuffer: before
	// the walk first reads bytes, or accepts a table, string or vector whose
	// bytes its caller reads, it calls Fetch to fill the pages of buf they
	// lie on ([lo, hi), whole pages of 1<<FetchPageShift bytes clipped to
	// buf) that it has not filled before. The elements of vectors of 1-byte
	// elements are left unfilled until [Walk.FetchBytes]; a table's fields
	// are filled as far as 8 bytes past their offsets (no larger structs).
	// An error of Fetch ends the walk with that error.
	Fetch func(lo, hi int64) error
}

// DefaultMaxDepth is the nesting limit when Options.MaxDepth is 0.
const DefaultMaxDepth = 128

// MaxSize is the largest FlatBuffer: offsets are 32-bit, and the Go runtime
// converts positions to int32 when it follows a vtable.
const MaxSize = math.MaxInt32

// finish completes the error that stopped a walk with the path of the bad
// field, collected frame by frame as the error travelled up.
func (v *verifier) finish(err error, root string) error {
	if err != nil && v.f != nil && v.f.err != nil {
		return v.f.err
	}
	if err == nil || v.err == nil {
		return err
	}
	v.path = append(v.path, frame{root, -1})
	slices.Reverse(v.path)
	v.err.Field = v.pathString()
	return err
}

// A Walk is a verification: [Walk.Verify] verifies from the root with a
// generated verifier; a lazy walk ([Walk.SetLazy]) leaves the elements of
// the vectors the schema marks lazy to its caller, who verifies them later
// with [Walk.ElemWith], so that the object limit applies to the whole
// buffer as in one walk.
type Walk struct {
	v     verifier
	lazy  bool
	visit func(kind int, t T)
}

// NewWalk starts a verification of buf.
func NewWalk(buf []byte, opt Options) *Walk {
	return &Walk{v: newVerifier(buf, opt)}
}

// Reset makes w a new verification of buf, as NewWalk does, in place (a
// caller can keep the walk in a value of its own, one allocation less).
func (w *Walk) Reset(buf []byte, opt Options) { *w = Walk{v: newVerifier(buf, opt)} }

// Left returns how many more objects the walk may visit within
// Options.MaxObjects (negative once it has visited more).
func (w *Walk) Left() int { return w.v.opt.MaxObjects - w.v.objects }

// VectorBytes returns the bytes of the vectors and strings the walk has
// visited, each as often as it was reached: a bound on what copying every
// verified string and vector a reader reaches can cost (a buffer whose
// tables share them reaches them more than once).
func (w *Walk) VectorBytes() int64 { return w.v.vbytes }

// RootFieldSlots returns the number of field slots in the root table's
// vtable (how many field ids its writer knew of, less trailing absent
// ones). Format packages use it to tell schema generations apart. It
// checks only what it reads.
func RootFieldSlots(buf []byte, opt Options) (int, error) {
	w := NewWalk(buf, opt)
	if len(buf) < 8 || int64(len(buf)) > MaxSize {
		return 0, w.v.fail(0, "FlatBuffer of %d bytes is not of a valid size", len(buf))
	}
	pos, err := w.v.deref(0)
	if err != nil {
		return 0, err
	}
	t, err := w.Start(pos)
	if err != nil {
		return 0, err
	}
	return max(t.Slots(), 0), nil
}

type frame struct {
	name string
	idx  int // -1: not an element
}

type verifier struct {
	buf     []byte
	n       int64
	lim4    int64 // max(n-3, 0): 4 bytes at pos lie in the buffer when uint64(pos) < uint64(lim4); 0 under Fetch (no fast path)
	opt     Options
	depth   int
	objects int
	tables  int
	// maxTables is Options.MaxTables, or the largest int when that is 0.
	maxTables int
	// tabLim is min(MaxObjects, maxTables): below it, as tables never
	// outnumber objects, another table fits both limits.
	tabLim int
	vbytes int64 // the bytes of the vectors and strings visited
	// path is filled only on failure, innermost frame first, as the error
	// returns through the walk; err is the error it belongs to.
	path []frame
	err  *format.FormatError
	f    *fetched // Options.Fetch's record, nil without Fetch
}

// fetched records a walk's fetches: a bit for each page Options.Fetch
// filled, its first error, and whether the walk fills the elements of
// vectors of bytes (Walk.FetchBytes).
type fetched struct {
	have  []uint64
	err   error
	bytes bool
}

func newVerifier(buf []byte, opt Options) verifier {
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = DefaultMaxDepth
	}
	if opt.MaxObjects <= 0 {
		opt.MaxObjects = len(buf)/2 + 1024
	}
	maxTables := opt.MaxTables
	if maxTables <= 0 {
		maxTables = math.MaxInt
	}
	v := verifier{buf: buf, n: int64(len(buf)), lim4: max(int64(len(buf))-3, 0), opt: opt, maxTables: maxTables, tabLim: min(opt.MaxObjects, maxTables)}
	if opt.Fetch != nil {
		v.f, v.lim4 = &fetched{have: make([]uint64, (len(buf)>>FetchPageShift)/64+1)}, 0
	}
	return v
}

// FetchPageShift is log2 of the size of the pages Options.Fetch fills (a
// test makes them smaller, down to a byte, to catch a read of a byte the
// walk did not fetch).
var FetchPageShift = 12

// need fills the pages of [pos, pos+size), which lies in the buffer, that
// Options.Fetch has not filled yet; it reports false when Fetch failed.
// The walk's inlined fast paths (VectorAt, StringAt, DerefAt, MemoHit)
// are off under Fetch: its reads go through the functions that call need.
func (v *verifier) need(pos, size int64) bool {
	return v.f == nil || size <= 0 || v.fetch(pos>>FetchPageShift, (pos+size-1)>>FetchPageShift)
}

// fetch fills the pages first..last that are missing, each run of them
// with one call of Options.Fetch.
func (v *verifier) fetch(first, last int64) bool {
	f := v.f
	missing := func(p int64) bool { return f.have[p>>6]&(1<<(p&63)) == 0 }
	for p := first; p <= last; p++ {
		if !missing(p) {
			continue
		}
		q := p
		for q < last && missing(q+1) {
			q++
		}
		if f.err != nil {
			return false
		}
		if f.err = v.opt.Fetch(p<<FetchPageShift, min((q+1)<<FetchPageShift, v.n)); f.err != nil {
			return false
		}
		for ; p <= q; p++ {
			f.have[p>>6] |= 1 << (p & 63)
		}
		p = q
	}
	return true
}

// table fills, under Options.Fetch, what Start reads of the table at pos
// (its vtable offset, its vtable) and the bytes where its vtable places its
// fields, its own bytes at least: the scalars a reader reads lie there. It
// reports false when Fetch failed.
func (v *verifier) table(pos int64) bool {
	if pos&3 != 0 || !v.in(pos, 4) {
		return true // Start fails without reading
	}
	if !v.need(pos, 4) {
		return false
	}
	vt := pos - int64(int32(v.u32(pos)))
	if vt&1 != 0 || !v.in(vt, 2) {
		return true
	}
	if !v.need(vt, 2) {
		return false
	}
	vtsize := v.u16(vt)
	if vtsize&1 != 0 || !v.in(vt, vtsize) {
		return true
	}
	if !v.need(vt, vtsize) {
		return false
	}
	end := int64(4)
	for e := int64(2); e+2 <= vtsize; e += 2 {
		end = max(end, v.u16(vt+e)+8) // the table size (e = 2), the fields
	}
	return v.need(pos, min(end, v.n-pos))
}

func (v *verifier) pathString() string {
	var b strings.Builder
	for i, f := range v.path {
		switch {
		case f.idx >= 0:
			b.WriteString("[" + strconv.Itoa(f.idx) + "]")
		case i > 0:
			b.WriteString("." + f.name)
		default:
			b.WriteString(f.name)
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

// failPast is fail for an object that runs past the end of the buffer: a
// truncated file when the buffer ends at the end of the file (AtEOF).
func (v *verifier) failPast(pos int64, msg string, args ...any) error {
	err := v.fail(pos, msg, args...)
	if v.opt.AtEOF {
		v.err.Err = format.ErrTruncated
	}
	return err
}

// The checks below pass in a few instructions; the messages of those that
// fail are built by functions of their own (derefFail, vtableFail, ...),
// which make the same checks again in the same order.

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
	if v.in(pos, 4) && v.need(pos, 4) {
		off := int64(v.u32(pos))
		if t := pos + off; off != 0 && t < v.n {
			return t, nil
		}
	}
	return 0, v.derefFail(pos)
}

// elemDeref follows the offset at pos, an element of a vector of tables
// or strings: as deref, but an offset of 0 is followed (to pos itself)
// under Options.CxxRules.
func (v *verifier) elemDeref(pos int64) (int64, error) {
	if v.opt.CxxRules && v.in(pos, 4) && v.need(pos, 4) && v.u32(pos) == 0 {
		return pos, nil
	}
	return v.deref(pos)
}

// derefFail reports why the offset at pos cannot be followed.
func (v *verifier) derefFail(pos int64) error {
	if !v.in(pos, 4) {
		return v.failPast(pos, "offset field runs past the end of the FlatBuffer (%d bytes); want 4 bytes inside it", v.n)
	}
	off := int64(v.u32(pos))
	if off == 0 {
		return v.fail(pos, "offset 0 points at itself (want a positive offset)")
	}
	t := pos + off
	return v.failPast(pos, "offset %d points to %#x, past the end of the FlatBuffer (%d bytes); want a target below %#x", off, v.opt.Base+t, v.n, v.opt.Base+v.n)
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
	return v.fail(pos, "more than %d tables, vectors and strings visited: shared or looping references (want at most %d in a FlatBuffer of %d bytes)", v.opt.MaxObjects, v.opt.MaxObjects, v.n)
}

// vtableFail reports what is wrong with the table header at pos or its
// vtable.
func (v *verifier) vtableFail(pos int64) error {
	if pos&3 != 0 {
		return v.fail(pos, "table at %#x is not 4-aligned (want its vtable offset on a 4-byte boundary)", v.opt.Base+pos)
	}
	if !v.in(pos, 4) {
		return v.failPast(pos, "table runs past the end of the FlatBuffer (want its 4-byte vtable offset before %#x)", v.opt.Base+v.n)
	}
	vt := pos - int64(int32(v.u32(pos)))
	if vt&1 != 0 {
		return v.fail(pos, "vtable offset points to %#x, which is not 2-aligned (want an even position)", v.opt.Base+vt)
	}
	if !v.in(vt, 2) {
		return v.fail(pos, "vtable offset points to %#x: its 2-byte size does not lie inside the FlatBuffer [%#x, %#x)", v.opt.Base+vt, v.opt.Base, v.opt.Base+v.n)
	}
	vtsize := v.u16(vt)
	if vtsize&1 != 0 {
		return v.fail(vt, "vtable size %d is odd (want an even number of bytes)", vtsize)
	}
	return v.failPast(vt, "vtable of %d bytes runs past the end of the FlatBuffer (%d bytes left)", vtsize, v.n-vt)
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

// fieldFail reports a field of size bytes at table offset fo of the table
// at pos that is not aligned to its size or lies outside the buffer.
func (v *verifier) fieldFail(pos, fo, size int64) error {
	if (pos+fo)%size != 0 {
		return v.fail(pos+fo, "field at table offset %d (%d bytes) lies at %#x, which is not %d-aligned (want it on a %d-byte boundary)", fo, size, v.opt.Base+pos+fo, size, size)
	}
	return v.fail(pos+fo, "field at table offset %d (%d bytes) lies outside the FlatBuffer; want it to end by %#x", fo, size, v.opt.Base+v.n)
}

// vector checks a vector header at pos with elements of size elem (0 <=
// elem < 2^31: a schema's scalar size, or 4) and returns the position of
// its first element and its length.
func (v *verifier) vector(pos, elem int64) (start, n int64, err error) {
	if err := v.enter(pos); err != nil {
		return 0, 0, err
	}
	if pos&3 == 0 && v.in(pos, 4) && v.need(pos, 4) {
		// n < 2^32 and elem < 2^31: the product does not overflow.
		if n, start = int64(v.u32(pos)), pos+4; uint64(n)*uint64(elem) <= uint64(v.n-start) &&
			(v.f == nil || elem == 1 && !v.f.bytes || v.need(start, n*elem)) {
			v.vbytes += n * elem
			return start, n, nil
		}
	}
	return 0, 0, v.vectorFail(pos, elem)
}

// vectorFail reports why the vector at pos does not lie in the buffer.
func (v *verifier) vectorFail(pos, elem int64) error {
	if pos&3 != 0 {
		return v.fail(pos, "vector at %#x is not 4-aligned (want its length on a 4-byte boundary)", v.opt.Base+pos)
	}
	if !v.in(pos, 4) {
		return v.failPast(pos, "vector length runs past the end of the FlatBuffer (want 4 bytes before %#x)", v.opt.Base+v.n)
	}
	n := int64(v.u32(pos))
	start := pos + 4
	return v.failPast(pos, "vector of %d elements of %d bytes runs past the end of the FlatBuffer (%d bytes left: want at most %d elements)", n, elem, v.n-start, (v.n-start)/elem)
}

func (v *verifier) str(pos int64) error {
	start, n, err := v.vector(pos, 1)
	if err != nil {
		return err
	}
	if end := start + n; end < v.n && v.need(start, n+1) && v.buf[end] == 0 {
		return nil
	}
	return v.fail(pos, "string of %d bytes has no NUL terminator (want a 0 byte at %#x)", n, v.opt.Base+start+n)
}
