// Package mmapfile maps a file read-only into memory, page-aligned, and hands
// out zero-copy views of arbitrary byte ranges of it.
//
// A [File] maps the whole file at Open (ModeWhole, the default on 64-bit
// systems), maps windows on demand (ModeWindowed, for 32-bit address spaces
// and munmap-level release), serves a byte slice (ModeMemory) or copies out
// of an [io.ReaderAt] (ModeCopy, where [platform.ZeroCopy] is false), with
// the same API in each. Opening costs O(1) in the size of the file: no page
// is touched until a view is used. [WithSection] and [WithZipEntry] open a
// byte range of a file as a File of its own.
//
// Ranges need not be page-aligned. Advice, locking and residency act on the
// pages that cover a range; Release and DONTNEED act only on the pages
// wholly inside it, so that a neighbouring range that shares a page is never
// disturbed. [File.Release] keeps the mapping, so views stay valid; only
// [File.Evict] in windowed mode and [File.Close] unmap.
//
// If the file is truncated while mapped, touching a page past the new end
// raises SIGBUS. [File.ReadAt] reads through the descriptor and reports a
// short read as [ErrTruncated]; [File.Guard] turns a fault in code that
// reads views into an error wrapping ErrTruncated.
//
// A File is safe for concurrent use; as with [os.File], calling Close while
// other calls use it, or touching a view after Close, is a bug.
package mmapfile

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/edgeload/edgeload/platform"
)

// Sentinel errors, for errors.Is. Errors returned by this package wrap them
// with the details (offsets, sizes, file name).
var (
	// ErrClosed is returned by every method of a File after Close.
	ErrClosed = errors.New("mmapfile: file closed")
	// ErrRange is returned for a negative, overflowing or out-of-bounds range.
	ErrRange = errors.New("mmapfile: range out of bounds")
	// ErrTruncated is returned when the file shrank under the mapping and a
	// read hit a page past its new end (SIGBUS turned into an error).
	ErrTruncated = errors.New("mmapfile: file truncated under the mapping")
)

// Mode is the way a File maps its contents.
type Mode int

// The modes of a File. ModeAuto is only an Open option; a File reports the
// mode that was chosen.
const (
	// ModeAuto lets Open choose: ModeCopy where the platform cannot map,
	// ModeWindowed when the file is larger than the budget (or than the
	// address space), ModeWhole otherwise.
	ModeAuto Mode = iota
	// ModeWhole maps the whole file at Open.
	ModeWhole
	// ModeWindowed maps page-aligned windows on demand and caches them.
	ModeWindowed
	// ModeMemory serves views of a byte slice (NewBytes, or Open with
	// WithMode(ModeMemory), which reads the whole file into memory).
	ModeMemory
	// ModeCopy copies every view out of an io.ReaderAt (NewReaderAt, or Open
	// on a platform without zero-copy mapping).
	ModeCopy
)

var modeNames = [...]string{"auto", "whole", "windowed", "memory", "copy"}

// String returns the lower-case name of the mode, such as "whole".
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Advice is a hint about how a range will be used; see [platform.Advice].
type Advice = platform.Advice

// The advice values, re-exported from package platform.
const (
	AdviceNormal       = platform.AdviceNormal
	AdviceRandom       = platform.AdviceRandom
	AdviceSequential   = platform.AdviceSequential
	AdviceWillNeed     = platform.AdviceWillNeed
	AdviceDontNeed     = platform.AdviceDontNeed
	AdviceHugePage     = platform.AdviceHugePage
	AdvicePopulateRead = platform.AdvicePopulateRead
)

// is32bit reports whether pointers are 32 bits wide.
const is32bit = unsafe.Sizeof(uintptr(0)) == 4

// DefaultBudget is the file size above which ModeAuto picks ModeWindowed:
// 1 GiB on 32-bit systems, unlimited (math.MaxInt64) on 64-bit ones.
var DefaultBudget int64 = defaultBudget()

func defaultBudget() int64 {
	if is32bit {
		return 1 << 30
	}
	return math.MaxInt64
}

type config struct {
	mode     Mode
	budget   int64
	pageSize int
	page     int64 // the page size in use (pageSize, or the OS's)
	osPage   int64
	name     string
	// where: a section [off, off+n) (WithSection), or a zip entry
	// (WithZipEntry) whose data is then the section.
	section bool
	off, n  int64
	entry   string
}

// Option configures Open.
type Option func(*config)

