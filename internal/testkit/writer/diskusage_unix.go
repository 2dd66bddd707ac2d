//go:build unix

package writer

import (
	"os"
	"syscall"
)

// DiskUsage returns the bytes the file at path occupies on disk (its
// allocated blocks), so that tests can check that holes stayed sparse.
// ok is false where the system does not report blocks.
func DiskUsage(path string) (n int64, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, isStat := fi.Sys().(*syscall.Stat_t)
	if !isStat {
		return 0, false
	}
	return int64(st.Blocks) * 512, true
}
