// Package segment describes a byte range of a mapped file and its life:
// zero-copy views, typed views, prefetch, release, locking, residency, and
// fault-safe copies and checksums.
//
// A [Segment] is a small value (a file and a range) that is free to copy.
// It holds no resources of its own: its views live as long as the
// [mmapfile.File] they point into, that is until Close (or, in windowed
// mode, until an Evict that covers them).
//
// [As] and the typed methods reinterpret the bytes in place when the host is
// little-endian and the address is aligned for the element type; otherwise
// they decode a copy and report copied = true. float16 and bfloat16 tensors
// are returned as their uint16 bit patterns.
//
// Release drops the pages wholly inside the range from the process and, with
// [DropPageCache], from the page cache; views remain valid. A file system
// that caches in large folios drops only folios the range covers wholly, so
// streaming readers release from the previous tensor's start to the current
// one's end. CopyTo, Checksum, SHA256 and Touch are fault-safe: a file
// truncated under them gives an error wrapping [ErrTruncated], not SIGBUS.
//
// Any number of goroutines may read segments of one file at the same time;
// Prefetch, Release, Lock and Resident may run beside them.
package segment

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"math"
	"sync/atomic"
	"syscall"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// Sentinel errors, shared with package mmapfile.
var (
	// ErrTruncated: the file shrank under the mapping (SIGBUS caught).
	ErrTruncated = mmapfile.ErrTruncated
	// ErrClosed: the file was closed.
	ErrClosed = mmapfile.ErrClosed
	// ErrRange: a range is negative, overflows or exceeds the segment.
	ErrRange = mmapfile.ErrRange
)

// Segment is the byte range [Offset, Offset+Len) of a mapped file. It is a
// small value type with value receivers; copying it is free. The zero value
// is an empty segment: its views are empty and its operations do nothing.
type Segment struct {
	f      *mmapfile.File
	off, n int64
}

// New returns the segment [off, off+n) of f, checking the range against
// f.Len() with overflow-safe arithmetic. Errors wrap ErrRange or ErrClosed.
func New(f *mmapfile.File, off, n int64) (Segment, error) {
	// Small enough for Go to inline (a view per tensor starts here): the
	// error is built without a call.
	if f == nil {
		if off == 0 && n == 0 {
			return Segment{}, nil
		}
		return Segment{}, &rangeError{off: off, n: n}
	}
	if size := f.Len(); off < 0 || n < 0 || off > size || n > size-off {
		return Segment{}, &rangeError{f: f, off: off, n: n}
	}
	return Segment{f: f, off: off, n: n}, nil
}

// rangeError is New's error: it wraps ErrRange.
type rangeError struct {
	f      *mmapfile.File
	off, n int64
}

func (e *rangeError) Error() string {
	if e.f == nil {
		return fmt.Sprintf("%v: segment [off=%d n=%d) of a nil file", ErrRange, e.off, e.n)
	}
	return fmt.Sprintf("%v: segment [off=%d n=%d) of %q, len=%d", ErrRange, e.off, e.n, e.f.Name(), e.f.Len())
}

func (e *rangeError) Unwrap() error { return ErrRange }

// File returns the file the segment belongs to (nil for the zero Segment).
func (s Segment) File() *mmapfile.File { return s.f }

// Offset returns the file offset of the segment's first byte.
func (s Segment) Offset() int64 { return s.off }

// Len returns the length of the segment in bytes.
func (s Segment) Len() int64 { return s.n }

// Sub returns the sub-range [off, off+n) of s, with offsets relative to s,
// checked with overflow-safe arithmetic.
func (s Segment) Sub(off, n int64) (Segment, error) {
	if off < 0 || n < 0 || off > s.n || n > s.n-off {
		return Segment{}, fmt.Errorf("%w: sub-segment [off=%d n=%d) of a %d-byte segment at %d", ErrRange, off, n, s.n, s.off)
	}
	if s.f == nil {
		return Segment{}, nil
	}
	return Segment{f: s.f, off: s.off + off, n: n}, nil
}

