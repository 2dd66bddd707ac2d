package pte

import (
	"encoding/binary"
	"math/bits"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbread"
)

// Open checks every tensor value (builder.tensor). quickTensor makes the
// same checks, with the same outcome, for the tensors of most programs: a
// whole-byte type, a constant in the constant segment or no data in the
// file, and no extra_tensor_info. Any other tensor, and any that fails a
// check, goes to builder.tensor, which reports the problem.

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

// quickTensor checks the verified Tensor table at t, a value of a plan
// whose name is nameLen bytes long, and records it when it holds data, as
// builder.tensor does; it reports false, having changed nothing, for a
// tensor it leaves to builder.tensor.
func (b *builder) quickTensor(t int64, nameLen int) bool {
	fb := b.fb
	fo := b.tensorF.Of(fb, t)
	if fo[tExtraInfo] != 0 {
		return false
	}
	var st uint8
	if f := fo[tScalarType]; f != 0 {
		st = fb[t+f]
	}
	si := scalarInfos[st]
	if si.size == 0 {
		return false
	}
	var sizes []byte
	if f := fo[tSizes]; f != 0 {
		sizes = fbread.Bytes(fb, t+f, 4)
	}
	ns := len(sizes) / 4
	// The dims' product, as builder.nbytes makes it for a type of one
	// element a block: over records a product past the file (which a zero
	// size still makes 0).
	n, zero, over := uint64(si.size), false, false
	for k := 0; k < len(sizes); k += 4 {
		s := int32(binary.LittleEndian.Uint32(sizes[k:]))
		if s < 0 {
			return false
		}
		zero = zero || s == 0
		hi, lo := bits.Mul64(n, uint64(s))
		over = over || hi != 0
		n = lo
	}
	nd := 0
	if f := fo[tDimOrder]; f != 0 {
		dims := fbread.Bytes(fb, t+f, 1)
		if nd = len(dims); nd > 0 {
			if nd != ns || nd > 64 {
				return false
			}
			var seen uint64
			for _, d := range dims {
				if int(d) >= nd || seen&(1<<d) != 0 {
					return false
				}
				seen |= 1 << d
			}
		}
	}
	var dbi uint32
	if f := fo[tDataBufferIdx]; f != 0 {
		dbi = binary.LittleEndian.Uint32(fb[t+f:])
	}
	switch location(false, dbi, fo[tAllocationInfo] != 0, b.p.inlineConsts) {
	case format.LocNone:
		return b.spend(ns + nd)
	case format.LocSegment:
	default:
		return false
	}
	if zero {
		n = 0
	} else if over || n > uint64(b.size) {
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
	if !b.spend(ns + nd + tensorCost + nameLen + len("/values/") + 10) {
		b.budget += int64(ns + nd + tensorCost + nameLen + len("/values/") + 10)
		return false
	}
	b.recs = append(b.recs, tensorRec{off: b.constOff + int64(off), nbytes: int64(n), tensor: uint32(t), loc: format.LocSegment, dt: si.dt})
	return true
}
