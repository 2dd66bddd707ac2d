//go:build linux

// Command decodebench measures what a decode loop costs per token when the
// model is larger than the memory the process may use: a Llama GGUF is
// decoded greedily (examples/llama) in a memory cgroup whose limit is a
// share of the model, page cache cold, by
//
//	(a) edgeload's pass schedule (package stream: a retained set, the rest
//	    streamed every pass with read-ahead across passes),
//	(b) the same Go forward pass reading the mapping with no schedule
//	    (faults and the kernel's LRU, as llama.cpp reads a model),
//	(c) llama.cpp itself (llama-cpp-python, mmap on),
//
// beside two floors: compute-only (the model resident, no limit) and the
// I/O floor, the bytes a pass must read (the model less what (a) retains)
// over the disk's cold sequential bandwidth (dd iflag=direct).
//
//	sudo go run ./bench/cmd/decodebench -python VENV/bin/python -svg docs/decode.svg MODEL.gguf
//
// With -from RUNS.json it measures nothing and prints the report (and
// plot) of the runs an earlier -json wrote.
//
// Per-token times are the median of the passes after the first (which
// reads the retained set as well); the table also gives each run's whole
// wall time. It needs root (cgroups, drop_caches).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/edgeload/edgeload/internal/sizeflag"
	"github.com/edgeload/edgeload/internal/testkit/cgroup"
)

// results is what -json writes and -from reads.
type results struct {
	Model     string    `json:"model"`
	Size      int64     `json:"size"`
	Bandwidth []float64 `json:"cold_bytes_per_second"`
	Runs      []run     `json:"runs"`
}

// run is one decode as the parent saw it.
type run struct {
	Name     string    `json:"name"` // "schedule/direct", "schedule/mapped", "mmap", "llama.cpp", "compute-only"
	Limit    int64     `json:"limit"`
	Budget   int64     `json:"budget,omitempty"`
	Tokens   []int     `json:"tokens"`
	PassMS   []float64 `json:"pass_ms"`
	Wall     float64   `json:"wall_seconds"`
	Retained int64     `json:"retained_bytes,omitempty"`
	ReadPass int64     `json:"read_per_pass,omitempty"`
	Stall    float64   `json:"stall_seconds,omitempty"`
	CgPeak   int64     `json:"cgroup_peak"`
	OOMs     int64     `json:"oom_kills"`
	Outcome  string    `json:"outcome"`
	Stats    string    `json:"stats"`
}

// perToken returns the median milliseconds of the passes after the first.
func (r run) perToken() float64 {
	if len(r.PassMS) < 2 {
		return 0
	}
	ms := slices.Clone(r.PassMS[1:])
	slices.Sort(ms)
	if n := len(ms); n%2 == 0 {
		return (ms[n/2-1] + ms[n/2]) / 2
	}
	return ms[len(ms)/2]
}

