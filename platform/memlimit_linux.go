package platform

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// MemoryLimit returns the most memory this process may use: the smallest
// hard limit of its memory cgroup and the cgroup's ancestors (cgroup v2
// memory.max, v1 memory.limit_in_bytes), or the machine's memory
// (MemTotal) when that is smaller or no limit is set. ok is false where
// neither can be read.
func MemoryLimit() (n int64, ok bool) {
	return memoryLimit("/")
}

// memoryLimit is MemoryLimit with the file system rooted at root.
func memoryLimit(root string) (int64, bool) {
	total, ok := memTotal(path.Join(root, "proc/meminfo"))
	if lim, found := cgroupLimit(root); found && (!ok || lim < total) {
		return lim, true
	}
	return total, ok
}

// memTotal reads MemTotal from a /proc/meminfo.
func memTotal(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("MemTotal:")); ok {
			f := strings.Fields(string(rest))
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
					return kb << 10, true
				}
			}
		}
	}
	return 0, false
}

// cgroupLimit returns the smallest memory limit set on the process's
// memory cgroup or its ancestors.
func cgroupLimit(root string) (int64, bool) {
	f, err := os.Open(path.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var dir, file string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && dir == "": // v2 (a v1 memory line wins)
			dir, file = path.Join(root, "sys/fs/cgroup", parts[2]), "memory.max"
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			dir, file = path.Join(root, "sys/fs/cgroup/memory", parts[2]), "memory.limit_in_bytes"
		}
	}
	if dir == "" {
		return 0, false
	}
	top := path.Dir(path.Join(root, "sys/fs/cgroup/x"))
	best, found := int64(0), false
	for d := dir; ; d = path.Dir(d) {
		if b, err := os.ReadFile(path.Join(d, file)); err == nil {
			s := strings.TrimSpace(string(b))
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 1<<62 && (!found || n < best) {
				best, found = n, true
			}
		}
		if len(d) <= len(top) {
			break
		}
	}
	return best, found
}

// ResidentSet returns the bytes of memory the process holds now
// (/proc/self/statm's resident pages).
func ResidentSet() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return n * int64(os.Getpagesize()), true
}
