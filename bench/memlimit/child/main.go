// Command child is the program TestMemLimit runs inside a memory cgroup: it
// reads every tensor of the model written by the test, in order, sums each
// one and checks the sum against memlimit.ExpectedSum.
//
// Usage:
//
//	child -mode plain|prefetch|readfile [-drop] [-norelease] [-windowed] [-wait] model.pte
//
// On a 32-bit system the 4 GiB file cannot be mapped whole: edgeload maps
// it in windows (mmapfile.ModeWindowed), and the child evicts (unmaps) each
// tensor's window after use.
//
// With -wait it first reads one line from standard input, so that the
// parent can move it into the cgroup before it touches the file. It prints
// one JSON memlimit.Report on standard output and exits 0 when every sum
// matched, 1 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgeload/edgeload/bench/memlimit"
	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

func main() {
	mode := flag.String("mode", memlimit.ModePlain, "plain, prefetch or readfile")
	drop := flag.Bool("drop", false, "release tensors with DropPageCache (fadvise DONTNEED) too")
	noRelease := flag.Bool("norelease", false, "do not release tensors after use")
	wait := flag.Bool("wait", false, "read a line from stdin before starting")
	windowed := flag.Bool("windowed", false, "map the file in windows (mmapfile.ModeWindowed), as 32-bit systems do, even on 64-bit")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: child -mode plain|prefetch|readfile [-drop] [-norelease] [-windowed] [-wait] model.pte")
		os.Exit(2)
	}
	if *wait {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "child: no start signal:", err)
			os.Exit(2)
		}
	}
	r := run(*mode, flag.Arg(0), *drop, !*noRelease, *windowed)
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		os.Exit(2)
	}
	if r.Err != "" || r.Mismatches > 0 || r.Tensors != memlimit.Tensors {
		os.Exit(1)
	}
}

// rss tracks the largest resident set seen.
type rss struct{ max, anon int64 }

func (m *rss) sample() {
	s, err := memstat.Read()
	if err == nil && s.Rss > m.max {
		m.max, m.anon = s.Rss, s.RssAnon
	}
}

func run(mode, path string, drop, release, forceWindowed bool) (r memlimit.Report) {
	r.Mode = mode
	var m rss
	defer func() {
		m.sample()
		r.MaxRSS, r.MaxRSSAnon = m.max, m.anon
		if s, err := memstat.RSS(); err == nil {
			r.FinalRSS = s
		}
		r.VmHWM = vmHWM()
	}()

	start := time.Now()
	var p *pte.Program
	var err error
	switch mode {
	case memlimit.ModePlain, memlimit.ModePrefetch:
		var opts []mmapfile.Option
		if forceWindowed {
			opts = append(opts, mmapfile.WithMode(mmapfile.ModeWindowed))
		}
		var mf *mmapfile.File
		if mf, err = mmapfile.Open(path, opts...); err == nil {
			defer mf.Close()
			p, err = pte.NewFile(mf)
		}
	case memlimit.ModeReadFile:
		var b []byte
		b, err = os.ReadFile(path)
		if err == nil {
			p, err = pte.NewFile(mmapfile.NewBytes(b), pte.WithName(path))
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.Close()
	r.Open = time.Since(start)
	r.MappingMode = p.MappedFile().Mode().String()
	m.sample()

	ts := p.Tensors()
	if len(ts) != memlimit.Tensors {
		r.Err = fmt.Sprintf("model has %d tensors, want %d", len(ts), memlimit.Tensors)
		return r
	}
	windowed := p.MappedFile().Mode() == mmapfile.ModeWindowed
	var opts []segment.ReleaseOption
	if drop {
		opts = append(opts, segment.DropPageCache())
	}

	// Prefetch-ahead: a worker prefetches the tensor it is sent and answers
	// when done, so that at most the tensor being summed and the next one
	// are being brought in.
	var ahead chan segment.Segment
	var done chan error
	if mode == memlimit.ModePrefetch {
		ahead, done = make(chan segment.Segment), make(chan error)
		go func() {
			for s := range ahead {
				done <- s.Prefetch()
			}
		}()
		defer close(ahead)
	}

	start = time.Now()
	for i := range ts {
		t := &ts[i]
		if ahead != nil && i+1 < len(ts) {
			ahead <- ts[i+1].Data
		}
		sum, err := sumTensor(t)
		if err == nil && release {
			err = t.Data.Release(opts...)
		}
		if err == nil && release && drop && i > 0 {
			// Release-behind over the previous and this tensor: the page
			// cache may hold a large folio (up to 2 MiB) straddling their
			// boundary, which fadvise DONTNEED drops only when the range
			// covers it whole; neither tensor's range alone does.
			err = releaseBehind(ts[i-1].Data, t.Data, opts)
		}
		if err == nil && release && windowed {
			// A 32-bit address space cannot keep every window mapped:
			// unmap the tensor's window.
			err = t.Data.Evict()
		}
		if ahead != nil && i+1 < len(ts) {
			if perr := <-done; err == nil && perr != nil {
				err = fmt.Errorf("prefetch %s: %w", ts[i+1].Name, perr)
			}
		}
		if err != nil {
			r.Err = err.Error()
			return r
		}
		if want := memlimit.ExpectedSum(i); sum != want || t.Name != memlimit.TensorName(i) {
			if r.Mismatches == 0 {
				r.FirstBad = fmt.Sprintf("tensor %d (%s): sum %v, want %v (name %s)", i, t.Name, sum, want, memlimit.TensorName(i))
			}
			r.Mismatches++
		}
		r.Tensors++
		r.Bytes += t.NBytes
		r.Checksum += sum
		if i%64 == 63 {
			m.sample()
		}
	}
	r.Read = time.Since(start)
	return r
}

// releaseBehind releases the range from the start of prev to the end of
// cur (both already read).
func releaseBehind(prev, cur segment.Segment, opts []segment.ReleaseOption) error {
	s, err := segment.New(cur.File(), prev.Offset(), cur.Offset()+cur.Len()-prev.Offset())
	if err != nil {
		return err
	}
	return s.Release(opts...)
}

// vmHWM returns the process's peak resident set size (VmHWM in
// /proc/self/status) in bytes, 0 where there is none.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// sumTensor sums a tensor through its float32 view, which is zero-copy on a
// little-endian host (the test runs on one).
func sumTensor(t *pte.Tensor) (float64, error) {
	if t.DType != format.Float32 || t.NBytes != memlimit.TensorBytes {
		return 0, fmt.Errorf("tensor %s: %v, %d bytes; want float32, %d bytes", t.Name, t.DType, t.NBytes, memlimit.TensorBytes)
	}
	v, copied, err := t.Data.Float32()
	if err != nil {
		return 0, err
	}
	if copied {
		return 0, errors.New("float32 view was copied: not zero-copy on this host")
	}
	return memlimit.Sum(v), nil
}
