// Package fbread reads the fields of FlatBuffer tables that a verification
// (package fbverify) has already checked. It follows offsets and vector
// lengths without checking them again, so it must only be given verified
// buffers and positions; Go's bounds checks still stop a read outside the
// buffer (with a panic) should a caller get that wrong.
package fbread

import "encoding/binary"

// MaxFields is the most field ids (0 to MaxFields-1) a Fields decodes.
const MaxFields = 10

// Fields holds the field offsets of verified tables of one type. It
// decodes a table's vtable only when it differs from the one decoded last:
// writers share one vtable among the tables of a type that have the same
// fields, so reading the next table's fields costs no vtable lookup. The
// zero value is ready to use.
type Fields struct {
	vt1 int64 // the position of the vtable decoded last + 1; 0: none yet
	fo  [MaxFields]int64
}

// Of returns the offsets in the table at t of its fields, by id (0 for a
// field that is absent).
func (f *Fields) Of(fb []byte, t int64) *[MaxFields]int64 {
	if vt := t - int64(int32(binary.LittleEndian.Uint32(fb[t:t+4]))); vt+1 != f.vt1 {
		f.vt1 = vt + 1
		vtsize := int64(binary.LittleEndian.Uint16(fb[vt : vt+2]))
		for id := range f.fo {
			f.fo[id] = 0
			if e := 4 + 2*int64(id); e+2 <= vtsize {
				f.fo[id] = int64(binary.LittleEndian.Uint16(fb[vt+e : vt+e+2]))
			}
		}
	}
	return &f.fo
}

// Deref returns the position the offset at q refers to.
func Deref(fb []byte, q int64) int64 {
	return q + int64(binary.LittleEndian.Uint32(fb[q:q+4]))
}

// Vector returns the position of the first element and the length of the
// vector the offset at q refers to.
func Vector(fb []byte, q int64) (start, n int64) {
	s := Deref(fb, q)
	return s + 4, int64(binary.LittleEndian.Uint32(fb[s : s+4]))
}

// Bytes returns the bytes of the vector of elem-byte elements (a string's
// bytes for elem 1, without its NUL) the offset at q refers to.
func Bytes(fb []byte, q, elem int64) []byte {
	s, n := Vector(fb, q)
	return fb[s : s+elem*n]
}

// FieldVector is Vector for the offset field at table offset fo of the
// table at t (an offset from Fields.Of): 0, 0 when fo is 0 (absent).
func FieldVector(fb []byte, t, fo int64) (start, n int64) {
	if fo == 0 {
		return 0, 0
	}
	return Vector(fb, t+fo)
}

// FieldBytes is Bytes for the offset field at table offset fo of the
// table at t: nil when fo is 0 (absent).
func FieldBytes(fb []byte, t, fo, elem int64) []byte {
	if fo == 0 {
		return nil
	}
	return Bytes(fb, t+fo, elem)
}