// String describes the segment as "name[off:end]".
func (s Segment) String() string {
	name := ""
	if s.f != nil {
		name = s.f.Name()
	}
	return fmt.Sprintf("%s[%d:%d]", name, s.off, s.off+s.n)
}

// Bytes returns the segment's bytes: a zero-copy view into the mapping
// (allocation-free in whole-file mode), read-only and valid until the file
// is closed. Release does not invalidate it. See [mmapfile.File.View].
func (s Segment) Bytes() ([]byte, error) {
	return s.f.View(s.off, s.n) // the zero Segment: a nil File's empty view
}

// Prefetch asks the kernel to read the segment's pages in now
// (MADV_POPULATE_READ, falling back to MADV_WILLNEED).
func (s Segment) Prefetch() error { return s.Advise(mmapfile.AdvicePopulateRead) }

// Advise gives arbitrary advice about the segment's pages; see
// [mmapfile.File.Advise].
func (s Segment) Advise(a mmapfile.Advice) error {
	if s.f == nil {
		return nil
	}
	return s.f.Advise(s.off, s.n, a)
}

type releaseConfig struct{ dropCache bool }

// ReleaseOption configures Release.
type ReleaseOption func(*releaseConfig)

// DropPageCache makes Release also drop the pages from the page cache
// (posix_fadvise DONTNEED), so that they are read from storage again when
// touched. It is a hint; systems without fadvise ignore it.
func DropPageCache() ReleaseOption { return func(c *releaseConfig) { c.dropCache = true } }

// Release drops the pages wholly inside the segment from the process (pages
// shared with a neighbour stay). The segment's views stay valid and fault
// the pages back in when touched.
func (s Segment) Release(opts ...ReleaseOption) error {
	if s.f == nil {
		return nil
	}
	var c releaseConfig
	for _, o := range opts {
		o(&c)
	}
	return s.f.Release(s.off, s.n, c.dropCache)
}

// Evict unmaps the windows holding the segment in windowed mode, which
// invalidates their views (see [mmapfile.File.Evict]); in whole-file mode it
// is Release.
func (s Segment) Evict() error {
	if s.f == nil {
		return nil
	}
	return s.f.Evict(s.off, s.n)
}

// Lock locks the segment's pages into RAM. With strict false it is best
// effort: the usual refusals (EPERM, ENOMEM, EAGAIN from RLIMIT_MEMLOCK,
// containers and phones) are ignored and Lock returns nil; other errors,
// such as ErrClosed, are returned. With strict true every error is returned.
func (s Segment) Lock(strict bool) error {
	if s.f == nil {
		return nil
	}
	err := s.f.Lock(s.off, s.n)
	if err != nil && !strict && isLockRefusal(err) {
		return nil
	}
	return err
}

// isLockRefusal reports whether err is one of the refusals a best-effort
// Lock ignores: EPERM, ENOMEM or EAGAIN.
func isLockRefusal(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.ENOMEM || errno == syscall.EAGAIN)
}

// Unlock unlocks the segment's pages.
func (s Segment) Unlock() error {
	if s.f == nil {
		return nil
	}
	return s.f.Unlock(s.off, s.n)
}

// Resident reports how many of the pages covering the segment are resident,
// and how many pages cover it; see [mmapfile.File.Resident].
func (s Segment) Resident() (resident, total int, err error) {
	if s.f == nil {
		return 0, 0, nil
	}
	return s.f.Resident(s.off, s.n)
}

// chunk is the unit in which Checksum feeds a hash, so that a fault is
// reported with the offset of the chunk that hit it.
const chunk = 1 << 20

// view returns the segment's bytes for the fault-safe readers.
func (s Segment) view() ([]byte, error) {
	if s.n > math.MaxInt {
		return nil, fmt.Errorf("%w: segment of %d bytes exceeds the address space", ErrRange, s.n)
	}
	return s.Bytes()
}