// WithMode selects the mapping mode (default ModeAuto).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithBudget sets the file size above which ModeAuto picks ModeWindowed.
// The default is [DefaultBudget].
func WithBudget(n int64) Option { return func(c *config) { c.budget = n } }

// WithPageSize sets the page size used for all page arithmetic (alignment of
// windows, covering and inner pages, residency totals). It must be a power
// of two and a multiple of [platform.PageSize]; it exists so that tests can
// exercise 16 KiB and 64 KiB pages on a 4 KiB host. The default is the OS
// page size.
func WithPageSize(n int) Option { return func(c *config) { c.pageSize = n } }

// WithName sets the name the File reports ([File.Name]) and its errors
// give, in place of the path: for example "app.apk!/assets/model.pte" for
// a section that is a zip entry.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// File is a read-only mapped file, or section of a file (or byte slice, or
// ReaderAt), that hands out views of byte ranges. Create it with [Open],
// [NewFile], [NewBytes] or [NewReaderAt].
type File struct {
	name   string
	fd     handle
	size   int64
	mode   Mode
	ps     int64 // page size for page arithmetic
	ops    int64 // OS page size, for system calls
	closed atomic.Bool

	// A File shows the bytes [base, base+size) of the file behind it
	// (base is 0 for a whole file). Offsets given to methods are relative
	// to base; page arithmetic and system calls work on file offsets.
	base  int64
	atEOF bool  // base+size is the end of the file: the last page is the File's own
	mbase int64 // file offset of the first mapped page: base rounded down to ps
	limit int64 // file offset of the end of the addressable mapping: base+size rounded up to ops

	data    []byte // ModeWhole: the mapping of [base,base+size); ModeMemory: the bytes
	mapped  []byte // ModeWhole: the mapping of [mbase,limit), for system calls
	mapping []byte // ModeWhole: the slice Map returned, for Unmap
	ra      io.ReaderAt

	mu   sync.Mutex
	wins map[span]*window // ModeWindowed; several keys may share a window
	// byStart holds every mapped window once, sorted by (start, end), and
	// maxWin is the longest window's length: the windows that can contain
	// or meet a range starting at s start in [s-maxWin, s], a binary
	// search away, so lookups do not scan every window.
	byStart []*window
	maxWin  int64
}

// Open opens the named file read-only and maps it according to opts. The
// file descriptor stays open until Close.
//
// Open costs O(1) in the file size: in whole mode it maps but does not touch
// the file, in windowed mode it maps nothing. A zero-length file has no
// mapping and Len 0.
//
// With [WithSection] or [WithZipEntry] the File is a part of the file.
func Open(path string, opts ...Option) (*File, error) {
	cfg, err := configure(config{budget: DefaultBudget}, opts)
	if err != nil {
		return nil, err
	}
	fd, size, regular, err := platform.OpenFile(path)
	if err != nil {
		return nil, err
	}
	if !regular {
		fd.Close()
		return nil, fmt.Errorf("mmapfile: %s is not a regular file", path)
	}
	err = cfg.locate(fd, path, size)
	var f *File
	if err == nil {
		f, err = build(fd, path, size, cfg.off, cfg.n, cfg.section, cfg)
	}
	if err != nil {
		fd.Close()
		return nil, err
	}
	return f, nil
}

// NewFile maps a file the caller has already opened (for example a
// descriptor passed by another process, wrapped with [os.NewFile]). The
// File reads and maps through f but does not own it: Close does not close
// f, and f must stay open until the File is closed. It is otherwise like
// Open.
func NewFile(f *os.File, opts ...Option) (*File, error) {
	if f == nil {
		return nil, fmt.Errorf("mmapfile: NewFile of a nil *os.File: %w", os.ErrInvalid)
	}
	cfg, err := configure(config{budget: DefaultBudget}, opts)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("mmapfile: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("mmapfile: %s is not a regular file", f.Name())
	}
	if err := cfg.locate(f, f.Name(), fi.Size()); err != nil {
		return nil, err
	}
	return build(borrowed{f}, f.Name(), fi.Size(), cfg.off, cfg.n, cfg.section, cfg)
}

