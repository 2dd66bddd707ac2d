// Package platform is edgeload's seam to the operating system: the page size,
// opening a file read-only (a bare descriptor on Unix systems, [FD]),
// read-only shared file mappings, madvise, mlock, mincore and fadvise.
//
// It is the only package in edgeload with build tags and raw system calls.
// On Linux, Darwin and the other Unix systems supported by golang.org/x/sys/unix
// (aix, dragonfly, freebsd, netbsd, openbsd, solaris) [Map] really maps the
// file (mmap PROT_READ, MAP_SHARED) and [ZeroCopy] is true. Everywhere else
// (Windows, Plan 9, WebAssembly, z/OS, ...) Map reads the range into a heap
// buffer with plain reads, the advisory calls are no-ops, and ZeroCopy is
// false so that the upper layers can report that they copy.
//
// Every call is a thin wrapper: page arithmetic belongs to package mmapfile.
// A call the running system lacks degrades to the closest advice or returns
// an error wrapping [errors.ErrUnsupported].
package platform

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// File is what [Map] and [FadviseDontNeed] need of an open file: an
// [*FD] from [OpenFile], or an [*os.File].
type File interface {
	io.ReaderAt
	Fd() uintptr
	Name() string
}

// Advice is a hint about how a mapped range will be used, passed to [Madvise].
type Advice int

// The advice values understood by [Madvise]. They map to the MADV_* constants
// of the running system; values the system lacks degrade as documented.
const (
	// AdviceNormal resets the range to the default read-ahead behaviour.
	AdviceNormal Advice = iota
	// AdviceRandom disables read-ahead for the range.
	AdviceRandom
	// AdviceSequential asks for aggressive read-ahead.
	AdviceSequential
	// AdviceWillNeed starts asynchronous read-in of the range.
	AdviceWillNeed
	// AdviceDontNeed drops the range's pages from the process. For a shared
	// read-only file mapping the contents stay valid: touching the range
	// again faults the pages back in from the page cache or the file.
	AdviceDontNeed
	// AdviceHugePage enables transparent huge pages for the range where the
	// kernel supports it (Linux); a no-op elsewhere.
	AdviceHugePage
	// AdvicePopulateRead faults the range in synchronously (Linux 5.14+
	// MADV_POPULATE_READ). Where the kernel rejects it (EINVAL) or lacks it,
	// it falls back to AdviceWillNeed.
	AdvicePopulateRead
)

var adviceNames = [...]string{"Normal", "Random", "Sequential", "WillNeed", "DontNeed", "HugePage", "PopulateRead"}

// String returns the name of the advice, such as "WillNeed".
func (a Advice) String() string {
	if a >= 0 && int(a) < len(adviceNames) {
		return adviceNames[a]
	}
	return fmt.Sprintf("Advice(%d)", int(a))
}

var (
	pageSizeOnce sync.Once
	pageSize     int
)

// PageSize returns the virtual memory page size of the running system, as
// reported by the OS at run time (4 KiB, 16 KiB and 64 KiB all occur on ARM).
// It never assumes 4096.
func PageSize() int {
	pageSizeOnce.Do(func() {
		pageSize = os.Getpagesize()
		if pageSize <= 0 {
			pageSize = 4096
		}
	})
	return pageSize
}

// errNegative is returned by Map for a negative offset or length.
var errNegative = errors.New("platform: negative offset or length")

// errUnaligned is returned by Map for an offset that is not page-aligned.
var errUnaligned = errors.New("platform: offset not page-aligned")

func checkMapArgs(off int64, length int) error {
	if off < 0 || length < 0 {
		return fmt.Errorf("%w (off=%d length=%d)", errNegative, off, length)
	}
	if ZeroCopy && off%int64(PageSize()) != 0 {
		return fmt.Errorf("%w (off=%d page=%d)", errUnaligned, off, PageSize())
	}
	return nil
}

// errUnsupportedDirect is OpenDirect's error where the system or the file
// system has no direct I/O.
var errUnsupportedDirect = fmt.Errorf("direct I/O: %w", errors.ErrUnsupported)
