package segment

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"unsafe"
)

// Elem is the set of element types a segment can be viewed as. float16 and
// bfloat16 are viewed as their uint16 bit patterns.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~bool
}

// littleEndian reports whether the host stores integers little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// As returns the segment as a []T of Len()/sizeof(T) elements, stored
// little-endian in the file.
//
// When the host is little-endian and the segment's address is aligned for T,
// v is a reinterpretation of the mapping (zero copy, copied == false) and is
// read-only. Otherwise v is a newly allocated, decoded copy and copied is
// true. Len must be a multiple of the element size. For bool every byte must
// be 0 or 1 (all bytes are checked, which touches every page). Reads that
// may touch the mapping are fault-safe (ErrTruncated).
func As[T Elem](s Segment) (v []T, copied bool, err error) {
	var zero T
	size := int64(unsafe.Sizeof(zero))
	align := uintptr(unsafe.Alignof(zero))
	if s.n%size != 0 {
		return nil, false, fmt.Errorf("%w: segment %v: length %d is not a multiple of the %T size %d", ErrRange, s, s.n, zero, size)
	}
	if s.f == nil || s.n == 0 {
		return nil, false, nil
	}
	b, err := s.view()
	if err != nil {
		return nil, false, err
	}
	count := len(b) / int(size)
	if reflect.TypeFor[T]().Kind() == reflect.Bool {
		if err := checkBools(s, b); err != nil {
			return nil, false, err
		}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if littleEndian && uintptr(p)%align == 0 {
		// A view of the mapping, or (ModeCopy) a private copy already.
		return unsafe.Slice((*T)(p), count), !s.f.ZeroCopy(), nil
	}
	out := make([]T, count)
	ob := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), len(b))
	if err := s.f.Guard(func() { copy(ob, b) }); err != nil {
		return nil, false, s.faultErr(b, err)
	}
	if !littleEndian && size > 1 {
		swapBytes(ob, int(size))
	}
	return out, true, nil
}

// checkBools verifies that every byte of b is 0 or 1.
func checkBools(s Segment, b []byte) error {
	bad := -1
	err := s.f.Guard(func() {
		for i, c := range b {
			if c > 1 {
				bad = i
				return
			}
		}
	})
	if err != nil {
		return s.faultErr(b, err)
	}
	if bad >= 0 {
		return fmt.Errorf("segment %v: byte %d at file offset %d is %d, not a bool (0 or 1)", s, bad, s.off+int64(bad), b[bad])
	}
	return nil
}

// swapBytes reverses the byte order of each size-byte element of b.
func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for l, r := 0, size-1; l < r; l, r = l+1, r-1 {
			e[l], e[r] = e[r], e[l]
		}
	}
}

// Float32 returns the segment as []float32; see [As].
func (s Segment) Float32() ([]float32, bool, error) { return As[float32](s) }

// Float64 returns the segment as []float64; see [As].
func (s Segment) Float64() ([]float64, bool, error) { return As[float64](s) }

// Uint16 returns the segment as []uint16, also used for the bit patterns of
// float16 and bfloat16 tensors; see [As].
func (s Segment) Uint16() ([]uint16, bool, error) { return As[uint16](s) }

// Int8 returns the segment as []int8; see [As].
func (s Segment) Int8() ([]int8, bool, error) { return As[int8](s) }

// Int16 returns the segment as []int16; see [As].
func (s Segment) Int16() ([]int16, bool, error) { return As[int16](s) }

// Int32 returns the segment as []int32; see [As].
func (s Segment) Int32() ([]int32, bool, error) { return As[int32](s) }

// Int64 returns the segment as []int64; see [As].
func (s Segment) Int64() ([]int64, bool, error) { return As[int64](s) }

// Uint8 returns the segment as []uint8; see [As].
func (s Segment) Uint8() ([]uint8, bool, error) { return As[uint8](s) }

// Uint32 returns the segment as []uint32; see [As].
func (s Segment) Uint32() ([]uint32, bool, error) { return As[uint32](s) }

// Uint64 returns the segment as []uint64; see [As].
func (s Segment) Uint64() ([]uint64, bool, error) { return As[uint64](s) }

// Bool returns the segment as []bool, checking that every byte is 0 or 1;
// see [As].
func (s Segment) Bool() ([]bool, bool, error) { return As[bool](s) }
