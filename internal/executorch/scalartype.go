// Package executorch holds what ExecuTorch's two file formats, programs
// (.pte) and named data (.ptd), share: the ScalarType codes of their
// tensors, and the room their headers take after a FlatBuffer's prefix. It
// sits below loader/pte and loader/ptd, and below the code that writes
// them.
package executorch

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
)

// scalarTypes maps the ScalarType codes of the ExecuTorch schemas (an i8
// in a .pte Tensor.scalar_type and a .ptd TensorLayout.scalar_type, as
// FORMATS.md §1 lists them) to their DType; format.Invalid marks the
// values 8-10 (complex) and 18-21 (bit types), reserved, and rejected in a
// file. QUInt4x2 and QUInt2x4 take a byte per element.
var scalarTypes = [...]format.DType{
	0: format.Uint8, 1: format.Int8, 2: format.Int16, 3: format.Int32, 4: format.Int64,
	5: format.Float16, 6: format.Float32, 7: format.Float64, 11: format.Bool,
	12: format.QInt8, 13: format.QUInt8, 14: format.QInt32, 15: format.BFloat16,
	16: format.QUInt4x2, 17: format.QUInt2x4, 22: format.Bits16,
	23: format.Float8E5M2, 24: format.Float8E4M3FN, 25: format.Float8E5M2FNUZ, 26: format.Float8E4M3FNUZ,
	27: format.Uint16, 28: format.Uint32, 29: format.Uint64,
}

// scalarReserved names the reserved ScalarType values for error messages.
var scalarReserved = map[int8]string{
	8: "COMPLEXHALF", 9: "COMPLEXFLOAT", 10: "COMPLEXDOUBLE",
	18: "BITS1x8", 19: "BITS2x4", 20: "BITS4x2", 21: "BITS8",
}

// ScalarTypeDType returns the element type of an ExecuTorch ScalarType code.
// For reserved values (8-10 complex, 18-21 bit types) and values outside
// the schema it returns format.Invalid and a message saying which, for the
// caller's FormatError.
func ScalarTypeDType(st int8) (format.DType, string) {
	if st >= 0 && int(st) < len(scalarTypes) && scalarTypes[st] != format.Invalid {
		return scalarTypes[st], ""
	}
	if n, ok := scalarReserved[st]; ok {
		return format.Invalid, fmt.Sprintf("scalar type %d (%s) is reserved: complex and sub-byte bit types are not supported (want one of 0-7, 11-17, 22-29)", st, n)
	}
	return format.Invalid, fmt.Sprintf("scalar type %d is not an ExecuTorch ScalarType (known: 0-7, 11-17, 22-29)", st)
}

// DTypeScalarType returns the ExecuTorch ScalarType code of a DType; ok is
// false for types ExecuTorch has no code for.
func DTypeScalarType(d format.DType) (st int8, ok bool) {
	for i, x := range scalarTypes {
		if x == d && d != format.Invalid {
			return int8(i), true
		}
	}
	return 0, false
}
