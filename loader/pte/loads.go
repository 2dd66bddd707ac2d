package pte

import (
	"encoding/binary"
	"unsafe"
)

// The lane (lane.go) reads table fields, vector elements and offsets at
// positions it has already checked to lie in the buffer, so it reads them
// without Go's bounds checks: ld8, ld32 and ld64 read the byte, the
// little-endian uint32 and uint64 at fb[pos:], which the caller has checked
// lies in fb. Built with -tags edgeload_checked (CI runs the tests and the
// fuzz targets so) they index fb as usual, and a position the lane failed
// to check panics instead of reading outside the buffer.

func ld8(fb []byte, pos int64) uint8 {
	if checkedLoads {
		return fb[pos]
	}
	return *(*uint8)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(fb)), pos))
}

func ld32(fb []byte, pos int64) int64 {
	if checkedLoads {
		return int64(binary.LittleEndian.Uint32(fb[pos : pos+4]))
	}
	return int64(binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(fb)), pos))[:]))
}

func ld64(fb []byte, pos int64) uint64 {
	if checkedLoads {
		return binary.LittleEndian.Uint64(fb[pos : pos+8])
	}
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(fb)), pos))[:])
}
