package pte

import (
	"encoding/binary"
	"errors"

	"github.com/edgeload/edgeload/loader/internal/fbverify"
)

// The values of an execution plan are most of a program's FlatBuffer (one
// EValue and one Tensor table per weight), and reading them dominates Open.
// The generic walk (fbverify) leaves them to this file (descExecutionPlan
// marks values Deferred), which verifies each EValue and Tensor exactly as
// the walk would (the same checks in the same units, the same objects
// counted against the same limit: TestSweep and FuzzOpen check every case
// with CheckFastPath, export_test.go) while decoding the fields Open needs, in one pass over
// each table's vtable. It reports only that something is wrong
// (errFast); newProgram then runs the generic walk over the whole program
// for the error message, so that every error is the one a full
// verification reports first.

// errFast says that the fast path found the FlatBuffer malformed.
var errFast = errors.New("pte: malformed value (fast path)")

// fastMinDepth is the depth the fast path needs: Program (1) >
// ExecutionPlan (2) > EValue (3) > Tensor (4) > ExtraTensorInfo (5).
// Under a smaller WithMaxDepth the generic walk verifies the values.
const fastMinDepth = 5

// fbr reads a FlatBuffer with the checks fbverify makes.
type fbr struct {
	b []byte
	n int64
	w *fbverify.Walk
	// left is how many more objects the reader may visit; synced is what
	// w had left when they last agreed (count and syncWalk).
	left, synced int

	// The vtable last seen for each table type the values repeat.
	evalueVT, tensorVT, allocVT, etiVT vcache
	intVT, boolVT, doubleVT            vcache
}

// newFBR returns a reader of fb whose objects count against w.
func newFBR(fb []byte, w *fbverify.Walk) fbr {
	r := fbr{b: fb, n: int64(len(fb)), w: w, left: w.Left(), synced: w.Left()}
	for _, c := range []*vcache{&r.evalueVT, &r.tensorVT, &r.allocVT, &r.etiVT, &r.intVT, &r.boolVT, &r.doubleVT} {
		c.vt = noVT
	}
	return r
}

// in reports whether [pos, pos+size) lies inside the buffer. (As
// unsigned numbers a negative pos or size is above any length; with pos
// at most n, n-pos is not negative.)
func (r *fbr) in(pos, size int64) bool {
	return uint64(pos) <= uint64(r.n) && uint64(size) <= uint64(r.n-pos)
}

func (r *fbr) u16(pos int64) int64  { return int64(binary.LittleEndian.Uint16(r.b[pos : pos+2])) }
func (r *fbr) u32(pos int64) uint32 { return binary.LittleEndian.Uint32(r.b[pos : pos+4]) }

// count charges one object to the walk's limit; it reports false when the
// walk has now visited more objects than it may. The count is kept here
// (the hot path) and handed to the walk by syncWalk.
func (r *fbr) count() bool {
	r.left--
	return r.left >= 0
}

// syncWalk hands the objects counted since the last call to the walk, so
// that it can go on verifying with the right count, and takes back what
// it has left afterwards (call it again once it has).
func (r *fbr) syncWalk() {
	r.w.Count(r.synced - r.left)
	r.left = r.w.Left()
	r.synced = r.left
}

// deref follows the offset stored at pos.
func (r *fbr) deref(pos int64) (int64, bool) {
	if !r.in(pos, 4) {
		return 0, false
	}
	off := int64(r.u32(pos))
	t := pos + off
	return t, off != 0 && t < r.n
}

// tbl is a table whose header and vtable are checked.
type tbl struct {
	pos, vt, vtsize int64
}

// table checks the table at pos (one object).
func (r *fbr) table(pos int64) (tbl, bool) {
	if !r.count() || !r.in(pos, 4) {
		return tbl{}, false
	}
	vt := pos - int64(int32(r.u32(pos)))
	vtsize, tsize, ok := r.vtable(vt)
	if !ok || !r.in(pos, tsize) {
		return tbl{}, false
	}
	return tbl{pos, vt, vtsize}, true
}

// vtable checks the vtable at vt and returns its size and the inline size
// of the tables that use it.
func (r *fbr) vtable(vt int64) (vtsize, tsize int64, ok bool) {
	if !r.in(vt, 4) {
		return 0, 0, false
	}
	vtsize, tsize = r.u16(vt), r.u16(vt+2)
	return vtsize, tsize, vtsize >= 4 && vtsize%2 == 0 && r.in(vt, vtsize) && tsize >= 4
}

