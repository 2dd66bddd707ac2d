package pte

import (
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/edgeload/edgeload/loader/format"
)

// The lane reads the values most of a weights-heavy program consists of:
// tensors in the constant segment (or with no data), one after another,
// their EValue and Tensor tables sharing the vtables the previous value
// used, with no allocation_info and no extra_tensor_info. For such a value
// it makes exactly the checks and the record that fastvalue.go and
// builder.tensor make, in one straight pass over the table bytes, and
// changes nothing until every check has passed. At the first value it is
// not sure of (another vtable, another kind of value, any check failing)
// it stops, and that value goes the general way, which reports the error
// if there is one. So the lane decides nothing on its own: it only skips
// work whose outcome is known. TestLaneAgrees and TestLaneBounds
// (lane_test.go) and FuzzOpen open programs with and without it (every
// single-byte change, every object limit and budget, every end of the
// buffer) and compare the results.

// laneMaxDims is the most dimensions a tensor the lane reads may have.
const laneMaxDims = 8

// lane is what the lane needs of the vtables it reads through: the
// positions of the EValue and Tensor vtables and, from them, where each
// field lies in a table that uses them (0: absent) and how many bytes the
// table must have in the buffer for all of them to lie in it.
type lane struct {
	evt, tvt     int64 // the vtables it was armed for
	ok           bool  // whether the lane reads tables that use them
	eneed, tneed int64
	objects      int   // what a value counts against the object limit
	etag, eval   int64 // EValue.val_type, EValue.val
	st, sizes    int64 // Tensor.scalar_type, Tensor.sizes
	dims, dbi    int64 // Tensor.dim_order, Tensor.data_buffer_idx
}

// arm makes the lane read through the vtables the reader cached last, and
// reports whether it can.
func (l *lane) arm(r *fbr) bool {
	e, t := &r.evalueVT, &r.tensorVT
	if l.armedFor(r) {
		return l.ok
	}
	*l = lane{evt: e.vt, tvt: t.vt}
	// The EValue's val must lie where its table is checked to (as it
	// does in every table a FlatBuffers builder writes).
	if e.vt == noVT || t.vt == noVT || e.fo[0] == 0 || e.fo[1] == 0 || e.fo[1]+4 > e.need ||
		t.fo[tAllocationInfo] != 0 || t.fo[tExtraInfo] != 0 {
		return false
	}
	// The EValue and the Tensor count, and each vector present.
	objects := 2
	if t.fo[tSizes] != 0 {
		objects++
	}
	if t.fo[tDimOrder] != 0 {
		objects++
	}
	*l = lane{
		evt: e.vt, tvt: t.vt, ok: true, objects: objects,
		eneed: e.need, tneed: t.need,
		etag: e.fo[0], eval: e.fo[1],
		st: t.fo[tScalarType], sizes: t.fo[tSizes], dims: t.fo[tDimOrder],
		dbi: t.fo[tDataBufferIdx],
	}
	return true
}

// armedFor reports whether the lane was last armed for the vtables r
// holds now (arm then answers as it did).
func (l *lane) armedFor(r *fbr) bool {
	return l.evt == r.evalueVT.vt && l.tvt == r.tensorVT.vt
}

// evalueFits reports whether the offset eo, which refers to e, refers to
// an EValue the lane reads: one that lies in the buffer (e <= eMax) and
// uses the lane's vtable, tagged Tensor.
func (l *lane) evalueFits(fb []byte, eMax, e, eo int64) bool {
	return eo != 0 && e <= eMax && e-int64(int32(ld32(fb, e))) == l.evt && ld8(fb, e+l.etag) == tagTensor
}

// laneDTypes maps a scalar type byte to its DType (low byte) and element
// size (high byte; 0: not one the lane reads, the general way reports it),
// one load for both. No size exceeds laneMaxSize.
var laneDTypes = func() (t [256]uint16) {
	for i := range t {
		dt, _ := format.ScalarTypeDType(int8(uint8(i)))
		if size := dt.Size(); size <= laneMaxSize {
			t[i] = uint16(dt) | uint16(size)<<8
		}
	}
	return t
}()

// laneMaxSize is the largest element size laneDTypes has.
const laneMaxSize = 8

// laneDTypes0 is laneDTypes for tables without a scalar type: every byte
// maps to scalar type 0's entry.
var laneDTypes0 = func() (t [256]uint16) {
	for i := range t {
		t[i] = laneDTypes[0]
	}
	return t
}()

// identityDims is the identity dim_order 0, 1, ..., 7 read as a
// little-endian word.
const identityDims = 0x0706050403020100

