package format

import (
	"math/bits"
	"strconv"
)

// DType is a tensor element type. Its names follow the edgeload JSON output
// ("float32", "int8", ...). The zero value is Invalid.
type DType uint8

// The element types the three formats use.
const (
	Invalid DType = iota
	Float16
	BFloat16
	Float32
	Float64
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Bool
	QInt8
	QUInt8
	QInt32
	QUInt4x2
	QUInt2x4
	Bits16
	Float8E5M2
	Float8E4M3FN
	Float8E5M2FNUZ
	Float8E4M3FNUZ
	Float8E8M0FNU
	Float6E2M3FN // packed: 4 elements in 3 bytes
	Float6E3M2FN // packed: 4 elements in 3 bytes
	Float4E2M1FN // packed: 2 elements a byte
	Int4         // packed: 2 elements a byte
	Uint4        // packed: 2 elements a byte
	Int2         // packed: 4 elements a byte
	Complex64
	Complex128
	// String has no fixed size: its bytes are the format's own encoding
	// (a TFLite string tensor's offset table and characters).
	String
	// The ggml block types: a block of Block() elements in a fixed number
	// of bytes, named as ggml names them in lowercase.
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q8_0
	Q8_1
	Q2_K
	Q3_K
	Q4_K
	Q5_K
	Q6_K
	Q8_K
	IQ2_XXS
	IQ2_XS
	IQ3_XXS
	IQ1_S
	IQ4_NL
	IQ3_S
	IQ2_S
	IQ4_XS
	IQ1_M
	TQ1_0
	TQ2_0
	MXFP4
	NVFP4
	Q1_0
	Q2_0
	numDTypes
)

// dtypeInfo gives each type's name and its block: elems elements in bytes
// bytes (elems 1 for the whole-byte types; 0 for String, which has no fixed
// size).
var dtypeInfo = [numDTypes]struct {
	name  string
	bytes uint16
	elems uint16
}{
	Invalid:        {"invalid", 0, 0},
	Float16:        {"float16", 2, 1},
	BFloat16:       {"bfloat16", 2, 1},
	Float32:        {"float32", 4, 1},
	Float64:        {"float64", 8, 1},
	Int8:           {"int8", 1, 1},
	Int16:          {"int16", 2, 1},
	Int32:          {"int32", 4, 1},
	Int64:          {"int64", 8, 1},
	Uint8:          {"uint8", 1, 1},
	Uint16:         {"uint16", 2, 1},
	Uint32:         {"uint32", 4, 1},
	Uint64:         {"uint64", 8, 1},
	Bool:           {"bool", 1, 1},
	QInt8:          {"qint8", 1, 1},
	QUInt8:         {"quint8", 1, 1},
	QInt32:         {"qint32", 4, 1},
	QUInt4x2:       {"quint4x2", 1, 1}, // PyTorch counts one byte per element
	QUInt2x4:       {"quint2x4", 1, 1},
	Bits16:         {"bits16", 2, 1},
	Float8E5M2:     {"float8_e5m2", 1, 1},
	Float8E4M3FN:   {"float8_e4m3fn", 1, 1},
	Float8E5M2FNUZ: {"float8_e5m2fnuz", 1, 1},
	Float8E4M3FNUZ: {"float8_e4m3fnuz", 1, 1},
	Float8E8M0FNU:  {"float8_e8m0fnu", 1, 1},
	Float6E2M3FN:   {"float6_e2m3fn", 3, 4},
	Float6E3M2FN:   {"float6_e3m2fn", 3, 4},
	Float4E2M1FN:   {"float4_e2m1fn", 1, 2},
	Int4:           {"int4", 1, 2},
	Uint4:          {"uint4", 1, 2},
	Int2:           {"int2", 1, 4},
	Complex64:      {"complex64", 8, 1},
	Complex128:     {"complex128", 16, 1},
	String:         {"string", 0, 0},
	Q4_0:           {"q4_0", 18, 32},
	Q4_1:           {"q4_1", 20, 32},
	Q5_0:           {"q5_0", 22, 32},
	Q5_1:           {"q5_1", 24, 32},
	Q8_0:           {"q8_0", 34, 32},
	Q8_1:           {"q8_1", 36, 32},
	Q2_K:           {"q2_k", 84, 256},
	Q3_K:           {"q3_k", 110, 256},
	Q4_K:           {"q4_k", 144, 256},
	Q5_K:           {"q5_k", 176, 256},
	Q6_K:           {"q6_k", 210, 256},
	Q8_K:           {"q8_k", 292, 256},
	IQ2_XXS:        {"iq2_xxs", 66, 256},
	IQ2_XS:         {"iq2_xs", 74, 256},
	IQ3_XXS:        {"iq3_xxs", 98, 256},
	IQ1_S:          {"iq1_s", 50, 256},
	IQ4_NL:         {"iq4_nl", 18, 32},
	IQ3_S:          {"iq3_s", 110, 256},
	IQ2_S:          {"iq2_s", 82, 256},
	IQ4_XS:         {"iq4_xs", 136, 256},
	IQ1_M:          {"iq1_m", 56, 256},
	TQ1_0:          {"tq1_0", 54, 256},
	TQ2_0:          {"tq2_0", 66, 256},
	MXFP4:          {"mxfp4", 17, 32},
	NVFP4:          {"nvfp4", 36, 64},
	Q1_0:           {"q1_0", 18, 128},
	Q2_0:           {"q2_0", 18, 64},
}

