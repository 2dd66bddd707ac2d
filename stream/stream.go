// Package stream hands out a model's weights one at a time, in the order the
// model uses them, with their pages resident: a background goroutine reads
// ahead as far as a byte budget allows, and releases the pages of the
// weights the caller has moved past.
//
// The budget bounds the weight pages a [Stream] holds (read ahead or in
// use), counted in grains: aligned blocks of up to 2 MiB, at most an eighth
// of the budget. A grain that several items cover (tensors that share bytes
// or a page) counts once, and is released only when no item of any stream
// in the process still holds it. Grains are aligned in the model's file
// (a section's offsets count from the section's start): in a whole file,
// releasing whole grains drops whole page cache folios and whole huge
// mappings, which the kernel does cheaply.
//
// Where the kernel's readahead window is known (Linux) and two windows fit
// in half the budget, the stream lets the kernel read ahead and keeps those
// windows of the budget free for it; otherwise it reads exactly the grains
// it holds (fadvise WILLNEED) and maps them with readahead off. An item
// larger than half of what remains is handed over in windows (consecutive
// items with the same Tensor, see [Item.Part]), so that the next window is
// read while one is in use.
//
// With [WithDropCache] released pages also leave the page cache, so that the
// file's resident pages (mincore) stay within the budget; pages of the file
// that other code reads are not the stream's to count.
package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
)

// DefaultBudget is the budget of a stream made without WithBudget.
const DefaultBudget = 64 << 20

// ErrTruncated is returned when the file shrank under the stream.
var ErrTruncated = mmapfile.ErrTruncated

// Item is one weight the stream hands out: a tensor, a delegate blob, or a
// window of either.
type Item struct {
	// Tensor is the index of the tensor in Model.Tensors, or -1 for a
	// delegate blob.
	Tensor int
	// Delegate is the index of the blob in Program().Delegates(), or -1 for
	// a tensor.
	Delegate int
	// Name is the tensor's name, or "delegate METHOD/INDEX" for a blob.
	Name string
	// Data holds the item's bytes (for a window, the window's). Its pages
	// are resident until the next call to Next or Close, after which the
	// stream may release them at any time. In windowed mode
	// (mmapfile.ModeWindowed) it then unmaps the window: views of the item
	// must not be kept past that call.
	Data segment.Segment
	// Part is the window's number, from 0, of Parts windows; 0 of 1 for an
	// item handed over whole. Offset is Data's offset within the whole item.
	Part, Parts int
	Offset      int64
}

// Stats describes a stream's progress.
type Stats struct {
	Items     int   // items in the order (each window counts)
	Done      int   // items handed out and finished with
	Bytes     int64 // bytes of all items
	DoneBytes int64 // bytes of the items finished with
	Resident  int64 // bytes of the grains the stream holds now
	Peak      int64 // the largest Resident so far
	Budget    int64
	// CPU is the CPU time of the stream's background goroutine, which
	// reads, maps and releases the pages, and SystemCPU the part of it
	// spent in the kernel; both 0 where the system does not report a
	// thread's CPU time.
	CPU, SystemCPU time.Duration
}

type config struct {
	budget   int64
	method   string
	order    []int
	ordered  bool
	drop     bool
	progress func(Stats)
}

// Option configures New.
type Option func(*config)

// WithBudget sets the most bytes of weight pages the stream holds resident
// (default DefaultBudget; at least two pages).
func WithBudget(n int64) Option { return func(c *config) { c.budget = n } }

// WithMethod streams one method of a program (its delegate blobs, then its
// tensors in use order) instead of every method in turn.
func WithMethod(name string) Option { return func(c *config) { c.method = name } }

// WithOrder streams the given tensors (indices into Model.Tensors) in the
// given order instead of the use order, and no delegate blob.
func WithOrder(tensors []int) Option {
	return func(c *config) { c.order, c.ordered = tensors, true }
}

// WithDropCache makes the stream also drop released pages from the page
// cache (fadvise DONTNEED), for a file that will not be read again soon.
func WithDropCache() Option { return func(c *config) { c.drop = true } }

