//go:build !(linux || freebsd || netbsd)

package platform

// FadviseDontNeed asks the kernel to drop the pages of f in [off, off+n)
// from the page cache. This system has no posix_fadvise, so it is a no-op
// that returns nil: dropping the page cache is only ever a hint.
func FadviseDontNeed(f File, off, n int64) error { return nil }

// FadviseWillNeed asks the kernel to read the pages of f in [off, off+n)
// into the page cache. This system has no posix_fadvise, so it is a no-op.
func FadviseWillNeed(f File, off, n int64) error { return nil }
