// Package stream hands out a model's weights one at a time, in the order the
// model uses them, with their pages resident: a background goroutine
// prefetches ahead as far as a byte budget allows, and the pages of each
// weight are released once the caller moves on.
//
// The budget bounds the weight pages a [Stream] holds (prefetched or in
// use), counted as the page-aligned union of the items' byte ranges: tensors
// that share bytes or a page count them once, and a page is released only
// when no item of any stream in the process still holds it. Where the
// kernel's readahead window is known (Linux) and two windows fit in half
// the budget, the stream lets the kernel read ahead and keeps those windows
// of the budget free for it; otherwise it reads exactly the ranges it holds
// (fadvise WILLNEED) and maps them with readahead off. An item larger than
// half of what remains is handed over in windows (consecutive items with the
// same Tensor, see [Item.Part]), so that the next window is read while one
// is in use.
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
	"os"
	"sync"

	"github.com/edgeload/edgeload/loader"
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
	// are resident until the next call to Next or Close. In windowed mode
	// (mmapfile.ModeWindowed) the stream then unmaps the window: views of
	// the item must not be kept past that call.
	Data segment.Segment
	// Part is the window's number, from 0, of Parts windows; 0 of 1 for an
	// item handed over whole. Offset is Data's offset within the whole item.
	Part, Parts int
	Offset      int64
}

// Stats describes a stream's progress.
type Stats struct {
	Items     int   // items in the order (each window counts)
	Done      int   // items handed out and released
	Bytes     int64 // bytes of all items
	DoneBytes int64 // bytes of the items released
	Resident  int64 // bytes of the pages the stream holds now
	Peak      int64 // the largest Resident so far
	Budget    int64
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

// WithProgress calls fn with the stream's Stats after each item is released,
// on the goroutine that called Next.
func WithProgress(fn func(Stats)) Option { return func(c *config) { c.progress = fn } }

// work is an item with its pages and the outcome of its prefetch.
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
	budget   int64
	limit    int64 // the budget less what the kernel may read beside it
	grain    int64 // exact reads start in grain-aligned pieces; 0: the kernel reads ahead
	ra       int64 // the kernel's readahead window when it reads ahead
	drop     bool
	progress func(Stats)

	ctx      context.Context
	cancel   context.CancelFunc
	stopWake func() bool
	done     chan struct{}

	mu       sync.Mutex
	cond     sync.Cond
	held     []int // items prefetched or in use, in order
	ready    int   // items [0, ready) are prefetched
	cur      int   // the item the caller holds, -1 before the first
	closed   bool  // the prefetcher must stop
	released bool  // everything held was released
	err      error // what Next returns from now on
	stats    Stats
}

// New starts streaming m's weights: by default every delegate blob and
// tensor of m in use order (loader.Model.UseOrder), for a program method by
// method, each method's delegate blobs first (a segment shared by blobs only
// once). Tensors with no bytes in reach (unresolved external tensors) are
// left out. Cancelling ctx stops the prefetching; the next call to Next
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
	s := &Stream{budget: budget, drop: c.drop, progress: c.progress, done: make(chan struct{}), cur: -1}
	if ra := readAhead(items); ra > 0 && raWindows*ra <= budget/2 {
		s.limit, s.ra = budget-raWindows*ra, ra
	} else {
		s.grain = ps
		for s.grain*2 <= min(maxGrain, budget/8) {
			s.grain *= 2
		}
		s.limit = budget - s.grain
	}
	s.items = split(items, s.limit)
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
	go s.prefetch()
	return s, nil
}

