//go:build linux

package memlimit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeload/edgeload/bench"
	"github.com/edgeload/edgeload/internal/testkit/cgroup"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// limitBytes is the cgroup's hard memory limit: 1/16 of the model.
const limitBytes = 256 << 20

// modelVersion names the content of the cached model file: bump it when
// the pattern, the tensor count or the tensor names change.
const modelVersion = "v1"

// childTimeout bounds one child run (a healthy one takes seconds).
const childTimeout = 4 * time.Minute

// Environment knobs (documented in MEMLIMIT.md).
const (
	// envMode: "require" turns every skip into a failure (for CI on a
	// machine known to have writable cgroups).
	envMode = "EDGELOAD_MEMLIMIT"
	// envCache: "0" writes the model into the test's temporary directory
	// (deleted afterwards) instead of the cache under os.TempDir().
	envCache = "EDGELOAD_MEMLIMIT_CACHE"
	// envOut: a path to write the result table to, as Markdown.
	envOut = "EDGELOAD_MEMLIMIT_OUT"
	// envReps: how many times the compared runs (plain and prefetch-ahead,
	// cold and hot) are repeated (default 3, 1 when CI=true); the table
	// gives the median.
	envReps = "EDGELOAD_MEMLIMIT_REPS"
)

// groupPrefix names the test's groups; a group left behind by a killed
// run (no processes in it) is removed by the next run.
const groupPrefix = "edgeload-memlimit-"

// skip skips the test with the reason, or fails it when EDGELOAD_MEMLIMIT
// is "require".
func skip(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := "TestMemLimit skipped: " + fmt.Sprintf(format, args...)
	if os.Getenv(envMode) == "require" {
		t.Fatalf("%s (%s=require)", msg, envMode)
	}
	t.Skip(msg)
}

// required reports whether a part of a running proof that could be left
// out (the 32-bit row) must be there: under EDGELOAD_MEMLIMIT=require or
// CI=true.
func required() bool {
	return os.Getenv(envMode) == "require" || os.Getenv("CI") == "true"
}

// a run is one child configuration: a mode, a page-cache state and
// release options.
type run struct {
	name    string // as shown in the table
	mode    string
	hot     bool
	args    []string // extra child flags
	edge    bool     // an edgeload mode, expected to succeed
	release bool     // releases each tensor after use
	compare bool     // part of the plain/prefetch comparison: repeated
	goarch  string   // the child's GOARCH; "" is the test's own
}

// result is what one child run measured.
type result struct {
	run
	outcome    string
	ok         bool // exit 0 and every sum checked
	wall       time.Duration
	peakRSS    int64   // the child's VmHWM (see pollHWM)
	cgPeak     int64   // the cgroup's peak usage
	oomKills   int64   // -1 when the kernel does not say
	killed     bool    // the child died of SIGKILL
	residentIn float64 // fraction of the file's pages in the page cache before the run
	rep        *Report
	stderr     string
	prep       time.Duration // setting the page cache up before the run
	cleanup    time.Duration // removing the cgroup after it
}

// peakSlack is how far past the limit the cgroup's recorded peak may go:
// the kernel charges a few pages unconditionally (for a task being killed,
// or allocations that must not fail), so v1 can record the limit plus a
// page or so.
const peakSlack = 1 << 20

func TestMemLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("TestMemLimit skipped in -short mode: it writes a 4 GiB file and runs a child process under a memory cgroup")
	}
	if emu, ok := cgroup.Emulated(); ok {
		// Not "require"-able: under emulation the measurement means nothing.
		t.Skipf("TestMemLimit skipped: running under the emulator %s; a cgroup memory test is not meaningful under emulation (on an amd64 host the test covers 32-bit with a native 386 child in windowed mode)", emu)
	}
	if math.MaxUint == math.MaxUint32 {
		t.Skip("TestMemLimit skipped: the parent maps the 4 GiB model whole, which a 32-bit address space cannot hold (run it from a 64-bit test; on amd64 it covers 32-bit with a 386 child)")
	}
	parent, err := cgroup.FindMemory()
	if err != nil {
		skip(t, "%v", err)
	}
	// Probe: can a group be created and limited here?
	probe, err := parent.Create(fmt.Sprintf("%s%d-probe", groupPrefix, os.Getpid()), limitBytes)
	if err != nil {
		if errors.Is(err, cgroup.ErrNoCgroup) {
			skip(t, "cannot create a memory cgroup under %s (needs root, or a cgroup delegated to uid %d, on a writable cgroup file system): %v", parent.Dir, os.Geteuid(), err)
		}
		t.Fatal(err)
	}
	if err := probe.Remove(); err != nil {
		t.Fatal(err)
	}
	lockMachine(t)
	parent.RemoveStale(groupPrefix) // empty groups of killed runs; only under the lock
	version := "v1"
	if parent.V2 {
		version = "v2"
	}
	t.Logf("cgroup %s memory controller at %s; limit %d MiB", version, parent.Dir, limitBytes>>20)

	runs := proofRuns()
	children := map[string]string{"": buildChild(t, "")}
	// The bonus row: on amd64 the kernel runs 386 binaries natively, so a
	// 32-bit child shows windowed mode (the file cannot be mapped whole in
	// a 32-bit address space) under the same limit, without emulation.
	if runtime.GOARCH == "amd64" {
		bin, err := build32(t)
		switch {
		case err == nil:
			children["386"] = bin
		case required():
			t.Fatalf("no 32-bit run (%s=require or CI=true requires the 32-bit row): %v", envMode, err)
		default:
			t.Logf("no 32-bit run: %v", err)
		}
	}
	if missing := missingRows(runs, children, runtime.GOARCH, required()); len(missing) > 0 {
		t.Fatalf("rows of the proof that would not run: %s", strings.Join(missing, "; "))
	}
	model := modelFile(t)
	reps := 3
	if os.Getenv("CI") == "true" {
		reps = 1 // CI's time budget; the README's table comes from 3
	}
	if v, err := strconv.Atoi(os.Getenv(envReps)); err == nil && v > 0 {
		reps = v
	}

	// Cold runs first, then hot ones (warming the cache once); the compared
	// runs are repeated, interleaved, so that noise from other work on the
	// machine falls on both alike.
	results := make([][]result, len(runs))
	n := 0
	for _, hot := range []bool{false, true} {
		for rep := range reps {
			for i, r := range runs {
				bin, ok := children[r.goarch]
				if r.hot != hot || rep > 0 && !r.compare || !ok {
					continue
				}
				res := runChild(t, parent, bin, model, r, n)
				n++
				checkRun(t, res)
				results[i] = append(results[i], res)
				t.Logf("%-50s %-4s %s", r.name, cacheName(r.hot), res.summary())
			}
		}
	}
	table := markdown(results)
	t.Logf("result table (limit %d MiB, model %.2f GiB):\n%s", limitBytes>>20, float64(fileSize(t, model))/(1<<30), table)
	for _, hot := range []bool{false, true} {
		var plain, pre time.Duration
		for _, rs := range results {
			if len(rs) > 0 && rs[0].hot == hot && rs[0].compare {
				if rs[0].mode == ModePlain {
					plain = medianWall(rs)
				} else {
					pre = medianWall(rs)
				}
			}
		}
		t.Logf("prefetch-ahead vs plain faulting, %s cache: %v vs %v median wall time (%.2fx)", cacheName(hot),
			pre.Round(time.Millisecond), plain.Round(time.Millisecond), plain.Seconds()/pre.Seconds())
	}
	if out := os.Getenv(envOut); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// proofRuns lists the rows of the proof: edgeload's ways of reading, cold
// and hot, the os.ReadFile baseline both ways, and the 32-bit row (run on
// amd64, where the kernel runs a 386 child natively).
func proofRuns() []run {
	return []run{
		{name: "edgeload, plain faulting", mode: ModePlain, edge: true, release: true, compare: true},
		{name: "edgeload + prefetch-ahead", mode: ModePrefetch, edge: true, release: true, compare: true},
		{name: "edgeload, plain, Release + DropPageCache (behind)", mode: ModePlain, args: []string{"-drop"}, edge: true, release: true},
		{name: "edgeload, plain, no Release", mode: ModePlain, args: []string{"-norelease"}, edge: true},
		{name: "os.ReadFile baseline", mode: ModeReadFile},
		{name: "edgeload 32-bit (386), windowed + Evict", mode: ModePlain, edge: true, release: true, goarch: "386"},
		{name: "edgeload, plain faulting", mode: ModePlain, hot: true, edge: true, release: true, compare: true},
		{name: "edgeload + prefetch-ahead", mode: ModePrefetch, hot: true, edge: true, release: true, compare: true},
		{name: "os.ReadFile baseline", mode: ModeReadFile, hot: true},
	}
}