type config struct {
	model, llama, python string
	ids                  string
	n, threads, rounds   int
	limits               []int
	headroom             int64
	retain               string
	readers              []string
	timeout              time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.llama, "llama", "", "the examples/llama binary (default: built from ./examples/llama)")
	flag.StringVar(&c.python, "python", os.Getenv("EDGELOAD_RUNTIMES_PYTHON"), "the Python with llama-cpp-python, for (c); empty skips it")
	flag.StringVar(&c.ids, "ids", "1", "the prompt's token ids")
	flag.IntVar(&c.n, "n", 16, "tokens to decode")
	flag.IntVar(&c.threads, "threads", 2, "threads for the matrix products (both forward passes and llama.cpp)")
	flag.IntVar(&c.rounds, "rounds", 1, "rounds, one after another")
	limits := flag.String("limits", "25,50,75", "the cgroup limits, in percent of the model file")
	headroom := sizeflag.Value(64 << 20)
	flag.Var(&headroom, "headroom", "the part of the limit (a) leaves for what is not weights (`SIZE`): its budget is the limit less this")
	flag.StringVar(&c.retain, "retain", "auto", "(a)'s -retain")
	readers := flag.String("readers", "direct,mapped", "(a)'s stream readers, comma-separated: the first is (a), the others are measured beside it")
	svg := flag.String("svg", "", "write a plot of per-token time against the limit to `FILE`")
	out := flag.String("json", "", "write every run as JSON to `FILE`")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "the longest a run may take")
	from := flag.String("from", "", "measure nothing: print the report (and -svg) of the runs a -json `FILE` holds")
	flag.Parse()
	if flag.NArg() != 1 && (*from == "" || flag.NArg() != 0) {
		fmt.Fprintln(os.Stderr, "usage: decodebench [flags] MODEL.gguf | decodebench -from RUNS.json [-svg FILE]")
		os.Exit(2)
	}
	c.model, c.headroom = flag.Arg(0), int64(headroom)
	c.readers = strings.Split(*readers, ",")
	for _, f := range strings.Split(*limits, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		check(err)
		c.limits = append(c.limits, p)
	}
	if *from != "" {
		b, err := os.ReadFile(*from)
		check(err)
		var saved results
		check(json.Unmarshal(b, &saved))
		c.model = saved.Model
		report(os.Stdout, c, saved.Size, saved.Runs, saved.Bandwidth)
		if *svg != "" {
			check(plotSVG(*svg, c, saved.Size, saved.Runs, median(saved.Bandwidth)))
		}
		return
	}
	if c.llama == "" {
		dir, err := os.MkdirTemp("", "decodebench")
		check(err)
		defer os.RemoveAll(dir)
		c.llama = filepath.Join(dir, "llama")
		cmd := exec.Command("go", "build", "-o", c.llama, "./examples/llama")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		check(cmd.Run())
	}
	parent, err := cgroup.FindMemory()
	check(err)
	parent.RemoveStale("decodebench-")
	fi, err := os.Stat(c.model)
	check(err)
	size := fi.Size()
	fmt.Printf("model %s, %s; %d tokens from ids %s, %d threads; %s, %s\n", c.model, sizeStr(size), c.n, c.ids, c.threads, time.Now().UTC().Format(time.RFC3339), loadavg())

	var all []run
	var bws []float64
	for round := range c.rounds {
		fmt.Fprintf(os.Stderr, "round %d\n", round+1)
		bws = append(bws, coldBandwidth(c.model))
		fmt.Fprintf(os.Stderr, "cold sequential read (dd iflag=direct): %.0f MB/s\n", bws[len(bws)-1]/1e6)
		all = append(all, computeOnly(parent, c))
		for _, p := range c.limits {
			limit := size * int64(p) / 100
			var names []string
			for _, r := range c.readers {
				names = append(names, "schedule/"+r)
			}
			for _, name := range append(names, "mmap", "llama.cpp") {
				if name == "llama.cpp" && c.python == "" {
					continue
				}
				all = append(all, decode(parent, c, name, limit))
			}
		}
	}
	report(os.Stdout, c, size, all, bws)
	if *out != "" {
		b, _ := json.MarshalIndent(results{c.model, size, bws, all}, "", "  ")
		check(os.WriteFile(*out, b, 0o644))
	}
	if *svg != "" {
		check(plotSVG(*svg, c, size, all, median(bws)))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "decodebench:", err)
		os.Exit(1)
	}
}

// dropCaches writes back and drops the page cache.
func dropCaches() {
	syscall.Sync()
	check(os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200))
}

// coldBandwidth reads the file with dd iflag=direct after dropping the
// page cache and returns bytes per second.
func coldBandwidth(path string) float64 {
	dropCaches()
	start := time.Now()
	cmd := exec.Command("dd", "if="+path, "of=/dev/null", "bs=16M", "iflag=direct")
	b, err := cmd.CombinedOutput()
	if err != nil {
		check(fmt.Errorf("dd: %v: %s", err, b))
	}
	secs := time.Since(start).Seconds()
	fi, err := os.Stat(path)
	check(err)
	// dd's own figure, from its last line ("N bytes ... copied, S s, ..."),
	// where it parses.
	if m := regexp.MustCompile(`(\d+) bytes.*copied, ([0-9.]+) s`).FindSubmatch(b); m != nil {
		n, _ := strconv.ParseFloat(string(m[1]), 64)
		s, _ := strconv.ParseFloat(string(m[2]), 64)
		if s > 0 {
			return n / s
		}
	}
	return float64(fi.Size()) / secs
}

// warm reads the whole file into the page cache.
func warm(path string) {
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	check(err)
}

// computeOnly decodes with the model resident and no limit.
func computeOnly(parent cgroup.Parent, c config) run {
	warm(c.model)
	warm(c.model)
	return child(parent, c, "compute-only", 0, []string{c.llama, "-model", c.model, "-ids", c.ids, "-n", strconv.Itoa(c.n), "-mode", "mmap", "-threads", strconv.Itoa(c.threads)})
}