// WithProgress calls fn with the stream's Stats each time the caller
// finishes with an item (calls Next again), on the goroutine that called
// Next.
func WithProgress(fn func(Stats)) Option { return func(c *config) { c.progress = fn } }

// work is an item with its grains and the outcome of its read.
type work struct {
	Item
	span span
	err  error
}

// Stream hands out a model's weights in order under a budget. Next and Close
// are for one goroutine; Stats may be called from any. Several streams may
// run over one Model at the same time.
type Stream struct {
	items    []work
	limit    int64 // the most the held grains may take: the budget less the room kept for the kernel's readahead
	grain    int64
	ra       int64 // the kernel's readahead window; 0 when the stream reads exactly the grains it holds
	drop     bool
	progress func(Stats)

	ctx      context.Context
	cancel   context.CancelFunc
	stopWake func() bool
	done     chan struct{}

	mu       sync.Mutex
	cond     sync.Cond
	count    map[grainKey]int32 // how many held items cover each grain
	lo, hi   int                // items [lo, hi) are held: admitted and not released
	ready    int                // items [0, ready) are read and mapped
	cur      int                // the item the caller holds, -1 before the first
	freed    int                // items [0, freed) are released
	finished int64              // bytes of items [lo, cur)
	closed   bool               // shutdown has run: the background goroutine stops, everything held is released
	relErr   error              // the first error of a release
	err      error              // what Next returns from now on
	stats    Stats
}

