package stream

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/cgroup"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// fill writes bytes [off, off+len(p)) of tensor i's pattern: a function of
// i and the offset that differs between tensors and pages.
func fill(i int, p []byte, off int64) {
	for k := range p {
		o := off + int64(k)
		p[k] = byte(int64(i)*131 + o*7 + o>>12)
	}
}

// wantCRC is the CRC-32 of tensor i's n bytes, computed from the pattern.
func wantCRC(i int, n int64) uint32 {
	b := make([]byte, n)
	fill(i, b, 0)
	return crc32.ChecksumIEEE(b)
}

// spec describes a test model: tensor sizes, and for each tensor the index
// of an earlier tensor whose bytes it shares (-1 for its own).
type spec struct {
	sizes  []int64
	shares []int
	blobs  int // delegate blobs of 10000 bytes
}

// writeModel writes the model of sp into dir, with tensors packed at a
// 16-byte alignment so that neighbours share pages.
func writeModel(t testing.TB, dir string, sp spec) string {
	t.Helper()
	ts := make([]writer.PTETensor, len(sp.sizes))
	buf := make([]uint32, len(sp.sizes)) // data_buffer_idx of the tensors with bytes of their own
	own := uint32(0)
	for i, n := range sp.sizes {
		ts[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{int32(n)}}
		if sp.shares != nil && sp.shares[i] >= 0 {
			ts[i].BufferRef = buf[sp.shares[i]]
			continue
		}
		own++
		buf[i] = own
		ts[i].Fill = func(p []byte, off int64) { fill(i, p, off) }
	}
	var ds []writer.PTEDelegate
	for k := range sp.blobs {
		ds = append(ds, writer.PTEDelegate{ID: "TestBackend", Blob: writer.PTEBlob{Size: 10000, Fill: func(p []byte, off int64) { fill(1000+k, p, off) }}})
	}
	w := &writer.PTE{TensorAlignment: 16, Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts, Delegates: ds}}}
	path := filepath.Join(dir, "model.pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// evict drops the clean pages of the file at path from the page cache.
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return platform.FadviseDontNeed(f, 0, 0)
}

// syncFile syncs the file at path: written pages are dirty until synced,
// and the page cache drops only clean ones.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// sizes returns n tensor sizes between lo and lo+span, none a page multiple.
func sizes(n int, lo int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = lo + int64(i*977%5000)*3 + 1
	}
	return s
}

// open opens path and drops the whole file from the process and the page
// cache; it reports whether the page cache dropped it (tmpfs does not), in
// which case mincore cannot check the budget.
func open(t testing.TB, path string, opts ...loader.Option) (*loader.Model, bool) {
	t.Helper()
	m, err := loader.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return prepare(t, m, path)
}

// prepare readies an opened model for a stream as open does.
func prepare(t testing.TB, m *loader.Model, path string) (*loader.Model, bool) {
	t.Helper()
	t.Cleanup(func() { m.Close() })
	// Read the metadata the stream needs before dropping the file: a
	// fault in it would read the weights around it ahead.
	m.Tensors()
	if _, err := m.UseOrder(""); err != nil {
		t.Fatal(err)
	}
	f := m.File()
	if err := f.Release(0, f.Len(), true); err != nil {
		t.Fatal(err)
	}
	// The pages a section shares with the rest of its file too.
	if err := evict(path); err != nil {
		t.Fatal(err)
	}
	if emu, ok := cgroup.Emulated(); ok {
		t.Logf("under the emulator %s madvise is not the kernel's: mincore checks skipped", emu)
		return m, false
	}
	r, _, err := f.Resident(0, f.Len())
	if err != nil || r != 0 {
		msg := fmt.Sprintf("the page cache keeps %d pages of %s after fadvise DONTNEED (%v)", r, path, err)
		if required() {
			t.Fatalf("%s: CI=true requires the mincore checks; put TMPDIR on a disk file system (not tmpfs)", msg)
		}
		t.Logf("%s: mincore checks skipped", msg)
		return m, false
	}
	return m, true
}

