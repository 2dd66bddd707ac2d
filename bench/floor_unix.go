//go:build unix

package bench

import (
	"golang.org/x/sys/unix"
)

// Floor does the least a loader that maps a file must do, with bare system
// calls: open, fstat, mmap the whole file, read the first byte of the header
// page, munmap, close. It is the Go counterpart of the C floor of the
// reference measurements.
func Floor(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Size == 0 {
		return nil
	}
	b, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	Sink += b[0]
	return unix.Munmap(b)
}
