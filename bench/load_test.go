package bench_test

import (
	"errors"
	"os"
	"path"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/edgeload/edgeload/bench"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/mmapfile"
)

// openFiles are the files of BenchmarkOpen.
var openFiles = []string{
	"pte-64M", "pte-1G", "pte-4G",
	"pte-64M-a4096", "pte-1G-a4096", "pte-4G-a4096",
	"flat-64M",
	"ptd-1G", "pte-ext", "rten-1G",
	"pte-10k", "pte-100k",
}

// BenchmarkOpen measures a load: Open with full verification, then a view
// of every tensor, touching no weight (except what the baselines must read
// to have views at all), then Close. Mode "floor" is the least any mapping
// loader does (open, fstat, mmap, read the header page, munmap, close).
//
// Metrics from one extra, untimed load (the median of three when an op
// takes under 100 ms): rss-B, the growth of the process's Rss (smaps_rollup)
// from before Open to after the views; model-rss-B, the Rss of the file's
// own mappings (smaps) then; maps, the number of mappings of the file(s). Mode whole-pkg is whole through the
// format packages (pte.NewFile, ptd.NewFile, rten.NewFile over
// mmapfile.Open) instead of loader.Open.
func BenchmarkOpen(b *testing.B) {
	for _, f := range openFiles {
		b.Run(name("file", f), func(b *testing.B) {
			b.Run(name("mode", "floor"), func(b *testing.B) {
				path, _ := file(b, f, false)
				b.ReportAllocs()
				for b.Loop() {
					if err := bench.Floor(path); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, mode := range bench.Modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					if f == "pte-100k" && mode == bench.ModeWindowed && !slow {
						b.Skip("maps 25,000 windows, over a minute per op: set EDGELOAD_BENCH_SLOW=1")
					}
					path, data := file(b, f, !mode.Mapped())
					benchOpen(b, bench.Open, path, mode, data)
				})
			}
			b.Run(name("mode", "whole-pkg"), func(b *testing.B) {
				path, data := file(b, f, false)
				benchOpen(b, bench.OpenPkg, path, bench.ModeWhole, data)
			})
		})
	}
}

type opener func(path string, mode bench.Mode, data string) (*bench.Model, error)

func benchOpen(b *testing.B, openFn opener, path string, mode bench.Mode, data string) {
	open := func(b *testing.B, path string, mode bench.Mode, data string) *bench.Model {
		b.Helper()
		m, err := openFn(path, mode, data)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	var v [][]byte
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		m := open(b, path, mode, data)
		v = views(b, m, v)
		n = len(v)
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		clear(v) // let a heap copy (readfile, xmmap) go before the next op
	}
	r := median3(b, func() []float64 {
		settle()
		r0 := rss()
		m := open(b, path, mode, data)
		v = views(b, m, v)
		r1 := rss()
		mm := modelMem(m)
		m.Close()
		clear(v)
		return []float64{float64(r1 - r0), float64(mm.Rss), float64(mm.Maps)}
	})
	b.ReportMetric(float64(n), "tensors")
	b.ReportMetric(r[0], "rss-B")
	b.ReportMetric(r[1], "model-rss-B")
	b.ReportMetric(r[2], "maps")
}

// touchFiles are the files of the touch and release benchmarks.
var touchFiles = []string{"pte-64M", "flat-64M", "pte-1G", "pte-ext", "pte-4G"}

// BenchmarkTouch measures a load that uses the weights: Open, a view of
// every tensor, then
//
//	touch=first:  the first byte of every tensor (one page fault each), Close;
//	touch=all:    one byte of every page of every tensor, Close;
//	touch=second: (the model open and every page touched once, untimed)
//	              a second pass over every page, nothing faulting.
//
// The page cache is hot. Metrics from one extra, untimed pass (the median
// of three when an op takes under 100 ms): rss-B, the growth of the
// process's Rss from before Open to after the touch; model-rss-B, the Rss of
// the file's own mappings then; minflt, the minor page faults the load and
// touch took; pages, the pages touched.
func BenchmarkTouch(b *testing.B) {
	for _, f := range touchFiles {
		b.Run(name("file", f), func(b *testing.B) {
			for _, mode := range bench.Modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					for _, touch := range []string{"first", "all", "second"} {
						b.Run(name("touch", touch), func(b *testing.B) {
							path, data := file(b, f, true)
							benchTouch(b, path, mode, data, touch)
						})
					}
				})
			}
		})
	}
}