// le32 reads the uint32 at pos. (b[pos:pos+4] costs fewer instructions
// than b[pos:]; the FlatBuffer's capacity is its length.)
func le32(b []byte, pos int64) int64 { return int64(binary.LittleEndian.Uint32(b[pos : pos+4])) }

// laneNumel returns the product of the ns int32 sizes at sp, and false
// when one is negative or a running product exceeds numLimit (< 2^32: so
// that, each size being below 2^32, no product overflows).
func laneNumel(fb []byte, sp, ns int64, numLimit uint64) (uint64, bool) {
	num := uint64(1)
	for k := int64(0); k < ns; k++ {
		x := int32(ld32(fb, sp+4*k))
		if num *= uint64(uint32(x)); x < 0 || num > numLimit {
			return 0, false
		}
	}
	return num, true
}

// lanePerm reports whether the nd (<= laneMaxDims) bytes at dp are a
// permutation of 0..nd-1.
func lanePerm(fb []byte, dp, nd int64) bool {
	var seen uint
	for k := int64(0); k < nd; k++ {
		d := uint(ld8(fb, dp+k))
		if d >= uint(nd) || seen&(1<<(d&7)) != 0 {
			return false
		}
		seen |= 1 << (d & 7)
	}
	return true
}

// laneVector follows the offset at q (which the caller checked lies in
// the buffer) to a vector whose length word lies in the buffer (n bytes)
// and returns the position of its first element and its length, or start
// 0 when there is none; the caller checks that the elements lie in the
// buffer.
func laneVector(fb []byte, n, q int64) (start, length int64) {
	o := ld32(fb, q)
	s := q + o
	if o == 0 || s > n-4 {
		return 0, 0
	}
	return s + 4, ld32(fb, s)
}

