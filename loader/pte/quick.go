package pte

import (
	"encoding/binary"
	"math/bits"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbread"
)

// Open checks every tensor value with data in the file (builder.tensor).
// quickTensor makes the same checks, with the same outcome, for the
// tensors of most programs: a whole-byte type, a constant in the constant
// segment, and no extra_tensor_info; it passes over one without data.
// Any other tensor, and any that fails a check, goes to builder.tensor,
// which reports the problem.

// newRec appends a record to b.recs and returns it, for the caller to set
// each field in place. (A record made whole and then copied would be
// written in parts and read back whole, which the processor cannot
// forward from its store buffer: a stall a tensor.)
func (b *builder) newRec() *tensorRec {
	n := len(b.recs)
	if n == cap(b.recs) {
		b.recs = append(b.recs, tensorRec{})
	} else {
		b.recs = b.recs[:n+1]
	}
	return &b.recs[n]
}

// scalarInfo is what quickTensor needs of a ScalarType: its DType and the
// bytes of an element; size 0 sends the tensor to builder.tensor.
type scalarInfo struct {
	dt   format.DType
	size uint8
}

// scalarInfos is indexed by the ScalarType's byte.
var scalarInfos = func() (t [256]scalarInfo) {
	for i := range t {
		dt, msg := dtypeOf(int8(uint8(i)))
		if elems, size := dt.Block(); msg == "" && elems == 1 && size > 0 && size < 256 {
			t[i] = scalarInfo{dt, uint8(size)}
		}
	}
	return t
}()

// tensorFields are the table offsets of the fields quickTensor reads,
// from the vtable of the Tensor table it read last.
type tensorFields struct {
	vt1                                int64 // the vtable's position + 1; 0: none yet
	st, sizes, dims, dbi, alloc, extra int64
}

// quickTensor checks the verified Tensor table at t, a value of a plan
// whose name is nameLen bytes long, and records it when it holds data, as
// builder.tensor does; it reports false, having changed nothing, for a
// tensor it leaves to builder.tensor.
func (b *builder) quickTensor(t int64, nameLen int) bool {
	fb := b.fb
	tf := &b.quickF
	if vt := t - int64(int32(binary.LittleEndian.Uint32(fb[t:]))); vt+1 != tf.vt1 {
		fo := b.tensorF.Of(fb, t)
		*tf = tensorFields{vt + 1, fo[tScalarType], fo[tSizes], fo[tDimOrder], fo[tDataBufferIdx], fo[tAllocationInfo], fo[tExtraInfo]}
	}
	var dbi uint32
	if tf.dbi != 0 {
		dbi = binary.LittleEndian.Uint32(fb[t+tf.dbi:])
	}
	switch {
	case tf.extra != 0:
		return false
	case dbi == 0:
		return true // no data in the file: the method's check checks it
	}
	var st uint8
	if tf.st != 0 {
		st = fb[t+tf.st]
	}
	si := scalarInfos[st]
	if si.size == 0 {
		return false
	}
	var sizes []byte
	if tf.sizes != 0 {
		sizes = fbread.Bytes(fb, t+tf.sizes, 4)
	}
	ns := len(sizes) / 4
	// The dims' product, as builder.nbytes makes it for a type of one
	// element a block, when no dim is negative and no partial product
	// overflows (bad collects both: a negative dim, sign-extended, has
	// bits past the 31st); a zero dim makes it 0.
	n, bad := uint64(si.size), uint64(0)
	for ; len(sizes) >= 4; sizes = sizes[4:] {
		s := uint64(int64(int32(binary.LittleEndian.Uint32(sizes))))
		hi, lo := bits.Mul64(n, s)
		bad |= hi | s>>31
		n = lo
	}
	if bad != 0 {
		return false
	}
	nd := 0
	if tf.dims != 0 {
		dims := fbread.Bytes(fb, t+tf.dims, 1)
		if nd = len(dims); nd > 0 {
			if nd != ns || !identity(dims) && !permutation(dims) {
				return false
			}
		}
	}
	if tf.alloc != 0 || b.p.inlineConsts {
		return false // mutable or inline: builder.tensor
	}
	if n > uint64(b.size) {
		return false
	}
	offs := &b.constOffsets
	if int64(dbi) >= int64(offs.n) {
		return false
	}
	off := offs.at(dbi)
	if off > uint64(b.constLen) || n > uint64(b.constLen)-off {
		return false
	}
	cost := ns + nd + tensorCost + nameLen + len("/values/") + 10
	if b.budget < int64(cost) {
		return false
	}
	b.budget -= int64(cost)
	r := b.newRec()
	r.off, r.nbytes, r.tensor, r.loc, r.dt = b.constOff+int64(off), int64(n), uint32(t), format.LocSegment, si.dt
	return true
}

// identity reports whether dims is 0, 1, 2, ..., as most dim orders are,
// for the common ranks (false for the others: permutation checks them).
func identity(dims []byte) bool {
	switch len(dims) {
	case 1:
		return dims[0] == 0
	case 2:
		return binary.LittleEndian.Uint16(dims) == 0x0100
	case 3:
		return binary.LittleEndian.Uint16(dims) == 0x0100 && dims[2] == 2
	case 4:
		return binary.LittleEndian.Uint32(dims) == 0x03020100
	}
	return false
}

// permutation reports whether dims is a permutation of 0..len(dims)-1.
func permutation(dims []byte) bool {
	if len(dims) > 64 {
		in := true
		for k, d := range dims {
			in = in && int(d) == k
		}
		return in
	}
	var seen uint64
	for _, d := range dims {
		if int(d) >= len(dims) || seen&(1<<d) != 0 {
			return false
		}
		seen |= 1 << d
	}
	return true
}
