package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/cgroup"
	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// envMain makes the test binary run main instead of the tests: the test
// runs the binary as streambench, and streambench runs it again for each
// child (os.Args[0] with -child).
const envMain = "EDGELOAD_STREAMBENCH_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTinyRun runs streambench, one round, on a 32 MiB model under a 64
// MiB cgroup with a 4 MiB stream budget, and checks the table it prints
// for sense: the three runs ok with no OOM kill and a cold page cache
// before each; each ratio the quotient of the two throughputs it names;
// the stream's peak of resident file pages (mincore, sampled by the
// parent) within its budget (and a quarter MiB) and above nothing; every cgroup peak within
// the limit; the picture written.
func TestTinyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("streambench's run writes a 32 MiB file and starts children in memory cgroups")
	}
	if emu, ok := cgroup.Emulated(); ok {
		t.Skipf("under the emulator %s a cgroup and mincore measurement means nothing", emu)
	}
	required := os.Getenv("CI") == "true" || os.Getenv("EDGELOAD_MEMLIMIT") == "require"
	parent, err := cgroup.FindMemory()
	if err == nil {
		var g *cgroup.Group
		if g, err = parent.Create(fmt.Sprintf("%s%d-probe", groupPrefix, os.Getpid()), 64<<20); err == nil {
			err = g.Remove()
		}
	}
	if err != nil {
		if required {
			t.Fatalf("no memory cgroup to run streambench in (CI=true requires it): %v", err)
		}
		t.Skipf("no memory cgroup to run streambench in: %v", err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "m.pte")
	ts := make([]writer.PTETensor, 16)
	for i := range ts {
		ts[i] = writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{512, 1024},
			Fill: func(p []byte, off int64) {
				for k := range p {
					p[k] = byte(int64(i)*3 + (off+int64(k))*11)
				}
			}}
	}
	if _, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Sync() // the page cache drops only clean pages
		f.Close()
	}
	md, svg := filepath.Join(dir, "t.md"), filepath.Join(dir, "t.svg")
	cmd := exec.Command(os.Args[0], "-rounds", "1", "-budgets", "4MiB", "-svg-budget", "4MiB", "-limit", "64MiB",
		"-sample", "2ms", "-md", md, "-svg", svg, path)
	cmd.Env = append(os.Environ(), envMain+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("streambench: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	rows := make(map[string][]string)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| run ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 14 {
			t.Fatalf("row %q has %d cells, want 14", line, len(cells))
		}
		rows[cells[0]] = cells
	}
	num := func(cell string) float64 {
		f := strings.Fields(strings.TrimSuffix(cell, "%"))
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			t.Fatalf("cell %q: %v", cell, err)
		}
		return v
	}
	for _, name := range []string{"pread", "fault", "stream 4 MiB"} {
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row %q in\n%s", name, b)
		}
		if r[13] != "ok" || r[9] != "0" || num(r[1]) <= 0 || num(r[12]) > 1 {
			t.Errorf("%s: outcome %q, OOM kills %s, %s MB/s, %s cached before", name, r[13], r[9], r[1], r[12])
		}
		if cg := num(r[8]); cg <= 0 || cg > 64 {
			t.Errorf("%s: cgroup peak %s, want within the 64 MiB limit", name, r[8])
		}
	}
	pread, fault, st := num(rows["pread"][1]), num(rows["fault"][1]), rows["stream 4 MiB"]
	// The table rounds MB/s to the unit and ratios to 0.01.
	ratioOK := func(got string, a, b float64) bool {
		want := a / b
		return math.Abs(num(got)-want) <= 0.006+want*(0.5/a+0.5/b)
	}
	if !ratioOK(rows["fault"][3], fault, pread) || !ratioOK(st[3], num(st[1]), pread) || !ratioOK(st[4], num(st[1]), fault) {
		t.Errorf("ratios: fault ÷ pread %s (%.0f/%.0f), stream ÷ pread %s, stream ÷ fault %s (%s MB/s)",
			rows["fault"][3], fault, pread, st[3], st[4], st[1])
	}
	// A quarter MiB of slack: package stream's TestBudget has seen the
	// page cache keep a few released pages for a moment.
	if peak := num(st[5]); peak <= 0 || peak > 4.25 {
		t.Errorf("stream: peak resident %s (mincore), want within its 4 MiB budget (+0.25 MiB) and above 0", st[5])
	}
	if st[7] != "4 MiB" {
		t.Errorf("stream: budget %q", st[7])
	}
	if s, err := os.ReadFile(svg); err != nil || !strings.Contains(string(s), "<svg") {
		t.Errorf("picture: %v", err)
	}
}
