package platform

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirect opens the file f has open again, read-only and for direct
// I/O (O_DIRECT): its reads bypass the page cache and go straight from the
// device into the caller's buffer. It also returns the alignment that the
// offset, the length and the buffer address of every read must have: the
// file's direct-I/O alignment (statx STATX_DIOALIGN) rounded up to the page
// size. A file system without direct I/O (tmpfs, some FUSE) refuses it with
// an error wrapping [errors.ErrUnsupported].
func OpenDirect(f File) (*FD, int, error) {
	path := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECT)
	if err != nil {
		if err == unix.EINVAL || err == unix.EOPNOTSUPP {
			err = fmt.Errorf("%w (%v)", errUnsupportedDirect, err)
		}
		return nil, 0, &os.PathError{Op: "open O_DIRECT", Path: f.Name(), Err: err}
	}
	align := PageSize()
	var st unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &st) == nil && st.Mask&unix.STATX_DIOALIGN != 0 {
		if st.Dio_offset_align == 0 { // the file system has no direct I/O for this file
			unix.Close(fd)
			return nil, 0, &os.PathError{Op: "open O_DIRECT", Path: f.Name(), Err: errUnsupportedDirect}
		}
		align = max(align, int(st.Dio_offset_align), int(st.Dio_mem_align))
	}
	return &FD{fd: fd, name: f.Name()}, align, nil
}
