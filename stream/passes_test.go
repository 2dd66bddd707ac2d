package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// readers are the two ways to read streamed items, each test runs both.
var readers = []Reader{ReadMapped, ReadDirect}

// newPasses starts a passes stream, skipping the direct reader where the
// file system has no direct I/O (unless CI=true requires it).
func newPasses(t *testing.T, m *loader.Model, r Reader, opts ...Option) *Stream {
	t.Helper()
	s, err := New(context.Background(), m, append([]Option{WithReader(r)}, opts...)...)
	if err != nil {
		if r == ReadDirect && errors.Is(err, errors.ErrUnsupported) {
			skipUnlessRequired(t, "no direct I/O here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// coverOf is the bytes an aligned direct read of [off, off+n) takes.
func coverOf(off, n, align int64) int64 {
	if n == 0 {
		return 0
	}
	return (off+n+align-1)&^(align-1) - off&^(align-1)
}

// Every pass hands out every tensor in use order with its bytes; the
// retained set is read once, and every later pass reads exactly the
// streamed items' bytes.
func TestPasses(t *testing.T) {
	sp := spec{sizes: sizes(60, 20000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, _ := open(t, path)
			order, _ := m.UseOrder("forward")
			const passes = 4
			s := newPasses(t, m, r, WithPasses(passes), WithBudget(512<<10), WithRetain(256<<10))
			if got := s.Stats().Reader; got != r.String() {
				t.Fatalf("reader %q, want %q", got, r)
			}
			retained := map[int]bool{}
			var keptBytes int64
			for p := range passes {
				for k, want := range order {
					it, err := s.Next()
					if err != nil {
						t.Fatalf("pass %d item %d: %v", p, k, err)
					}
					if it.Tensor != want || it.Pass != p || it.Parts != 1 {
						t.Fatalf("pass %d item %d: tensor %d pass %d parts %d, want tensor %d", p, k, it.Tensor, it.Pass, it.Parts, want)
					}
					if sum, err := crc32Of(it); err != nil || sum != wantCRC(it.Tensor, sp.sizes[it.Tensor]) {
						t.Fatalf("pass %d %s: crc %08x (%v), want %08x", p, it.Name, sum, err, wantCRC(it.Tensor, sp.sizes[it.Tensor]))
					}
					if p == 0 {
						retained[it.Tensor] = it.Retained
						if it.Retained {
							keptBytes += it.Data.Len()
						}
					} else if it.Retained != retained[it.Tensor] {
						t.Fatalf("pass %d %s: retained %v, in pass 0 %v", p, it.Name, it.Retained, retained[it.Tensor])
					}
					if st := s.Stats(); st.Resident > st.Budget || st.Peak > st.Budget {
						t.Fatalf("resident %d, peak %d above the budget %d", st.Resident, st.Peak, st.Budget)
					}
				}
			}
			if _, err := s.Next(); err != io.EOF {
				t.Fatalf("after %d passes: %v, want io.EOF", passes, err)
			}
			st := s.Stats()
			if keptBytes == 0 || keptBytes > 256<<10 || st.Retained < keptBytes {
				t.Fatalf("retained %d bytes of tensors (%d of whole grains), want some, at most 256 KiB", keptBytes, st.Retained)
			}
			// What a later pass must read: the streamed items, derived from
			// the writer's offsets, grains or aligned blocks.
			var want int64
			kept := map[int64]bool{}
			for _, i := range order {
				if d := m.TensorData(i); retained[i] {
					for g := d.Offset() / s.grain; g*s.grain < d.Offset()+d.Len(); g++ {
						kept[g] = true
					}
				}
			}
			read := map[int64]bool{}
			for _, i := range order {
				if retained[i] {
					continue
				}
				d := m.TensorData(i)
				if r == ReadDirect {
					want += coverOf(d.Offset(), d.Len(), s.direct.align)
					continue
				}
				// The grains of the streamed items that no retained item
				// holds, each once: neighbours in the file are neighbours in
				// the order here.
				for g := d.Offset() / s.grain; g*s.grain < d.Offset()+d.Len(); g++ {
					if !kept[g] && !read[g] {
						read[g] = true
						want += min(s.grain, (d.File().Len()+4095)&^4095-g*s.grain)
					}
				}
			}
			hist := s.Passes()
			if len(hist) != passes {
				t.Fatalf("%d pass stats, want %d", len(hist), passes)
			}
			var total int64
			for _, n := range sp.sizes {
				total += n
			}
			for p, ps := range hist {
				if ps.Pass != p || ps.Items != len(order) || ps.Bytes != total || ps.Peak > st.Budget || ps.Retained != st.Retained {
					t.Fatalf("pass %d: %+v", p, ps)
				}
				if p > 0 && ps.Read != want {
					t.Fatalf("pass %d read %d bytes, want the streamed items' %d", p, ps.Read, want)
				}
			}
			if hist[0].Read < hist[1].Read+keptBytes {
				t.Fatalf("pass 0 read %d bytes, less than pass 1's %d and the retained %d", hist[0].Read, hist[1].Read, keptBytes)
			}
		})
	}
}

// The retained set is spread through the order: with a third of the bytes
// retained, no run of ten equal items goes without one.
func TestRetainSpread(t *testing.T) {
	const size = 200 << 10
	sp := spec{sizes: make([]int64, 90)}
	for i := range sp.sizes {
		sp.sizes[i] = size
	}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	s := newPasses(t, m, ReadMapped, WithPasses(2), WithBudget(32<<20), WithRetain(30*size))
	var flags []bool
	for range sp.sizes {
		it, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		flags = append(flags, it.Retained)
	}
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	if n < 20 || n > 31 {
		t.Fatalf("%d of 90 items retained, want about 30", n)
	}
	for i := 0; i+10 <= len(flags); i++ {
		any := false
		for _, f := range flags[i : i+10] {
			any = any || f
		}
		if !any {
			t.Fatalf("items %d..%d: none retained (%v)", i, i+9, flags)
		}
	}
}

// RetainAuto keeps a model that fits in the budget whole: later passes
// read nothing.
func TestRetainAutoAll(t *testing.T) {
	sp := spec{sizes: sizes(30, 10000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, _ := open(t, path)
			s := newPasses(t, m, r, WithPasses(3), WithBudget(8<<20), WithRetain(RetainAuto))
			for {
				it, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !it.Retained {
					t.Fatalf("%s not retained in a model that fits", it.Name)
				}
			}
			for _, ps := range s.Passes()[1:] {
				if ps.Read != 0 {
					t.Fatalf("pass %d read %d bytes of a model kept whole", ps.Pass, ps.Read)
				}
			}
		})
	}
}

// WithRetainTensors keeps exactly the tensors named.
func TestRetainTensors(t *testing.T) {
	sp := spec{sizes: sizes(10, 10000)}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	s := newPasses(t, m, ReadMapped, WithPasses(2), WithRetainTensors([]int{2, 7}))
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Retained != (it.Tensor == 2 || it.Tensor == 7) {
			t.Fatalf("%s: retained %v", it.Name, it.Retained)
		}
	}
	if _, err := New(context.Background(), m, WithPasses(2), WithRetainTensors([]int{99})); !errors.Is(err, loader.ErrNotFound) {
		t.Fatalf("retaining a tensor not in the order: %v", err)
	}
}

// A budget that cannot hold the largest weight whole is an error that
// names it and the sizes.
func TestBudgetTooSmall(t *testing.T) {
	sp := spec{sizes: []int64{5000, 300000, 7000}}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	for _, r := range readers {
		_, err := New(context.Background(), m, WithReader(r), WithPasses(0), WithBudget(128<<10))
		if !errors.Is(err, ErrBudget) {
			if r == ReadDirect && errors.Is(err, errors.ErrUnsupported) {
				continue
			}
			t.Fatalf("%s: %v, want ErrBudget", r, err)
		}
		for _, want := range []string{m.TensorAt(1).Name, "293.0 KiB", "128 KiB"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %q does not name %q", r, err, want)
			}
		}
	}
	// A stream that fails after holding its retained weights gives them up.
	_, err := New(context.Background(), m, WithPasses(0), WithBudget(128<<10), WithRetainTensors([]int{0}))
	holds.Lock()
	nh := len(holds.m)
	holds.Unlock()
	if !errors.Is(err, ErrBudget) || nh != 0 {
		t.Fatalf("retaining tensor 0: %v, %d files still have holds", err, nh)
	}
	if _, err := New(context.Background(), m, WithBudget(100)); !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "100 B") {
		t.Fatalf("a budget below two pages: %v", err)
	}
}

