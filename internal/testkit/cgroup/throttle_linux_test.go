package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ThrottleReads puts the process in a group whose read limit for the disk
// is the one asked for.
func TestThrottleReads(t *testing.T) {
	p, err := FindMemory()
	if err == nil {
		var g *Group
		if g, err = p.Create(fmt.Sprintf("edgeload-throttletest-%d", os.Getpid()), 64<<20); err == nil {
			defer g.Remove()
			testThrottle(t, g)
			return
		}
	}
	if errors.Is(err, ErrNoCgroup) && os.Getenv("EDGELOAD_MEMLIMIT") != "require" {
		t.Skip(err)
	}
	t.Fatal(err)
}

func testThrottle(t *testing.T, g *Group) {
	dev, err := DiskOf(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	var b *Group
	defer func() { // a group with a process in it cannot be removed
		cmd.Process.Kill()
		cmd.Wait()
		if b != nil {
			b.Remove()
		}
	}()
	if err := g.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	b, err = ThrottleReads(g, fmt.Sprintf("edgeload-throttletest-%d", os.Getpid()), cmd.Process.Pid, dev, 12345678)
	if errors.Is(err, ErrNoCgroup) || errors.Is(err, os.ErrNotExist) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir, file, want := g.Dir, "io.max", dev+" rbps=12345678"
	if b != nil {
		dir, file, want = b.Dir, "blkio.throttle.read_bps_device", dev+" 12345678"
	}
	got, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil || !strings.Contains(string(got), want) {
		t.Fatalf("%s: %q, %v; want %q", file, got, err, want)
	}
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if !strings.Contains(string(procs), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("process %d is not in %s: %q", cmd.Process.Pid, dir, procs)
	}
}
