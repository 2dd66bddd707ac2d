package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ThrottleReads limits the reads that process pid makes from block device
// dev ("MAJ:MIN") to bps bytes a second, as a slower disk would: on cgroup
// v2 in the process's group g (io.max, the io controller enabled for it),
// on v1 in a new blkio group called name, which the returned Group is (nil
// on v2); remove it when the process has exited.
func ThrottleReads(g *Group, name string, pid int, dev string, bps int64) (*Group, error) {
	if g.V2 {
		parent := filepath.Dir(g.Dir)
		os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+io"), 0)
		return nil, g.write("io.max", dev+" rbps="+strconv.FormatInt(bps, 10))
	}
	cg, mi, err := readSelf()
	if err != nil {
		return nil, err
	}
	dir, ok, err := v1Dir(cg, mi, "blkio")
	if !ok {
		return nil, fmt.Errorf("%w: /proc/self/cgroup names no blkio controller", ErrNoCgroup)
	}
	if err != nil {
		return nil, err
	}
	b := &Group{Dir: filepath.Join(dir, name)}
	if err := os.Mkdir(b.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := b.write("blkio.throttle.read_bps_device", dev+" "+strconv.FormatInt(bps, 10)); err != nil {
		b.Remove()
		return nil, err
	}
	if err := b.write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		b.Remove()
		return nil, err
	}
	return b, nil
}

// DiskOf returns the MAJ:MIN of the disk holding path: the whole disk for a
// partition, as the throttle needs.
func DiskOf(path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return "", fmt.Errorf("%s is not on a block device: %w", path, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		dir = filepath.Dir(dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev"))
	return strings.TrimSpace(string(b)), err
}
