//go:build linux

package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/edgeload/edgeload/bench"
	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/sizeflag"
	"github.com/edgeload/edgeload/internal/testkit/cgroup"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/stream"
	"golang.org/x/sys/unix"
)

// childReport is what a child prints as one JSON line.
type childReport struct {
	Bytes     int64
	Wall      time.Duration
	CPU       time.Duration // user + system time of the whole process
	Sum       uint32
	StreamCPU time.Duration // the stream's own CPU time (Stats.CPU)
	StreamSys time.Duration // the part of it in the kernel (Stats.SystemCPU)
	Err       string
}

// result is one run as the parent saw it.
type result struct {
	name    string
	mode    string
	budget  int64
	rep     childReport
	cold    float64 // fraction of the file resident before the run
	peak    int64   // largest mincore sample, bytes
	cgPeak  int64
	ooms    int64 // -1 when the kernel does not say
	outcome string
	series  []sample
	walk    time.Duration // total time of the residency samples
	walks   int
}

type sample struct {
	t time.Duration
	b int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func main() {
	child := flag.String("child", "", "run one measurement (pread, fault or stream) and print JSON; used by the parent")
	budgets := flag.String("budgets", "32MiB,64MiB,128MiB", "comma-separated stream budgets")
	budget := flag.Int64("budget", 0, "the child's budget in bytes")
	limit := flag.String("limit", "256MiB", "the memory cgroup's hard limit")
	consumer := flag.String("consumer", "crc", "what the consumer does with each byte: crc, touch, or both (two tables)")
	svg := flag.String("svg", "", "write the resident-bytes picture to this SVG file")
	svgBudget := flag.String("svg-budget", "64MiB", "the stream budget the picture shows")
	every := flag.Duration("sample", 10*time.Millisecond, "residency sampling interval")
	md := flag.String("md", "", "also write the table to this markdown file")
	csv := flag.String("csv", "", "write the samples (seconds, resident bytes) of each run's median round to `PREFIX`-RUN-CONSUMER.csv")
	rounds := flag.Int("rounds", 3, "measure every run this many times, a round of all runs after another, and report the median")
	readBPS := flag.String("read-bps", "", "throttle each child's reads from the file's disk to `SIZE` a second (a blkio or io cgroup), as a slower disk would")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: streambench [flags] FILE")
		os.Exit(2)
	}
	path := flag.Arg(0)
	if *child != "" {
		os.Exit(runChild(*child, *consumer, *budget, path))
	}
	lim, err := sizeflag.Parse(*limit)
	check(err)
	var bs []int64
	for _, s := range strings.Split(*budgets, ",") {
		b, err := sizeflag.Parse(s)
		check(err)
		bs = append(bs, b)
	}
	sb, err := sizeflag.Parse(*svgBudget)
	check(err)
	if *readBPS != "" {
		th.bps, err = sizeflag.Parse(*readBPS)
		check(err)
		th.dev, err = cgroup.DiskOf(path)
		check(err)
	}
	parent, err := cgroup.FindMemory()
	check(err)
	parent.RemoveStale(groupPrefix)
	consumers := []string{*consumer}
	if *consumer == "both" {
		consumers = []string{"crc", "touch"}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "file %s, cgroup limit %s, page cache cold before each run, %s\n", path, sizeStr(lim), time.Now().UTC().Format(time.RFC3339))
	if th.bps > 0 {
		fmt.Fprintf(&out, "reads from the disk (%s) throttled to %s/s\n", th.dev, sizeStr(th.bps))
	}
	var picture []result
	n := 0
	type kind struct {
		mode   string
		budget int64
	}
	kinds := []kind{{"pread", 0}, {"fault", 0}}
	for _, b := range bs {
		kinds = append(kinds, kind{"stream", b})
	}
	runs := make(map[string][]result) // by consumer and run name, every round
	for round := 0; round < *rounds; round++ {
		for _, c := range consumers {
			for _, k := range kinds {
				r := measure(parent, path, k.mode, k.budget, c, lim, *every, &n)
				runs[c+"/"+r.name] = append(runs[c+"/"+r.name], r)
			}
		}
	}
	for _, c := range consumers {
		var rs []medianRun
		for _, name := range append([]string{"pread", "fault"}, streamNames(bs)...) {
			rs = append(rs, median(runs[c+"/"+name]))
		}
		table(&out, rs, c, *rounds)
		if *csv != "" {
			for _, r := range rs {
				var b strings.Builder
				for _, x := range r.series {
					fmt.Fprintf(&b, "%.4f,%d\n", x.t.Seconds(), x.b)
				}
				name := strings.ReplaceAll(r.name, " ", "") + "-" + c
				check(os.WriteFile(*csv+"-"+name+".csv", []byte(b.String()), 0o644))
			}
		}
		if c == consumers[0] {
			for _, r := range rs {
				if r.mode == "fault" || (r.mode == "stream" && r.budget == sb) {
					picture = append(picture, r.result)
				}
			}
		}
	}
	fmt.Print(out.String())
	if *md != "" {
		check(os.WriteFile(*md, []byte(out.String()), 0o644))
	}
	if *svg != "" {
		check(plotSVG(*svg, picture, sb, lim))
	}
}