func benchTouch(b *testing.B, path string, mode bench.Mode, data, touch string) {
	touchFn := bench.TouchFirst
	if touch != "first" {
		touchFn = func(v [][]byte) { bench.TouchPages(v, 0) }
	}
	var v [][]byte
	b.ReportAllocs()
	if touch == "second" {
		m := open(b, path, mode, data)
		v = views(b, m, v)
		touchFn(v)
		for b.Loop() {
			touchFn(v)
		}
		b.ReportMetric(float64(bench.Pages(v, 0)), "pages")
		mm := modelMem(m)
		b.ReportMetric(float64(mm.Rss), "model-rss-B")
		m.Close()
		clear(v)
		return
	}
	for b.Loop() {
		m := open(b, path, mode, data)
		v = views(b, m, v)
		touchFn(v)
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		clear(v) // let a heap copy (readfile, xmmap) go before the next op
	}
	var pages int
	r := median3(b, func() []float64 {
		settle()
		r0, f0 := rss(), minflt()
		m := open(b, path, mode, data)
		v = views(b, m, v)
		touchFn(v)
		f1, r1 := minflt(), rss()
		mm := modelMem(m)
		if touch == "first" {
			pages = len(v)
		} else {
			pages = bench.Pages(v, 0)
		}
		m.Close()
		clear(v)
		return []float64{float64(r1 - r0), float64(mm.Rss), float64(f1 - f0)}
	})
	b.ReportMetric(r[0], "rss-B")
	b.ReportMetric(r[1], "model-rss-B")
	b.ReportMetric(r[2], "minflt")
	b.ReportMetric(float64(pages), "pages")
}

// BenchmarkRelease measures Release after touching everything: with the
// model open, each op touches every page and then releases every segment
// (madvise DONTNEED over the segments), so that the next op faults them in
// again. Metric release-ns is the Release alone.
//
// Metrics from one extra, untimed pass on a freshly opened model (the median
// of three when an op takes under 100 ms), on the process's Rss
// (smaps_rollup): rss-touched-B, its growth from before the touch to after
// it; rss-released-B, from before the touch to after Release (0 means back
// exactly where it was); rss-ratio, after Release over before the touch
// (the target: at most 1.01); model-rss-B, the Rss of the file's own
// mappings after Release (pages shared with a neighbouring segment stay).
//
// Mode whole-file (on pte-ext) releases each mapped file as a whole
// instead of segment by segment, which drops the shared pages too.
//
// Only edgeload's modes can release: the baselines' bytes are heap copies
// that only Close and the garbage collector free.
func BenchmarkRelease(b *testing.B) {
	for _, f := range touchFiles {
		b.Run(name("file", f), func(b *testing.B) {
			for _, mode := range []bench.Mode{bench.ModeWhole, bench.ModeWindowed} {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					path, data := file(b, f, true)
					benchRelease(b, path, mode, data, (*bench.Model).Release)
				})
			}
			if f == "pte-ext" {
				b.Run(name("mode", "whole-file"), func(b *testing.B) {
					path, data := file(b, f, true)
					benchRelease(b, path, bench.ModeWhole, data, (*bench.Model).ReleaseFiles)
				})
			}
		})
	}
}

func benchRelease(b *testing.B, path string, mode bench.Mode, data string, release func(*bench.Model) error) {
	m := open(b, path, mode, data)
	v := views(b, m, nil)
	b.ReportAllocs()
	for b.Loop() {
		bench.TouchPages(v, 0)
		if err := release(m); err != nil {
			b.Fatal(err)
		}
	}
	m.Close()
	// The measurement uses a freshly opened model, so that "before the
	// touch" is the state right after Open (pages shared with a neighbour,
	// which Release keeps, are then not yet resident).
	r := median3(b, func() []float64 {
		m := open(b, path, mode, data)
		defer m.Close()
		v = views(b, m, v)
		// GC, but keep the freed heap resident (no FreeOSMemory): the
		// measurement's own small allocations then reuse it instead of
		// faulting in fresh pages that would count as not released.
		runtime.GC()
		rss()
		r0 := rss()
		bench.TouchPages(v, 0)
		r1 := rss()
		t0 := time.Now()
		if err := release(m); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		r2 := rss()
		mm := modelMem(m)
		return []float64{float64(r1 - r0), float64(r2 - r0), float64(r2) / float64(r0), float64(mm.Rss), float64(d.Nanoseconds())}
	})
	clear(v)
	b.ReportMetric(r[0], "rss-touched-B")
	b.ReportMetric(r[1], "rss-released-B")
	b.ReportMetric(r[2], "rss-ratio")
	b.ReportMetric(r[3], "model-rss-B")
	b.ReportMetric(r[4], "release-ns")
}

