package mmapfile

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/edgeload/edgeload/platform"
)

// Direct reads a File's bytes with direct I/O: from the device straight
// into the caller's buffer, around the page cache (O_DIRECT on Linux), so
// that bytes read once leave no pages behind. Reads cover whole aligned
// blocks; [Direct.Cover] says how large a buffer a range needs. A Direct
// is safe for concurrent use; Close it when done (the File's Close does
// not).
type Direct struct {
	f     *File
	fd    *platform.FD
	align int64
}

// OpenDirect opens f for direct reads. Where the system or the file
// system has none (tmpfs, Darwin, Windows), or f is not backed by a file
// (NewBytes, NewReaderAt), the error wraps [errors.ErrUnsupported].
func (f *File) OpenDirect() (*Direct, error) {
	if f.closed.Load() {
		return nil, f.closedErr("open direct")
	}
	if f.fd == nil {
		return nil, fmt.Errorf("mmapfile: direct reads of %s: %w (not backed by a file)", f.name, errors.ErrUnsupported)
	}
	fd, align, err := platform.OpenDirect(f.fd)
	if err != nil {
		return nil, fmt.Errorf("mmapfile: %w", err)
	}
	return &Direct{f: f, fd: fd, align: int64(align)}, nil
}

// Align returns the alignment a buffer given to Read must have.
func (d *Direct) Align() int { return int(d.align) }

// Cover returns how the aligned read of the File's bytes [off, off+n)
// lays them out: they start skew bytes into a buffer that must hold size
// bytes.
func (d *Direct) Cover(off, n int64) (skew, size int64) {
	at := d.f.base + off
	start := at &^ (d.align - 1)
	end := (at + n + d.align - 1) &^ (d.align - 1)
	return at - start, end - start
}

// Read reads the File's bytes [off, off+n) with direct I/O into buf, whose
// address must be a multiple of Align and whose length must be at least
// Cover's size, and returns the part of buf that holds them. A file that
// shrank below off+n gives an error wrapping [ErrTruncated].
func (d *Direct) Read(buf []byte, off, n int64) ([]byte, error) {
	if err := d.f.check("direct read", off, n); err != nil {
		return nil, err
	}
	skew, size := d.Cover(off, n)
	if int64(len(buf)) < size || uintptr(unsafe.Pointer(unsafe.SliceData(buf)))%uintptr(d.align) != 0 {
		return nil, fmt.Errorf("mmapfile: direct read of %s [%d,+%d): the buffer (%d bytes) must be %d-byte aligned and hold %d bytes: %w",
			d.f.name, off, n, len(buf), d.align, size, ErrRange)
	}
	if n == 0 {
		return buf[:0], nil
	}
	got, err := d.fd.ReadAt(buf[:size], d.f.base+off-skew)
	if int64(got) >= skew+n {
		return buf[skew : skew+n : skew+n], nil
	}
	if err == nil || err == io.EOF {
		err = ErrTruncated
	}
	return nil, fmt.Errorf("mmapfile: direct read of %s at %d: %w (got %d of %d bytes)", d.f.name, off, err, max(0, int64(got)-skew), n)
}

// Close closes the descriptor direct reads go through.
func (d *Direct) Close() error { return d.fd.Close() }
