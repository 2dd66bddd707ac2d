// Package hostile is the format-agnostic machinery of edgeload's
// hostile-input tests: mutation sweeps over model files (every truncation
// length, every byte of the header and FlatBuffer region replaced), with a
// time and memory bound on every case, and the checks of segments, tensors
// and named data that every format's exerciser uses.
//
// It imports no format package: each format's exerciser, generated files
// and region end live in a package of their own (ptecheck, ptdcheck,
// rtencheck), so that a format's tests import only that format and the
// layers below it. It is imported by tests only.
package hostile

import (
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
)

// Range is the byte range [Start, End) of a file.
type Range struct{ Start, End int64 }

// File is a model file to sweep.
type File struct {
	Name string
	Data []byte
	// Mutate are the ranges whose every byte is replaced: the header and
	// the FlatBuffer region. Nil means the whole file.
	Mutate []Range
	// Truncate are the ranges of truncation lengths tried. Nil means every
	// length from 0 to len(Data)-1.
	Truncate []Range
	// Step, when > 1, visits only every Step-th offset and length (for
	// large files, whose cases are slow); the sweep logs it.
	Step int
}

// Target is what a sweep opens the mutated files with.
type Target struct {
	// Format names the format errors must carry ("pte", "ptd", "rten"; ""
	// for loader.Open, which accepts any).
	Format string
	// Open opens b. On success it returns use, which exercises every
	// accessor and view of the opened model (see ptecheck.Program,
	// ptdcheck.File, rtencheck.Model, loadercheck.Model), closes it and
	// reports a violated invariant. On failure it returns the error, which
	// CheckError must accept.
	Open func(b []byte) (use func() error, err error)
}

// The bounds every case must stay within.
const (
	// Timeout bounds the time of one case (open, exercise, close): cases
	// take microseconds to milliseconds, and the bound is far above that so
	// that a loaded machine (go test runs packages in parallel) cannot make
	// the sweep flaky, while a hang still fails it. Under an emulator
	// (qemu-user) or the race detector it is multiplied by
	// TimeoutSlowFactor.
	Timeout           = 5 * time.Second
	TimeoutSlowFactor = 10
	// AllocFactor and AllocSlack bound the heap bytes one case may
	// allocate: AllocFactor × the case's file length + AllocSlack.
	//
	// Why 64: opening copies names and small vectors out of the FlatBuffer
	// (≤ 1× the region) and builds Go values for its tables: an 8-byte
	// FlatBuffer value reference becomes a ~150-byte Go struct, so a
	// FlatBuffer made only of values is the worst case at ~20×; typed views
	// that must copy (unaligned data, big-endian hosts) add 1× the data,
	// and SHA-256/CRC checks nothing. 64× leaves room for slice growth
	// without letting a small file claim a large allocation: every size a
	// file declares (vector lengths, numel × element size, segment sizes)
	// is checked against the file before anything is allocated for it.
	// AllocSlack covers the fixed costs (maps, the goroutine, buffers).
	AllocFactor = 64
	AllocSlack  = 1 << 20
)

// SampleStep is the step the sweeps use under an emulator (qemu-user) or
// with -short: every 7th offset and truncation length (a different phase
// per file). RaceStep is the step under the race detector, which makes
// every case about ten times slower and finds nothing in these
// single-goroutine cases that a plain run does not: every 4th.
const (
	SampleStep = 7
	RaceStep   = 4
)

// Slow reports whether the tests run under an emulator or the race
// detector, where cases are several times slower.
func Slow() bool { return memstat.Emulator() != "" || raceEnabled }

// Sampling returns the step at which sweeps visit offsets and truncation
// lengths (1: all of them) and why.
func Sampling() (step int, why string) {
	switch {
	case memstat.Emulator() != "":
		return SampleStep, "running under " + memstat.Emulator()
	case testing.Short():
		return SampleStep, "-short"
	case raceEnabled:
		return RaceStep, "race detector on"
	}
	return 1, ""
}

// Stats sums up a sweep.
type Stats struct {
	Cases, Opened, Rejected int
	// Measured is the number of cases whose allocation was measured
	// exactly (see ExactEvery). MaxAlloc is the largest of those, in
	// MaxAllocCase; MaxRatio the largest allocation/length ratio of a
	// case of at least 4 KiB (below that the fixed costs dominate).
	Measured     int
	MaxAlloc     int64
	MaxAllocCase string
	MaxRatio     float64
	Elapsed      time.Duration
}