// BenchmarkTouchCold is BenchmarkTouch with touch=first on a cold page
// cache: before each op (untimed) the file's pages are dropped from the
// page cache (fsync once, then posix_fadvise DONTNEED over the whole file),
// so every fault reads from the disk. Metric cached-B is what mincore says
// was still cached when the op started (median of the ops measured);
// disk-read-B is what the op read from the disk (read_bytes of
// /proc/self/io, read-ahead included), per op.
//
// Mode whole-random is whole with AdviceRandom (MADV_RANDOM) on every
// segment right after Open: a fault then reads only its page instead of
// the read-ahead window around it (read_ahead_kb of the disk, 8 MiB here).
func BenchmarkTouchCold(b *testing.B) {
	cases := []struct {
		file  string
		modes []bench.Mode
	}{
		{"pte-64M", bench.Modes},
		{"pte-1G", []bench.Mode{bench.ModeWhole, bench.ModeWindowed}},
	}
	for _, c := range cases {
		b.Run(name("file", c.file), func(b *testing.B) {
			for _, mode := range c.modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					path, data := file(b, c.file, true)
					benchTouchCold(b, path, mode, data, false, bench.TouchFirst)
				})
			}
			b.Run(name("mode", "whole-random"), func(b *testing.B) {
				path, data := file(b, c.file, true)
				benchTouchCold(b, path, bench.ModeWhole, data, true, bench.TouchFirst)
			})
		})
	}
}

// BenchmarkReadCold is BenchmarkTouchCold reading every page of every
// tensor instead of its first byte: what initialising a backend from
// weights that are not in the page cache costs, with the kernel's
// read-ahead (mode whole, edgeload's default) and without it
// (whole-random: AdviceRandom on every segment after Open). BenchmarkTouchCold
// shows what MADV_RANDOM saves when only a few pages of each tensor are
// read; this shows what it costs when all of them are.
func BenchmarkReadCold(b *testing.B) {
	all := func(v [][]byte) { bench.TouchPages(v, 0) }
	b.Run(name("file", "pte-64M"), func(b *testing.B) {
		for _, random := range []bool{false, true} {
			mode := "whole"
			if random {
				mode = "whole-random"
			}
			b.Run(name("mode", mode), func(b *testing.B) {
				path, data := file(b, "pte-64M", true)
				benchTouchCold(b, path, bench.ModeWhole, data, random, all)
			})
		}
	})
}

func benchTouchCold(b *testing.B, path string, mode bench.Mode, data string, random bool, touch func([][]byte)) {
	paths := []string{path}
	if data != "" {
		paths = append(paths, data)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	drop := func() (cached int64) {
		for _, p := range paths {
			res, _, err := bench.Evict(p)
			if errors.Is(err, bench.ErrFadvise) {
				b.Skip("no fadvise here: ", err)
			}
			if err != nil {
				b.Fatal(err)
			}
			cached += res
		}
		return cached
	}
	var v [][]byte
	var cached []float64
	var disk int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		cached = append(cached, float64(drop()))
		r0, _ := bench.ReadBytes(0)
		b.StartTimer()
		m := open(b, path, mode, data)
		if random {
			if err := m.Advise(mmapfile.AdviceRandom); err != nil {
				b.Fatal(err)
			}
		}
		v = views(b, m, v)
		touch(v)
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		clear(v)
		b.StopTimer()
		r1, _ := bench.ReadBytes(0)
		disk += r1 - r0
		b.StartTimer()
	}
	clear(v)
	if len(cached) > 0 {
		slices.Sort(cached)
		b.ReportMetric(cached[len(cached)/2], "cached-B")
		b.ReportMetric(float64(disk)/float64(len(cached)), "disk-read-B")
	}
}

// lookupFiles are the files of BenchmarkLookup.
var lookupFiles = []string{"pte-1G", "pte-ext", "ptd-1G", "rten-1G", "pte-100k"}