// The read-ahead crosses the pass boundary: while the caller holds the
// last item of a pass, the first items of the next are read.
func TestReadAheadAcrossPasses(t *testing.T) {
	sp := spec{sizes: sizes(20, 30000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, _ := open(t, path)
			s := newPasses(t, m, r, WithPasses(0), WithBudget(1<<20))
			for range len(sp.sizes) {
				if _, err := s.Next(); err != nil {
					t.Fatal(err)
				}
			}
			n := int64(len(sp.sizes))
			deadline := time.Now().Add(10 * time.Second)
			s.mu.Lock()
			for s.ready < n+3 && time.Now().Before(deadline) {
				s.mu.Unlock()
				time.Sleep(time.Millisecond)
				s.mu.Lock()
			}
			ready := s.ready
			s.mu.Unlock()
			if ready < n+3 {
				t.Fatalf("holding the last item of pass 0, %d items are read; the next pass's first three are not", ready)
			}
		})
	}
}

// openFDs returns the number of the process's open descriptors, and
// mappings its number of mappings.
func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(es)
}

// mapped reports whether the address addr lies in one of the process's
// mappings.
func mapped(t *testing.T, addr uintptr) bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err == nil && lo <= addr && addr < hi {
			return true
		}
	}
	return false
}

// A consumer that stops mid-pass, Close mid-read and a cancelled context
// leave no goroutine, descriptor, mapping, buffer or hold behind.
func TestNoLeaks(t *testing.T) {
	sp := spec{sizes: sizes(40, 30000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, r := range readers {
		for _, how := range []string{"stop", "close-mid-read", "cancel"} {
			t.Run(r.String()+"/"+how, func(t *testing.T) {
				m, _ := open(t, path)
				runtime.GC()
				g0, fd0 := runtime.NumGoroutine(), openFDs(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				s, err := New(ctx, m, WithReader(r), WithPasses(0), WithBudget(256<<10), WithRetain(RetainAuto))
				if err != nil {
					if r == ReadDirect && errors.Is(err, errors.ErrUnsupported) {
						skipUnlessRequired(t, "no direct I/O: %v", err)
					}
					t.Fatal(err)
				}
				for range 50 {
					if _, err := s.Next(); err != nil {
						t.Fatal(err)
					}
				}
				var buf uintptr // the direct reader's buffer
				if s.direct != nil {
					buf = uintptr(unsafe.Pointer(unsafe.SliceData(s.direct.buf)))
					if !mapped(t, buf) {
						t.Fatal("the read buffer is not a mapping of its own")
					}
				}
				switch how {
				case "stop": // the read-ahead has filled the room and waits
					time.Sleep(20 * time.Millisecond)
				case "close-mid-read": // the read-ahead is still reading
				case "cancel":
					cancel()
					if _, err := s.Next(); !errors.Is(err, context.Canceled) {
						t.Fatalf("Next after cancel: %v", err)
					}
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("second Close: %v", err)
				}
				if st := s.Stats(); st.Resident != 0 {
					t.Fatalf("after Close the stream holds %d bytes", st.Resident)
				}
				holds.Lock()
				nh := len(holds.m)
				holds.Unlock()
				if nh != 0 {
					t.Fatalf("%d files still have holds", nh)
				}
				deadline := time.Now().Add(5 * time.Second)
				for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if g := runtime.NumGoroutine(); g > g0 {
					t.Fatalf("%d goroutines after Close, %d before", g, g0)
				}
				if fd := openFDs(t); fd != fd0 {
					t.Fatalf("%d descriptors open after Close, %d before", fd, fd0)
				}
				if buf != 0 && mapped(t, buf) {
					t.Fatalf("the read buffer at %#x is still mapped after Close", buf)
				}
			})
		}
	}
}

// Passes work in windowed mode, and a file truncated under a passes
// stream gives ErrTruncated.
func TestPassesWindowedTruncated(t *testing.T) {
	sp := spec{sizes: sizes(30, 20000)}
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			path := writeModel(t, t.TempDir(), sp)
			m, _ := open(t, path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWindowed)))
			s := newPasses(t, m, r, WithPasses(0), WithBudget(256<<10), WithRetain(64<<10))
			for range 2 * len(sp.sizes) {
				it, err := s.Next()
				if err != nil {
					t.Fatal(err)
				}
				if sum, err := crc32Of(it); err != nil || sum != wantCRC(it.Tensor, sp.sizes[it.Tensor]) {
					t.Fatalf("%s: wrong bytes (%v)", it.Name, err)
				}
			}
			if err := os.Truncate(path, m.TensorData(10).Offset()); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3*len(sp.sizes); i++ {
				it, err := s.Next()
				if errors.Is(err, ErrTruncated) {
					return
				}
				if err != nil {
					t.Fatalf("item %d: %v, want ErrTruncated", i, err)
				}
				if err := it.Data.Checksum(crc32.NewIEEE()); errors.Is(err, ErrTruncated) {
					return
				} else if err != nil {
					t.Fatal(err)
				}
			}
			t.Fatal("no ErrTruncated in three passes over a truncated file")
		})
	}
}

