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
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size uint8
}{
	Invalid:        {"invalid", 0},
	Float16:        {"float16", 2},
	BFloat16:       {"bfloat16", 2},
	Float32:        {"float32", 4},
	Float64:        {"float64", 8},
	Int8:           {"int8", 1},
	Int16:          {"int16", 2},
	Int32:          {"int32", 4},
	Int64:          {"int64", 8},
	Uint8:          {"uint8", 1},
	Uint16:         {"uint16", 2},
	Uint32:         {"uint32", 4},
	Uint64:         {"uint64", 8},
	Bool:           {"bool", 1},
	QInt8:          {"qint8", 1},
	QUInt8:         {"quint8", 1},
	QInt32:         {"qint32", 4},
	QUInt4x2:       {"quint4x2", 1}, // PyTorch counts one byte per element
	QUInt2x4:       {"quint2x4", 1},
	Bits16:         {"bits16", 2},
	Float8E5M2:     {"float8_e5m2", 1},
	Float8E4M3FN:   {"float8_e4m3fn", 1},
	Float8E5M2FNUZ: {"float8_e5m2fnuz", 1},
	Float8E4M3FNUZ: {"float8_e4m3fnuz", 1},
}

// String returns the type's name, e.g. "float32".
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size returns the element size in bytes (0 for Invalid or unknown values).
func (d DType) Size() int {
	if d < numDTypes {
		return int(dtypeInfo[d].size)
	}
	return 0
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

// String returns "segment", "inline", "mutable", "external" or "none".
func (l Location) String() string {
	switch l {
	case LocSegment:
		return "segment"
	case LocInline:
		return "inline"
	case LocMutable:
		return "mutable"
	case LocExternal:
		return "external"
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
	if empty {
		return 0, 0, d.Size() > 0
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
	sz := uint64(d.Size())
	if sz == 0 {
		return 0, 0, false
	}
	if hi, lo := bits.Mul64(n, sz); hi != 0 || lo > limit {
		return 0, 0, false
	}
	return int64(n), int64(n * sz), true
}