// Mutations changes b, one byte at a time, at every step-th offset below
// end to each of the sweep's replacement values (variants: 0x00, 0xFF, the
// low bit flipped), calls f with the offset and the value after each
// change, and restores the byte. It returns the number of calls.
func Mutations(b []byte, end int64, step int, f func(off int64, x byte)) int {
	n := 0
	var vbuf [4]byte
	for off := int64(0); off < min(end, int64(len(b))); off += int64(max(step, 1)) {
		orig := b[off]
		for _, v := range variants(orig, &vbuf) {
			b[off] = v
			f(off, v)
			n++
		}
		b[off] = orig
	}
	return n
}

// variants returns the replacement values for byte b: 0x00, 0xFF and b
// with its low bit flipped (an offset or size off by one, a tag or count
// changed by one), without b itself and without repeats.
func variants(b byte, out *[4]byte) []byte {
	vs := out[:0]
	for _, v := range [3]byte{0x00, 0xFF, b ^ 1} {
		if v == b {
			continue
		}
		dup := false
		for _, w := range vs {
			dup = dup || w == v
		}
		if !dup {
			vs = append(vs, v)
		}
	}
	return vs
}

// reporter is where a runner reports: a *testing.T, or a collector in
// the package's own tests.
type reporter interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

type runner struct {
	t       reporter
	tg      Target
	timeout time.Duration
	stats   Stats
	fails   int
	ms      runtime.MemStats
	sample  []metrics.Sample
}

// ExactEvery is how often a case's allocation is measured exactly.
//
// The cheap counter (runtime/metrics /gc/heap/allocs:bytes) moves by whole
// spans when a per-P cache is refilled, so it can neither attribute a few
// KiB to one case nor miss a large allocation (those are counted when
// made); runtime.ReadMemStats is exact but stops the world. Every case is
// screened with the counter; every ExactEvery-th case, and every case the
// counter puts over the limit, is run again measured with ReadMemStats,
// and only that measurement can fail the case.
const ExactEvery = 16

// allocated returns the cumulative bytes allocated on the heap, exactly or
// from the cheap counter.
func (r *runner) allocated(exact bool) int64 {
	if exact {
		runtime.ReadMemStats(&r.ms)
		return int64(r.ms.TotalAlloc)
	}
	metrics.Read(r.sample)
	return int64(r.sample[0].Value.Uint64())
}

type result struct {
	opened  bool
	openErr error
	useErr  error
	panic   string
}

// once runs one case in its own goroutine, bounded by the timeout, and
// returns its result and the bytes it allocated.
func (r *runner) once(name string, b []byte, exact bool) (result, int64) {
	before := r.allocated(exact)
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
			}
			done <- res
		}()
		use, err := r.tg.Open(b)
		if err != nil {
			res.openErr = err
			return
		}
		res.opened = true
		res.useErr = use()
	}()
	timer := time.NewTimer(r.timeout)
	var res result
	select {
	case res = <-done:
		timer.Stop()
	case <-timer.C:
		r.t.Fatalf("%s: case did not finish within %v (a hang?): stopping the sweep", name, r.timeout)
		return result{openErr: errHung}, 0 // only when Fatalf returns (the package's tests)
	}
	return res, r.allocated(exact) - before
}

// run runs one case with the time and allocation bounds and checks its
// result.
func (r *runner) run(name string, b []byte) result {
	r.stats.Cases++
	limit := int64(AllocFactor)*int64(len(b)) + AllocSlack
	exact := r.stats.Cases%ExactEvery == 0
	res, used := r.once(name, b, exact)
	if res.openErr == errHung {
		return res
	}
	if !exact && used > limit {
		res, used = r.once(name, b, true)
		exact = true
	}
	if exact {
		r.stats.Measured++
		if used > r.stats.MaxAlloc {
			r.stats.MaxAlloc, r.stats.MaxAllocCase = used, name
		}
		if ratio := float64(used) / float64(max(len(b), 1)); ratio > r.stats.MaxRatio && len(b) >= 4096 {
			r.stats.MaxRatio = ratio
		}
		if used > limit {
			r.fail(name, "allocated %d bytes for a %d-byte file (limit %d = %d × size + %d)", used, len(b), limit, AllocFactor, AllocSlack)
		}
	}
	switch {
	case res.panic != "":
		r.fail(name, "panic: %s", res.panic)
	case !res.opened:
		r.stats.Rejected++
		if err := CheckError(r.tg.Format, res.openErr); err != nil {
			r.fail(name, "%v", err)
		}
	default:
		r.stats.Opened++
		if res.useErr != nil {
			r.fail(name, "opened, but: %v", res.useErr)
		}
	}
	return res
}