const groupPrefix = "edgeload-streambench-"

// th is the read throttle of -read-bps: bytes a second from disk dev.
var th struct {
	bps int64
	dev string
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "streambench:", err)
		os.Exit(1)
	}
}

// measure runs one child in a fresh cgroup while sampling the file's
// residency.
func measure(parent cgroup.Parent, path, mode string, budget int64, consumer string, limit int64, every time.Duration, n *int) result {
	*n++
	r := result{mode: mode, budget: budget, name: mode}
	if mode == "stream" {
		r.name = "stream " + sizeStr(budget)
	}
	_, cold, err := bench.Evict(path)
	check(err)
	r.cold = cold
	group := fmt.Sprintf("%s%d-%d", groupPrefix, os.Getpid(), *n)
	cg, err := parent.Create(group, limit)
	check(err)
	defer cg.Remove()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-child", mode, "-consumer", consumer, "-budget", strconv.FormatInt(budget, 10), path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	stdin, err := cmd.StdinPipe()
	check(err)
	check(cmd.Start())
	if err := cg.AddProc(cmd.Process.Pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		check(err)
	}
	if th.bps > 0 {
		bg, err := cgroup.ThrottleReads(cg, group, cmd.Process.Pid, th.dev, th.bps)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			check(err)
		}
		if bg != nil {
			defer bg.Remove()
		}
	}
	m, err := mmapfile.Open(path)
	check(err)
	defer m.Close()
	fd, err := os.Open(path)
	check(err)
	defer fd.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			w0 := time.Now()
			b, err := resident(m, fd)
			r.walk += time.Since(w0)
			r.walks++
			if err == nil {
				r.series = append(r.series, sample{time.Since(start), b})
				r.peak = max(r.peak, b)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	io.WriteString(stdin, "go\n")
	stdin.Close()
	werr := cmd.Wait()
	close(stop)
	wg.Wait()
	r.cgPeak, _ = cg.Peak()
	r.ooms = cg.OOMKills()
	line := strings.TrimSpace(stdout.String())
	if err := json.Unmarshal([]byte(line), &r.rep); err != nil && line != "" {
		r.rep.Err = err.Error()
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		r.outcome = "killed (" + ws.Signal().String() + ")"
		if r.ooms > 0 {
			r.outcome = "OOM-killed"
		}
	case werr != nil || r.rep.Err != "":
		r.outcome = "failed: " + strings.TrimSpace(r.rep.Err+" "+firstLine(stderr.String()))
	default:
		r.outcome = "ok"
	}
	fmt.Fprintf(os.Stderr, "%-14s %-5s %6.0f MB/s  peak %6.1f MiB  cpu %5.1f%%  stream cpu %4.0f ms  %s\n", r.name, consumer, mbps(r), float64(r.peak)/(1<<20), cpuShare(r), float64(r.rep.StreamCPU)/1e6, r.outcome)
	return r
}

