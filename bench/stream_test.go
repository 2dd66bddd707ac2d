package bench_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"testing"
	"time"

	"github.com/edgeload/edgeload/bench"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/stream"
)

// BenchmarkStreamCold reads every weight of pte-1G once, the page cache
// cold (fadvise DONTNEED before each iteration), with a CRC-32C of every
// byte, three ways: pread into a 1 MiB buffer, the plain faulting loop with
// Release (DropPageCache), and package stream at 32, 64 and 128 MiB
// (WithDropCache). It reports the stream's own peak of held bytes and its
// background goroutine's CPU time as a share of the wall time; the mincore
// view of residency and the memory cgroup are in
// bench/cmd/streambench.
func BenchmarkStreamCold(b *testing.B) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	evict := func(b *testing.B, path string) {
		// Without mincore the file is dropped all the same; only the
		// residency Evict reports is missing.
		if _, _, err := bench.Evict(path); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			b.Fatal(err)
		}
	}
	open := func(b *testing.B, path string) *loader.Model {
		m, err := loader.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	b.Run("read=pread", func(b *testing.B) {
		path, _ := file(b, "pte-1G", true)
		fi, _ := os.Stat(path)
		b.SetBytes(fi.Size())
		buf := make([]byte, 1<<20)
		for b.Loop() {
			b.StopTimer()
			evict(b, path)
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			var sum uint32
			for off := int64(0); ; {
				n, err := f.ReadAt(buf, off)
				sum = crc32.Update(sum, castagnoli, buf[:n])
				off += int64(n)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	})
	b.Run("read=fault", func(b *testing.B) {
		path, _ := file(b, "pte-1G", true)
		m := open(b, path)
		defer m.Close()
		b.SetBytes(m.Size())
		h := crc32.New(castagnoli)
		order, err := m.UseOrder("")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			evict(b, path)
			b.StartTimer()
			for _, i := range order {
				d := m.TensorData(i)
				if err := d.Checksum(h); err != nil {
					b.Fatal(err)
				}
				if err := d.Release(segment.DropPageCache()); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	for _, budget := range []int64{32 << 20, 64 << 20, 128 << 20} {
		b.Run("read=stream/budget="+sizeName(budget), func(b *testing.B) {
			path, _ := file(b, "pte-1G", true)
			m := open(b, path)
			defer m.Close()
			b.SetBytes(m.Size())
			h := crc32.New(castagnoli)
			var peak int64
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				evict(b, path)
				b.StartTimer()
				s, err := stream.New(context.Background(), m, stream.WithBudget(budget), stream.WithDropCache())
				if err != nil {
					b.Fatal(err)
				}
				for {
					it, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := it.Data.Checksum(h); err != nil {
						b.Fatal(err)
					}
				}
				st := s.Stats()
				peak = max(peak, st.Peak)
				cpu += st.CPU
				s.Close()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds()*100, "stream-cpu-%")
		})
	}
}

// sizeName names a budget of whole MiB, as "64MiB".
func sizeName(n int64) string { return fmt.Sprintf("%dMiB", n>>20) }