// errHung is the result of a case that did not finish in time.
var errHung = errors.New("hostile: case did not finish in time")

func newRunner(t reporter, tg Target) *runner {
	r := &runner{t: t, tg: tg, timeout: Timeout, sample: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}}
	if Slow() {
		r.timeout *= TimeoutSlowFactor
	}
	return r
}

func (r *runner) fail(name, msg string, args ...any) {
	r.fails++
	if r.fails <= 20 {
		r.t.Errorf("%s: %s", name, fmt.Sprintf(msg, args...))
	} else if r.fails == 21 {
		r.t.Errorf("more failures not shown")
	}
}

// Sweep opens every truncation and every single-byte mutation of each file
// with tg.Open (see File and Target), each in its own goroutine bounded by
// Timeout, and checks the result: a model that passes the exercise, or an
// error that CheckError accepts; no panic, no hang, no allocation above
// AllocFactor × size + AllocSlack. It reports failures on t and logs
// what it covered.
func Sweep(t *testing.T, tg Target, files ...File) Stats {
	t.Helper()
	r := newRunner(t, tg)
	start := time.Now()
	sample, why := Sampling()
	if sample > 1 {
		t.Logf("sampling: every %dth offset and truncation length (%s); run go test without -race, -short or an emulator for the full sweep", sample, why)
	}
	for _, f := range files {
		step := int64(max(f.Step, 1)) * int64(sample)
		h := fnv.New32a()
		h.Write([]byte(f.Name))
		phase := int64(h.Sum32()) % step
		n := int64(len(f.Data))
		buf := make([]byte, n)
		copy(buf, f.Data)
		before := r.stats
		fileStart := time.Now()

		truncs := f.Truncate
		if truncs == nil {
			truncs = []Range{{0, n}}
		}
		nt := 0
		for _, rg := range truncs {
			for l := max(rg.Start, 0); l < min(rg.End, n); l++ {
				if (l+phase)%step != 0 && rg.End-rg.Start > 1 {
					continue
				}
				nt++
				r.run(fmt.Sprintf("%s truncated to %d bytes", f.Name, l), buf[:l:l])
			}
		}
		muts := f.Mutate
		if muts == nil {
			muts = []Range{{0, n}}
		}
		nm := 0
		var vbuf [4]byte
		for _, rg := range muts {
			for off := max(rg.Start, 0); off < min(rg.End, n); off++ {
				if (off+phase)%step != 0 {
					continue
				}
				orig := buf[off]
				for _, v := range variants(orig, &vbuf) {
					buf[off] = v
					nm++
					r.run(fmt.Sprintf("%s byte %#x: %#02x -> %#02x", f.Name, off, orig, v), buf)
				}
				buf[off] = orig
			}
		}
		t.Logf("%s (%d bytes, step %d): %d truncations, %d mutations: %d opened, %d rejected, in %v",
			f.Name, n, step, nt, nm, r.stats.Opened-before.Opened, r.stats.Rejected-before.Rejected, time.Since(fileStart).Round(time.Millisecond))
	}
	r.stats.Elapsed = time.Since(start)
	t.Logf("sweep %s: %d cases (%d opened, %d rejected) in %v; of %d measured exactly, largest allocation %d bytes (%s), largest ratio %.1f× the case's size (limit %d× + %d)",
		tg.Format, r.stats.Cases, r.stats.Opened, r.stats.Rejected, r.stats.Elapsed.Round(time.Millisecond),
		r.stats.Measured, r.stats.MaxAlloc, r.stats.MaxAllocCase, r.stats.MaxRatio, AllocFactor, AllocSlack)
	return r.stats
}
