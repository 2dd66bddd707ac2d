// Command loadbench loads one model file N times in one process and prints
// one JSON line of timings and resident memory, for side-by-side runs with
// other loaders (ExecuTorch's C++ runtime, a C floor) measured the same way.
//
// Usage:
//
//	loadbench [-n N] [-touch none|first|all] [-release] [-mode whole|windowed|readfile|xmmap] [-data F.ptd] FILE
//	loadbench -procs 2 [-mode ...] [-data F.ptd] FILE
//	loadbench -serve [-touch ...] [-release] [-mode ...] [-data F.ptd] FILE
//	loadbench -gen DIR [-sparse] [NAME...]
//
// Each iteration is Open (full verification) -> a view of every tensor ->
// touch (none; the first byte of every tensor; every page) -> Close, and is
// timed as a whole. One untimed iteration runs first and measures resident
// memory: the output is
//
//	{"file":..., "mode":..., "touch":..., "iters":N, "tensors":T,
//	 "median_us":..., "min_us":..., "p10_us":..., "p90_us":...,
//	 "rss_before_kib":..., "rss_after_open_kib":...,
//	 "rss_after_touch_kib":..., "model_rss_kib":..., "maps":..., "peak_rss_kib":...,
//	 "phase_median_us": {"open":..., "views":..., "touch":..., "close":...},
//	 "phase_min_us": {...}}
//
// where rss_* are the process's Rss from /proc/self/smaps_rollup before
// Open, after the views were resolved and after the touch; model_rss_kib and
// maps are the Rss and number of mappings of the model file(s) after the
// touch (/proc/self/smaps); anon_after_open_kib is the anonymous part (heap,
// stacks) of rss_after_open_kib; peak_rss_kib is VmHWM. With -release each
// iteration also releases every segment after the touch (madvise DONTNEED)
// and the output adds rss_after_release_kib, anon_after_release_kib and
// model_rss_after_release_kib.
//
// With -procs P (P >= 2) loadbench instead shows that the pages of one model
// are shared between processes: it and P-1 copies of itself each open the
// model, touch every page and hold it; then each reads its own smaps and the
// output lists every process's Rss and Pss of the model file (each Pss is
// about 1/P of the Rss; pss_ratio is their sums' ratio) and of the whole
// process (proc_rss_kib, proc_pss_kib: with -mode readfile each process
// holds its own copy and nothing is shared).
//
// With -serve loadbench runs loads on demand, for bench/cmd/pairbench,
// which interleaves it with another loader in blocks of a few milliseconds:
// for each line N it reads from stdin it runs N loads as above and prints
// one line of their times in nanoseconds, separated by spaces.
//
// With -gen DIR it writes the standard benchmark files (all of them, or the
// NAMEs given: pte-64M, pte-1G, pte-4G, flat-64M, ptd-1G, pte-ext, rten-1G,
// pte-10k, tflite-256M, tflite-ext-1G, ...) into DIR with real bytes
// (sparse with -sparse) and prints their paths.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/edgeload/edgeload/bench"
)

type result struct {
	File     string  `json:"file"`
	Data     string  `json:"data,omitempty"`
	Mode     string  `json:"mode"`
	Touch    string  `json:"touch"`
	Iters    int     `json:"iters"`
	Tensors  int     `json:"tensors"`
	MedianUS float64 `json:"median_us"`
	MinUS    float64 `json:"min_us"`
	// The 10th and 90th percentiles: on a machine whose speed changes
	// while it runs, they show the loads at each speed.
	P10US float64 `json:"p10_us"`
	P90US float64 `json:"p90_us"`
	// The same for each phase of a load: open (with full verification),
	// views (one per tensor), touch (with -release, Release too), close.
	PhaseMedianUS    map[string]float64 `json:"phase_median_us"`
	PhaseMinUS       map[string]float64 `json:"phase_min_us"`
	RSSBeforeKiB     int64              `json:"rss_before_kib"`
	RSSAfterOpenKiB  int64              `json:"rss_after_open_kib"`
	RSSAfterTouchKiB int64              `json:"rss_after_touch_kib"`
	ModelRSSKiB      int64              `json:"model_rss_kib"`
	Maps             int                `json:"maps"`
	PeakRSSKiB       int64              `json:"peak_rss_kib"`
	// AnonAfterOpenKiB is the anonymous part of rss_after_open_kib (heap,
	// stacks: the loader's own structures, or the readfile copy).
	AnonAfterOpenKiB int64 `json:"anon_after_open_kib"`
	// With -release: after Release of every segment.
	RSSAfterReleaseKiB      *int64 `json:"rss_after_release_kib,omitempty"`
	AnonAfterReleaseKiB     *int64 `json:"anon_after_release_kib,omitempty"`
	ModelRSSAfterReleaseKiB *int64 `json:"model_rss_after_release_kib,omitempty"`
}