// checkRun asserts what one run must show.
func checkRun(t *testing.T, res result) {
	t.Helper()
	for _, p := range runProblems(res) {
		t.Errorf("%s, %s: %s", res.name, cacheName(res.hot), p)
	}
}

// runProblems returns what one run shows that it must not: the group's
// peak outside (0, limit+peakSlack]; for the os.ReadFile baseline, any
// outcome but a SIGKILL the group's OOM-kill counter records; for an
// edgeload run, a failure, wrong sums, the wrong mapping mode, a peak RSS
// out of line with Release, or a page cache not in the state the run asked
// for.
func runProblems(res result) []string {
	var ps []string
	bad := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	if res.cgPeak <= 0 || res.cgPeak > limitBytes+peakSlack {
		bad("cgroup peak usage %d outside (0, %d]: the limit was not in force", res.cgPeak, limitBytes+peakSlack)
	}
	if !res.edge {
		// The baseline must not get through: 4 GiB of anonymous memory
		// cannot fit in 256 MiB without swap. What stops it must be the
		// OOM killer: a SIGKILL, and the group's counter going up.
		switch {
		case res.ok || res.rep != nil && res.rep.Err == "":
			bad("succeeded under a %d MiB limit: the limit was not enforced", limitBytes>>20)
		case !res.killed:
			bad("ended %q, not killed: want an OOM kill", res.outcome)
		case res.oomKills < 0:
			bad("killed, but the kernel reports no OOM-kill count for the group: cannot show an OOM kill")
		case res.oomKills == 0:
			bad("killed (%s) with the group's OOM-kill count at 0: not the OOM killer", res.outcome)
		}
		return ps
	}
	if !res.ok {
		bad("%s\nstderr: %s", res.outcome, res.stderr)
		return ps
	}
	var want float64
	for i := range Tensors {
		want += ExpectedSum(i)
	}
	if res.rep.Tensors != Tensors || res.rep.Mismatches != 0 || res.rep.Checksum != want || res.rep.Bytes != Tensors*TensorBytes {
		bad("read %d tensors (%d bytes), %d mismatches (%s), checksum %v want %v",
			res.rep.Tensors, res.rep.Bytes, res.rep.Mismatches, res.rep.FirstBad, res.rep.Checksum, want)
	}
	wantMode := mmapfile.ModeWhole
	if res.goarch == "386" {
		wantMode = mmapfile.ModeWindowed
	}
	if res.rep.MappingMode != wantMode.String() {
		bad("mapping mode %q, want %q", res.rep.MappingMode, wantMode)
	}
	// Released tensors leave the process: its RSS stays a few tensors'
	// worth (the runtime, the FlatBuffer metadata, the tensors in flight
	// and the pages shared by neighbouring tensors), far below the limit.
	if res.release && res.peakRSS > limitBytes/4 {
		bad("peak RSS %d MiB with Release after each tensor; want < %d MiB", res.peakRSS>>20, limitBytes>>22)
	}
	// Dropping released pages from the page cache too (release-behind)
	// keeps even the group's page cache small.
	if slices.Contains(res.args, "-drop") && res.cgPeak > limitBytes/2 {
		bad("cgroup peak %d MiB although released pages were dropped from the page cache; want < %d MiB", res.cgPeak>>20, limitBytes>>21)
	}
	if !res.hot && res.residentIn > 0.01 {
		bad("%.1f%% of the file was in the page cache before a cold run", 100*res.residentIn)
	}
	if res.hot && res.residentIn < 0.99 {
		bad("only %.1f%% of the file was in the page cache before a hot run", 100*res.residentIn)
	}
	return ps
}

// missingRows returns the rows of runs that would not run because their
// child was not built: always for the test's own architecture, and for the
// 32-bit (386) row on amd64 when required is set, which also requires that
// runs has that row.
func missingRows(runs []run, children map[string]string, goarch string, required bool) []string {
	var missing []string
	if required && goarch == "amd64" && !slices.ContainsFunc(runs, func(r run) bool { return r.goarch == "386" }) {
		missing = append(missing, "the 32-bit (386) row is not in the list")
	}
	for _, r := range runs {
		if _, ok := children[r.goarch]; ok {
			continue
		}
		if r.goarch == "" || required && r.goarch == "386" && goarch == "amd64" {
			missing = append(missing, fmt.Sprintf("%s (no %s child)", r.name, cmp.Or(r.goarch, goarch)))
		}
	}
	return missing
}

