//go:build linux || freebsd || netbsd

package platform

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FadviseDontNeed asks the kernel to drop the clean pages of f in
// [off, off+n) from the page cache (posix_fadvise POSIX_FADV_DONTNEED).
// Pages still mapped by some process are kept; unmap or madvise them
// DONTNEED first. n == 0 means "to the end of the file".
func FadviseDontNeed(f File, off, n int64) error {
	if err := unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("platform: fadvise DONTNEED %s [%d,+%d): %w", f.Name(), off, n, err)
	}
	return nil
}

// FadviseWillNeed asks the kernel to read the pages of f in [off, off+n)
// into the page cache now (posix_fadvise POSIX_FADV_WILLNEED), without
// reading ahead beyond the range.
func FadviseWillNeed(f File, off, n int64) error {
	if err := unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED); err != nil {
		return fmt.Errorf("platform: fadvise WILLNEED %s [%d,+%d): %w", f.Name(), off, n, err)
	}
	return nil
}