// lane reads values v, v+1, ... < hi of method m's plan the lane way and
// returns the first it did not read (hi when it read them all). vt and
// vstart are as for values.
func (b *builder) lane(m *Method, vt []int32, vstart int64, v, hi int) int {
	r, p := &b.r, b.p
	if b.noLane || !b.ln.arm(r) || v < 0 || v >= hi || hi > len(vt) {
		return v
	}
	l := b.ln
	fb, n := r.b, r.n
	if vstart < 0 || vstart+4*int64(hi) > n {
		return v
	}
	// The first value's EValue, as the loop checks it, before anything
	// is set up for the loop: a plan whose values alternate between kinds
	// calls the lane at each value after a tensor, and most such calls
	// stop here (67 of stories260k-qnn's 71).
	ep := vstart + 4*int64(v)
	if eo := ld32(fb, ep); !l.evalueFits(fb, n-l.eneed, ep+eo, eo) {
		return v
	}
	// Every read below lies in the buffer by a check made before it (a
	// table's range covers its fields, a vector's its elements; the
	// constant offsets are checked here), so the reads skip Go's bounds
	// checks (loads.go). The constant segment's offsets: with none (legacy
	// inline constants, or no constants) only tensors without data take
	// the lane.
	offs := b.constOffsets
	var segOff, segLen uint64
	if offs.n > 0 {
		ss := p.segments[p.constSeg]
		segOff, segLen = uint64(ss.Offset()), uint64(ss.Len())
		if offs.pos < 0 || offs.pos+8*int64(offs.n) > n {
			return v // (the walk verified the vector: only a cut buffer, in tests)
		}
	}
	limit := uint64(max(b.size, 0))
	cost := int64(tensorCost + len(m.Name) + len("/values/") + 10)
	recs, left, budget := b.recs, r.left, b.budget
	if room := hi - v; cap(recs)-len(recs) < room {
		recs = slices.Grow(recs, room)
	}
	numLimit := min(limit, math.MaxUint32) // the largest product of sizes multiplied further
	v0 := v
	vt = vt[:hi]
	eMax, tMax := n-l.eneed, n-l.tneed // the last positions a table fits at
	// The assembly loop does not check that the EValue's and the
	// Tensor's offsets are not 0: such an offset would make the table's
	// soffset the offset itself (0), so the table would use the vtable
	// only if the vtable's first word were 0. It is not: the lane is
	// armed only for vtables the reader cached, which fbr.vtable checked
	// lie in the buffer with a size (their first 2 bytes) of at least 4.
	if laneAsm && !b.goLane && n < 1<<31 && eMax >= 0 && tMax >= 0 &&
		uint64(l.evt) < uint64(n) && uint64(l.tvt) < uint64(n) {
		a := laneRun{
			etag: l.etag, eval: l.eval, st: l.st, sizes: l.sizes, dims: l.dims, dbi: l.dbi,
			offN: int64(offs.n), segOff: segOff, segLen: segLen,
			numLimit: numLimit, cost: cost, ident: identityDims,
			next: int64(b.recBase) + int64(len(recs)), budget: budget,
			dtypes: laneDTypes,
		}
		if l.st == 0 {
			// Absent: every value has scalar type 0, whatever byte
			// the loop reads.
			a.dtypes = laneDTypes0
		}
		// num <= numLimit and num*size <= limit, as one comparison.
		for size := 1; size <= laneMaxSize; size++ {
			a.numMax[size] = min(numLimit, limit/uint64(size))
		}
		if l.dbi != 0 {
			a.dbiMask = math.MaxUint32
		}
		v, left = a.run(fb, vt, recs, vstart, offs.pos, eMax, tMax, &l, v, left)
		recs, budget = recs[:a.next-int64(b.recBase)], a.budget
		goto out
	}
loop:
	for ; v < len(vt); v++ {
		if left < l.objects {
			break
		}
		// The EValue: values[v] refers to it.
		ep := vstart + 4*int64(v)
		eo := ld32(fb, ep)
		e := ep + eo
		if !l.evalueFits(fb, eMax, e, eo) {
			break
		}
		// Its Tensor.
		vp := e + l.eval
		to := ld32(fb, vp)
		t := vp + to
		if to == 0 || t > tMax || t-int64(int32(ld32(fb, t))) != l.tvt {
			break
		}
		var st uint8
		if l.st != 0 {
			st = ld8(fb, t+l.st)
		}
		x := laneDTypes[st]
		dt, size := format.DType(x), uint64(x>>8)
		if size == 0 {
			break // Invalid
		}
		var sp, ns, dp, nd int64
		if l.sizes != 0 {
			if sp, ns = laneVector(fb, n, t+l.sizes); sp == 0 || ns > laneMaxDims || 4*ns > n-sp {
				break
			}
		}
		if l.dims != 0 {
			if dp, nd = laneVector(fb, n, t+l.dims); dp == 0 || nd > n-dp || nd != 0 && nd != ns {
				break
			}
		}
		// numel × size within the file, every size >= 0 (format.Numel),
		// in 64 bits: each size, read as a uint32, is below 2^32, and a
		// product is multiplied further only while it is at most
		// numLimit (< 2^32), so none overflows; a negative size has its
		// top bit set, which the sizes' OR shows. A larger product goes
		// the general way, which also looks for a 0 further on. Ranks up
		// to 4 are multiplied here, in straight lines (a loop's carried
		// values would live on the stack), the others by laneNumel.
		var num uint64
		var or uint32
		switch ns {
		case 0:
			num = 1
		case 1:
			x := uint32(ld32(fb, sp))
			num, or = uint64(x), x
		case 2:
			x0, x1 := uint32(ld32(fb, sp)), uint32(ld32(fb, sp+4))
			num, or = uint64(x0)*uint64(x1), x0|x1
		case 3:
			x0, x1, x2 := uint32(ld32(fb, sp)), uint32(ld32(fb, sp+4)), uint32(ld32(fb, sp+8))
			num, or = uint64(x0)*uint64(x1), x0|x1|x2
			if num > numLimit {
				break loop
			}
			num *= uint64(x2)
		case 4:
			x0, x1 := uint32(ld32(fb, sp)), uint32(ld32(fb, sp+4))
			x2, x3 := uint32(ld32(fb, sp+8)), uint32(ld32(fb, sp+12))
			a, c := uint64(x0)*uint64(x1), uint64(x2)*uint64(x3)
			if a > numLimit || c > numLimit {
				break loop
			}
			num, or = a*c, x0|x1|x2|x3
		default:
			var ok bool
			if num, ok = laneNumel(fb, sp, ns, numLimit); !ok {
				break loop
			}
		}
		nbytes := num * size // kept only if num <= numLimit: size < 2^8
		if int32(or) < 0 || num > numLimit || nbytes > limit {
			break
		}
		// dim_order a permutation of 0..nd-1: the identity (read as one
		// word), or see lanePerm.
		if nd > 0 && (dp > n-8 || (ld64(fb, dp)^identityDims)<<((64-8*nd)&63) != 0) && !lanePerm(fb, dp, nd) {
			break
		}
		var dbi uint32
		if l.dbi != 0 {
			dbi = uint32(ld32(fb, t+l.dbi))
		}
		spent := ns + nd
		if dbi == 0 {
			// No data in the file: checked, not kept.
			if budget < spent {
				break
			}
			left -= l.objects
			budget -= spent
			vt[v] = -1
			continue
		}
		if int64(dbi) >= int64(offs.n) {
			break
		}
		off := ld64(fb, offs.pos+8*int64(dbi))
		if off > segLen || nbytes > segLen-off {
			break
		}
		spent += cost
		if budget < spent {
			break
		}
		left -= l.objects
		budget -= spent
		vt[v] = b.recBase + int32(len(recs))
		// Field by field into place: a record built whole and copied
		// stalls on its own stores (store-to-load forwarding).
		recs = recs[:len(recs)+1]
		rec := &recs[len(recs)-1]
		rec.off, rec.nbytes, rec.tensor = int64(segOff+off), int64(nbytes), uint32(t)
		rec.loc, rec.dt = format.LocSegment, dt
	}
out:
	b.recs, r.left, b.budget = recs, left, budget
	if v > v0 {
		laneValues.Add(int64(v - v0))
	}
	return v
}