// New starts streaming m's weights: by default every delegate blob and
// tensor of m in use order (loader.Model.UseOrder), for a program method by
// method, each method's delegate blobs first (a segment shared by blobs only
// once). Tensors with no bytes in reach (unresolved external tensors) are
// left out. Cancelling ctx stops the reading; the next call to Next
// returns ctx's error and releases everything. Call Close when done.
func New(ctx context.Context, m *loader.Model, opts ...Option) (*Stream, error) {
	c := config{budget: DefaultBudget}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	items, err := plan(m, &c)
	if err != nil {
		return nil, err
	}
	ps := int64(platform.PageSize())
	for _, it := range items {
		if f := it.Data.File(); f != nil {
			ps = max(ps, int64(f.PageSize()))
		}
	}
	budget := max(c.budget, 2*ps)
	s := &Stream{drop: c.drop, progress: c.progress, done: make(chan struct{}), cur: -1, grain: ps}
	for s.grain*2 <= min(maxGrain, budget/8) {
		s.grain *= 2
	}
	if ra := kernelWindow(items); ra > 0 && raWindows*ra <= budget/2 {
		s.limit, s.ra = budget-raWindows*ra, ra
	} else {
		// A page cache folio larger than a grain may outlive the release
		// of the grain it straddles; the budget keeps room for one.
		s.limit = budget - s.grain
	}
	s.items = split(items, s.limit, s.grain)
	s.count = make(map[grainKey]int32)
	s.cond.L = &s.mu
	s.stats.Items, s.stats.Budget = len(s.items), budget
	for i := range s.items {
		s.stats.Bytes += s.items[i].Data.Len()
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.stopWake = context.AfterFunc(s.ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	go s.run()
	return s, nil
}

// maxGrain is the largest grain: the largest page cache folio and huge
// mapping of a file with 4 KiB pages on x86-64 and arm64.
const maxGrain = 2 << 20

// raWindows is how many readahead windows beyond the grains it holds the
// stream leaves free for the kernel's readahead (which reads the next window
// when a read reaches the current one).
const raWindows = 2

// plan lists the items of m in the configured order.
func plan(m *loader.Model, c *config) ([]Item, error) {
	items := make([]Item, 0, m.NumTensors())
	addTensors := func(idx []int) error {
		n := m.NumTensors()
		for _, i := range idx {
			if i < 0 || i >= n {
				return fmt.Errorf("stream: tensor index %d out of range [0,%d): %w", i, n, loader.ErrNotFound)
			}
			d := m.TensorData(i)
			if d.File() == nil {
				continue
			}
			items = append(items, Item{Tensor: i, Delegate: -1, Name: m.TensorAt(i).Name, Data: d})
		}
		return nil
	}
	if c.ordered {
		return items, addTensors(c.order)
	}
	groups := []string{c.method}
	if c.method == "" && m.Groups() != nil {
		groups = m.Groups()
	}
	bu, _ := m.Impl().(format.BlobUser)
	type blob struct {
		f      *mmapfile.File
		off, n int64
	}
	seen := make(map[blob]bool)
	for _, g := range groups {
		idx, err := m.UseOrder(g)
		if err != nil {
			return nil, err
		}
		if bu != nil {
			for _, d := range bu.GroupBlobs(g) {
				b := blob{d.Data.File(), d.Data.Offset(), d.Data.Len()}
				if b.f == nil || seen[b] {
					continue
				}
				seen[b] = true
				items = append(items, Item{Tensor: -1, Delegate: d.Index, Name: d.Name, Data: d.Data})
			}
		}
		if err := addTensors(idx); err != nil {
			return nil, err
		}
	}
	return items, nil
}

// split turns each item whose grains exceed half the limit into windows of
// at most half the limit, their ends on grain boundaries, and computes the
// grains of every item.
func split(items []Item, limit, grain int64) []work {
	out := make([]work, 0, len(items))
	w := max(grain, limit/2/grain*grain)
	for _, it := range items {
		f := it.Data.File()
		sp := coverSpan(f, it.Data.Offset(), it.Data.Len(), grain)
		if sp.bytes() <= w {
			it.Parts = 1
			out = append(out, work{Item: it, span: sp})
			continue
		}
		start, end := it.Data.Offset(), it.Data.Offset()+it.Data.Len()
		parts := int((sp.bytes() + w - 1) / w)
		for k, at := 0, start; at < end; k++ {
			e := min(sp.start+int64(k+1)*w, end)
			sub, _ := it.Data.Sub(at-start, e-at)
			part := it
			part.Data, part.Part, part.Parts, part.Offset = sub, k, parts, at-start
			out = append(out, work{Item: part, span: coverSpan(f, at, e-at, grain)})
			at = e
		}
	}
	return out
}

// need returns the bytes of the grains of sp that no held item covers.
func (s *Stream) need(sp span) int64 {
	var n int64
	for at := sp.start; at < sp.end; at += s.grain {
		if s.count[grainKey{sp.f, at / s.grain}] == 0 {
			n += s.grainBytes(sp.f, at)
		}
	}
	return n
}

// grainBytes returns the bytes of the file's pages in the grain at off: a
// grain at the end of the file holds only its pages.
func (s *Stream) grainBytes(f *mmapfile.File, off int64) int64 {
	ps := int64(f.PageSize())
	return max(0, min(s.grain, (f.Len()+ps-1)&^(ps-1)-off))
}

// admit holds the next items while their grains fit in the limit (at least
// one item when nothing is held).
func (s *Stream) admit() {
	for s.hi < len(s.items) {
		sp := s.items[s.hi].span
		n := s.need(sp)
		if s.hi > s.lo && s.stats.Resident+n > s.limit {
			return
		}
		var fresh []int64
		for at := sp.start; at < sp.end; at += s.grain {
			k := grainKey{sp.f, at / s.grain}
			if s.count[k]++; s.count[k] == 1 {
				fresh = append(fresh, at)
			}
		}
		if len(fresh) > 0 {
			holdGrains(sp.f, s.grain, fresh)
		}
		s.stats.Resident += n
		s.stats.Peak = max(s.stats.Peak, s.stats.Resident)
		s.hi++
	}
}

// wantRelease reports whether the items the caller has finished with should
// be released now: when the next item does not fit, when no item is left
// to admit, or when they amount to a quarter of the limit. Releasing in
// batches makes fewer, larger system calls.
func (s *Stream) wantRelease() bool {
	if s.lo >= min(s.cur, s.hi) {
		return false
	}
	return s.hi == len(s.items) || 4*s.finished >= s.limit ||
		s.stats.Resident+s.need(s.items[s.hi].span) > s.limit
}

// unhold gives up items [s.lo, to) and returns the grains no held item
// covers any more.
func (s *Stream) releaseItems(to int, gone []span) []span {
	for ; s.lo < to; s.lo++ {
		sp := s.items[s.lo].span
		for at := sp.start; at < sp.end; at += s.grain {
			k := grainKey{sp.f, at / s.grain}
			if s.count[k]--; s.count[k] == 0 {
				delete(s.count, k)
				s.stats.Resident -= s.grainBytes(sp.f, at)
				gone = append(gone, span{f: sp.f, start: at, end: at + s.grain})
			}
		}
	}
	s.finished = 0
	return gone
}

// unheld returns the grains of gone that no held item covers (an item
// admitted since may hold some again), joined into spans.
func (s *Stream) unusedGrains(gone []span) []span {
	var free []span
	for _, sp := range gone {
		if s.count[grainKey{sp.f, sp.start / s.grain}] == 0 {
			free = append(free, sp)
		}
	}
	return coalesce(free)
}

// run is the background goroutine. It releases what the caller has
// finished with, admits items while the budget has room, starts reading
// them, and maps their grains in order. Its thread is its own, so that
// Stats.CPU can tell its CPU time.
func (s *Stream) run() {
	defer close(s.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	user0, sys0, _ := platform.ThreadCPUTime()
	cpu := func() { // with s.mu held
		user, sys, _ := platform.ThreadCPUTime()
		s.stats.CPU, s.stats.SystemCPU = user-user0+sys-sys0, sys-sys0
	}
	var gone []span
	started := 0  // items [0, started) have their reads started
	var read span // the grains read last, forgotten at each release
	for {
		s.mu.Lock()
		for !s.closed && s.ctx.Err() == nil && !s.wantRelease() && s.ready == s.hi {
			s.admit()
			if s.ready < s.hi {
				break
			}
			s.cond.Wait()
		}
		if s.closed || s.ctx.Err() != nil {
			cpu()
			s.mu.Unlock()
			return
		}
		if s.wantRelease() {
			gone = s.releaseItems(s.cur, gone[:0])
			// Admitting into the room first keeps the grains the next
			// items share with the released ones, and the kernel's
			// readahead in them.
			s.admit()
			free := s.unusedGrains(gone)
			to := s.lo
			s.mu.Unlock()
			err := releaseSpans(gone, free, s.grain, s.drop)
			s.mu.Lock()
			if s.relErr == nil {
				s.relErr = err
			}
			s.freed = to
			read = span{}
			cpu()
			s.cond.Broadcast()
			s.mu.Unlock()
			continue
		}
		s.admit()
		to, i := s.hi, s.ready
		s.mu.Unlock()

		if s.ra == 0 {
			for ; started < to; started++ {
				sp := s.items[started].span
				if sp.f == read.f && sp.start < read.end && read.start <= sp.start {
					sp.start = min(read.end, sp.end)
				}
				fetchGrains(sp, s.grain)
				read = s.items[started].span
			}
		}
		// Item i and the next admitted items in its grains are mapped at
		// once (in windowed mode item i alone).
		w := &s.items[i]
		f, lo, hi := w.Data.File(), w.Data.Offset(), w.Data.Offset()+w.Data.Len()
		j := i + 1
		for ; f.Mode() == mmapfile.ModeWhole && j < to && s.items[j].span.within(w.span); j++ {
			d := s.items[j].Data
			lo, hi = min(lo, d.Offset()), max(hi, d.Offset()+d.Len())
		}
		err := populate(w.Data, lo, hi-lo, s.ra == 0)
		if err != nil {
			// A page past the end of the file fails the read; a guarded
			// touch says whether that is truncation.
			err, j = w.Data.Touch(), i+1
		}
		s.mu.Lock()
		w.err = err
		s.ready = j
		cpu()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// readahead starts reading the grains of sp into the page cache (fadvise
// WILLNEED, which reads exactly the range, where a fault would read ahead
// past it), a grain per call, as the kernel reads at most a readahead
// window per call.
func fetchGrains(sp span, grain int64) {
	end := min(sp.end, sp.f.Len())
	for at := sp.start; at < end; at += grain {
		sp.f.WillNeed(at, min(grain, end-at))
	}
}

// populate maps the pages of d's file covering [off, off+n) into the
// process (madvise POPULATE_READ), in windowed mode after mapping d's
// window. When the stream reads exactly, the range is advised random
// meanwhile, so that a page the readahead has not brought in is read alone
// (a fault reads far ahead and behind otherwise).
func populate(d segment.Segment, off, n int64, exact bool) error {
	if _, err := d.Bytes(); err != nil {
		return err
	}
	f := d.File()
	if !exact {
		return f.Advise(off, n, mmapfile.AdvicePopulateRead)
	}
	f.Advise(off, n, mmapfile.AdviceRandom)
	err := f.Advise(off, n, mmapfile.AdvicePopulateRead)
	f.Advise(off, n, mmapfile.AdviceNormal)
	return err
}

// readAhead returns the largest kernel readahead window of the files the
// items are in, or 0 when one is unknown or a file is not mapped.
func kernelWindow(items []Item) int64 {
	var ra int64
	seen := make(map[*mmapfile.File]bool)
	for _, it := range items {
		f := it.Data.File()
		if seen[f] {
			continue
		}
		seen[f] = true
		if f.Fd() == ^uintptr(0) {
			return 0
		}
		n, ok := platform.ReadAhead(f)
		if !ok || n == 0 {
			return 0
		}
		ra = max(ra, n)
	}
	return ra
}

// Next returns the next item, waiting for its read; the item handed out
// before is then the stream's to release. At the end it returns io.EOF;
// after an error (a truncated file gives one wrapping ErrTruncated, a
// cancelled context its error) it releases everything and returns that
// error again.
func (s *Stream) Next() (Item, error) {
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return Item{}, err
	}
	notify := false
	if s.cur >= 0 {
		s.stats.Done++
		s.stats.DoneBytes += s.items[s.cur].Data.Len()
		s.finished += s.items[s.cur].Data.Len()
		notify = s.progress != nil
	}
	st := s.stats
	s.cur++
	if s.wantRelease() {
		s.cond.Broadcast()
	}
	for s.cur < len(s.items) && s.ready <= s.cur && s.ctx.Err() == nil && s.relErr == nil {
		s.cond.Wait()
	}
	var it Item
	switch {
	case s.relErr != nil:
		s.err = fmt.Errorf("stream: releasing: %w", s.relErr)
	case s.cur >= len(s.items):
		s.err = io.EOF
	case s.ctx.Err() != nil:
		s.err = s.ctx.Err()
	case s.items[s.cur].err != nil:
		s.err = fmt.Errorf("stream: %s: %w", s.items[s.cur].Name, s.items[s.cur].err)
	default:
		it = s.items[s.cur].Item
	}
	err := s.err
	if err != nil {
		s.shutdown()
	}
	s.mu.Unlock()
	if notify {
		s.progress(st)
	}
	return it, err
}

// shutdown stops the background goroutine and releases every held item,
// once. It is called with s.mu held and returns with it held.
func (s *Stream) shutdown() {
	if s.closed {
		return
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	gone := s.releaseItems(s.hi, nil)
	s.stopWake()
	s.cancel()
	err := releaseSpans(gone, s.unusedGrains(gone), s.grain, s.drop)
	if s.relErr == nil {
		s.relErr = err
	}
	s.freed = s.hi
}

// Close stops the stream and releases every page it holds. It returns the
// first error met releasing pages, if any.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = errClosed
	}
	s.shutdown()
	return s.relErr
}

var errClosed = errors.New("stream: closed")

// Stats returns the stream's progress so far.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