type shareResult struct {
	File        string  `json:"file"`
	Data        string  `json:"data,omitempty"`
	Mode        string  `json:"mode"`
	Procs       int     `json:"procs"`
	ModelKiB    int64   `json:"model_kib"`
	ModelRSSKiB []int64 `json:"model_rss_kib"`
	ModelPSSKiB []int64 `json:"model_pss_kib"`
	PSSRatio    float64 `json:"pss_ratio"`
	ProcRSSKiB  []int64 `json:"proc_rss_kib"`
	ProcPSSKiB  []int64 `json:"proc_pss_kib"`
}

// procStat is what one process of a -procs run reports.
type procStat struct {
	Rss, Pss, Size   int64 // the model file's mappings
	ProcRss, ProcPss int64 // the whole process
}

func main() {
	n := flag.Int("n", 100, "iterations")
	touch := flag.String("touch", "none", "what to touch after resolving the views: none, first (byte of each tensor) or all (every page)")
	modeName := flag.String("mode", "whole", "loader: whole, windowed (edgeload), readfile (os.ReadFile + parse) or xmmap (x/exp/mmap + copy per tensor)")
	data := flag.String("data", "", "a .ptd holding the program's external tensors")
	procs := flag.Int("procs", 1, "with 2 or more: the page-sharing run across that many processes")
	child := flag.Bool("child", false, "internal: run as a child of a -procs run")
	release := flag.Bool("release", false, "Release every segment after the touch (before Close); reports rss_after_release_kib")
	gen := flag.String("gen", "", "write the standard benchmark files into this directory")
	sparse := flag.Bool("sparse", false, "with -gen: leave the data as sparse holes")
	serve := flag.Bool("serve", false, "for each line N on stdin, run N loads and print their times (ns) on one line (bench/cmd/pairbench drives this)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: loadbench [flags] FILE\n       loadbench -gen DIR [-sparse] [NAME...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*n, *touch, *modeName, *data, *procs, *child, *release, *serve, *gen, *sparse); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func run(n int, touch, modeName, data string, procs int, child, release, serve bool, gen string, sparse bool) error {
	if gen != "" {
		return generate(gen, !sparse, flag.Args())
	}
	if flag.NArg() != 1 {
		flag.Usage()
		return errors.New("want exactly one FILE")
	}
	file := flag.Arg(0)
	mode, err := bench.ParseMode(modeName)
	if err != nil {
		return err
	}
	switch {
	case child:
		return runChild(file, mode, data)
	case procs >= 2:
		return runShared(file, mode, data, procs)
	}
	if n < 1 {
		return errors.New("-n must be at least 1")
	}
	var touchFn func([][]byte)
	switch touch {
	case "none":
	case "first":
		touchFn = bench.TouchFirst
	case "all":
		touchFn = func(v [][]byte) { bench.TouchPages(v, 0) }
	default:
		return fmt.Errorf("unknown -touch %q", touch)
	}
	res := result{File: file, Data: data, Mode: string(mode), Touch: touch, Iters: n}

	// The untimed first iteration measures resident memory. Reading smaps
	// once first lets the heap grow to what the measurements need, so that
	// they do not count themselves.
	if _, err := bench.ReadSmaps(0, file); err != nil {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	before, err := bench.ReadRollup(0)
	if err != nil {
		return err
	}
	m, err := bench.Open(file, mode, data)
	if err != nil {
		return err
	}
	views, err := m.Views(nil)
	if err != nil {
		m.Close()
		return err
	}
	afterOpen, err := bench.ReadRollup(0)
	if err != nil {
		m.Close()
		return err
	}
	if touchFn != nil {
		touchFn(views)
	}
	afterTouch, err := bench.ReadRollup(0)
	if err != nil {
		m.Close()
		return err
	}
	maps, err := bench.ReadSmaps(0, m.Paths()...)
	if err != nil {
		m.Close()
		return err
	}
	res.Tensors = len(views)
	res.RSSBeforeKiB, res.RSSAfterOpenKiB, res.RSSAfterTouchKiB = before.Rss>>10, afterOpen.Rss>>10, afterTouch.Rss>>10
	res.AnonAfterOpenKiB = afterOpen.Anonymous >> 10
	sum := bench.SumMaps(maps)
	res.ModelRSSKiB, res.Maps = sum.Rss>>10, sum.Maps
	if release {
		if err := m.Release(); err != nil {
			m.Close()
			return err
		}
		r, err := bench.ReadRollup(0)
		if err != nil {
			m.Close()
			return err
		}
		maps, err := bench.ReadSmaps(0, m.Paths()...)
		if err != nil {
			m.Close()
			return err
		}
		a, b, c := r.Rss>>10, bench.SumMaps(maps).Rss>>10, r.Anonymous>>10
		res.RSSAfterReleaseKiB, res.ModelRSSAfterReleaseKiB, res.AnonAfterReleaseKiB = &a, &b, &c
	}
	if err := m.Close(); err != nil {
		return err
	}

	if serve {
		return serveLoads(file, mode, data, touchFn, release, views)
	}
	times, phases, err := loads(n, file, mode, data, touchFn, release, views)
	if err != nil {
		return err
	}
	res.MedianUS, res.MinUS = stats(times)
	res.P10US, res.P90US = us(times[len(times)/10]), us(times[len(times)*9/10]) // (stats sorted times)
	res.PhaseMedianUS, res.PhaseMinUS = map[string]float64{}, map[string]float64{}
	for k, name := range []string{"open", "views", "touch", "close"} {
		for i := range times {
			times[i] = phases[i][k]
		}
		res.PhaseMedianUS[name], res.PhaseMinUS[name] = stats(times)
	}
	if r, err := bench.ReadRollup(0); err == nil {
		res.PeakRSSKiB = r.PeakRss >> 10
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// loads runs n timed loads: Open -> the views (into views' backing array)
// -> touch (and Release) -> Close. It returns each load's time and its
// phases: Open, the views, the touch (and Release), Close.
func loads(n int, file string, mode bench.Mode, data string, touchFn func([][]byte), release bool, views [][]byte) ([]time.Duration, [][4]time.Duration, error) {
	phases := make([][4]time.Duration, n)
	times := make([]time.Duration, n)
	for i := range times {
		t0 := time.Now()
		m, err := bench.Open(file, mode, data)
		if err != nil {
			return nil, nil, err
		}
		t1 := time.Now()
		if views, err = m.Views(views); err != nil {
			m.Close()
			return nil, nil, err
		}
		t2 := time.Now()
		if touchFn != nil {
			touchFn(views)
		}
		if release {
			if err := m.Release(); err != nil {
				m.Close()
				return nil, nil, err
			}
		}
		t3 := time.Now()
		if err := m.Close(); err != nil {
			return nil, nil, err
		}
		t4 := time.Now()
		times[i] = t4.Sub(t0)
		phases[i] = [4]time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3)}
		clear(views) // let a heap copy (readfile, xmmap) go before the next load
	}
	return times, phases, nil
}

// serveLoads is the -serve protocol (bench/cmd/pairbench drives it): for
// each line N read from stdin, run N loads and print one line of their
// times in nanoseconds, separated by spaces; exit when stdin closes.
func serveLoads(file string, mode bench.Mode, data string, touchFn func([][]byte), release bool, views [][]byte) error {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		if err != nil || n < 1 {
			return fmt.Errorf("-serve: want a positive count, got %q", in.Text())
		}
		times, _, err := loads(n, file, mode, data, touchFn, release, views)
		if err != nil {
			return err
		}
		for i, t := range times {
			if i > 0 {
				out.WriteByte(' ')
			}
			out.WriteString(strconv.FormatInt(t.Nanoseconds(), 10))
		}
		out.WriteByte('\n')
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// stats sorts ds and returns their median and minimum in microseconds.
func stats(ds []time.Duration) (median, least float64) {
	slices.Sort(ds)
	n := len(ds)
	median = us(ds[n/2])
	if n%2 == 0 {
		median = (us(ds[n/2-1]) + us(ds[n/2])) / 2
	}
	return median, us(ds[0])
}

// hold opens the model, touches every page and returns it.
func hold(file string, mode bench.Mode, data string) (*bench.Model, error) {
	m, err := bench.Open(file, mode, data)
	if err != nil {
		return nil, err
	}
	views, err := m.Views(nil)
	if err != nil {
		m.Close()
		return nil, err
	}
	bench.TouchPages(views, 0)
	return m, nil
}

func measure(m *bench.Model) (procStat, error) {
	maps, err := bench.ReadSmaps(0, m.Paths()...)
	if err != nil {
		return procStat{}, err
	}
	s := bench.SumMaps(maps)
	r, err := bench.ReadRollup(0)
	if err != nil {
		return procStat{}, err
	}
	return procStat{Rss: s.Rss, Pss: s.Pss, Size: s.Size, ProcRss: r.Rss, ProcPss: r.Pss}, nil
}

// runChild is one child of a -procs run: hold the model, say "ready", and
// on "measure" print its stats as JSON; exit when stdin closes.
func runChild(file string, mode bench.Mode, data string) error {
	m, err := hold(file, mode, data)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "measure" {
			continue
		}
		s, err := measure(m)
		if err != nil {
			return err
		}
		if err := json.NewEncoder(os.Stdout).Encode(s); err != nil {
			return err
		}
	}
	return in.Err()
}

type childProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// runShared is the page-sharing run across procs processes.
func runShared(file string, mode bench.Mode, data string, procs int) error {
	m, err := hold(file, mode, data)
	if err != nil {
		return err
	}
	defer m.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var kids []*childProc
	defer func() {
		for _, k := range kids {
			k.in.Close()
			k.cmd.Wait()
		}
	}()
	for range procs - 1 {
		args := []string{"-child", "-mode", string(mode)}
		if data != "" {
			args = append(args, "-data", data)
		}
		cmd := exec.Command(exe, append(args, file)...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		k := &childProc{cmd: cmd, in: in, out: bufio.NewScanner(out)}
		kids = append(kids, k)
		if !k.out.Scan() || k.out.Text() != "ready" {
			return fmt.Errorf("child %d did not get ready: %v", cmd.Process.Pid, k.out.Err())
		}
	}
	// Every process holds the touched model now: measure all of them.
	self, err := measure(m)
	if err != nil {
		return err
	}
	stats := []procStat{self}
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "measure\n"); err != nil {
			return err
		}
		if !k.out.Scan() {
			return fmt.Errorf("child %d: no answer: %v", k.cmd.Process.Pid, k.out.Err())
		}
		var s procStat
		if err := json.Unmarshal(k.out.Bytes(), &s); err != nil {
			return fmt.Errorf("child %d: %w", k.cmd.Process.Pid, err)
		}
		stats = append(stats, s)
	}
	res := shareResult{File: file, Data: data, Mode: string(mode), Procs: procs, ModelKiB: self.Size >> 10}
	var rss, pss int64
	for _, s := range stats {
		res.ModelRSSKiB = append(res.ModelRSSKiB, s.Rss>>10)
		res.ModelPSSKiB = append(res.ModelPSSKiB, s.Pss>>10)
		res.ProcRSSKiB = append(res.ProcRSSKiB, s.ProcRss>>10)
		res.ProcPSSKiB = append(res.ProcPSSKiB, s.ProcPss>>10)
		rss += s.Rss
		pss += s.Pss
	}
	if rss > 0 {
		// Sum of PSS over sum of RSS: 1/procs when every page is shared.
		res.PSSRatio, _ = strconv.ParseFloat(strconv.FormatFloat(float64(pss)/float64(rss), 'f', 4, 64), 64)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func generate(dir string, real bool, names []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := &bench.Files{Dir: dir}
	specs := bench.Standard(real)
	if len(names) > 0 {
		specs = specs[:0]
		for _, name := range names {
			s, ok := bench.Lookup(name, real)
			if !ok {
				return fmt.Errorf("unknown file %q", name)
			}
			specs = append(specs, s)
		}
	}
	for _, s := range specs {
		t0 := time.Now()
		path, data, err := files.Path(s)
		if err != nil {
			return err
		}
		if data != "" {
			fmt.Printf("%s\t(data %s)\t%v\n", path, data, time.Since(t0).Round(time.Millisecond))
		} else {
			fmt.Printf("%s\t%v\n", path, time.Since(t0).Round(time.Millisecond))
		}
	}
	return nil
}
