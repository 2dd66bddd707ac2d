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

// ScalarType codes of the ExecuTorch schemas (an i8 in a .pte
// Tensor.scalar_type and a .ptd TensorLayout.scalar_type), as FORMATS.md §1
// lists them. Both ExecuTorch formats map them through ScalarTypeDType.
// Values 8-10 (complex) and 18-21 (bit types) are reserved: a file that uses
// them is rejected.
const (
	ScalarByte           int8 = 0  // uint8
	ScalarChar           int8 = 1  // int8
	ScalarShort          int8 = 2  // int16
	ScalarInt            int8 = 3  // int32
	ScalarLong           int8 = 4  // int64
	ScalarHalf           int8 = 5  // float16
	ScalarFloat          int8 = 6  // float32
	ScalarDouble         int8 = 7  // float64
	ScalarBool           int8 = 11 // bool
	ScalarQInt8          int8 = 12 // qint8
	ScalarQUInt8         int8 = 13 // quint8
	ScalarQInt32         int8 = 14 // qint32
	ScalarBFloat16       int8 = 15 // bfloat16
	ScalarQUInt4x2       int8 = 16 // quint4x2 (one byte per element)
	ScalarQUInt2x4       int8 = 17 // quint2x4 (one byte per element)
	ScalarBits16         int8 = 22 // bits16
	ScalarFloat8E5M2     int8 = 23 // float8_e5m2
	ScalarFloat8E4M3FN   int8 = 24 // float8_e4m3fn
	ScalarFloat8E5M2FNUZ int8 = 25 // float8_e5m2fnuz
	ScalarFloat8E4M3FNUZ int8 = 26 // float8_e4m3fnuz
	ScalarUInt16         int8 = 27 // uint16
	ScalarUInt32         int8 = 28 // uint32
	ScalarUInt64         int8 = 29 // uint64
)

// scalarTypes maps a ScalarType to its DType; format.Invalid marks reserved and
// unknown values.
var scalarTypes = [...]format.DType{
	ScalarByte:           format.Uint8,
	ScalarChar:           format.Int8,
	ScalarShort:          format.Int16,
	ScalarInt:            format.Int32,
	ScalarLong:           format.Int64,
	ScalarHalf:           format.Float16,
	ScalarFloat:          format.Float32,
	ScalarDouble:         format.Float64,
	ScalarBool:           format.Bool,
	ScalarQInt8:          format.QInt8,
	ScalarQUInt8:         format.QUInt8,
	ScalarQInt32:         format.QInt32,
	ScalarBFloat16:       format.BFloat16,
	ScalarQUInt4x2:       format.QUInt4x2,
	ScalarQUInt2x4:       format.QUInt2x4,
	ScalarBits16:         format.Bits16,
	ScalarFloat8E5M2:     format.Float8E5M2,
	ScalarFloat8E4M3FN:   format.Float8E4M3FN,
	ScalarFloat8E5M2FNUZ: format.Float8E5M2FNUZ,
	ScalarFloat8E4M3FNUZ: format.Float8E4M3FNUZ,
	ScalarUInt16:         format.Uint16,
	ScalarUInt32:         format.Uint32,
	ScalarUInt64:         format.Uint64,
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
