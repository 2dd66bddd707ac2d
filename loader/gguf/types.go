package gguf

import (
	"math"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
)

// Type is a ggml tensor type id, as a tensor info stores it.
type Type uint32

// typeInfo names each ggml type id below TypeCount and gives its
// format.DType; dtype is Invalid for the ids ggml removed (block size 0 in
// its type table), which Open refuses.
var typeInfo = [...]struct {
	name  string
	dtype format.DType
}{
	0: {"f32", format.Float32}, 1: {"f16", format.Float16},
	2: {"q4_0", format.Q4_0}, 3: {"q4_1", format.Q4_1},
	4: {"q4_2", format.Invalid}, 5: {"q4_3", format.Invalid},
	6: {"q5_0", format.Q5_0}, 7: {"q5_1", format.Q5_1},
	8: {"q8_0", format.Q8_0}, 9: {"q8_1", format.Q8_1},
	10: {"q2_K", format.Q2_K}, 11: {"q3_K", format.Q3_K},
	12: {"q4_K", format.Q4_K}, 13: {"q5_K", format.Q5_K},
	14: {"q6_K", format.Q6_K}, 15: {"q8_K", format.Q8_K},
	16: {"iq2_xxs", format.IQ2_XXS}, 17: {"iq2_xs", format.IQ2_XS},
	18: {"iq3_xxs", format.IQ3_XXS}, 19: {"iq1_s", format.IQ1_S},
	20: {"iq4_nl", format.IQ4_NL}, 21: {"iq3_s", format.IQ3_S},
	22: {"iq2_s", format.IQ2_S}, 23: {"iq4_xs", format.IQ4_XS},
	24: {"i8", format.Int8}, 25: {"i16", format.Int16},
	26: {"i32", format.Int32}, 27: {"i64", format.Int64},
	28: {"f64", format.Float64}, 29: {"iq1_m", format.IQ1_M},
	30: {"bf16", format.BFloat16},
	31: {"q4_0_4_4", format.Invalid}, 32: {"q4_0_4_8", format.Invalid},
	33: {"q4_0_8_8", format.Invalid},
	34: {"tq1_0", format.TQ1_0}, 35: {"tq2_0", format.TQ2_0},
	36: {"iq4_nl_4_4", format.Invalid}, 37: {"iq4_nl_4_8", format.Invalid},
	38: {"iq4_nl_8_8", format.Invalid},
	39: {"mxfp4", format.MXFP4}, 40: {"nvfp4", format.NVFP4},
	41: {"q1_0", format.Q1_0}, 42: {"q2_0", format.Q2_0},
}

// TypeCount is ggml's GGML_TYPE_COUNT: every id below it is named, and the
// ones with a DType are the types Open reads.
const TypeCount = Type(len(typeInfo))

// String returns ggml's name of the type ("f32", "q4_K", ...), or
// "type(N)" for an id past TypeCount.
func (t Type) String() string {
	if t < TypeCount {
		return typeInfo[t].name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// DType returns the element type of the id: format.Invalid for a removed
// or unknown id.
func (t Type) DType() format.DType {
	if t < TypeCount {
		return typeInfo[t].dtype
	}
	return format.Invalid
}

// ValueType is the type of a metadata value.
type ValueType uint32

// The metadata value types of the GGUF specification.
const (
	TypeUint8 ValueType = iota
	TypeInt8
	TypeUint16
	TypeInt16
	TypeUint32
	TypeInt32
	TypeFloat32
	TypeBool
	TypeString
	TypeArray
	TypeUint64
	TypeInt64
	TypeFloat64
	numValueTypes

	// TypeInvalid is the Type of the zero Value.
	TypeInvalid ValueType = math.MaxUint32
)

var valueTypeNames = [numValueTypes]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// valueSizes gives the encoded size of the fixed-size value types; 0 for
// string and array.
var valueSizes = [numValueTypes]uint8{1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}

// String returns the type's name ("uint32", "string", "array", ...).
func (t ValueType) String() string {
	if t < numValueTypes {
		return valueTypeNames[t]
	}
	return "valuetype(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Size returns the encoded size of a value of a fixed-size type, 0 for
// string, array and unknown types.
func (t ValueType) Size() int {
	if t < numValueTypes {
		return int(valueSizes[t])
	}
	return 0
}