// faultErr describes a fault that hit while reading the view b of s,
// naming the file offset of the faulting byte when it can.
func (s Segment) faultErr(b []byte, err error) error {
	var fe *mmapfile.FaultError
	if errors.As(err, &fe) {
		if o := fe.Offset(b); o >= 0 {
			return fmt.Errorf("segment %v: at file offset %d: %w", s, s.off+o, err)
		}
	}
	return fmt.Errorf("segment %v: %w", s, err)
}

// CopyTo copies the segment's bytes into dst, up to len(dst), and returns
// the number copied. It reads through the file (pread), not the mapping: no
// page is mapped into the process, and the kernel reads ahead only as a
// read does, where a fault reads a whole window around the page (up to the
// device's read_ahead_kb). That makes it the way to read a few bytes of a
// large model: a norm's weights, an embedding's row. A file truncated under
// it gives an error wrapping ErrTruncated.
func (s Segment) CopyTo(dst []byte) (int, error) {
	if s.f == nil || len(dst) == 0 {
		return 0, nil
	}
	m := min(int64(len(dst)), s.n)
	n, err := s.f.ReadAt(dst[:m], s.off)
	if err != nil {
		return n, fmt.Errorf("segment %v: %w", s, err)
	}
	return n, nil
}

// Checksum writes the segment's bytes into h in chunks, straight from the
// mapping. It is fault-safe like CopyTo.
func (s Segment) Checksum(h hash.Hash) error {
	if s.f == nil || s.n == 0 {
		return nil
	}
	if !s.f.ZeroCopy() {
		return s.readChunks(func(c []byte) { h.Write(c) })
	}
	b, err := s.view()
	if err != nil {
		return err
	}
	for i := 0; i < len(b); i += chunk {
		c := b[i:min(i+chunk, len(b))]
		if err := s.f.Guard(func() { h.Write(c) }); err != nil {
			return s.faultErr(b, err)
		}
	}
	return nil
}

// readChunks feeds the segment to fn in chunks read with ReadAt, for files
// whose views are copies (ModeCopy): memory stays bounded by the chunk size.
func (s Segment) readChunks(fn func(c []byte)) error {
	buf := make([]byte, min(s.n, chunk))
	for off := int64(0); off < s.n; {
		c := buf[:min(int64(len(buf)), s.n-off)]
		if _, err := s.f.ReadAt(c, s.off+off); err != nil {
			return fmt.Errorf("segment %v: %w", s, err)
		}
		fn(c)
		off += int64(len(c))
	}
	return nil
}

// SHA256 returns the SHA-256 digest of the segment's bytes; fault-safe like
// CopyTo.
func (s Segment) SHA256() ([32]byte, error) {
	var sum [32]byte
	h := sha256.New()
	if err := s.Checksum(h); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	return sum, nil
}

// touchSink keeps the reads of Touch from being optimised away.
var touchSink atomic.Uint32

// Touch reads one byte of every page (of the OS page size) of the segment,
// faulting all of it in. It is fault-safe like CopyTo: on a truncated file
// it returns an error wrapping ErrTruncated. For a file whose views are
// copies (ModeCopy) it reads the segment through, warming the page cache.
func (s Segment) Touch() error {
	if s.f == nil || s.n == 0 {
		return nil
	}
	if !s.f.ZeroCopy() {
		return s.readChunks(func([]byte) {})
	}
	b, err := s.view()
	if err != nil {
		return err
	}
	ps := platform.PageSize()
	// Start at the first page boundary inside the segment (or its first
	// byte) and then read one byte per page. Page boundaries are those of
	// the underlying file, which a section's offsets are relative to.
	base, _ := s.f.Section()
	first := int((int64(ps) - (base+s.off)%int64(ps)) % int64(ps))
	var acc byte
	err = s.f.Guard(func() {
		acc = b[0]
		for i := first; i < len(b); i += ps {
			acc ^= b[i]
		}
	})
	touchSink.Store(uint32(acc))
	if err != nil {
		return s.faultErr(b, err)
	}
	return nil
}