// FlatBuffers writers share one vtable among the tables of a type that
// have the same fields, so a program's thousands of Tensor tables use one
// or two vtables. A vcache holds the one a table type used last, decoded:
// a table using it is then checked with a single range test, which covers
// its inline size and every scalar and offset field the fast path checks.
type vcache struct {
	vt   int64            // position of the vtable; noVT when empty
	need int64            // the table at pos and its fields lie in the buffer iff in(pos, need)
	fo   [maxCached]int64 // field offsets by id; 0 when absent
}

// noVT marks an empty vcache: no vtable lies there (positions are within
// 2^31 of the buffer).
const noVT = -1 << 62

// maxCached is the most fields a vcache decodes (Tensor's ten).
const maxCached = 10

// cachedTable checks the table at pos (one object) as table does, and
// that each field id < len(sizes) that is present lies in the buffer with
// sizes[id] bytes (0: not checked). On success c describes its vtable.
func (r *fbr) cachedTable(pos int64, c *vcache, sizes []int64) bool {
	if !r.count() || !r.in(pos, 4) {
		return false
	}
	if vt := pos - int64(int32(r.u32(pos))); vt != c.vt {
		vtsize, tsize, ok := r.vtable(vt)
		if !ok {
			return false
		}
		t := tbl{pos, vt, vtsize}
		need := tsize
		for id, size := range sizes {
			fo := r.slot(t, int64(id))
			c.fo[id] = fo
			if fo != 0 && size > 0 {
				need = max(need, fo+size)
			}
		}
		c.vt, c.need = vt, need
	}
	return r.in(pos, c.need)
}

// Field sizes for cachedTable, by id: what the fast path checks of each
// table type (an offset field is 4 bytes).
var (
	evalueSizes = []int64{1, 0} // val_type; val is checked only for a non-NONE tag
	tensorSizes = []int64{1, 4, 4, 4, 1, 4, 4, 1, 1, 4}
	allocSizes  = []int64{4, 4, 4}       // memory_id, memory_offset_low, memory_offset_high
	etiSizes    = []int64{8, 4, 1, 1, 1} // mutable_data_segments_idx, fully_qualified_name, location, device_type, device_index
	scalar8     = []int64{8}             // Int.int_val, Double.double_val
	scalar1     = []int64{1}             // Bool.bool_val
)

// slot returns the table offset of field id, 0 when absent.
func (r *fbr) slot(t tbl, id int64) int64 {
	e := 4 + 2*id
	if e+2 > t.vtsize {
		return 0
	}
	return r.u16(t.vt + e)
}

// vector checks the vector at pos of elem-byte elements (one object) and
// returns the position of its first element and its length.
func (r *fbr) vector(pos, elem int64) (start, n int64, ok bool) {
	if !r.count() || !r.in(pos, 4) {
		return 0, 0, false
	}
	n = int64(r.u32(pos))
	start = pos + 4
	return start, n, n*elem <= r.n-start // n < 2^32: no overflow
}

// vectorAt checks the vector that the offset at pos (in the buffer)
// refers to.
func (r *fbr) vectorAt(pos, elem int64) (start, n int64, ok bool) {
	p, ok := r.deref(pos)
	if !ok {
		return 0, 0, false
	}
	return r.vector(p, elem)
}

// str checks the string at pos (one object) and returns its bytes.
func (r *fbr) str(pos int64) ([]byte, bool) {
	start, n, ok := r.vector(pos, 1)
	if !ok || start+n >= r.n || r.b[start+n] != 0 {
		return nil, false
	}
	return r.b[start : start+n], true
}

// rawTensor is what Open needs of a Tensor table.
type rawTensor struct {
	pos        int64
	scalarType int8
	sizes      int64 // position of the first int32 size
	nsizes     int
	dimOrder   []byte
	dbi        uint32
	planned    bool
	hasETI     bool
	etiPos     int64
	fqn        []byte
	location   int8
}

func (t *rawTensor) size(r *fbr, k int) int32 {
	return int32(r.u32(t.sizes + 4*int64(k)))
}

// Tensor field ids (program.fbs).
const (
	tScalarType     = 0
	tStorageOffset  = 1
	tSizes          = 2
	tDimOrder       = 3
	tRequiresGrad   = 4
	tDataBufferIdx  = 5
	tAllocationInfo = 6
	tLayout         = 7
	tShapeDynamism  = 8
	tExtraInfo      = 9

	// etiFQN is the field id of ExtraTensorInfo.fully_qualified_name.
	etiFQN = 1
)

