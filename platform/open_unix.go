//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package platform

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// FD is a file OpenFile opened read-only. On Unix systems it is the bare
// descriptor, read with pread(2) and closed with close(2): an [os.File]
// would add a system call (NewFile asks whether the descriptor is
// non-blocking), a cleanup registered with the runtime, and a lock taken
// around every read, on every Open.
// As with an os.File, using an FD after Close is a bug in the caller;
// unlike one, an FD nobody closes stays open (as a mapping nobody unmaps
// stays mapped): mmapfile.File.Close closes it.
type FD struct {
	fd   int
	name string
}

// errNegativeOffset is FD.ReadAt's error for an offset below 0.
var errNegativeOffset = errors.New("negative offset")

// OpenFile opens the named file read-only and returns it with its size and
// whether it is a regular file: two system calls (open, fstat).
func OpenFile(path string) (f *FD, size int64, regular bool, err error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, 0, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return &FD{fd: fd, name: path}, st.Size, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}

// openRetry opens path with flags, again when a signal interrupts it.
func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// Name returns the name the file was opened with.
func (f *FD) Name() string { return f.name }

// Fd returns the file descriptor.
func (f *FD) Fd() uintptr { return uintptr(f.fd) }

// ReadAt reads len(p) bytes at off, as [io.ReaderAt]: fewer only at the end
// of the file (io.EOF) or on an error.
func (f *FD) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &os.PathError{Op: "readat", Path: f.name, Err: errNegativeOffset}
	}
	n := 0
	for n < len(p) {
		m, err := unix.Pread(f.fd, p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: f.name, Err: err}
		}
		if m == 0 {
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Size returns the file's size now (fstat).
func (f *FD) Size() (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return st.Size, nil
}

// Close closes the descriptor.
func (f *FD) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return &os.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
