package platform

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReadAhead returns the kernel's readahead window for f's block device in
// bytes (/sys/dev/block/MAJ:MIN, its queue or, for a partition, its disk's
// queue read_ahead_kb); ok is false when the device has none to read.
func ReadAhead(f File) (n int64, ok bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, false
	}
	dev := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	dir, err := filepath.EvalSymlinks(dev)
	if err != nil {
		return 0, false
	}
	for _, p := range []string{filepath.Join(dir, "queue", "read_ahead_kb"), filepath.Join(filepath.Dir(dir), "queue", "read_ahead_kb")} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && kb >= 0 {
			return kb << 10, true
		}
	}
	return 0, false
}
