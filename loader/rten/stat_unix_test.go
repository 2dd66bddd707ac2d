//go:build unix

package rten_test

import (
	"os"
	"syscall"

	"github.com/edgeload/edgeload/internal/memstat"
)

// statBlocks returns the 512-byte blocks a file occupies on disk, or -1.
func statBlocks(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks)
	}
	return -1
}

func memstatRSS() (int64, error) { return memstat.RSS() }