// The stream reads ahead in the order it hands items out: every read it
// starts (WILLNEED, populate, a direct read) is of the item it reads next
// or a later one, never an earlier one, in a single pass and across
// passes, whether it reads exactly or lets the kernel read ahead.
func TestReadAheadOrder(t *testing.T) {
	sp := spec{sizes: sizes(40, 30000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, c := range []struct {
		name   string
		r      Reader
		passes int
		budget int64
	}{{"mapped-exact", ReadMapped, 1, 256 << 10}, {"mapped-kernel", ReadMapped, 1, 64 << 20}, {"mapped-passes", ReadMapped, 3, 256 << 10}, {"direct-passes", ReadDirect, 3, 256 << 10}} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := open(t, path)
			order, _ := m.UseOrder("forward")
			// The item each file offset belongs to, in the order.
			at := func(off int64) int {
				for k, i := range order {
					if d := m.TensorData(i); off < d.Offset()+d.Len() {
						return k
					}
				}
				return len(order)
			}
			var mu sync.Mutex
			seqs := map[string][]int{} // the item of each read, by kind of read
			testHookRead = func(how string, f *mmapfile.File, off, n int64) {
				mu.Lock()
				seqs[how] = append(seqs[how], at(off))
				mu.Unlock()
			}
			defer func() { testHookRead = nil }()
			s := newPasses(t, m, c.r, WithPasses(c.passes), WithBudget(c.budget))
			for {
				if _, err := s.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			mu.Lock()
			defer mu.Unlock()
			if len(seqs) == 0 {
				t.Fatal("no read seen")
			}
			for how, seq := range seqs {
				pass := 0
				for k := 1; k < len(seq); k++ {
					if seq[k] >= seq[k-1] {
						continue
					}
					if seq[k-1] >= len(order)-4 && seq[k] <= 3 && pass < c.passes-1 {
						pass++ // the next pass starts at the top
						continue
					}
					t.Fatalf("%s read %d is of item %d, after one of item %d: the read-ahead went backwards (%v)", how, k, seq[k], seq[k-1], seq)
				}
			}
		})
	}
}

// AutoBudget is the memory limit less the resident set and the reserve:
// positive, within the limit, smaller by what is reserved, and an error
// wrapping ErrBudget when the reserve takes everything.
func TestAutoBudget(t *testing.T) {
	limit, ok := platform.MemoryLimit()
	if !ok {
		if _, err := AutoBudget(0); err == nil {
			t.Fatal("AutoBudget without a known limit gave no error")
		}
		t.Skip("no memory limit known here")
	}
	a, err := AutoBudget(0)
	if err != nil || a <= 0 || a > limit {
		t.Fatalf("AutoBudget(0) = %d, %v; the limit is %d", a, err, limit)
	}
	b, err := AutoBudget(64 << 20)
	if err != nil || b > a-64<<20+16<<20 || b < a-64<<20-16<<20 {
		t.Fatalf("AutoBudget(64 MiB) = %d, %v; AutoBudget(0) = %d", b, err, a)
	}
	if _, err := AutoBudget(limit); !errors.Is(err, ErrBudget) {
		t.Fatalf("AutoBudget(the whole limit) = %v, want ErrBudget", err)
	}
}
