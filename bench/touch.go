package bench

import (
	"os"
	"unsafe"
)

// Sink receives what the touch functions read, so that the compiler cannot
// drop the reads.
var Sink byte

// TouchFirst reads the first byte of every view: one page fault per tensor
// when the pages are not yet mapped into the process.
func TouchFirst(views [][]byte) {
	var s byte
	for _, v := range views {
		if len(v) > 0 {
			s += v[0]
		}
	}
	Sink += s
}

// TouchPages reads one byte in every page that holds a byte of a view (the
// first byte of the view, then the first byte of each following page), so
// that every page of every view is faulted in. pageSize must be a power of
// two; 0 means the OS page size.
func TouchPages(views [][]byte, pageSize int) {
	if pageSize <= 0 {
		pageSize = os.Getpagesize()
	}
	ps := uintptr(pageSize)
	var s byte
	for _, v := range views {
		if len(v) == 0 {
			continue
		}
		s += v[0]
		// Offset of the first page boundary after &v[0].
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
		for i := int((addr+ps)&^(ps-1) - addr); i < len(v); i += pageSize {
			s += v[i]
		}
	}
	Sink += s
}

// Pages returns how many pages (of pageSize, 0 meaning the OS page size)
// TouchPages reads for views.
func Pages(views [][]byte, pageSize int) int {
	if pageSize <= 0 {
		pageSize = os.Getpagesize()
	}
	ps := uintptr(pageSize)
	n := 0
	for _, v := range views {
		if len(v) == 0 {
			continue
		}
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
		end := addr + uintptr(len(v))
		n += int((end+ps-1)/ps - addr/ps)
	}
	return n
}
