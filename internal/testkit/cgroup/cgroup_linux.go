//go:build linux

package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoCgroup marks the reasons a memory cgroup cannot be used here; the
// tests and benchmarks that need one skip on them.
var ErrNoCgroup = errors.New("no writable memory cgroup")

// Parent is the memory cgroup directory this process lives in, under
// which Create makes child groups.
type Parent struct {
	Dir string
	V2  bool
}

// FindMemory locates this process's memory cgroup: the v1 memory
// controller's hierarchy when there is one, else the unified (v2)
// hierarchy when it has the memory controller. It uses /proc/self/cgroup
// for the path and /proc/self/mountinfo for where the hierarchy is mounted.
func FindMemory() (Parent, error) {
	cg, mi, err := readSelf()
	if err != nil {
		return Parent{}, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	p, err := locateMemoryCgroup(cg, mi)
	if err != nil || !p.V2 {
		return p, err
	}
	ctl, err := os.ReadFile(filepath.Join(p.Dir, "cgroup.controllers"))
	if err != nil || !hasWord(string(ctl), "memory") {
		return Parent{}, fmt.Errorf("%w: cgroup v2 group %s has no memory controller", ErrNoCgroup, p.Dir)
	}
	return p, nil
}

// locateMemoryCgroup finds the memory cgroup directory from the contents of
// /proc/self/cgroup and /proc/self/mountinfo, preferring a v1 memory
// hierarchy to the unified one.
func locateMemoryCgroup(cg, mi []byte) (Parent, error) {
	if dir, ok, err := v1Dir(cg, mi, "memory"); ok {
		return Parent{Dir: dir}, err
	}
	var v2Path string
	hasV2 := false
	for _, line := range strings.Split(string(cg), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[0] == "0" && f[1] == "" {
			v2Path, hasV2 = f[2], true
		}
	}
	if !hasV2 {
		return Parent{}, fmt.Errorf("%w: /proc/self/cgroup names no memory controller", ErrNoCgroup)
	}
	dir, err := cgroupDir(mi, func(fstype, _ string) bool { return fstype == "cgroup2" }, v2Path)
	return Parent{Dir: dir, V2: true}, err
}

// readSelf reads /proc/self/cgroup and /proc/self/mountinfo.
func readSelf() (cg, mi []byte, err error) {
	if cg, err = os.ReadFile("/proc/self/cgroup"); err != nil {
		return nil, nil, err
	}
	if mi, err = os.ReadFile("/proc/self/mountinfo"); err != nil {
		return nil, nil, err
	}
	return cg, mi, nil
}

// v1Dir finds this process's group in the v1 hierarchy of controller
// ("memory", "blkio") from the contents of /proc/self/cgroup and
// /proc/self/mountinfo. ok is false when /proc/self/cgroup names no v1
// hierarchy with that controller; when it names one that is not mounted,
// ok is true and err wraps ErrNoCgroup.
func v1Dir(cg, mi []byte, controller string) (dir string, ok bool, err error) {
	var p string
	for _, line := range strings.Split(string(cg), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 && hasOpt(f[1], controller) {
			p = f[2]
		}
	}
	if p == "" {
		return "", false, nil
	}
	dir, err = cgroupDir(mi, func(fstype, opts string) bool {
		return fstype == "cgroup" && hasOpt(opts, controller)
	}, p)
	return dir, true, err
}

func hasOpt(opts, o string) bool {
	for _, x := range strings.Split(opts, ",") {
		if x == o {
			return true
		}
	}
	return false
}

func hasWord(s, w string) bool {
	for _, x := range strings.Fields(s) {
		if x == w {
			return true
		}
	}
	return false
}

// cgroupDir finds the mount of the hierarchy that match accepts and
// returns the directory of cgroup path p in it. A mount's root (field 4 of
// mountinfo) may be a sub-tree of the hierarchy (cgroup namespaces, bind
// mounts); p is relative to the hierarchy's root.
func cgroupDir(mountinfo []byte, match func(fstype, superOpts string) bool, p string) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || !match(g[0], g[2]) {
			continue
		}
		root, mnt := unescapeMount(f[3]), unescapeMount(f[4])
		rel := p
		if root != "/" {
			if p != root && !strings.HasPrefix(p, root+"/") {
				continue
			}
			rel = strings.TrimPrefix(p, root)
		}
		return filepath.Join(mnt, rel), nil
	}
	return "", fmt.Errorf("%w: the cgroup hierarchy holding %q is not mounted", ErrNoCgroup, p)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Group is a cgroup made by Parent.Create (a memory cgroup with a hard
// limit) or by ThrottleReads (a v1 blkio group).
type Group struct {
	Dir string
	V2  bool
}

// RemoveStale removes empty groups left behind by earlier runs: those
// named after a process (prefix + pid + "-" + n) that has exited.
func (p Parent) RemoveStale(prefix string) {
	ents, err := os.ReadDir(p.Dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		pid, _, _ := strings.Cut(rest, "-")
		if !e.IsDir() || !ok || pid == "" {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); err == nil {
			continue // the process that made it is still running
		}
		d := filepath.Join(p.Dir, e.Name())
		if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil && len(bytes.TrimSpace(b)) == 0 {
			os.Remove(d)
		}
	}
}

// Create makes a child group named name with a hard memory limit (and no
// swap, where the group's swap can be limited), with the OOM killer enabled.
// Permission and read-only errors wrap ErrNoCgroup.
func (p Parent) Create(name string, limit int64) (*Group, error) {
	dir := filepath.Join(p.Dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
		}
		return nil, err
	}
	c := &Group{Dir: dir, V2: p.V2}
	fail := func(err error) (*Group, error) {
		c.Remove()
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			err = fmt.Errorf("%w: %v", ErrNoCgroup, err)
		}
		return nil, err
	}
	lim := strconv.FormatInt(limit, 10)
	if p.V2 {
		if err := c.write("memory.max", lim); err != nil {
			return fail(err)
		}
		// Without swap the numbers match a phone without swap; a
		// kernel without swap accounting has no memory.swap.max.
		if err := c.write("memory.swap.max", "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		return c, nil
	}
	if err := c.write("memory.limit_in_bytes", lim); err != nil {
		return fail(err)
	}
	if err := c.write("memory.memsw.limit_in_bytes", lim); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	// oom_kill_disable 1 would freeze the child at the limit instead of
	// killing it: make sure it is 0.
	if err := c.write("memory.oom_control", "0"); err != nil {
		return fail(err)
	}
	if s, _ := c.read("memory.oom_control"); !strings.Contains(s, "oom_kill_disable 0") {
		return fail(fmt.Errorf("%s: oom_kill_disable is not 0: %q", dir, s))
	}
	return c, nil
}