// run reads values v, v+1, ... < len(vt) with the assembly loop (the
// rest of a's fields set by the caller), in chunks, and returns the first
// value it did not read and the objects left; a.next and a.budget are
// left where they are after it. recs must have room for len(vt)-v
// records.
func (a *laneRun) run(fb []byte, vt []int32, recs []tensorRec, vstart, offPos, eMax, tMax int64, l *lane, v, left int) (int, int) {
	// Addresses from here to the last call, which none of the three
	// buffers outlives (each is used after it) and during which none
	// moves (heap or mapped memory; between the calls, no call that
	// could move a stack).
	base := uintptr(unsafe.Pointer(unsafe.SliceData(fb)))
	n := int64(len(fb))
	a.fb, a.nm4, a.nm12 = base, base+uintptr(n-4), base+uintptr(n-12)
	a.eMax, a.tMax = base+uintptr(eMax), base+uintptr(tMax)
	a.evt, a.tvt = base+uintptr(l.evt), base+uintptr(l.tvt)
	a.offPos = base + uintptr(offPos)
	a.masks = uintptr(unsafe.Pointer(&laneMasks))
	ep0 := base + uintptr(vstart)
	a.ep = ep0 + 4*uintptr(v)
	a.vtD = uintptr(unsafe.Pointer(unsafe.SliceData(vt))) - ep0
	a.recs = uintptr(unsafe.Pointer(unsafe.SliceData(recs))) + uintptr(len(recs))*unsafe.Sizeof(tensorRec{})
	for v < len(vt) {
		// At most the values the object limit leaves room for: the
		// Go loop's first check.
		k := min(len(vt)-v, laneChunk, max(0, left/l.objects))
		if k == 0 {
			break
		}
		a.epEnd = a.ep + 4*uintptr(k)
		laneLoop(a)
		read := int((a.ep-ep0)/4) - v
		v, left = v+read, left-read*l.objects
		if read < k {
			break
		}
	}
	runtime.KeepAlive(fb)
	runtime.KeepAlive(vt)
	runtime.KeepAlive(recs)
	return v, left
}

// laneMasks[k] keeps the first k bytes of a little-endian word.
var laneMasks = [9]uint64{0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFF_FFFFFFFF, 0xFFFF_FFFFFFFF, 0xFFFFFF_FFFFFFFF, math.MaxUint64}

// laneChunk is the most values one call of the assembly loop reads: it
// cannot be preempted, so it returns to Go every few tens of microseconds.
const laneChunk = 4096

// laneRun is what the assembly loop (lane_amd64.s) reads and writes: the
// lane's state as the Go loop has it in its variables, with positions in
// the buffer as addresses (fb + position), the vtables' too. It reads the
// values whose offsets lie at ep, ep+4, ... < epEnd, writing each one's
// entry of vt at vtD+ep and a record at recs, and leaves ep, next (the
// number the next record gets), recs and budget at the first value it did
// not read.
type laneRun struct {
	fb, nm4, nm12        uintptr // the buffer, and 4 and 12 bytes before its end
	ep, epEnd, vtD       uintptr
	eMax, tMax, evt, tvt uintptr
	etag, eval           int64
	st, sizes, dims, dbi int64
	dbiMask              int64 // 0 when the field is absent (read, then masked off)
	masks, offPos        uintptr
	offN                 int64
	segOff, segLen       uint64
	numLimit             uint64
	ident                uint64
	cost, budget, next   int64
	recs                 uintptr
	// numMax[size]: the largest product of sizes whose bytes (times
	// size) lie within the file, and at most numLimit.
	numMax [laneMaxSize + 1]uint64
	// dtypes: laneDTypes, or laneDTypes0 when the tables have no scalar
	// type (here, not by pointer: one load fewer per value).
	dtypes [256]uint16
}

// laneLocSegment is format.LocSegment, for the assembly loop.
//
//lint:ignore U1000 read by lane_amd64.s
const laneLocSegment = format.LocSegment

// laneValues counts the values read the lane way (for tests).
var laneValues atomic.Int64