// plan lists the items of m in the configured order.
func plan(m *loader.Model, c *config) ([]Item, error) {
	var items []Item
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
	p := m.Program()
	if p == nil {
		idx, err := m.UseOrder(c.method)
		if err != nil {
			return nil, err
		}
		return items, addTensors(idx)
	}
	type blob struct {
		f      *mmapfile.File
		off, n int64
	}
	seen := make(map[blob]bool)
	found := false
	for _, meth := range p.Methods() {
		if c.method != "" && meth.Name != c.method {
			continue
		}
		found = true
		for _, di := range meth.Delegates {
			d := p.Delegates()[di]
			b := blob{d.Data.File(), d.Data.Offset(), d.Data.Len()}
			if b.f == nil || seen[b] {
				continue
			}
			seen[b] = true
			items = append(items, Item{Tensor: -1, Delegate: di, Name: fmt.Sprintf("delegate %s/%d", meth.Name, d.Index), Data: d.Data})
		}
		idx, err := m.UseOrder(meth.Name)
		if err != nil {
			return nil, err
		}
		if err := addTensors(idx); err != nil {
			return nil, err
		}
	}
	if !found && c.method != "" {
		return nil, fmt.Errorf("stream: method %q: %w", c.method, loader.ErrNotFound)
	}
	return items, nil
}

// split turns each item whose pages exceed half the budget into windows of
// at most half the budget, their ends on page boundaries, and computes the
// pages of every item.
func split(items []Item, budget int64) []work {
	var out []work
	for _, it := range items {
		f := it.Data.File()
		sp := coverSpan(f, it.Data.Offset(), it.Data.Len())
		ps := int64(f.PageSize())
		w := max(ps, budget/2/ps*ps)
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
			out = append(out, work{Item: part, span: coverSpan(f, at, e-at)})
			at = e
		}
	}
	return out
}

// heldSpans returns the spans of the held items, except item skip.
func (s *Stream) heldSpans(skip int) []span {
	spans := make([]span, 0, len(s.held))
	for _, i := range s.held {
		if i != skip {
			spans = append(spans, s.items[i].span)
		}
	}
	return spans
}