func (c *Group) write(file, v string) error {
	return os.WriteFile(filepath.Join(c.Dir, file), []byte(v), 0)
}

func (c *Group) read(file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, file))
	return strings.TrimSpace(string(b)), err
}

// AddProc moves process pid (all its threads) into the group and checks
// that /proc/pid/cgroup agrees.
func (c *Group) AddProc(pid int) error {
	if err := c.write("cgroup.procs", strconv.Itoa(pid)); err != nil {
		return err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), filepath.Base(c.Dir)+"\n") {
		return fmt.Errorf("process %d is not in %s after the move: %s", pid, c.Dir, b)
	}
	return nil
}

// Limit returns the group's hard limit in bytes.
func (c *Group) Limit() (int64, error) {
	if c.V2 {
		return c.readInt("memory.max")
	}
	return c.readInt("memory.limit_in_bytes")
}

// Peak returns the group's peak charged memory: memory.max_usage_in_bytes
// (v1) or memory.peak (v2, Linux 5.19+). It counts the page cache the
// group's processes brought in as well as their anonymous memory.
func (c *Group) Peak() (int64, error) {
	if c.V2 {
		return c.readInt("memory.peak")
	}
	return c.readInt("memory.max_usage_in_bytes")
}

func (c *Group) readInt(file string) (int64, error) {
	s, err := c.read(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// OOMKills returns how many of the group's processes the OOM killer
// killed (v1 memory.oom_control, v2 memory.events: "oom_kill N"); -1 when
// the kernel does not say.
func (c *Group) OOMKills() int64 {
	file := "memory.oom_control"
	if c.V2 {
		file = "memory.events"
	}
	s, _ := c.read(file)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// Remove deletes the group, retrying while the kernel still counts an
// exiting process in it. Charges left (page cache) move to the parent.
func (c *Group) Remove() error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(c.Dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("rmdir %s: %w", c.Dir, err)
}

// Emulated reports whether this process runs under a user-mode emulator
// (qemu-user, as CI does for GOARCH=arm64 and arm): the kernel's own view
// of the process (/proc/self/status, /proc/thread-self/exe, which qemu does
// not rewrite) names the emulator rather than the program's own binary.
func Emulated() (string, bool) {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		if name, ok := strings.CutPrefix(line, "Name:"); ok && strings.HasPrefix(strings.TrimSpace(name), "qemu-") {
			return strings.TrimSpace(name), true
		}
	}
	if exe, err := os.Readlink("/proc/thread-self/exe"); err == nil && strings.HasPrefix(filepath.Base(exe), "qemu-") {
		return exe, true
	}
	return "", false
}
