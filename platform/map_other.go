//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package platform

import (
	"fmt"
	"io"
	"unsafe"
)

// ZeroCopy reports whether [Map] really maps the file (true on Unix systems),
// so that views point into the page cache, or copies it into the heap (false,
// as on this system).
const ZeroCopy = false

// Map reads length bytes of f starting at off into a new heap buffer: this
// system has no mapping support in edgeload, so the "mapping" is a copy made
// with plain reads (ZeroCopy is false). A zero length returns nil.
func Map(f File, off int64, length int) ([]byte, error) {
	if err := checkMapArgs(off, length); err != nil {
		return nil, err
	}
	if length == 0 {
		return nil, nil
	}
	b := make([]byte, length)
	n, err := f.ReadAt(b, off)
	if err == io.EOF {
		// Like a mapping, bytes past the end of the file read as zero.
		clear(b[n:])
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("platform: read %s [%d,+%d): %w", f.Name(), off, length, err)
	}
	return b, nil
}

// Unmap releases a buffer returned by [Map]; here it is garbage collected,
// so this is a no-op.
func Unmap(b []byte) error { return nil }

// Madvise is a no-op on this system: its buffers live on the heap.
func Madvise(b []byte, a Advice) error { return nil }

// Mlock is a no-op on this system: its buffers live on the heap.
func Mlock(b []byte) error { return nil }

// Munlock is a no-op on this system: its buffers live on the heap.
func Munlock(b []byte) error { return nil }

// Alloc returns n bytes of zeroed memory starting on a page boundary; here
// it lives on the heap and [Unmap] of it is a no-op.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	ps := PageSize()
	b := make([]byte, n+ps)
	skip := (ps - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(ps))) % ps
	return b[skip : skip+n : skip+n], nil
}
