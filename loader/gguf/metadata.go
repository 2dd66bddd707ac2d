package gguf

import (
	"encoding/binary"
	"iter"
	"math"
)

// KV is one metadata key-value pair.
type KV struct {
	Key   string
	Value Value
	// Offset is the absolute file offset of the pair (its key's length).
	Offset int64
}

// Value is a metadata value: a view of its encoded bytes in the file's
// header, decoded when asked. Open checked every value, so the accessors
// cannot fail on the file's content; they report false only when the value
// is not of the type asked for. A Value stays valid until Close.
type Value struct {
	typ ValueType
	// b holds the encoded value without its type: the scalar, the string's
	// length and bytes, or an array's element type, count and elements.
	b   []byte
	off int64 // absolute offset of b[0]
}

// Type returns the value's type; TypeInvalid for the zero Value (what a
// lookup of a missing key returns), for which every As method reports false.
func (v Value) Type() ValueType {
	if v.b == nil {
		return TypeInvalid
	}
	return v.typ
}

// Offset returns the absolute file offset of the value's encoding (after
// its type).
func (v Value) Offset() int64 { return v.off }

// AsUint returns an integer value of any width or sign that is not
// negative.
func (v Value) AsUint() (uint64, bool) {
	switch v.Type() {
	case TypeUint8:
		return uint64(v.b[0]), true
	case TypeUint16:
		return uint64(binary.LittleEndian.Uint16(v.b)), true
	case TypeUint32:
		return uint64(binary.LittleEndian.Uint32(v.b)), true
	case TypeUint64:
		return binary.LittleEndian.Uint64(v.b), true
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		x, _ := v.AsInt()
		return uint64(x), x >= 0
	}
	return 0, false
}

// AsInt returns an integer value of any width or sign that fits an int64.
func (v Value) AsInt() (int64, bool) {
	switch v.Type() {
	case TypeInt8:
		return int64(int8(v.b[0])), true
	case TypeInt16:
		return int64(int16(binary.LittleEndian.Uint16(v.b))), true
	case TypeInt32:
		return int64(int32(binary.LittleEndian.Uint32(v.b))), true
	case TypeInt64:
		return int64(binary.LittleEndian.Uint64(v.b)), true
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		x, _ := v.AsUint()
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// AsFloat returns a float32 or float64 value.
func (v Value) AsFloat() (float64, bool) {
	switch v.Type() {
	case TypeFloat32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v.b))), true
	case TypeFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(v.b)), true
	}
	return 0, false
}

// AsBool returns a bool value.
func (v Value) AsBool() (bool, bool) {
	if v.Type() != TypeBool {
		return false, false
	}
	return v.b[0] == 1, true
}

// AsBytes returns a string value's bytes without copying them: a read-only
// view of the file, valid until Close.
func (v Value) AsBytes() ([]byte, bool) {
	if v.Type() != TypeString {
		return nil, false
	}
	return v.b[8:], true
}

// AsString returns a string value, as stored: the bytes are not
// normalised, and a file may hold invalid UTF-8.
func (v Value) AsString() (string, bool) {
	b, ok := v.AsBytes()
	return string(b), ok
}

// AsArray returns an array value.
func (v Value) AsArray() (Array, bool) {
	if v.Type() != TypeArray {
		return Array{}, false
	}
	return Array{
		elem: ValueType(binary.LittleEndian.Uint32(v.b)),
		n:    int64(binary.LittleEndian.Uint64(v.b[4:])),
		b:    v.b[12:],
		off:  v.off + 12,
	}, true
}

// Array is a metadata array: its elements are decoded one at a time as
// they are reached, so a 150,000-token vocabulary costs nothing until it
// is read.
type Array struct {
	elem ValueType
	n    int64
	b    []byte // the elements
	off  int64  // absolute offset of b[0]
}

// Len returns the number of elements.
func (a Array) Len() int64 { return a.n }

// ElemType returns the type of the elements.
func (a Array) ElemType() ValueType { return a.elem }

// At returns element i: in constant time for fixed-size elements, by
// walking the elements before it for strings and arrays.
func (a Array) At(i int64) (Value, bool) {
	if i < 0 || i >= a.n {
		return Value{}, false
	}
	if sz := int64(a.elem.Size()); sz > 0 {
		return Value{typ: a.elem, b: a.b[i*sz : (i+1)*sz], off: a.off + i*sz}, true
	}
	for j, v := range a.All() {
		if j == i {
			return v, true
		}
	}
	return Value{}, false
}

// All yields the elements in order with their indices, decoding each when
// it is reached. It allocates nothing.
func (a Array) All() iter.Seq2[int64, Value] {
	return func(yield func(int64, Value) bool) {
		pos := 0
		for i := int64(0); i < a.n; i++ {
			n := encodedLen(a.elem, a.b[pos:])
			if !yield(i, Value{typ: a.elem, b: a.b[pos : pos+n], off: a.off + int64(pos)}) {
				return
			}
			pos += n
		}
	}
}

// encodedLen returns the length of the value of type t at the start of b,
// which Open checked.
func encodedLen(t ValueType, b []byte) int {
	switch t {
	case TypeString:
		return 8 + int(binary.LittleEndian.Uint64(b))
	case TypeArray:
		a := Array{elem: ValueType(binary.LittleEndian.Uint32(b)), n: int64(binary.LittleEndian.Uint64(b[4:]))}
		if sz := int64(a.elem.Size()); sz > 0 {
			return 12 + int(a.n*sz)
		}
		pos := 12
		for i := int64(0); i < a.n; i++ {
			pos += encodedLen(a.elem, b[pos:])
		}
		return pos
	}
	return t.Size()
}

// Metadata returns the value of key. It allocates nothing.
func (f *File) Metadata(key string) (Value, bool) {
	i, ok := f.keyIndex.Lookup(key)
	if !ok {
		return Value{}, false
	}
	return f.kvs[i].Value, true
}

// KVs returns every metadata pair in file order. The slice is shared: do
// not modify it.
func (f *File) KVs() []KV { return f.kvs[:len(f.kvs):len(f.kvs)] }

// MetaString returns the string value of key.
func (f *File) MetaString(key string) (string, bool) {
	v, _ := f.Metadata(key)
	return v.AsString()
}

// MetaUint returns the non-negative integer value of key (any width).
func (f *File) MetaUint(key string) (uint64, bool) {
	v, _ := f.Metadata(key)
	return v.AsUint()
}

// MetaInt returns the integer value of key (any width that fits int64).
func (f *File) MetaInt(key string) (int64, bool) {
	v, _ := f.Metadata(key)
	return v.AsInt()
}

// MetaFloat returns the float32 or float64 value of key.
func (f *File) MetaFloat(key string) (float64, bool) {
	v, _ := f.Metadata(key)
	return v.AsFloat()
}

// MetaBool returns the bool value of key.
func (f *File) MetaBool(key string) (bool, bool) {
	v, _ := f.Metadata(key)
	return v.AsBool()
}

// MetaArray returns the array value of key.
func (f *File) MetaArray(key string) (Array, bool) {
	v, _ := f.Metadata(key)
	return v.AsArray()
}