// tensor verifies the Tensor table at pos (descTensor) and decodes it
// into x.
func (r *fbr) tensor(pos int64, x *rawTensor) bool {
	*x = rawTensor{pos: pos}
	if !r.cachedTable(pos, &r.tensorVT, tensorSizes) {
		return false
	}
	// Every field lies in the buffer; scalars are read only if present
	// (defaults are 0 / false). storage_offset, layout and shape_dynamism
	// are only checked.
	b, fo := r.b, &r.tensorVT.fo
	if f := fo[tScalarType]; f != 0 {
		x.scalarType = int8(b[pos+f])
	}
	if f := fo[tSizes]; f != 0 {
		start, n, ok := r.vectorAt(pos+f, 4)
		if !ok {
			return false
		}
		x.sizes, x.nsizes = start, int(n)
	}
	if f := fo[tDimOrder]; f != 0 {
		start, n, ok := r.vectorAt(pos+f, 1)
		if !ok {
			return false
		}
		x.dimOrder = b[start : start+n]
	}
	if f := fo[tDataBufferIdx]; f != 0 {
		x.dbi = r.u32(pos + f)
	}
	if f := fo[tAllocationInfo]; f != 0 {
		p, ok := r.deref(pos + f)
		if !ok || !r.cachedTable(p, &r.allocVT, allocSizes) {
			return false
		}
		x.planned = true
	}
	if f := fo[tExtraInfo]; f != 0 {
		p, ok := r.deref(pos + f)
		if !ok || !r.cachedTable(p, &r.etiVT, etiSizes) {
			return false
		}
		x.hasETI, x.etiPos = true, p
		e := &r.etiVT.fo
		if f := e[etiFQN]; f != 0 { // fully_qualified_name
			s, ok := r.deref(p + f)
			if !ok {
				return false
			}
			if x.fqn, ok = r.str(s); !ok {
				return false
			}
		}
		if f := e[2]; f != 0 { // location
			x.location = int8(b[p+f])
		}
	}
	return true
}

// The KernelTypes union tags the fast path handles itself.
const (
	tagNull   = 1
	tagInt    = 2
	tagBool   = 3
	tagDouble = 4
	tagTensor = 5
	tagLast   = 11 // OptionalTensorList
)

// evalue verifies the EValue table at pos (descEValue, reached at depth 3)
// and returns its tag and the position of its value table (0 for NONE).
// Tensor values are left to the caller (r.tensor); the other members are
// verified here.
func (r *fbr) evalue(pos int64) (tag uint8, val int64, ok bool) {
	if !r.cachedTable(pos, &r.evalueVT, evalueSizes) {
		return 0, 0, false
	}
	to, vo := r.evalueVT.fo[0], r.evalueVT.fo[1]
	if to != 0 {
		tag = r.b[pos+to]
	}
	if tag == 0 {
		return 0, 0, true // NONE: the value is never read
	}
	if vo == 0 || !r.in(pos+vo, 4) || tag > tagLast {
		return 0, 0, false
	}
	if val, ok = r.deref(pos + vo); !ok {
		return 0, 0, false
	}
	switch tag {
	case tagTensor:
		return tag, val, true
	case tagNull:
		_, ok = r.table(val)
	case tagInt:
		ok = r.cachedTable(val, &r.intVT, scalar8)
	case tagDouble:
		ok = r.cachedTable(val, &r.doubleVT, scalar8)
	case tagBool:
		ok = r.cachedTable(val, &r.boolVT, scalar1)
	default:
		if elem := listElem[tag]; elem != 0 {
			// A table whose one field is a vector of scalars
			// (descIntList ... descOptList).
			var t tbl
			if t, ok = r.table(val); ok {
				if fo := r.slot(t, 0); fo != 0 {
					if ok = r.in(t.pos+fo, 4); ok {
						_, _, ok = r.vectorAt(t.pos+fo, elem)
					}
				}
			}
			break
		}
		r.syncWalk()
		ok = r.w.Table(val, descEValue.Fields[0].Union[tag], 4) == nil
		r.syncWalk()
	}
	return tag, val, ok
}

// listElem is the element size of the KernelTypes members that hold a
// vector of scalars, by tag (0: any other member).
var listElem = [tagLast + 1]int64{7: 8, 8: 8, 9: 1, 10: 4, 11: 4} // IntList, DoubleList, BoolList, TensorList, OptionalTensorList
