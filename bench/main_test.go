package bench_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeload/edgeload/bench"
	"github.com/edgeload/edgeload/internal/testkit/memstat"
)

// Environment:
//
//	EDGELOAD_BENCH_BIG=1    write the 4 GiB files with real bytes, which runs
//	                        the baselines and the touch benchmarks at 4 GiB
//	                        (4 GiB of disk, ~30 s to write); without it the
//	                        4 GiB files are sparse and only the benchmarks that
//	                        read no weight run on them.
//	EDGELOAD_BENCH_SLOW=1   also run what takes minutes per op (windowed
//	                        Open of the 100,000-tensor program).
//	EDGELOAD_BENCH_DIR=DIR  generate the files in DIR and keep them (reused by
//	                        later runs); default: a temporary directory removed
//	                        when the test binary exits.
var (
	big  = os.Getenv("EDGELOAD_BENCH_BIG") == "1"
	slow = os.Getenv("EDGELOAD_BENCH_SLOW") == "1"

	filesOnce sync.Once
	files     *bench.Files
	filesErr  error
	tempDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tempDir != "" {
		os.RemoveAll(tempDir)
	}
	os.Exit(code)
}

func getFiles() (*bench.Files, error) {
	filesOnce.Do(func() {
		dir := os.Getenv("EDGELOAD_BENCH_DIR")
		if dir == "" {
			dir, filesErr = os.MkdirTemp("", "edgeload-bench-")
			tempDir = dir
		} else {
			filesErr = os.MkdirAll(dir, 0o755)
		}
		files = &bench.Files{Dir: dir}
	})
	return files, filesErr
}

// is4G reports whether the named standard file is one of the 4 GiB ones.
func is4G(name string) bool { return strings.HasPrefix(name, "pte-4G") }

// file returns the path (and data path) of the named standard file. With
// needReal the benchmark reads the weights: the file has real bytes, and a
// 4 GiB one is skipped unless EDGELOAD_BENCH_BIG=1. Otherwise a file whose
// real variant is written anyway is used as is, and a 4 GiB or 4096-aligned
// one is sparse (EDGELOAD_BENCH_BIG=1 makes the 4 GiB ones real).
func file(b *testing.B, name string, needReal bool) (path, data string) {
	b.Helper()
	real := !strings.HasSuffix(name, "-a4096") && (!is4G(name) || big)
	if needReal && !real {
		if is4G(name) {
			b.Skip("reads the weights of a 4 GiB file: set EDGELOAD_BENCH_BIG=1")
		}
		b.Skip("reads the weights: the 4096-aligned files are sparse")
	}
	s, ok := bench.Lookup(name, real)
	if !ok {
		b.Fatalf("no standard file %q", name)
	}
	f, err := getFiles()
	if err != nil {
		b.Fatal(err)
	}
	path, data, err = f.Path(s)
	if err != nil {
		b.Fatal(err)
	}
	return path, data
}

// open opens the model or fails the benchmark.
func open(b *testing.B, path string, mode bench.Mode, data string) *bench.Model {
	b.Helper()
	m, err := bench.Open(path, mode, data)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func views(b *testing.B, m *bench.Model, dst [][]byte) [][]byte {
	b.Helper()
	v, err := m.Views(dst)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// settle returns freed heap to the OS, so that a following RSS delta shows
// what the next step really makes resident.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// rss is the process's resident set from /proc/self/smaps_rollup (package
// memstat), in bytes; -1 where the system has no such file.
func rss() int64 {
	r, err := memstat.RSS()
	if err != nil {
		return -1
	}
	return r
}

// modelMem is the Rss and mapping count of the model's files in this
// process (/proc/self/smaps).
func modelMem(m *bench.Model) bench.MapStat {
	ms, err := bench.ReadSmaps(0, m.Paths()...)
	if err != nil {
		return bench.MapStat{Maps: -1, Rss: -1}
	}
	return bench.SumMaps(ms)
}

// median3 runs fn three times and returns the per-field medians; when the
// benchmark's ops took more than 100 ms each, it runs fn once.
func median3(tb *testing.B, fn func() []float64) []float64 {
	if tb.N > 0 && tb.Elapsed()/time.Duration(tb.N) > 100*time.Millisecond {
		return fn()
	}
	a, b, c := fn(), fn(), fn()
	out := make([]float64, len(a))
	for i := range a {
		x, y, z := a[i], b[i], c[i]
		out[i] = max(min(x, y), min(max(x, y), z))
	}
	return out
}

func name(k, v string) string { return fmt.Sprintf("%s=%s", k, v) }