// required reports whether the checks that observe the page cache must
// run rather than skip: under CI=true or EDGELOAD_MEMLIMIT=require, except
// under a user-mode emulator, whose madvise is not the kernel's (prepare
// says so).
func required() bool {
	if _, emu := cgroup.Emulated(); emu {
		return false
	}
	return os.Getenv("CI") == "true" || os.Getenv("EDGELOAD_MEMLIMIT") == "require"
}

// residentBytes returns the bytes of m's file resident in the page cache.
func residentBytes(t testing.TB, m *loader.Model) int64 {
	t.Helper()
	f := m.File()
	r, _, err := f.Resident(0, f.Len())
	if err != nil {
		t.Fatal(err)
	}
	return int64(r) * int64(f.PageSize())
}

// drain streams s to the end, checking every tensor's CRC against the
// pattern (windows of a tensor are joined) and, after each item, the budget
// by the stream's accounting and, when check is set, by mincore.
func drain(t testing.TB, s *Stream, m *loader.Model, sp spec, check bool) (tensors int) {
	t.Helper()
	h := crc32.NewIEEE()
	seen := make(map[int]bool)
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.Resident > st.Budget || st.Peak > st.Budget {
			t.Fatalf("%s: resident %d, peak %d above the budget %d", it.Name, st.Resident, st.Peak, st.Budget)
		}
		if check {
			// mincore walks the file page by page while the stream goes on
			// releasing and reading: a walk can count a grain released
			// after it passed and one read before it arrived. A page held
			// past the budget stays; a double count does not, so a sample
			// above the budget is taken again before it fails the test.
			r := residentBytes(t, m)
			for try := 0; r > st.Budget && try < 5; try++ {
				time.Sleep(time.Millisecond)
				r = residentBytes(t, m)
			}
			if r > st.Budget {
				t.Fatalf("%s: mincore says %d bytes resident, above the budget %d", it.Name, r, st.Budget)
			}
		}
		if it.Tensor < 0 {
			continue
		}
		if it.Part == 0 {
			h.Reset()
		}
		if err := it.Data.Checksum(h); err != nil {
			t.Fatal(err)
		}
		if it.Part < it.Parts-1 {
			continue
		}
		src := it.Tensor
		if sp.shares != nil && sp.shares[src] >= 0 {
			src = sp.shares[src]
		}
		if got, want := h.Sum32(), wantCRC(src, sp.sizes[src]); got != want {
			t.Fatalf("%s: crc %08x, want %08x", it.Name, got, want)
		}
		if seen[it.Tensor] {
			t.Fatalf("%s handed out twice", it.Name)
		}
		seen[it.Tensor] = true
	}
	if len(seen) != m.NumTensors() {
		t.Fatalf("streamed %d tensors, the model has %d", len(seen), m.NumTensors())
	}
	return len(seen)
}

func TestBudget(t *testing.T) {
	sp := spec{sizes: sizes(60, 20000)}
	path := writeModel(t, t.TempDir(), sp)
	for _, budget := range []int64{64 << 10, 200 << 10, 1 << 20} {
		m, check := open(t, path)
		s, err := New(context.Background(), m, WithBudget(budget), WithDropCache())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		drain(t, s, m, sp, check)
		st := s.Stats()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st.Peak == 0 || st.Done != st.Items || st.DoneBytes != st.Bytes {
			t.Fatalf("stats after the last item: %+v", st)
		}
		if st := s.Stats(); st.Resident != 0 || st.Done != st.Items {
			t.Fatalf("after Close: %+v", st)
		}
		if check {
			if r := residentBytes(t, m); r != 0 {
				t.Fatalf("after Close %d bytes resident", r)
			}
		}
	}
}