// walkChunk is the span resident looks at with one cachestat call.
const walkChunk = 64 << 20

// resident returns the bytes of the file's pages in the page cache, counted
// with mincore. A walk over a whole 4 GiB file takes about 20 ms, during
// which a stream moves on by tens of MB, so that the walk would count pages
// that were never resident together: it walks only the chunks in which
// cachestat (Linux 6.5) finds cached pages, and the whole file where
// cachestat is missing.
func resident(m *mmapfile.File, f *os.File) (int64, error) {
	ps := int64(m.PageSize())
	var total int64
	for off := int64(0); off < m.Len(); off += walkChunk {
		n := min(walkChunk, m.Len()-off)
		var cs unix.Cachestat_t
		err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: uint64(off), Len: uint64(n)}, &cs, 0)
		if err == nil && cs.Cache == 0 {
			continue
		}
		r, _, err := m.Resident(off, n)
		if err != nil {
			return 0, err
		}
		total += int64(r) * ps
	}
	return total, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func mbps(r result) float64 {
	if r.rep.Wall <= 0 {
		return 0
	}
	return float64(r.rep.Bytes) / r.rep.Wall.Seconds() / 1e6
}

func cpuShare(r result) float64 {
	if r.rep.Wall <= 0 {
		return 0
	}
	return 100 * r.rep.CPU.Seconds() / r.rep.Wall.Seconds()
}

// medianRun is one run's rounds: the median round by throughput, with the
// range of throughput and the worst of the limits over all rounds.
type medianRun struct {
	result
	lo, hi float64 // MB/s
}

// median summarises the rounds of one run. Its OOM kills are the sum over
// the rounds, or -1 when the kernel did not say for some round.
func median(rs []result) medianRun {
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b result) int { return cmp.Compare(mbps(a), mbps(b)) })
	m := medianRun{result: sorted[len(sorted)/2], lo: mbps(sorted[0]), hi: mbps(sorted[len(sorted)-1])}
	m.ooms = 0
	for _, r := range rs {
		m.peak = max(m.peak, r.peak)
		m.cgPeak = max(m.cgPeak, r.cgPeak)
		m.cold = max(m.cold, r.cold)
		if r.ooms < 0 || m.ooms < 0 {
			m.ooms = -1
		} else {
			m.ooms += r.ooms
		}
		if r.outcome != "ok" {
			m.outcome = r.outcome
		}
	}
	return m
}

func streamNames(bs []int64) []string {
	var names []string
	for _, b := range bs {
		names = append(names, "stream "+sizeStr(b))
	}
	return names
}

// table writes the markdown table of one consumer's runs.
func table(w io.Writer, rs []medianRun, consumer string, rounds int) {
	var a, b float64
	for _, r := range rs {
		switch r.mode {
		case "pread":
			a = mbps(r.result)
		case "fault":
			b = mbps(r.result)
		}
	}
	fmt.Fprintf(w, "\nconsumer: %s; median of %d rounds (peaks, OOM kills and outcome over all rounds)\n\n",
		map[string]string{"crc": "CRC-32C of every byte", "touch": "one byte per page"}[consumer], rounds)
	fmt.Fprintf(w, "| run | MB/s | range | ÷ pread | ÷ fault | peak resident (mincore) | sample walk | budget | cgroup peak | OOM kills | process CPU / wall | stream CPU / wall (kernel) | cold before | outcome |\n")
	fmt.Fprintf(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		bud, scpu := "-", "-"
		if r.budget > 0 {
			bud = sizeStr(r.budget)
			scpu = fmt.Sprintf("%.1f%% (%.1f%%)", 100*r.rep.StreamCPU.Seconds()/r.rep.Wall.Seconds(), 100*r.rep.StreamSys.Seconds()/r.rep.Wall.Seconds())
		}
		ra, rb := "-", "-"
		if a > 0 && r.mode != "pread" {
			ra = fmt.Sprintf("%.2f", mbps(r.result)/a)
		}
		if b > 0 && r.mode == "stream" {
			rb = fmt.Sprintf("%.2f", mbps(r.result)/b)
		}
		walk := time.Duration(0)
		if r.walks > 0 {
			walk = r.walk / time.Duration(r.walks)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f–%.0f | %s | %s | %.1f MiB | %.1f ms | %s | %.0f MiB | %d | %.1f%% | %s | %.1f%% | %s |\n",
			r.name, mbps(r.result), r.lo, r.hi, ra, rb, float64(r.peak)/(1<<20), float64(walk)/float64(time.Millisecond), bud, float64(r.cgPeak)/(1<<20), r.ooms, cpuShare(r.result), scpu, 100*r.cold, r.outcome)
	}
}