// lockMachine serialises TestMemLimit across processes on this machine (a
// "go test ./..." elsewhere would otherwise drop the page cache under this
// run's feet and share the disk), waiting up to lockWait.
func lockMachine(t *testing.T) {
	t.Helper()
	const lockWait = 4 * time.Minute
	path := filepath.Join(os.TempDir(), "edgeload-memlimit.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		t.Logf("running without the machine-wide lock: %v", err)
		return
	}
	deadline := time.Now().Add(lockWait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			skip(t, "another TestMemLimit holds %s (%v); its runs would disturb this one's", path, err)
		}
		time.Sleep(time.Second)
	}
	t.Cleanup(func() { f.Close() }) // closing drops the lock
}

func cacheName(hot bool) string {
	if hot {
		return "hot"
	}
	return "cold"
}

func (r *result) summary() string {
	return fmt.Sprintf("%s; wall %v, peak RSS %d MiB, cgroup peak %d MiB, OOM kills %d, %.0f%% cached before (set up in %v, group removed in %v)",
		r.outcome, r.wall.Round(time.Millisecond), r.peakRSS>>20, r.cgPeak>>20, r.oomKills, 100*r.residentIn,
		r.prep.Round(time.Millisecond), r.cleanup.Round(time.Millisecond))
}

// buildChild builds ./child for goarch ("" for the test's own) with the go
// command that runs this test, without the race detector whatever flags
// built the test, so that the numbers are those of an ordinary binary.
func buildChild(t *testing.T, goarch string) string {
	t.Helper()
	bin, out, err := goBuild(t, goarch)
	if errors.Is(err, exec.ErrNotFound) {
		skip(t, "no go command on PATH to build the child program: %v", err)
	}
	if err != nil {
		t.Fatalf("building the child: %v\n%s", err, out)
	}
	return bin
}

func goBuild(t *testing.T, goarch string) (bin string, out []byte, err error) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(t.TempDir(), "memlimit-child")
	start := time.Now()
	cmd := exec.Command(goTool, "build", "-o", bin, "./child")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+goarch)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", out, err
	}
	t.Logf("built the child for %s (no -race) in %v", cmp.Or(goarch, runtime.GOARCH), time.Since(start).Round(time.Millisecond))
	return bin, nil, nil
}

// build32 builds a 386 child and checks that this kernel runs it.
func build32(t *testing.T) (string, error) {
	bin, out, err := goBuild(t, "386")
	if err != nil {
		return "", fmt.Errorf("building a 386 child: %v: %s", err, out)
	}
	// With no arguments the child prints its usage and exits 2; a kernel
	// without 32-bit support refuses to start it.
	cmd := exec.Command(bin)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			return "", fmt.Errorf("this kernel does not run 386 binaries: %v", err)
		}
	}
	return bin, nil
}

// model describes the 4 GiB program the test reads.
func model() *writer.PTE {
	ts := make([]writer.PTETensor, Tensors)
	for i := range ts {
		ts[i] = writer.PTETensor{
			Kind:       writer.PTEConstant,
			ScalarType: writer.PTEFloat32,
			Sizes:      []int32{1024, TensorElems / 1024},
			Name:       TensorName(i),
			Fill:       func(p []byte, off int64) { Fill(i, p, off) },
		}
	}
	return &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}
}

