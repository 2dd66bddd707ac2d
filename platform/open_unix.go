//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris

package platform

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile opens the named file read-only and returns it with its size and
// whether it is a regular file. It costs three system calls (open, fcntl,
// fstat): os.Open also tries to register the descriptor with the runtime's
// poller (two fcntl pairs and an epoll_ctl that fails for a regular file),
// which doubles the system calls of opening a model.
func OpenFile(path string) (f *os.File, size int64, regular bool, err error) {
	var fd int
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	// NewFile on a blocking descriptor does not involve the poller.
	return os.NewFile(uintptr(fd), path), st.Size, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}