// configure applies opts to cfg and checks the result.
func configure(cfg config, opts []Option) (config, error) {
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.osPage = int64(platform.PageSize())
	cfg.page = cfg.osPage
	if cfg.pageSize != 0 {
		ps := int64(cfg.pageSize)
		if !isPow2(ps) || ps%cfg.osPage != 0 {
			return cfg, fmt.Errorf("mmapfile: page size %d is not a power-of-two multiple of the OS page size %d", ps, cfg.osPage)
		}
		cfg.page = ps
	}
	switch cfg.mode {
	case ModeAuto, ModeWhole, ModeWindowed, ModeMemory, ModeCopy:
	default:
		return cfg, fmt.Errorf("mmapfile: invalid mode %v", cfg.mode)
	}
	return cfg, nil
}

// build makes the File for the section [off, off+n) of the open file fd of
// the given size (the whole file unless section). It does not close fd on
// error.
func build(fd handle, path string, fileSize, off, n int64, section bool, cfg config) (*File, error) {
	if !section {
		off, n = 0, fileSize
	} else if !checkRange(off, n, fileSize) {
		return nil, fmt.Errorf("mmapfile: %w: section [off=%d n=%d) of %s, which is %d bytes long", ErrRange, off, n, path, fileSize)
	}
	ps, ops := cfg.page, cfg.osPage
	if cfg.name != "" {
		path = cfg.name
	}
	f := &File{name: path, fd: fd, size: n, ps: ps, ops: ops,
		base: off, atEOF: off+n == fileSize, mbase: pageFloor(off, ps), limit: pageCeil(off+n, ops)}

	extent := off + n - f.mbase // bytes a whole mapping spans
	fitsWhole := f.limit-f.mbase <= math.MaxInt && !(is32bit && extent > 1<<31-ops)
	mode := cfg.mode
	if !platform.ZeroCopy && (mode == ModeAuto || mode == ModeWhole || mode == ModeWindowed) {
		mode = ModeCopy
	}
	if mode == ModeAuto {
		if n > cfg.budget || !fitsWhole {
			mode = ModeWindowed
		} else {
			mode = ModeWhole
		}
	}
	f.mode = mode

	switch mode {
	case ModeWhole:
		if !fitsWhole {
			return nil, fmt.Errorf("mmapfile: %s: %w: %d bytes do not fit in the address space; use ModeWindowed", path, ErrRange, n)
		}
		if n > 0 {
			b, err := platform.Map(fd, f.mbase, int(extent))
			if err != nil {
				return nil, err
			}
			f.mapping = b
			f.data = b[off-f.mbase:][:n:n]
			f.mapped = unsafe.Slice(unsafe.SliceData(b), int(f.limit-f.mbase))
		}
	case ModeWindowed:
		f.wins = make(map[span]*window)
	case ModeMemory:
		if n > math.MaxInt {
			return nil, fmt.Errorf("mmapfile: %s: %w: %d bytes do not fit in memory", path, ErrRange, n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(io.NewSectionReader(fd, off, n), b); err != nil {
			return nil, fmt.Errorf("mmapfile: read %s: %w", path, err)
		}
		f.data = b
	}
	return f, nil
}

// Sub returns the bytes [off, off+n) of f as a File of its own, as
// WithSection does for a path: its offsets are relative to off and nothing
// outside the range can be read through it. It shares f's open file (or,
// in ModeMemory, f's bytes, or f's ReaderAt) and has its own mapping; it
// must be closed before f. By default it works in f's mode and page size;
// opts may choose others, and WithName its name (f's by default).
func (f *File) Sub(off, n int64, opts ...Option) (*File, error) {
	if err := f.check("sub", off, n); err != nil {
		return nil, err
	}
	cfg, err := configure(config{mode: f.mode, budget: DefaultBudget, pageSize: int(f.ps)}, opts)
	if err != nil {
		return nil, err
	}
	name := cmp.Or(cfg.name, f.name)
	switch {
	case f.mode == ModeMemory || f.fd == nil && f.ra == nil:
		s := NewBytes(f.data[off : off+n : off+n])
		s.name, s.ps = name, cfg.page
		return s, nil
	case f.fd == nil:
		s := NewReaderAt(io.NewSectionReader(f.ra, off, n), n)
		s.name, s.ps = name, cfg.page
		return s, nil
	}
	cfg.name = name
	s, err := build(shared{f.fd}, name, f.base+f.size, f.base+off, n, true, cfg)
	if err != nil {
		return nil, err
	}
	s.atEOF = s.atEOF && f.atEOF // the parent's end is not the file's
	return s, nil
}

// shared is the handle of a File that a Sub shares: the Sub does not close
// it.
type shared struct{ handle }

// Close does nothing: the parent File closes the handle.
func (shared) Close() error { return nil }

// handle is the open file behind a File: a [platform.FD] Open opened and
// Close closes, or a caller's [os.File] (borrowed).
type handle interface {
	platform.File
	Size() (int64, error)
	Close() error
}

// borrowed is a caller's *os.File: the File reads and maps through it but
// does not close it.
type borrowed struct{ *os.File }

// Size returns the file's size now.
func (b borrowed) Size() (int64, error) {
	fi, err := b.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Close does nothing: the caller owns the file.
func (borrowed) Close() error { return nil }

// NewBytes returns a File whose views are sub-slices of b (ModeMemory): zero
// copy, no file behind it. Advise, Release, Evict and Lock are no-ops and
// Resident reports every page resident. b must not be modified while the
// File is in use.
func NewBytes(b []byte) *File {
	ops := int64(platform.PageSize())
	return &File{mode: ModeMemory, data: b, size: int64(len(b)), ps: ops, ops: ops, atEOF: true, limit: pageCeil(int64(len(b)), ops)}
}

// NewReaderAt returns a File that reads r, of the given size, on demand
// (ModeCopy): every View allocates and copies, and ZeroCopy reports false.
// Advise, Release, Evict and Lock are no-ops and Resident reports no page
// resident. A negative size is treated as 0.
func NewReaderAt(r io.ReaderAt, size int64) *File {
	size = max(size, 0)
	ops := int64(platform.PageSize())
	return &File{mode: ModeCopy, ra: r, size: size, ps: ops, ops: ops, atEOF: true, limit: pageCeil(size, ops)}
}

// Len returns the size of the file in bytes, as it was at Open.
func (f *File) Len() int64 { return f.size }

// Mode returns the mode the File works in (never ModeAuto).
func (f *File) Mode() Mode { return f.mode }

// PageSize returns the page size used for the File's page arithmetic.
func (f *File) PageSize() int { return int(f.ps) }

// ZeroCopy reports whether views point into the mapping or the caller's
// bytes (true), or are fresh copies (false, ModeCopy).
func (f *File) ZeroCopy() bool { return f.mode != ModeCopy }

// Name returns the path the File was opened with, or the name of the
// *os.File given to NewFile ("ARCHIVE!/ENTRY" for a zip entry, "" for
// NewBytes and NewReaderAt), unless WithName gave another.
func (f *File) Name() string { return f.name }

// Section returns the byte range of the underlying file that the File
// shows: the offset of its first byte in that file, and Len. It is (0, Len)
// for a whole file, NewBytes and NewReaderAt.
func (f *File) Section() (off, n int64) { return f.base, f.size }

// IsSection reports whether the File shows part of its file (WithSection,
// WithZipEntry, Sub) rather than all of it.
func (f *File) IsSection() bool { return f.fd != nil && (f.base != 0 || !f.atEOF) }

// Fd returns the underlying file descriptor, or ^uintptr(0) when there is no
// file (NewBytes, NewReaderAt) or it is closed.
func (f *File) Fd() uintptr {
	if f.fd == nil || f.closed.Load() {
		return ^uintptr(0)
	}
	return f.fd.Fd()
}

func (f *File) rangeErr(op string, off, n int64) error {
	if f.IsSection() {
		return fmt.Errorf("%w: %s %s (section at %d) [off=%d n=%d) len=%d", ErrRange, op, f.name, f.base, off, n, f.size)
	}
	if f.name != "" {
		return fmt.Errorf("%w: %s %s [off=%d n=%d) len=%d", ErrRange, op, f.name, off, n, f.size)
	}
	return fmt.Errorf("%w: %s [off=%d n=%d) len=%d", ErrRange, op, off, n, f.size)
}

func (f *File) closedErr(op string) error {
	if f.name != "" {
		return fmt.Errorf("%s %s: %w", op, f.name, ErrClosed)
	}
	return fmt.Errorf("%s: %w", op, ErrClosed)
}

// check validates [off, off+n) against the file; it allocates only on error.
func (f *File) check(op string, off, n int64) error {
	if f.closed.Load() {
		return f.closedErr(op)
	}
	if !checkRange(off, n, f.size) {
		return f.rangeErr(op, off, n)
	}
	return nil
}

// View returns the bytes [off, off+n) of the file.
//
// In ModeWhole and ModeMemory the result is a sub-slice of the mapping (or
// of the NewBytes slice) and View allocates nothing. In ModeWindowed the
// first View of a range maps the pages that cover it and caches the window;
// later Views of the same range, or of a range inside an already mapped
// window, return slices of it without mapping or allocating. In ModeCopy the
// result is a fresh copy.
//
// The view is read-only (writing to it faults) and stays valid until Close,
// or until an Evict that covers it in windowed mode; Release does not
// invalidate it. Its capacity equals its length. n == 0 returns an empty
// slice when off <= Len. A nil *File views only the empty range at 0 (nil,
// as the zero segment.Segment does). Errors wrap ErrRange or ErrClosed.
func (f *File) View(off, n int64) ([]byte, error) {
	// ModeWhole and ModeMemory, open and in range: a sub-slice, with no
	// further call (Open resolves a view per tensor).
	if f != nil {
		if d := f.data; d != nil && !f.closed.Load() && uint64(off) <= uint64(len(d)) && uint64(n) <= uint64(len(d))-uint64(off) {
			return d[off:][:n:n], nil
		}
	}
	return f.view(off, n)
}

// view is View's general case.
func (f *File) view(off, n int64) ([]byte, error) {
	if f == nil {
		if off == 0 && n == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("mmapfile: view [%d,+%d) of a nil File: %w", off, n, ErrRange)
	}
	if err := f.check("view", off, n); err != nil {
		return nil, err
	}
	if n > math.MaxInt {
		return nil, f.rangeErr("view (larger than the address space)", off, n)
	}
	switch f.mode {
	case ModeWhole, ModeMemory:
		return f.data[off : off+n : off+n], nil
	case ModeWindowed:
		if n == 0 {
			return nil, nil
		}
		w, err := f.window(off, n)
		if err != nil {
			return nil, err
		}
		i := f.base + off - w.start
		return w.data[i : i+n : i+n], nil
	default:
		b := make([]byte, n)
		if _, err := f.readCopy(b, off); err != nil {
			return nil, err
		}
		return b, nil
	}
}

// ReadAt implements io.ReaderAt: it copies len(p) bytes starting at off into
// p, returning io.EOF when fewer are available. A File opened from a path
// reads through its descriptor (pread) in every mode, not through the
// mapping, so ReadAt faults in no page of the process: use it for bytes read
// once (headers, metadata) and views for the rest. It is fault-safe: if the
// file was truncated, it returns an error wrapping ErrTruncated instead of
// crashing. A negative off returns an error wrapping ErrRange.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if f.closed.Load() {
		return 0, f.closedErr("read")
	}
	if off < 0 {
		return 0, f.rangeErr("read", off, int64(len(p)))
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= f.size {
		return 0, io.EOF
	}
	m := int(min(int64(len(p)), f.size-off))
	var n int
	var err error
	if f.mode == ModeMemory {
		n = copy(p[:m], f.data[off:])
	} else {
		// Through the file (pread): no page is faulted into the mapping, and
		// a shrunken file shows as a short read, not SIGBUS.
		n, err = f.readCopy(p[:m], off)
	}
	if err != nil {
		return n, err
	}
	if m < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// readCopy fills p from the ReaderAt or the file descriptor; a short read
// inside Len means the file shrank and is reported as ErrTruncated.
func (f *File) readCopy(p []byte, off int64) (int, error) {
	r, at := f.ra, off
	if r == nil {
		r, at = f.fd, f.base+off
	}
	n, err := r.ReadAt(p, at)
	if n == len(p) {
		return n, nil
	}
	if err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return n, fmt.Errorf("mmapfile: read %s at %d: %w (got %d of %d bytes)", f.name, off, ErrTruncated, n, len(p))
	}
	return n, err
}

// FaultError is the error Guard returns for a memory fault: Addr is the
// faulting address (0 when the system did not report it). It wraps ErrTruncated, the only cause of a fault when
// reading a valid view (SIGBUS past the end of a truncated file).
type FaultError struct {
	Addr uintptr
}

// Error implements error.
func (e *FaultError) Error() string {
	if e.Addr == 0 {
		return fmt.Sprintf("%v (memory fault at an unreported address)", ErrTruncated)
	}
	return fmt.Sprintf("%v (memory fault at %#x)", ErrTruncated, e.Addr)
}

// Unwrap returns ErrTruncated.
func (e *FaultError) Unwrap() error { return ErrTruncated }

// Offset returns the offset of the faulting address within view, or -1
// when the fault lies outside it.
func (e *FaultError) Offset(view []byte) int64 {
	if len(view) == 0 || e.Addr == 0 {
		return -1
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(view)))
	if e.Addr < base || e.Addr-base >= uintptr(len(view)) {
		return -1
	}
	return int64(e.Addr - base)
}

// Guard runs fn with [runtime/debug.SetPanicOnFault] enabled on the calling
// goroutine, so that a memory fault in fn (SIGBUS from touching a page of a
// mapping past the end of a truncated file) becomes a *FaultError, which
// wraps ErrTruncated, instead of killing the process. Other panics
// propagate.
//
// Use it around any code that reads views of a file that another process
// may truncate. The setting is restored before Guard returns. Prefer
// [File.Guard] when the file is known: it also recognises faults reported
// without an address.
func Guard(fn func()) error {
	return guard(nil, fn)
}

// Guard is like the package-level [Guard] for views of f. In addition, a
// fault the system reports without an address (the runtime then panics with
// a nil-dereference error; qemu-user does this for SIGBUS) is turned into a
// *FaultError with Addr 0 when f's file is now shorter than at Open, and
// propagates as a panic otherwise.
func (f *File) Guard(fn func()) error {
	return guard(f, fn)
}

func guard(f *File, fn func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if fe, ok := r.(interface{ Addr() uintptr }); ok {
				err = &FaultError{Addr: fe.Addr()}
				return
			}
			if _, ok := r.(runtime.Error); ok && f != nil && f.shrank() {
				err = &FaultError{}
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// shrank reports whether the file behind f is now shorter than at Open.
func (f *File) shrank() bool {
	if f.fd == nil {
		return false
	}
	size, err := f.fd.Size()
	return err == nil && size < f.base+f.size
}

// sysRange clamps a page-aligned file span to the addressable mapping.
func (f *File) sysRange(start, end int64) (int64, int64) {
	start = max(start, f.mbase)
	return start, max(start, min(end, f.limit))
}

// Advise gives advice a about the pages covering [off, off+n); for
// AdviceDontNeed only about the pages wholly inside it, so that neighbours
// sharing a page are untouched. In windowed mode AdviceWillNeed and
// AdvicePopulateRead map the window (as View would) so that the advice can
// take effect; other advice applies to the windows already mapped. In
// ModeMemory and ModeCopy it is a no-op.
func (f *File) Advise(off, n int64, a Advice) error {
	return f.pages("advise", off, n, a == AdviceDontNeed, a == AdviceWillNeed || a == AdvicePopulateRead,
		func(b []byte) error { return platform.Madvise(b, a) })
}

// pages calls fn on the mapped pages covering [off, off+n), or with inner
// only those wholly inside it; in windowed mode, with mapWindow, it maps
// the range's window first, and fn sees every mapped window's share.
func (f *File) pages(op string, off, n int64, inner, mapWindow bool, fn func([]byte) error) error {
	if err := f.check(op, off, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	var start, end int64
	if inner {
		start, end = f.innerPages(off, n)
	} else {
		start, end = coverPages(f.base+off, n, f.ps)
	}
	start, end = f.sysRange(start, end)
	if start == end {
		return nil
	}
	switch f.mode {
	case ModeWhole:
		return fn(f.mapped[start-f.mbase : end-f.mbase])
	case ModeWindowed:
		if mapWindow {
			if _, err := f.window(off, n); err != nil {
				return err
			}
		}
		return f.forWindows(start, end, fn)
	}
	return nil
}

// Release drops the pages wholly inside [off, off+n) from the process
// (madvise DONTNEED); with dropCache it also asks the kernel to drop them from
// the page cache (fadvise DONTNEED), which then re-reads them from storage
// when touched. Views stay valid: touching them faults the pages back in.
// Pages shared with a neighbouring range are kept.
func (f *File) Release(off, n int64, dropCache bool) error {
	if err := f.Advise(off, n, AdviceDontNeed); err != nil {
		return err
	}
	if !dropCache || f.fd == nil || n == 0 {
		return nil
	}
	start, end := f.innerPages(off, n)
	if start == end {
		return nil
	}
	return platform.FadviseDontNeed(f.fd, start, end-start)
}

// WillNeed asks the kernel to start reading the pages covering [off, off+n)
// into the page cache (fadvise WILLNEED), and nothing past them. It does
// nothing for a File with no file behind it (NewBytes, NewReaderAt).
func (f *File) WillNeed(off, n int64) error {
	if err := f.check("willneed", off, n); err != nil {
		return err
	}
	if f.fd == nil || n == 0 {
		return nil
	}
	start, end := coverPages(f.base+off, n, f.ps)
	return platform.FadviseWillNeed(f.fd, start, end-start)
}

// innerPages returns the file span of the pages wholly inside the File's
// range [off, off+n), which a release may drop. A range that ends at the
// end of the file owns the file's last page; a section that ends before
// the file's end shares its last page with what follows, so it does not.
func (f *File) innerPages(off, n int64) (start, end int64) {
	size := int64(-1)
	if f.atEOF {
		size = f.base + f.size
	}
	return innerPages(f.base+off, n, size, f.ps)
}

// Lock locks the pages covering [off, off+n) into RAM (mlock), mapping the
// window first in windowed mode. It commonly fails with EPERM, ENOMEM or
// EAGAIN under RLIMIT_MEMLOCK; package segment offers a best-effort variant.
// In ModeMemory and ModeCopy it is a no-op.
func (f *File) Lock(off, n int64) error { return f.pages("lock", off, n, false, true, platform.Mlock) }

// Unlock unlocks the pages covering [off, off+n) (munlock). In ModeMemory
// and ModeCopy it is a no-op.
func (f *File) Unlock(off, n int64) error {
	return f.pages("unlock", off, n, false, false, platform.Munlock)
}

// residentChunk bounds the span given to one mincore call (and, in windowed
// mode, one temporary mapping), so that Resident of a huge range needs
// neither a huge vector nor a huge mapping.
const residentChunk = 64 << 20

// Resident reports how many of the pages covering [off, off+n) are resident
// in memory, and how many pages cover it, in units of PageSize. It uses
// mincore: on Linux, for a file mapping, that reports page-cache residency,
// which after Release without dropCache may still include the released
// pages (they left the process, not the cache). In windowed mode the range
// is queried through a temporary mapping, so unmapped windows count too. In
// ModeMemory every page is resident; in ModeCopy none is.
func (f *File) Resident(off, n int64) (resident, total int, err error) {
	if err := f.check("resident", off, n); err != nil {
		return 0, 0, err
	}
	cs, ce := coverPages(f.base+off, n, f.ps)
	total = pageCount(cs, ce, f.ps)
	switch f.mode {
	case ModeMemory:
		return total, total, nil
	case ModeCopy:
		return 0, total, nil
	}
	cs, ce = f.sysRange(cs, ce)
	var vec []byte
	for s := cs; s < ce; {
		e := min(s+max(residentChunk, f.ps), ce)
		var b []byte
		if f.mode == ModeWhole {
			b = f.mapped[s-f.mbase : e-f.mbase]
		} else {
			if b, err = platform.Map(f.fd, s, int(e-s)); err != nil {
				return 0, 0, err
			}
		}
		need := int((e - s + f.ops - 1) / f.ops)
		vec = slices.Grow(vec[:0], need)[:need]
		err = platform.Mincore(b, vec)
		if f.mode != ModeWhole {
			if uerr := platform.Unmap(b); err == nil {
				err = uerr
			}
		}
		if err != nil {
			return 0, 0, err
		}
		resident += countResident(vec, int(f.ps/f.ops))
		s = e
	}
	return resident, total, nil
}

// countResident counts the pages of per OS pages each (the last may be
// shorter) whose OS pages are all resident according to the mincore vector.
func countResident(vec []byte, per int) int {
	r := 0
	for i := 0; i < len(vec); i += per {
		if !slices.ContainsFunc(vec[i:min(i+per, len(vec))], func(v byte) bool { return v&1 == 0 }) {
			r++
		}
	}
	return r
}

// Close unmaps everything and closes the file. It is idempotent: a second
// Close returns nil. Afterwards every method returns an error wrapping
// ErrClosed, and views obtained earlier must not be touched.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	switch f.mode {
	case ModeWhole:
		err = platform.Unmap(f.mapping)
	case ModeWindowed:
		err = f.unmapWindows(0, math.MaxInt64)
	}
	// f.data and f.mapped keep their (now dangling) headers: methods check
	// the closed flag first, and clearing them would race with a caller that
	// misuses a File concurrently with Close.
	if f.fd != nil {
		err = cmp.Or(err, f.fd.Close())
	}
	return err
}