// runChild waits for the parent's go, reads the file one way and prints a
// childReport.
func runChild(mode, consumer string, budget int64, path string) int {
	bufio.NewReader(os.Stdin).ReadString('\n')
	var rep childReport
	c := newSink(consumer)
	start := time.Now()
	cpu0 := cpuTime()
	err := read(mode, c, budget, path, &rep)
	rep.Wall = time.Since(start)
	rep.CPU = cpuTime() - cpu0
	rep.Sum = c.sum()
	if err != nil {
		rep.Err = err.Error()
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sink is the consumer of the bytes read: a CRC-32C of every byte, or
// ("touch") the first byte of each page-sized step through a buffer, added
// up. Its sum goes into the report so that the reads are not optimised
// away.
type sink struct {
	crc   hash.Hash32 // nil for touch
	touch uint32
}

func newSink(consumer string) *sink {
	if consumer == "touch" {
		return &sink{}
	}
	return &sink{crc: crc32.New(castagnoli)}
}

// write feeds b to the consumer.
func (c *sink) write(b []byte) {
	if c.crc != nil {
		c.crc.Write(b)
		return
	}
	ps := platform.PageSize()
	for i := 0; i < len(b); i += ps {
		c.touch += uint32(b[i])
	}
}

// writeSegment feeds the bytes of d to the consumer through the mapping,
// turning a fault (SIGBUS) into an error.
func (c *sink) writeSegment(d segment.Segment) error {
	if c.crc != nil {
		return d.Checksum(c.crc)
	}
	b, err := d.Bytes()
	if err != nil {
		return err
	}
	return d.File().Guard(func() { c.write(b) })
}

func (c *sink) sum() uint32 {
	if c.crc != nil {
		return c.crc.Sum32()
	}
	return c.touch
}

func read(mode string, c *sink, budget int64, path string, rep *childReport) error {
	if mode == "pread" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		buf := make([]byte, 1<<20)
		for off := int64(0); ; {
			n, err := f.ReadAt(buf, off)
			c.write(buf[:n])
			rep.Bytes += int64(n)
			off += int64(n)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	m, err := loader.Open(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if mode == "fault" {
		order, err := m.UseOrder("")
		if err != nil {
			return err
		}
		for _, i := range order {
			d := m.TensorData(i)
			if err := c.writeSegment(d); err != nil {
				return err
			}
			if err := d.Release(segment.DropPageCache()); err != nil {
				return err
			}
			rep.Bytes += d.Len()
		}
		return nil
	}
	s, err := stream.New(context.Background(), m, stream.WithBudget(budget), stream.WithDropCache())
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := c.writeSegment(it.Data); err != nil {
			return err
		}
		rep.Bytes += it.Data.Len()
	}
	st := s.Stats()
	rep.StreamCPU, rep.StreamSys = st.CPU, st.SystemCPU
	return nil
}

func sizeStr(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d B", n)
}
