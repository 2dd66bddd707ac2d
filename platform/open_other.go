//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris)

package platform

import "os"

// OpenFile opens the named file read-only and returns it with its size and
// whether it is a regular file (os.Open and Stat).
func OpenFile(path string) (f *os.File, size int64, regular bool, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, false, err
	}
	return f, fi.Size(), fi.Mode().IsRegular(), nil
}