// BenchmarkLookup measures finding a tensor by name (the format's own
// index) and taking a typed []float32 view of it, on an open model, cycling
// through every tensor. It must allocate nothing in edgeload's modes; the
// xmmap baseline copies the tensor on every view.
func BenchmarkLookup(b *testing.B) {
	for _, f := range lookupFiles {
		b.Run(name("file", f), func(b *testing.B) {
			for _, mode := range bench.Modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					if f == "pte-100k" && mode == bench.ModeWindowed && !slow {
						b.Skip("maps 25,000 windows, over a minute: set EDGELOAD_BENCH_SLOW=1")
					}
					path, data := file(b, f, !mode.Mapped())
					m := open(b, path, mode, data)
					defer m.Close()
					names := m.Names()
					// Take each view once, so that windowed mode has mapped
					// its windows: the benchmark measures the lookup.
					for _, n := range names {
						s, _ := m.Tensor(n)
						if _, _, err := s.Float32(); err != nil {
							b.Fatal(err)
						}
					}
					i := 0
					b.ReportAllocs()
					for b.Loop() {
						s, ok := m.Tensor(names[i])
						if !ok {
							b.Fatalf("no tensor %q", names[i])
						}
						f, _, err := s.Float32()
						if err != nil || len(f) == 0 {
							b.Fatal(err)
						}
						if i++; i == len(names) {
							i = 0
						}
					}
				})
			}
		})
	}
}

// firstLookupFiles are the files of BenchmarkFirstLookup.
var firstLookupFiles = []string{"pte-1G", "pte-ext", "ptd-1G", "rten-1G", "pte-10k", "pte-100k"}

// BenchmarkFirstLookup measures what a program that wants one tensor by
// name pays: Open (full verification), the lookup of the last tensor, which
// builds the name index (and, for a .pte, the tensor list it indexes), a
// typed []float32 view of it (one page fault), Close. BenchmarkOpen leaves
// the index out: Open builds it on first use, not before.
func BenchmarkFirstLookup(b *testing.B) {
	for _, f := range firstLookupFiles {
		b.Run(name("file", f), func(b *testing.B) {
			for _, mode := range bench.Modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					if f == "pte-100k" && mode == bench.ModeWindowed && !slow {
						b.Skip("maps 25,000 windows, over a minute per op: set EDGELOAD_BENCH_SLOW=1")
					}
					path, data := file(b, f, !mode.Mapped())
					m := open(b, path, mode, data)
					names := m.Names()
					last := names[len(names)-1]
					m.Close()
					b.ReportAllocs()
					for b.Loop() {
						m := open(b, path, mode, data)
						s, ok := m.Tensor(last)
						if !ok {
							b.Fatalf("no tensor %q", last)
						}
						if v, _, err := s.Float32(); err != nil || len(v) == 0 {
							b.Fatalf("tensor %q: %d values, %v", last, len(v), err)
						}
						if err := m.Close(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(names)), "tensors")
				})
			}
		})
	}
}

// realFiles are real models written by the upstream tools (from
// ../shared/models, see internal/testkit/testmodels); arduino-keyword-spotting.pte
// is the 54 KB model of the reference measurements.
var realFiles = []string{
	"pte/arduino-keyword-spotting.pte",
	"pte/stories260k-qnn.pte",
	"rten/mnist-v2.rten",
	"rten/ocrs-text-detection.rten",
}

// BenchmarkOpenReal is BenchmarkOpen on real model files. It skips when
// ../shared/models is absent.
func BenchmarkOpenReal(b *testing.B) {
	for _, f := range realFiles {
		b.Run(name("file", path.Base(f)), func(b *testing.B) {
			b.Run(name("mode", "floor"), func(b *testing.B) {
				p := testmodels.Path(b, f)
				b.ReportAllocs()
				for b.Loop() {
					if err := bench.Floor(p); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, mode := range bench.Modes {
				b.Run(name("mode", string(mode)), func(b *testing.B) {
					benchOpen(b, bench.Open, testmodels.Path(b, f), mode, "")
				})
			}
			b.Run(name("mode", "whole-pkg"), func(b *testing.B) {
				benchOpen(b, bench.OpenPkg, testmodels.Path(b, f), bench.ModeWhole, "")
			})
		})
	}
}
