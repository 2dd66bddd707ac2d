// Command repackbench times repack.Repack of a file against cp of the same
// file, interleaved in one run, and reports the Go heap's peak during the
// repacks.
//
// Usage:
//
//	repackbench [-rounds N] [-align N] [-tensor-align N] [-verify-bytes] [-out DIR] IN
//
// It first reads IN once (so the page cache is hot), then runs N rounds of
// "cp IN OUT" (the system's cp) and repack.Repack(IN, OUT), each followed by
// removing OUT (not timed). Neither syncs; to compare the durable forms too,
// each round also times "cp IN OUT" followed by an fsync of OUT
// ("cp+fsync") against a repack with Options.Sync, and loader.Open of IN
// followed by loader.Verify, which reads every byte ("verify_s": the read
// that Options.VerifyBytes adds to a repack; a default repack runs only the
// structural checks, Model.Check, which read no weight byte). It prints one
// JSON line:
//
//	{"in":..., "size":..., "rounds":N, "verify_s":[...], "cp_s":[...],
//	 "cp_fsync_s":[...], "repack_s":[...], "repack_sync_s":[...],
//	 "ratio_median":..., "ratio_sync_median":...,
//	 "heap_peak_bytes":..., "maxrss_bytes":...}
//
// where ratio_median is the median repack time over the median cp time,
// ratio_sync_median the median synced repack over the median cp+fsync,
// heap_peak_bytes the largest
// heap in use (runtime/metrics /memory/classes/heap/objects:bytes, sampled
// every millisecond and as each repack starts and ends) seen during the
// repacks, and maxrss_bytes the process's peak resident set
// (getrusage), which counts the mapped file pages repack touched and so is
// not the heap.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/repack"
)

type result struct {
	In          string    `json:"in"`
	Size        int64     `json:"size"`
	Rounds      int       `json:"rounds"`
	Align       int64     `json:"align"`
	TensorAlign int64     `json:"tensor_align"`
	VerifyBytes bool      `json:"verify_bytes"`
	Verify      []float64 `json:"verify_s"`
	CP          []float64 `json:"cp_s"`
	CPFsync     []float64 `json:"cp_fsync_s"`
	Repack      []float64 `json:"repack_s"`
	Sync        []float64 `json:"repack_sync_s"`
	Ratio       float64   `json:"ratio_median"`
	RatioSync   float64   `json:"ratio_sync_median"`
	HeapPeak    uint64    `json:"heap_peak_bytes"`
	MaxRSS      int64     `json:"maxrss_bytes"`
}

func main() {
	rounds := flag.Int("rounds", 3, "rounds of cp, cp+fsync and repack")
	align := flag.Int64("align", 0, "repack --align (0: the default)")
	talign := flag.Int64("tensor-align", 0, "repack --tensor-align")
	outDir := flag.String("out", "", "directory for the outputs (default: IN's)")
	verifyBytes := flag.Bool("verify-bytes", false, "repack with Options.VerifyBytes (loader.Verify reads every byte)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: repackbench [-rounds N] [-align N] [-tensor-align N] [-verify-bytes] [-out DIR] IN")
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *outDir, *rounds, repack.Options{Align: *align, TensorAlign: *talign, VerifyBytes: *verifyBytes}); err != nil {
		fmt.Fprintln(os.Stderr, "repackbench:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, in, outDir string, rounds int, opts repack.Options) error {
	if outDir == "" {
		outDir = filepath.Dir(in)
	}
	out := filepath.Join(outDir, "repackbench-out-"+filepath.Base(in))
	defer os.Remove(out)
	st, err := os.Stat(in)
	if err != nil {
		return err
	}
	if err := warm(in); err != nil {
		return err
	}
	res := result{In: in, Size: st.Size(), Rounds: rounds, Align: opts.Align, TensorAlign: opts.TensorAlign, VerifyBytes: opts.VerifyBytes}

	var peak atomic.Uint64
	var sampling atomic.Bool
	stop := make(chan struct{})
	go sampleHeap(&peak, &sampling, stop)
	defer close(stop)

	for range rounds {
		d, err := timed(func() error { return exec.Command("cp", in, out).Run() })
		if err != nil {
			return fmt.Errorf("cp: %w", err)
		}
		res.CP = append(res.CP, d)
		os.Remove(out)

		d, err = timed(func() error {
			if err := exec.Command("cp", in, out).Run(); err != nil {
				return err
			}
			f, err := os.OpenFile(out, os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Sync()
		})
		if err != nil {
			return fmt.Errorf("cp+fsync: %w", err)
		}
		res.CPFsync = append(res.CPFsync, d)
		os.Remove(out)

		d, err = timed(func() error { return sampled(&peak, &sampling, func() error { return repackOnce(in, out, opts) }) })
		if err != nil {
			return err
		}
		res.Repack = append(res.Repack, d)
		os.Remove(out)

		syncOpts := opts
		syncOpts.Sync = true
		d, err = timed(func() error { return sampled(&peak, &sampling, func() error { return repackOnce(in, out, syncOpts) }) })
		if err != nil {
			return err
		}
		res.Sync = append(res.Sync, d)
		os.Remove(out)

		d, err = timed(func() error { return verify(in) })
		if err != nil {
			return err
		}
		res.Verify = append(res.Verify, d)
	}
	res.Ratio = median(res.Repack) / median(res.CP)
	res.RatioSync = median(res.Sync) / median(res.CPFsync)
	res.HeapPeak = peak.Load()
	res.MaxRSS = maxRSS()
	return json.NewEncoder(w).Encode(res)
}

// verify opens path with the loader and runs Verify, which reads every
// byte: the read Options.VerifyBytes adds to a repack.
func verify(path string) error {
	m, err := loader.Open(path)
	if err != nil {
		return err
	}
	defer m.Close()
	_, err = m.Verify()
	return err
}

// warm reads the file once so that its pages are in the page cache.
func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

func timed(fn func() error) (float64, error) {
	t := time.Now()
	err := fn()
	return time.Since(t).Seconds(), err
}

// repackOnce repacks in to out.
func repackOnce(in, out string, opts repack.Options) error {
	_, err := repack.Repack(in, out, opts)
	return err
}

// sampled runs fn with the heap sampler on, and samples the heap itself
// as fn starts and ends, so that a run shorter than the sampler's tick is
// measured too.
func sampled(peak *atomic.Uint64, sampling *atomic.Bool, fn func() error) error {
	sampleOnce(peak)
	sampling.Store(true)
	err := fn()
	sampling.Store(false)
	sampleOnce(peak)
	return err
}

// sampleOnce records the heap in use now if it is the largest yet.
func sampleOnce(peak *atomic.Uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	for v := s[0].Value.Uint64(); v > peak.Load(); {
		if peak.CompareAndSwap(peak.Load(), v) {
			break
		}
	}
}

// sampleHeap records the largest heap in use while sampling is on.
func sampleHeap(peak *atomic.Uint64, sampling *atomic.Bool, stop chan struct{}) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if !sampling.Load() {
				continue
			}
			metrics.Read(s)
			for v := s[0].Value.Uint64(); v > peak.Load(); {
				if peak.CompareAndSwap(peak.Load(), v) {
					break
				}
			}
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