// modelFile returns the path of the 4 GiB model, written with real bytes.
// By default it is cached under os.TempDir()/edgeload-memlimit, keyed by
// modelVersion and checked by size and by opening it, and reused across
// runs; with EDGELOAD_MEMLIMIT_CACHE=0 it is written into the test's
// temporary directory and deleted afterwards.
func modelFile(t *testing.T) string {
	t.Helper()
	w := model()
	info, err := w.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var path string
	if os.Getenv(envCache) == "0" {
		path = filepath.Join(t.TempDir(), "model.pte")
	} else {
		dir := filepath.Join(os.TempDir(), "edgeload-memlimit")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(dir, "model-"+modelVersion+".pte")
		if cachedOK(path, info.FileSize) {
			t.Logf("reusing the cached model %s (%d bytes); delete it or set %s=0 to rewrite", path, info.FileSize, envCache)
			return path
		}
	}
	if err := diskRoom(filepath.Dir(path), info.FileSize); err != nil {
		skip(t, "%v", err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	start := time.Now()
	if _, err := w.WriteFile(tmp); err != nil {
		os.Remove(tmp)
		t.Fatal(err)
	}
	if err := syncFile(tmp); err != nil {
		os.Remove(tmp)
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("wrote %s: %d bytes, %d tensors, in %v (%.0f MiB/s, fsync included)", path, info.FileSize, Tensors,
		el.Round(time.Millisecond), float64(info.FileSize)/(1<<20)/el.Seconds())
	if !cachedOK(path, info.FileSize) {
		t.Fatalf("the model just written at %s does not open as expected", path)
	}
	return path
}

// cachedOK reports whether path holds a model of the expected size that
// opens with the expected tensors. The bytes themselves are checked by
// every child run (each tensor's sum).
func cachedOK(path string, size int64) bool {
	st, err := os.Stat(path)
	if err != nil || st.Size() != size {
		return false
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		return false
	}
	defer mf.Close()
	p, err := pte.NewFile(mf)
	if err != nil {
		return false
	}
	defer p.Close()
	ts := p.Tensors()
	if len(ts) != Tensors {
		return false
	}
	for i := range ts {
		if ts[i].Name != TensorName(i) || ts[i].NBytes != TensorBytes {
			return false
		}
	}
	return true
}

func diskRoom(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil // let the write report it
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need+need/4 {
		return fmt.Errorf("%s has %d MiB free; the model needs %d MiB", dir, free>>20, need>>20)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileSize(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// setCache drops the model's pages from the page cache (cold) or reads the
// whole file through (hot), and returns the fraction of its pages that are
// cached afterwards (mincore). Pages the parent reads in are charged to the
// parent's cgroup, not the child's.
func setCache(t *testing.T, path string, hot bool) float64 {
	t.Helper()
	if !hot {
		_, share, err := bench.Evict(path)
		if err != nil {
			t.Fatal(err)
		}
		return share
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mf, err := mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWhole))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	cached := func() float64 {
		res, total, err := mf.Resident(0, mf.Len())
		if err != nil {
			t.Fatal(err)
		}
		return float64(res) / float64(total)
	}
	if cached() == 1 {
		return 1
	}
	buf := make([]byte, 8<<20)
	for pass := range 3 {
		start := time.Now()
		for off := int64(0); ; off += int64(len(buf)) {
			_, err := f.ReadAt(buf, off)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		c := cached()
		t.Logf("warming the page cache: pass %d read the file in %v; %.2f%% cached", pass+1, time.Since(start).Round(time.Millisecond), 100*c)
		if c == 1 {
			return c
		}
	}
	return cached()
}

// runChild runs one child in a fresh cgroup with the hard limit: it starts
// the child (which waits on stdin), moves it into the group, lets it go,
// waits for it and reads the group's counters before removing the group.
func runChild(t *testing.T, parent cgroup.Parent, bin, model string, r run, n int) result {
	t.Helper()
	t0 := time.Now()
	res := result{run: r, residentIn: setCache(t, model, r.hot)}
	res.prep = time.Since(t0)
	cg, err := parent.Create(fmt.Sprintf("%s%d-%d", groupPrefix, os.Getpid(), n), limitBytes)
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	removeGroup := func() {
		if !removed {
			removed = true
			if err := cg.Remove(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(removeGroup)
	if lim, err := cg.Limit(); err != nil || lim != limitBytes {
		t.Fatalf("%s: limit reads back as %d (%v), want %d", cg.Dir, lim, err, limitBytes)
	}

	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	args := append([]string{"-wait", "-mode", r.mode}, r.args...)
	cmd := exec.CommandContext(ctx, bin, append(args, model)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() { // failure paths: never leave the child running in the group
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	if err := cg.AddProc(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	hwm := pollHWM(cmd.Process.Pid)
	start := time.Now()
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	werr := cmd.Wait()
	waited = true
	res.wall = time.Since(start)
	res.peakRSS = hwm()
	if ctx.Err() != nil {
		t.Fatalf("%s: child timed out after %v", r.name, childTimeout)
	}
	if res.cgPeak, err = cg.Peak(); err != nil {
		t.Errorf("%s: reading the cgroup's peak usage: %v", r.name, err)
	}
	res.oomKills = cg.OOMKills()
	t0 = time.Now()
	removeGroup()
	res.cleanup = time.Since(t0)
	res.stderr = firstLines(stderr.String(), 2)

	if line := bytes.TrimSpace(stdout.Bytes()); len(line) > 0 {
		var rep Report
		if err := json.Unmarshal(line, &rep); err != nil {
			t.Errorf("%s: child output %q: %v", r.name, line, err)
		} else {
			res.rep = &rep
			res.peakRSS = max(res.peakRSS, rep.VmHWM)
		}
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		res.killed = true
		res.outcome = "killed (SIGKILL)"
		if res.oomKills > 0 {
			res.outcome = "OOM-killed (SIGKILL)"
		}
	case werr == nil && res.rep != nil:
		res.ok = true
		res.outcome = "ok: all sums correct"
		if r.mode == ModeReadFile {
			res.outcome = "ok (limit not enforced?)"
		}
	case res.rep != nil && res.rep.Err != "":
		res.outcome = "failed: " + res.rep.Err
	case res.rep != nil && res.rep.Mismatches > 0:
		res.outcome = fmt.Sprintf("wrong sums: %d tensors, first %s", res.rep.Mismatches, res.rep.FirstBad)
	default:
		res.outcome = fmt.Sprintf("failed: %v; %s", werr, res.stderr)
	}
	return res
}

// pollHWM samples the child's VmHWM (the high-water mark of its resident
// set, /proc/pid/status) every few milliseconds until the returned function
// is called, which returns the last value seen. For a child that exits
// normally the child's own final VmHWM is exact; for one the kernel kills
// it is the last sample before the kill.
//
// (The rusage of the child, ru_maxrss, cannot be used: Go starts children
// with vfork, and at exec the kernel folds the high-water mark of the
// parent's address space, which the child borrowed until then, into the
// child's ru_maxrss.)
func pollHWM(pid int) func() int64 {
	var last atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	path := fmt.Sprintf("/proc/%d/status", pid)
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				if v, ok := statusKB(b, "VmHWM:"); ok && v > last.Load() {
					last.Store(v)
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		return last.Load()
	}
}

// statusKB returns the value of a "Key:   123 kB" line of /proc/pid/status
// in bytes.
func statusKB(b []byte, key string) (int64, bool) {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10, true
				}
			}
		}
	}
	return 0, false
}

// firstLines returns the first n lines of s (a Go crash's message comes
// first, its goroutine dump after), joined with " | ".
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}

func medianWall(rs []result) time.Duration {
	ws := make([]time.Duration, len(rs))
	for i, r := range rs {
		ws[i] = r.wall
	}
	slices.Sort(ws)
	return ws[len(ws)/2]
}

// markdown renders the results as a Markdown table, one row per
// configuration: the median wall time (and the range when repeated), and
// the largest peak RSS, cgroup peak and OOM kills of its runs.
func markdown(results [][]result) string {
	var b strings.Builder
	b.WriteString("| mode | page cache | outcome | wall time | peak RSS | cgroup peak usage | OOM kills |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|\n")
	for _, rs := range results {
		if len(rs) == 0 {
			continue
		}
		r0 := rs[0]
		var outcomes []string
		var rss, cg, ooms int64
		cached := rs[0].residentIn
		minW, maxW := rs[0].wall, rs[0].wall
		for _, r := range rs {
			if !slices.Contains(outcomes, r.outcome) {
				outcomes = append(outcomes, r.outcome)
			}
			rss, cg, ooms = max(rss, r.peakRSS), max(cg, r.cgPeak), max(ooms, r.oomKills)
			if r0.hot {
				cached = min(cached, r.residentIn)
			} else {
				cached = max(cached, r.residentIn)
			}
			minW, maxW = min(minW, r.wall), max(maxW, r.wall)
		}
		wall := fmt.Sprintf("%.2f s", medianWall(rs).Seconds())
		if len(rs) > 1 {
			wall = fmt.Sprintf("%.2f s (%.2f–%.2f, %d runs)", medianWall(rs).Seconds(), minW.Seconds(), maxW.Seconds(), len(rs))
		}
		fmt.Fprintf(&b, "| %s | %s (%.0f%% cached) | %s | %s | %.1f MiB | %.1f MiB | %d |\n",
			r0.name, cacheName(r0.hot), 100*cached, strings.Join(outcomes, "; "), wall,
			float64(rss)/(1<<20), float64(cg)/(1<<20), ooms)
	}
	fmt.Fprintf(&b, "\n%s/%s, %d CPUs, page size %d, %s; limit %d MiB.\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), os.Getpagesize(), runtime.Version(), limitBytes>>20)
	return b.String()
}
