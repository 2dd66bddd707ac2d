//go:build !linux

package platform

import "os"

// OpenDirect reports that direct I/O (reads that bypass the page cache) is
// not available: the error wraps [errors.ErrUnsupported]. On Linux it
// opens the file again with O_DIRECT.
func OpenDirect(f File) (*FD, int, error) {
	return nil, 0, &os.PathError{Op: "open O_DIRECT", Path: f.Name(), Err: errUnsupportedDirect}
}
