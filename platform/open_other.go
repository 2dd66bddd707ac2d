//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package platform

import "os"

// FD is a file OpenFile opened read-only: here an [os.File].
type FD struct {
	f *os.File
}

// OpenFile opens the named file read-only and returns it with its size and
// whether it is a regular file (os.Open and Stat).
func OpenFile(path string) (f *FD, size int64, regular bool, err error) {
	osf, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, 0, false, err
	}
	return &FD{osf}, fi.Size(), fi.Mode().IsRegular(), nil
}

// Name returns the name the file was opened with.
func (f *FD) Name() string { return f.f.Name() }

// Fd returns the file's handle.
func (f *FD) Fd() uintptr { return f.f.Fd() }

// ReadAt reads len(p) bytes at off, as [io.ReaderAt].
func (f *FD) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Size returns the file's size now.
func (f *FD) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Close closes the file.
func (f *FD) Close() error { return f.f.Close() }
