package format

import "fmt"

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

// scalarTypes maps a ScalarType to its DType; Invalid marks reserved and
// unknown values.
var scalarTypes = [...]DType{
	ScalarByte:           Uint8,
	ScalarChar:           Int8,
	ScalarShort:          Int16,
	ScalarInt:            Int32,
	ScalarLong:           Int64,
	ScalarHalf:           Float16,
	ScalarFloat:          Float32,
	ScalarDouble:         Float64,
	ScalarBool:           Bool,
	ScalarQInt8:          QInt8,
	ScalarQUInt8:         QUInt8,
	ScalarQInt32:         QInt32,
	ScalarBFloat16:       BFloat16,
	ScalarQUInt4x2:       QUInt4x2,
	ScalarQUInt2x4:       QUInt2x4,
	ScalarBits16:         Bits16,
	ScalarFloat8E5M2:     Float8E5M2,
	ScalarFloat8E4M3FN:   Float8E4M3FN,
	ScalarFloat8E5M2FNUZ: Float8E5M2FNUZ,
	ScalarFloat8E4M3FNUZ: Float8E4M3FNUZ,
	ScalarUInt16:         Uint16,
	ScalarUInt32:         Uint32,
	ScalarUInt64:         Uint64,
}

// scalarReserved names the reserved ScalarType values for error messages.
var scalarReserved = map[int8]string{
	8: "COMPLEXHALF", 9: "COMPLEXFLOAT", 10: "COMPLEXDOUBLE",
	18: "BITS1x8", 19: "BITS2x4", 20: "BITS4x2", 21: "BITS8",
}

// ScalarTypeDType returns the element type of an ExecuTorch ScalarType code.
// For reserved values (8-10 complex, 18-21 bit types) and values outside
// the schema it returns Invalid and a message saying which, for the
// caller's FormatError.
func ScalarTypeDType(st int8) (DType, string) {
	if st >= 0 && int(st) < len(scalarTypes) && scalarTypes[st] != Invalid {
		return scalarTypes[st], ""
	}
	if n, ok := scalarReserved[st]; ok {
		return Invalid, fmt.Sprintf("scalar type %d (%s) is reserved: complex and sub-byte bit types are not supported (want one of 0-7, 11-17, 22-29)", st, n)
	}
	return Invalid, fmt.Sprintf("scalar type %d is not an ExecuTorch ScalarType (known: 0-7, 11-17, 22-29)", st)
}

// DTypeScalarType returns the ExecuTorch ScalarType code of a DType; ok is
// false for types ExecuTorch has no code for.
func DTypeScalarType(d DType) (st int8, ok bool) {
	for i, x := range scalarTypes {
		if x == d && d != Invalid {
			return int8(i), true
		}
	}
	return 0, false
}