// String returns the type's name, e.g. "float32".
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size returns the element size in bytes: 0 for Invalid, for unknown
// values, and for the types whose elements are not whole bytes (the packed
// sub-byte types, the ggml block types and String; see Block).
func (d DType) Size() int {
	if d < numDTypes && dtypeInfo[d].elems == 1 {
		return int(dtypeInfo[d].bytes)
	}
	return 0
}

// Block returns how the type packs its elements: elems elements in bytes
// bytes (1 and Size() for the whole-byte types; 2 and 1 for Int4; 32 and
// 18 for Q4_0). Both are 0 for String, Invalid and unknown values.
func (d DType) Block() (elems, bytes int) {
	if d < numDTypes {
		return int(dtypeInfo[d].elems), int(dtypeInfo[d].bytes)
	}
	return 0, 0
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// ParseDType returns the DType with the given name.
func ParseDType(name string) (DType, bool) {
	for i := Invalid + 1; i < numDTypes; i++ {
		if dtypeInfo[i].name == name {
			return i, true
		}
	}
	return Invalid, false
}

// Location says where a tensor's bytes live.
type Location uint8

// Tensor locations. Their String values are those of the JSON output.
const (
	// LocNone: the value has no data in the file (e.g. a planned activation).
	LocNone Location = iota
	// LocSegment: in a segment outside the FlatBuffer (pte constant segment,
	// ptd named data, rten tensor data section).
	LocSegment
	// LocInline: inside the FlatBuffer (legacy pte constant_buffer, rten V1
	// or inline constants).
	LocInline
	// LocMutable: initial values in a pte mutable data segment.
	LocMutable
	// LocExternal: in another file (a .ptd), found by fully-qualified name.
	LocExternal
)

var locationNames = [...]string{"none", "segment", "inline", "mutable", "external"}

// String returns "segment", "inline", "mutable", "external" or "none".
func (l Location) String() string {
	if int(l) < len(locationNames) {
		return locationNames[l]
	}
	return "none"
}

// Numel returns the product of dims and the tensor's byte size for element
// type d, with overflow and negative dims rejected. maxBytes bounds the
// result (pass the file size, or math.MaxInt64).
//
// A shape with a zero dimension has no elements, whatever its other
// dimensions (their product is not checked against maxBytes).
func Numel(dims []int64, d DType, maxBytes int64) (numel, nbytes int64, ok bool) {
	empty := false
	for _, x := range dims {
		if x < 0 {
			return 0, 0, false
		}
		empty = empty || x == 0
	}
	elems, bsize := d.Block()
	if empty {
		return 0, 0, elems > 0
	}
	// The running product is checked against maxBytes with a full 128-bit
	// multiply (no division: a tensor's check costs a few cycles a dim).
	limit := uint64(max(maxBytes, 0))
	n := uint64(1)
	for _, x := range dims {
		hi, lo := bits.Mul64(n, uint64(x))
		if hi != 0 || lo > limit {
			// the product already exceeds any size that fits the file
			return 0, 0, false
		}
		n = lo
	}
	if elems == 0 {
		return 0, 0, false
	}
	// Packed types take whole blocks: ceil(n / elems) of them (n <= maxBytes
	// cannot overflow).
	blocks := (n + uint64(elems) - 1) / uint64(elems)
	if hi, lo := bits.Mul64(blocks, uint64(bsize)); hi != 0 || lo > limit {
		return 0, 0, false
	}
	return int64(n), int64(blocks * uint64(bsize)), true
}