// decode runs one decoder in a cgroup of the given limit, page cache cold.
func decode(parent cgroup.Parent, c config, name string, limit int64) run {
	var args []string
	budget := int64(0)
	reader, isSchedule := strings.CutPrefix(name, "schedule/")
	switch {
	case isSchedule:
		budget = limit - c.headroom
		args = []string{c.llama, "-model", c.model, "-ids", c.ids, "-n", strconv.Itoa(c.n), "-mode", "schedule",
			"-budget", strconv.FormatInt(budget, 10), "-retain", c.retain, "-reader", reader, "-threads", strconv.Itoa(c.threads)}
	case name == "mmap":
		args = []string{c.llama, "-model", c.model, "-ids", c.ids, "-n", strconv.Itoa(c.n), "-mode", "mmap", "-threads", strconv.Itoa(c.threads)}
	case name == "llama.cpp":
		script, err := filepath.Abs("bench/cmd/decodebench/llamacpp.py")
		check(err)
		args = []string{c.python, script, c.model, c.ids, strconv.Itoa(c.n), strconv.Itoa(c.threads)}
	}
	dropCaches()
	r := child(parent, c, name, limit, args)
	r.Budget = budget
	return r
}

var groups int

// child runs args in a fresh memory cgroup (limit 0: no limit) and parses
// what it printed: the tokens on the first line of stdout, and the pass
// times from examples/llama's stats line or llamacpp.py's JSON line.
func child(parent cgroup.Parent, c config, name string, limit int64, args []string) run {
	r := run{Name: name, Limit: limit}
	groups++
	cgLimit := limit
	if cgLimit == 0 {
		cgLimit = 1 << 50
	}
	cg, err := parent.Create(fmt.Sprintf("decodebench-%d-%d", os.Getpid(), groups), cgLimit)
	check(err)
	defer cg.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	// The child waits in a shell for a line on stdin until it is in the
	// cgroup, then execs the decoder.
	var stdout, stderr strings.Builder
	sh := exec.CommandContext(ctx, "sh", append([]string{"-c", `read x; exec "$@"`, "sh"}, args...)...)
	sh.Stdout, sh.Stderr = &stdout, &stderr
	stdin, err := sh.StdinPipe()
	check(err)
	start := time.Now()
	check(sh.Start())
	if err := cg.AddProc(sh.Process.Pid); err != nil {
		sh.Process.Kill()
		sh.Wait()
		check(err)
	}
	io.WriteString(stdin, "go\n")
	stdin.Close()
	werr := sh.Wait()
	r.Wall = time.Since(start).Seconds()
	r.CgPeak, _ = cg.Peak()
	r.OOMs = cg.OOMKills()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) > 0 {
		for _, f := range strings.Fields(lines[0]) {
			if t, err := strconv.Atoi(f); err == nil {
				r.Tokens = append(r.Tokens, t)
			}
		}
	}
	if name == "llama.cpp" && len(lines) > 1 {
		var j struct {
			PassMS []float64 `json:"pass_ms"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &j); err == nil {
			r.PassMS = j.PassMS
		}
	} else {
		r.Stats = lastLine(stderr.String())
		kv := statsFields(r.Stats)
		for _, f := range strings.Split(kv["pass_ms"], ",") {
			if v, err := strconv.ParseFloat(f, 64); err == nil {
				r.PassMS = append(r.PassMS, v)
			}
		}
		r.Retained = mibBytes(kv["retained"])
		r.ReadPass = mibBytes(kv["read/token"])
		if s, err := strconv.ParseFloat(strings.TrimSuffix(kv["stall"], "s"), 64); err == nil {
			r.Stall = s
		}
	}
	var ws syscall.WaitStatus
	if sh.ProcessState != nil {
		ws, _ = sh.ProcessState.Sys().(syscall.WaitStatus)
	}
	switch {
	case ws.Signaled():
		r.Outcome = "killed (" + ws.Signal().String() + ")"
		if r.OOMs > 0 {
			r.Outcome = "OOM-killed"
		}
	case werr != nil:
		r.Outcome = "failed: " + lastLine(stderr.String())
	case len(r.Tokens) != c.n || len(r.PassMS) == 0:
		r.Outcome = fmt.Sprintf("failed: %d tokens, %d pass times", len(r.Tokens), len(r.PassMS))
	default:
		r.Outcome = "ok"
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.Outcome = "timed out"
	}
	fmt.Fprintf(os.Stderr, "%-12s limit %-9s %8.1f ms/token  wall %6.1fs  cgroup peak %-9s %s\n", name, sizeStr(limit), r.perToken(), r.Wall, sizeStr(r.CgPeak), r.Outcome)
	return r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// statsFields splits examples/llama's stats line into its key=value pairs.
func statsFields(line string) map[string]string {
	kv := make(map[string]string)
	for _, f := range strings.Fields(line) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// mibBytes parses "12.5MiB" into bytes (0 when it does not parse).
func mibBytes(s string) int64 {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "MiB"), 64)
	if err != nil {
		return 0
	}
	return int64(v * (1 << 20))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func sizeStr(n int64) string {
	switch {
	case n == 0:
		return "none"
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load average unknown"
	}
	return "load average " + strings.Join(strings.Fields(string(b))[:3], " ")
}
