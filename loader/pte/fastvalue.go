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
}

// in reports whether [pos, pos+size) lies inside the buffer.
func (r *fbr) in(pos, size int64) bool {
	return pos >= 0 && size >= 0 && pos <= r.n && size <= r.n-pos
}

func (r *fbr) u16(pos int64) int64  { return int64(binary.LittleEndian.Uint16(r.b[pos:])) }
func (r *fbr) u32(pos int64) uint32 { return binary.LittleEndian.Uint32(r.b[pos:]) }

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
	if !r.w.Count(1) || !r.in(pos, 4) {
		return tbl{}, false
	}
	vt := pos - int64(int32(r.u32(pos)))
	if !r.in(vt, 4) {
		return tbl{}, false
	}
	vtsize, tsize := r.u16(vt), r.u16(vt+2)
	if vtsize < 4 || vtsize%2 != 0 || !r.in(vt, vtsize) || tsize < 4 || !r.in(pos, tsize) {
		return tbl{}, false
	}
	return tbl{pos, vt, vtsize}, true
}

// slot returns the table offset of field id, 0 when absent.
func (r *fbr) slot(t tbl, id int64) int64 {
	e := 4 + 2*id
	if e+2 > t.vtsize {
		return 0
	}
	return r.u16(t.vt + e)
}

// scalar checks a scalar field of size bytes and returns its position, 0
// when absent.
func (r *fbr) scalar(t tbl, id, size int64) (int64, bool) {
	fo := r.slot(t, id)
	if fo == 0 {
		return 0, true
	}
	return t.pos + fo, r.in(t.pos+fo, size)
}

// ref checks an offset field and returns its target, 0 when absent.
func (r *fbr) ref(t tbl, id int64) (int64, bool) {
	fo := r.slot(t, id)
	if fo == 0 {
		return 0, true
	}
	if !r.in(t.pos+fo, 4) {
		return 0, false
	}
	return r.deref(t.pos + fo)
}

// vector checks the vector at pos of elem-byte elements (one object) and
// returns the position of its first element and its length.
func (r *fbr) vector(pos, elem int64) (start, n int64, ok bool) {
	if !r.w.Count(1) || !r.in(pos, 4) {
		return 0, 0, false
	}
	n = int64(r.u32(pos))
	start = pos + 4
	return start, n, n <= (r.n-start)/elem
}

// vectorField checks an optional vector field.
func (r *fbr) vectorField(t tbl, id, elem int64) (start, n int64, ok bool) {
	p, ok := r.ref(t, id)
	if !ok || p == 0 {
		return 0, 0, ok
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
	pos          int64
	scalarType   int8
	sizes        int64 // position of the first int32 size
	nsizes       int
	dimOrder     []byte
	dimPos       int64 // position of dimOrder
	requiresGrad bool
	dbi          uint32
	planned      bool
	hasETI       bool
	etiPos       int64
	fqn          []byte
	fqnPos       int64 // position of fqn
	location     int8
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
)

// tensor verifies the Tensor table at pos (descTensor) and decodes it.
func (r *fbr) tensor(pos int64) (rawTensor, bool) {
	x := rawTensor{pos: pos}
	t, ok := r.table(pos)
	if !ok {
		return x, false
	}
	// Scalars: verified in the order of descTensor; each read only if
	// present (defaults are 0 / false).
	p, ok := r.scalar(t, tScalarType, 1)
	if !ok {
		return x, false
	}
	if p != 0 {
		x.scalarType = int8(r.b[p])
	}
	if _, ok := r.scalar(t, tStorageOffset, 4); !ok {
		return x, false
	}
	start, n, ok := r.vectorField(t, tSizes, 4)
	if !ok {
		return x, false
	}
	x.sizes, x.nsizes = start, int(n)
	start, n, ok = r.vectorField(t, tDimOrder, 1)
	if !ok {
		return x, false
	}
	x.dimOrder, x.dimPos = r.b[start:start+n], start
	if p, ok = r.scalar(t, tRequiresGrad, 1); !ok {
		return x, false
	}
	x.requiresGrad = p != 0 && r.b[p] != 0
	if p, ok = r.scalar(t, tDataBufferIdx, 4); !ok {
		return x, false
	}
	if p != 0 {
		x.dbi = r.u32(p)
	}
	if p, ok = r.ref(t, tAllocationInfo); !ok {
		return x, false
	}
	if p != 0 {
		a, ok := r.table(p)
		if !ok {
			return x, false
		}
		for id := int64(0); id < 3; id++ { // memory_id, memory_offset_low, memory_offset_high
			if _, ok := r.scalar(a, id, 4); !ok {
				return x, false
			}
		}
		x.planned = true
	}
	if _, ok := r.scalar(t, tLayout, 1); !ok {
		return x, false
	}
	if _, ok := r.scalar(t, tShapeDynamism, 1); !ok {
		return x, false
	}
	if p, ok = r.ref(t, tExtraInfo); !ok {
		return x, false
	}
	if p != 0 {
		e, ok := r.table(p)
		if !ok {
			return x, false
		}
		x.hasETI, x.etiPos = true, p
		if _, ok := r.scalar(e, 0, 8); !ok { // mutable_data_segments_idx
			return x, false
		}
		s, ok := r.ref(e, 1) // fully_qualified_name
		if !ok {
			return x, false
		}
		if s != 0 {
			if x.fqn, ok = r.str(s); !ok {
				return x, false
			}
			x.fqnPos = s + 4
		}
		if p, ok = r.scalar(e, 2, 1); !ok { // location
			return x, false
		}
		if p != 0 {
			x.location = int8(r.b[p])
		}
		for id := int64(3); id < 5; id++ { // device_type, device_index
			if _, ok := r.scalar(e, id, 1); !ok {
				return x, false
			}
		}
	}
	return x, true
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
	t, ok := r.table(pos)
	if !ok {
		return 0, 0, false
	}
	to, vo := r.slot(t, 0), r.slot(t, 1)
	if to != 0 {
		if !r.in(pos+to, 1) {
			return 0, 0, false
		}
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
	case tagInt, tagDouble, tagBool:
		var vt tbl
		if vt, ok = r.table(val); ok {
			size := int64(8)
			if tag == tagBool {
				size = 1
			}
			_, ok = r.scalar(vt, 0, size)
		}
	default:
		ok = r.w.Table(val, descEValue.Fields[0].Union[tag], 4) == nil
	}
	return tag, val, ok
}