// prefetch runs on its own goroutine. It admits items in order while the
// budget has room for their pages not held already, starts reading each
// admitted item at once, and maps them in order.
func (s *Stream) prefetch() {
	defer close(s.done)
	admitted := 0
	var start []int
	for i := range s.items {
		s.mu.Lock()
		for {
			if s.closed || s.ctx.Err() != nil {
				s.mu.Unlock()
				return
			}
			for admitted < len(s.items) {
				w := &s.items[admitted]
				need := bytesOf(uncovered(w.span, s.heldSpans(-1)))
				if s.stats.Resident+need > s.limit && len(s.held) > 0 {
					break
				}
				s.held = append(s.held, admitted)
				s.stats.Resident += need
				s.stats.Peak = max(s.stats.Peak, s.stats.Resident)
				holdSpan(w.span)
				start = append(start, admitted)
				admitted++
			}
			if admitted > i {
				break
			}
			s.cond.Wait()
		}
		s.mu.Unlock()
		if s.grain > 0 {
			for _, j := range start {
				s.items[j].readahead(s.grain)
			}
		}
		start = start[:0]

		w := &s.items[i]
		err := w.populate(s.grain > 0)
		if s.grain == 0 && i%watchEvery == 0 {
			s.watchReadahead(admitted)
		}
		if err != nil || s.shrank(w) {
			// Prefetch reports a page past the end of the file as an
			// error; a guarded touch says whether that is truncation.
			if terr := w.Data.Touch(); terr != nil {
				err = terr
			} else {
				err = nil
			}
		}
		s.mu.Lock()
		w.err = err
		s.ready = i + 1
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// watchEvery is how many items apart watchReadahead looks.
const watchEvery = 8

// raWindows is how many readahead windows beyond the pages it holds the
// stream leaves free for the kernel's readahead (which reads the next window
// when a read reaches the current one).
const raWindows = 2

// maxGrain is the largest grain: the unit in which reads start.
const maxGrain = 256 << 10

// watchReadahead measures (mincore) how far the kernel has read past the
// last admitted item and, if that is more than the stream keeps free, keeps
// that much (and one window more) free from now on.
func (s *Stream) watchReadahead(admitted int) {
	last := s.items[admitted-1].span
	f := last.f
	free := s.budget - s.limit
	n := min(2*free, f.Len()-last.end)
	if n <= 0 {
		return
	}
	r, _, err := f.Resident(last.end, n)
	if err != nil {
		return
	}
	if ahead := int64(r) * int64(f.PageSize()); ahead > free {
		s.mu.Lock()
		s.limit = max(s.budget-ahead-s.ra, s.budget/4)
		s.mu.Unlock()
	}
}

// readahead starts reading w's pages into the page cache (fadvise WILLNEED,
// which reads exactly the range, where a fault would read ahead past it), in
// grain-aligned pieces: the page cache's folios then never straddle a grain,
// and the one a released neighbour leaves behind fits in the grain the
// budget keeps free.
func (w *work) readahead(grain int64) {
	f := w.Data.File()
	if f.Fd() == ^uintptr(0) {
		return
	}
	end := min(w.span.end, f.Len())
	for at := w.span.start; at < end; {
		e := min((at+grain)&^(grain-1), end)
		platform.FadviseWillNeed(f, at, e-at)
		at = e
	}
}

// populate maps w's pages into the process (madvise POPULATE_READ). When
// the stream reads exactly, the range is advised random meanwhile, so that
// a page the readahead has not brought in is read alone (a fault reads far
// ahead and behind otherwise).
func (w *work) populate(exact bool) error {
	if _, err := w.Data.Bytes(); err != nil { // in windowed mode, map the window first
		return err
	}
	if !exact {
		return w.Data.Prefetch()
	}
	w.Data.Advise(mmapfile.AdviceRandom)
	err := w.Data.Prefetch()
	w.Data.Advise(mmapfile.AdviceNormal)
	return err
}

// readAhead returns the largest kernel readahead window of the files the
// items are in, or 0 when one is unknown or a file is not mapped.
func readAhead(items []Item) int64 {
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

// shrank reports whether the file holding w is now shorter than w's end.
func (s *Stream) shrank(w *work) bool {
	f := w.Data.File()
	if f.Name() == "" || !f.ZeroCopy() {
		return false
	}
	fi, err := os.Stat(f.Name())
	return err == nil && fi.Size() < w.Data.Offset()+w.Data.Len()
}

// release gives up item i's pages: those no other item of any stream holds.
func (s *Stream) release(i int) error {
	k := -1
	for j, h := range s.held {
		if h == i {
			k = j
			break
		}
	}
	if k < 0 {
		return nil
	}
	s.held = append(s.held[:k], s.held[k+1:]...)
	w := &s.items[i]
	s.stats.Resident -= bytesOf(uncovered(w.span, s.heldSpans(-1)))
	s.cond.Broadcast()
	return releaseSpan(w.span, s.drop)
}

// Next releases the item handed out before (if any) and returns the next
// one, waiting for its prefetch. At the end it returns io.EOF; after an
// error (a truncated file gives one wrapping ErrTruncated, a cancelled
// context its error) it releases everything and returns that error again.
func (s *Stream) Next() (Item, error) {
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return Item{}, err
	}
	var rerr error
	notify := false
	if s.cur >= 0 {
		rerr = s.release(s.cur)
		s.stats.Done++
		s.stats.DoneBytes += s.items[s.cur].Data.Len()
		notify = s.progress != nil
	}
	st := s.stats
	if rerr == nil {
		s.cur++
		for s.cur < len(s.items) && s.ready <= s.cur && s.ctx.Err() == nil {
			s.cond.Wait()
		}
	}
	var it Item
	switch {
	case rerr != nil:
		s.err = fmt.Errorf("stream: releasing %s: %w", s.items[s.cur].Name, rerr)
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

// shutdown stops the prefetcher and releases every held item. It is called
// with s.mu held and returns with it held.
func (s *Stream) shutdown() error {
	if s.released {
		return nil
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	var errs []error
	for len(s.held) > 0 {
		errs = append(errs, s.release(s.held[0]))
	}
	s.released = true
	s.cancel()
	s.stopWake()
	return errors.Join(errs...)
}

// Close stops the stream and releases every page it holds. It returns the
// first release error; a second Close returns nil.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = errClosed
	}
	return s.shutdown()
}

var errClosed = errors.New("stream: closed")

// Stats returns the stream's progress so far.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}