// Tensors that share bytes count them once, and a grain shared by two
// tensors stays resident until neither holds it.
func TestShared(t *testing.T) {
	sp := spec{sizes: []int64{30000, 30000, 30000}, shares: []int{-1, 0, -1}}
	path := writeModel(t, t.TempDir(), sp)
	m, check := open(t, path)
	if a, b := m.TensorData(0), m.TensorData(1); a.Offset() != b.Offset() || a.Len() != b.Len() {
		t.Fatalf("tensors 0 and 1 do not share bytes: %v %v", a, b)
	}
	f := m.File()
	s, err := New(context.Background(), m, WithOrder([]int{0, 1}), WithBudget(256<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sp0 := coverSpan(f, m.TensorData(0).Offset(), 30000, s.grain)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	waitReady(s, 2)
	if st := s.Stats(); st.Resident != inFile(f, sp0) {
		t.Fatalf("tensors 0 and 1 (the same bytes) count %d bytes, want %d", st.Resident, inFile(f, sp0))
	}
	if it, err := s.Next(); err != nil || it.Tensor != 1 { // finishes 0; 1 holds the grains
		t.Fatal(it, err)
	}
	waitFreed(s, 1)
	if check {
		if r, _, _ := f.Resident(sp0.start, sp0.bytes()); int64(r)*int64(f.PageSize()) != sp0.bytes() {
			t.Fatalf("tensor 1's pages dropped while it is in use: %d pages resident", r)
		}
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatal(err)
	}

	// Tensor 2 starts in tensor 1's last grain: releasing 1 keeps it.
	s2, err := New(context.Background(), m, WithOrder([]int{1, 2}), WithBudget(64<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	sp1 := coverSpan(f, m.TensorData(1).Offset(), 30000, s2.grain)
	sp2 := coverSpan(f, m.TensorData(2).Offset(), 30000, s2.grain)
	if sp2.start != sp1.end-s2.grain {
		t.Fatalf("the writer did not pack tensors 1 and 2 into one grain: %v %v", sp1, sp2)
	}
	for range 2 {
		if _, err := s2.Next(); err != nil {
			t.Fatal(err)
		}
	}
	waitFreed(s2, 1)
	if st := s2.Stats(); st.Resident != inFile(f, sp2) {
		t.Fatalf("after releasing tensor 1 the stream holds %d bytes, want tensor 2's %d", st.Resident, inFile(f, sp2))
	}
	if check {
		if r, _, _ := f.Resident(sp2.start, 1); r != 1 {
			t.Fatal("the grain tensor 2 shares with tensor 1 was released")
		}
		if r, _, _ := f.Resident(sp1.start, sp2.start-sp1.start); r != 0 {
			t.Fatalf("%d pages only tensor 1 held are still resident", r)
		}
	}
}

// inFile returns the bytes of the file's pages in sp: the grains of sp,
// less what lies past the file's last page.
func inFile(f *mmapfile.File, sp span) int64 {
	ps := int64(f.PageSize())
	return min(sp.end, (f.Len()+ps-1)&^(ps-1)) - sp.start
}

// waitFreed waits until the stream has released its first n items.
func waitFreed(s *Stream, n int64) {
	s.mu.Lock()
	for s.freed < n && !s.closed {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// waitReady waits until the stream has read and mapped n items.
func waitReady(s *Stream, n int64) {
	s.mu.Lock()
	for s.ready < n && !s.closed {
		s.cond.Wait()
	}
	s.mu.Unlock()
}

// A tensor larger than the budget comes in windows of at most half the
// budget.
func TestLargerThanBudget(t *testing.T) {
	sp := spec{sizes: []int64{5000, 1<<20 + 123, 7000}}
	path := writeModel(t, t.TempDir(), sp)
	m, check := open(t, path)
	const budget = 64 << 10
	s, err := New(context.Background(), m, WithBudget(budget), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parts := 0
	for i := range s.order {
		if it := &s.order[i]; it.Tensor == 1 { // fields New set: the stream writes only err
			parts++
			if it.span.bytes() > budget/2 {
				t.Fatalf("window %d of %d spans %d bytes, more than half the budget", it.Part, it.Parts, it.span.bytes())
			}
		}
	}
	if parts < 2*(1<<20)/budget {
		t.Fatalf("the 1 MiB tensor comes in %d windows", parts)
	}
	drain(t, s, m, sp, check)
}

func TestCancel(t *testing.T) {
	sp := spec{sizes: sizes(40, 30000)}
	path := writeModel(t, t.TempDir(), sp)
	m, check := open(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, m, WithBudget(256<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 5 {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	waitReady(s, 7)
	if st := s.Stats(); st.Resident == 0 {
		t.Fatal("nothing held before the cancel")
	}
	cancel()
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v", err)
	}
	if st := s.Stats(); st.Resident != 0 {
		t.Fatalf("after cancel the stream holds %d bytes", st.Resident)
	}
	if check {
		if r := residentBytes(t, m); r != 0 {
			t.Fatalf("after cancel %d bytes are resident", r)
		}
	}
	if _, err := s.Next(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next again: %v", err)
	}
}

func TestTwoStreams(t *testing.T) {
	sp := spec{sizes: sizes(50, 20000)}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	var wg sync.WaitGroup
	for _, budget := range []int64{64 << 10, 300 << 10} {
		s, err := New(context.Background(), m, WithBudget(budget))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.Close()
			drain(t, s, m, sp, false)
		}()
	}
	wg.Wait()
	holds.Lock()
	n := len(holds.m)
	holds.Unlock()
	if n != 0 {
		t.Fatalf("%d files still have holds after both streams closed", n)
	}
}

// A stream releases no grain that another stream still holds: a second
// stream over the same tensor, dropping what it releases, leaves the first
// one's tensor resident.
func TestHeldByAnother(t *testing.T) {
	sp := spec{sizes: []int64{100000, 100000}}
	path := writeModel(t, t.TempDir(), sp)
	m, check := open(t, path)
	if !check {
		t.Skip("the page cache cannot be emptied here (prepare says why): nothing to observe")
	}
	a, err := New(context.Background(), m, WithOrder([]int{0}), WithBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Next(); err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), m, WithOrder([]int{0, 1}), WithBudget(64<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := b.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	d := m.TensorData(0)
	if r, tot, err := m.File().Resident(d.Offset(), d.Len()); err != nil || r != tot {
		t.Fatalf("the first stream's tensor: %d/%d pages resident after the second stream (%v)", r, tot, err)
	}
}

// A file truncated under the stream gives ErrTruncated, not a crash.
func TestTruncated(t *testing.T) {
	for _, mode := range []mmapfile.Mode{mmapfile.ModeWhole, mmapfile.ModeWindowed} {
		t.Run(mode.String(), func(t *testing.T) {
			sp := spec{sizes: sizes(40, 30000)}
			path := writeModel(t, t.TempDir(), sp)
			m, _ := open(t, path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
			s, err := New(context.Background(), m, WithBudget(128<<10))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Next(); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, m.TensorData(10).Offset()); err != nil {
				t.Fatal(err)
			}
			for i := 0; ; i++ {
				it, err := s.Next()
				if errors.Is(err, ErrTruncated) {
					t.Logf("item %d: %v", i, err)
					return
				}
				if err != nil {
					t.Fatalf("item %d: %v, want ErrTruncated", i, err)
				}
				if err := it.Data.Checksum(crc32.NewIEEE()); errors.Is(err, ErrTruncated) {
					t.Logf("item %d: %v", i, err)
					return
				} else if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestWindowed(t *testing.T) {
	sp := spec{sizes: append(sizes(30, 20000), 300000)}
	path := writeModel(t, t.TempDir(), sp)
	m, check := open(t, path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWindowed)))
	if m.File().Mode() != mmapfile.ModeWindowed {
		t.Fatalf("mode %v", m.File().Mode())
	}
	s, err := New(context.Background(), m, WithBudget(128<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s, m, sp, check)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if check {
		if r := residentBytes(t, m); r != 0 {
			t.Fatalf("after Close %d bytes resident", r)
		}
	}
}

func TestProgress(t *testing.T) {
	sp := spec{sizes: sizes(20, 10000)}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	var got []Stats
	s, err := New(context.Background(), m, WithBudget(256<<10), WithProgress(func(st Stats) { got = append(got, st) }))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s, m, sp, false)
	var total int64
	for _, n := range sp.sizes {
		total += n
	}
	if len(got) != 20 || got[19].Done != 20 || got[19].Items != 20 || got[19].Bytes != total || got[19].DoneBytes != total {
		t.Fatalf("%d progress calls, last %+v", len(got), got[len(got)-1])
	}
	// The model has no instructions, so that its use order is index order,
	// and every tensor fits in a window: call i comes after tensors
	// 0..i, whose sizes the writer was given.
	var done int64
	for i, st := range got {
		done += sp.sizes[i]
		if st.Done != i+1 || st.DoneBytes != done || st.Items != len(sp.sizes) || st.Bytes != total {
			t.Fatalf("call %d: %+v, want %d done, %d bytes", i, st, i+1, done)
		}
	}
	s.Close()
}

// The default order: each method's delegate blobs, then its tensors in use
// order.
func TestDefaultOrder(t *testing.T) {
	sp := spec{sizes: sizes(10, 5000), blobs: 2}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	order, err := m.UseOrder("forward")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var tensors []int
	for k := 0; ; k++ {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if k < 2 {
			if it.Delegate != k || it.Tensor != -1 {
				t.Fatalf("item %d: %+v, want delegate blob %d", k, it, k)
			}
			if sum, _ := crc32Of(it); sum != wantCRC(1000+k, 10000) {
				t.Fatalf("delegate blob %d: wrong bytes", k)
			}
			continue
		}
		tensors = append(tensors, it.Tensor)
	}
	if len(tensors) != len(order) {
		t.Fatalf("tensors %v, use order %v", tensors, order)
	}
	for i := range order {
		if tensors[i] != order[i] {
			t.Fatalf("tensors %v, use order %v", tensors, order)
		}
	}
	if _, err := New(context.Background(), m, WithMethod("nope")); !errors.Is(err, loader.ErrNotFound) {
		t.Fatalf("unknown method: %v", err)
	}
}

func crc32Of(it Item) (uint32, error) {
	h := crc32.NewIEEE()
	err := it.Data.Checksum(h)
	return h.Sum32(), err
}

// A model with no weight in reach (external tensors not linked) streams
// nothing and ends at once.
func TestNothingToStream(t *testing.T) {
	ts := []writer.PTETensor{{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "w"}}
	path := filepath.Join(t.TempDir(), "ext.pte")
	if _, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(path); err != nil {
		t.Fatal(err)
	}
	m, _ := open(t, path)
	for _, passes := range []int{1, 0, 3} {
		s, err := New(context.Background(), m, WithPasses(passes), WithRetain(RetainAuto))
		if err != nil {
			t.Fatal(err)
		}
		if it, err := s.Next(); err != io.EOF {
			t.Fatalf("passes %d: Next = %+v, %v; want io.EOF", passes, it, err)
		}
		if st := s.Stats(); st.Items != 0 || st.Resident != 0 {
			t.Fatalf("passes %d: stats %+v", passes, st)
		}
		s.Close()
	}
}

// BenchmarkSmallTensors streams a model of 20,000 tensors of about 1 KiB,
// page cache hot: the cost per item of the stream's bookkeeping.
func BenchmarkSmallTensors(b *testing.B) {
	sp := spec{sizes: make([]int64, 20000)}
	for i := range sp.sizes {
		sp.sizes[i] = 1000 + int64(i%48)
	}
	path := writeModel(b, b.TempDir(), sp)
	m, err := loader.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var cpu time.Duration
	for b.Loop() {
		s, err := New(context.Background(), m, WithBudget(8<<20))
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		cpu += s.Stats().CPU
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(sp.sizes)), "ns/item")
	b.ReportMetric(100*cpu.Seconds()/b.Elapsed().Seconds(), "stream-cpu-%")
}

// skipUnlessRequired skips the test, or fails it where the checks are
// required (see required).
func skipUnlessRequired(t *testing.T, format string, args ...any) {
	t.Helper()
	if required() {
		t.Fatalf(format+" (CI=true requires this check)", args...)
	}
	t.Skipf(format, args...)
}
