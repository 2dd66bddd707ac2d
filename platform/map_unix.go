//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package platform

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ZeroCopy reports whether [Map] really maps the file (true on Unix systems),
// so that views point into the page cache, or copies it into the heap (false).
const ZeroCopy = true

// Map maps length bytes of f starting at off, read-only and shared
// (PROT_READ, MAP_SHARED). off must be a multiple of [PageSize]. The returned
// slice has len and cap equal to length; the kernel maps whole pages, so the
// bytes between length and the next page boundary are addressable by the
// system calls of this package (and read as zero when past the end of file).
//
// A zero length returns a nil slice and no error, without a system call.
// The mapping must be released with [Unmap] on a slice with the same start
// and length. The kernel chooses where the mapping goes.
func Map(f File, off int64, length int) ([]byte, error) {
	if err := checkMapArgs(off, length); err != nil {
		return nil, err
	}
	if length == 0 {
		return nil, nil
	}
	p, err := unix.MmapPtr(int(f.Fd()), off, nil, uintptr(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("platform: mmap %s [%d,+%d): %w", f.Name(), off, length, err)
	}
	return unsafe.Slice((*byte)(p), length), nil
}

// Unmap removes the mapping starting at &b[0] and spanning len(b) bytes
// (rounded up to whole pages by the kernel). An empty b is a no-op.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b))); err != nil {
		return fmt.Errorf("platform: munmap: %w", err)
	}
	return nil
}

// Madvise gives advice a about the pages of b, which must start on a page
// boundary. AdvicePopulateRead falls back to AdviceWillNeed when the kernel
// does not know it (EINVAL); AdviceHugePage rejected with EINVAL and advice
// the system lacks are no-ops.
func Madvise(b []byte, a Advice) error {
	if len(b) == 0 {
		return nil
	}
	adv, ok := madvConst(a)
	if !ok {
		return nil
	}
	err := unix.Madvise(b, adv)
	if err != nil && a == AdvicePopulateRead && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS)) {
		adv, _ = madvConst(AdviceWillNeed)
		err = unix.Madvise(b, adv)
	}
	if err != nil && a == AdviceHugePage && errors.Is(err, unix.EINVAL) {
		// Kernels without transparent huge pages (for this kind of
		// mapping) reject the hint; it is only a hint.
		err = nil
	}
	if err != nil {
		return fmt.Errorf("platform: madvise %v: %w", a, err)
	}
	return nil
}

// Mlock locks the pages of b into RAM. It fails with EPERM, ENOMEM or EAGAIN
// when RLIMIT_MEMLOCK or the system forbids it; callers decide whether that
// matters.
func Mlock(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Mlock(b); err != nil {
		return fmt.Errorf("platform: mlock: %w", err)
	}
	return nil
}

// Munlock unlocks the pages of b.
func Munlock(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Munlock(b); err != nil {
		return fmt.Errorf("platform: munlock: %w", err)
	}
	return nil
}

// Alloc returns n bytes of zeroed anonymous memory, page-aligned and
// outside the Go heap (a private anonymous mapping), for buffers the
// caller frees with [Unmap]. The kernel backs its pages when first touched.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	b, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("platform: allocate %d bytes: %w", n, err)
	}
	return unsafe.Slice((*byte)(b), n), nil
}
