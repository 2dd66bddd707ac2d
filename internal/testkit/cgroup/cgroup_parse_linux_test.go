//go:build linux

package cgroup

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestLocateMemoryCgroup checks the path arithmetic on the shapes of
// /proc/self/cgroup and /proc/self/mountinfo that occur: this machine's
// (cgroup v1 with an unused unified hierarchy beside it), pure v2, a cgroup
// namespace (the mount's root is the process's own group), and none.
func TestLocateMemoryCgroup(t *testing.T) {
	const v1Mounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	for _, tc := range []struct {
		name, cg, mi string
		dir          string
		v2           bool
		noCgroup     bool
	}{
		{
			name: "v1 hybrid",
			cg:   "9:name=systemd:/\n4:memory:/process_api/66e9\n1:cpu:/\n0::/\n",
			mi:   v1Mounts,
			dir:  "/sys/fs/cgroup/memory/process_api/66e9",
		},
		{
			name: "v1 memory co-mounted with another controller",
			cg:   "3:cpuacct,memory:/a/b\n",
			mi:   "35 31 0:32 / /sys/fs/cgroup/cm rw - cgroup cgroup rw,cpuacct,memory\n",
			dir:  "/sys/fs/cgroup/cm/a/b",
		},
		{
			name: "v2",
			cg:   "0::/user.slice/session-1.scope\n",
			mi:   "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			dir:  "/sys/fs/cgroup/user.slice/session-1.scope",
			v2:   true,
		},
		{
			name: "v2 in a cgroup namespace mounted at its own group",
			cg:   "0::/ci/job\n",
			mi:   "29 23 0:26 /ci /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			dir:  "/sys/fs/cgroup/job",
			v2:   true,
		},
		{
			name: "mount point with an escaped space",
			cg:   "4:memory:/x\n",
			mi:   `35 31 0:32 / /mnt/cg\040mem rw - cgroup cgroup rw,memory` + "\n",
			dir:  "/mnt/cg mem/x",
		},
		{
			name:     "no memory controller",
			cg:       "1:cpu:/\n",
			mi:       v1Mounts,
			noCgroup: true,
		},
		{
			name:     "memory hierarchy not mounted",
			cg:       "4:memory:/x\n",
			mi:       "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
			noCgroup: true,
		},
		{
			name:     "namespace root does not contain the path",
			cg:       "0::/other\n",
			mi:       "29 23 0:26 /ci /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			noCgroup: true,
		},
	} {
		p, err := locateMemoryCgroup([]byte(tc.cg), []byte(tc.mi))
		if tc.noCgroup {
			if !errors.Is(err, ErrNoCgroup) {
				t.Errorf("%s: got %+v, %v; want ErrNoCgroup", tc.name, p, err)
			}
			continue
		}
		if err != nil || p.Dir != tc.dir || p.V2 != tc.v2 {
			t.Errorf("%s: got %+v, %v; want dir %q v2 %v", tc.name, p, err, tc.dir, tc.v2)
		}
	}
}

// TestEmulated checks Emulated against a second sign: an arm or arm64
// binary that sees an x86 /proc/cpuinfo runs under an emulator (as CI runs
// GOARCH=arm64 and arm under qemu-user), while an amd64 binary here runs
// natively. A wrong answer would skip TestMemLimit in CI, or run it under
// emulation.
func TestEmulated(t *testing.T) {
	name, emu := Emulated()
	t.Logf("emulated: %v %s", emu, name)
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	x86Host := strings.Contains(string(cpuinfo), "vendor_id")
	switch {
	case runtime.GOARCH == "amd64" || runtime.GOARCH == "386":
		if emu {
			t.Errorf("a %s binary on this host took itself for emulated (%s)", runtime.GOARCH, name)
		}
	case (runtime.GOARCH == "arm64" || runtime.GOARCH == "arm") && x86Host:
		if !emu || !strings.Contains(name, "qemu") {
			t.Errorf("a %s binary on an x86 host did not detect its emulator: %v %q", runtime.GOARCH, emu, name)
		}
	}
}
