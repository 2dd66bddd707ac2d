// Package stream hands out a model's weights one at a time, in the order the
// model uses them, with their bytes in memory: a background goroutine reads
// ahead as far as a byte budget allows, and gives back the memory of the
// weights the caller has moved past.
//
// A stream makes one pass over the order, handing an item larger than half
// of its room over in windows ([Item.Part]). [WithPasses] makes it a decode
// loop: the order again and again, items whole, with a retained set
// ([WithRetain]) resident across passes. The budget counts mapped pages in
// aligned grains of up to 2 MiB, a grain once however many items or streams
// in the process hold it; docs/STREAMING.md says what a caller can rely on.
package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/signing"
)

// DefaultBudget is the budget of a stream made without WithBudget.
const DefaultBudget = 64 << 20

// RetainAuto, given to WithRetain, lets the stream choose the retained set:
// as much as fits in the budget after the streaming room.
const RetainAuto = -1

// ErrTruncated is returned when the file shrank under the stream.
var ErrTruncated = mmapfile.ErrTruncated

// ErrBudget is wrapped by New's error when the budget cannot hold what the
// stream needs (the message names the sizes).
var ErrBudget = errors.New("stream: budget too small")

// Item is one weight the stream hands out: a tensor, a delegate blob, or a
// window of either.
type Item struct {
	// Tensor is the index of the tensor in Model.Tensors, or -1 for a
	// delegate blob.
	Tensor int
	// Delegate is the index of the blob in the program's delegates, or -1
	// for a tensor.
	Delegate int
	// Name is the tensor's name, or "delegate METHOD/INDEX" for a blob.
	Name string
	// Data holds the item's bytes (for a window, the window's). A
	// streamed item's bytes are valid until the next call to Next or Close;
	// read with the direct reader, Data is a view of the stream's buffer
	// (its File is not the model's). A retained item's Data is a view of
	// the mapping, valid until Close.
	Data segment.Segment
	// Part is the window's number, from 0, of Parts windows; 0 of 1 for an
	// item handed over whole. Offset is Data's offset within the whole item.
	Part, Parts int
	Offset      int64
	// Pass is the pass the item belongs to, from 0.
	Pass int
	// Retained reports whether the item stays resident across passes.
	Retained bool
}

// Stats describes a stream's progress.
type Stats struct {
	Items     int   // items in one pass (each window counts)
	Done      int   // items of the current pass handed out and finished with
	Bytes     int64 // bytes of the items of one pass
	DoneBytes int64 // bytes of the current pass's items finished with
	Pass      int   // the current pass, from 0
	Passes    int   // the passes the stream makes; 0 for until Close
	// Resident is the bytes the stream holds now: retained weights
	// (reserved at New), mapped grains it holds, and the part of its
	// direct-read buffer it has used. Peak is the largest Resident so far.
	Resident, Peak int64
	Budget         int64
	Retained       int64         // bytes of the retained weights (whole grains)
	Read           int64         // bytes the stream has read from the file
	Stall          time.Duration // time Next has waited for items to be read
	Reader         string        // "mapped" or "direct"
	// Order is where the order comes from: "use" (the model's use
	// order), "file" (the format records none: file order), or "given"
	// (WithOrder).
	Order string
	// CPU is the CPU time of the stream's background goroutine, which
	// reads, maps and releases, and SystemCPU the part of it spent in the
	// kernel; both 0 where the system does not report a thread's CPU time.
	CPU, SystemCPU time.Duration
}

// PassStats describes one finished pass.
type PassStats struct {
	Pass  int   // from 0
	Items int   // items handed out
	Bytes int64 // their bytes
	// Read is the bytes the stream read for the pass's items (a retained
	// weight counts in the pass that first reads it).
	Read int64
	// Stall is the time Next waited for the pass's items; Wall the time
	// from the pass's first Next to the Next that moved past its last item.
	Stall, Wall time.Duration
	Peak        int64 // the largest Resident during the pass
	Retained    int64 // bytes of the retained weights
}

// Reader selects how streamed weights are read: mapped (the stream maps a
// weight's pages and releases them after use; with a known kernel readahead
// window it lets the kernel read ahead) or direct (O_DIRECT reads into a
// buffer allocated once, around the page cache; Item.Data is then a view of
// that buffer). Retained weights are always views of the mapping.
type Reader int

// The readers. ReadAuto picks ReadDirect in passes mode where the file
// system supports direct I/O, and ReadMapped otherwise.
const (
	ReadAuto Reader = iota
	ReadMapped
	ReadDirect
)

// String returns "auto", "mapped" or "direct".
func (r Reader) String() string {
	switch r {
	case ReadMapped:
		return "mapped"
	case ReadDirect:
		return "direct"
	}
	return "auto"
}

type config struct {
	budget   int64
	method   string
	order    []int
	ordered  bool
	drop     bool
	progress func(Stats)
	passes   int
	retain   int64 // bytes; RetainAuto; 0 for none
	keep     []int // WithRetainTensors
	reader   Reader
	checks   map[*mmapfile.File]*signing.Check
}

// Option configures New.
type Option func(*config)

// WithBudget sets the most bytes of weights the stream holds in memory
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
// Passes mode always does.
func WithDropCache() Option { return func(c *config) { c.drop = true } }

// WithProgress calls fn with the stream's Stats each time the caller
// finishes with an item (calls Next again), on the goroutine that called
// Next.
func WithProgress(fn func(Stats)) Option { return func(c *config) { c.progress = fn } }

// WithPasses makes the stream read its order n times, pass after pass,
// and then end (io.EOF); n = 0 repeats it until Close. Items are then never
// split into windows.
func WithPasses(n int) Option { return func(c *config) { c.passes = n } }

// WithRetain keeps n bytes of weights resident across passes, chosen by the
// stream and spread through the order so that each pass's reads are spread
// over its compute; RetainAuto retains as much as the budget holds after
// the streaming room. The default retains nothing.
func WithRetain(n int64) Option { return func(c *config) { c.retain, c.keep = n, nil } }

// WithRetainTensors keeps the given tensors (indices into Model.Tensors)
// resident across passes.
func WithRetainTensors(tensors []int) Option {
	return func(c *config) { c.keep, c.retain = slices.Clone(tensors), 0 }
}

// WithReader selects how streamed weights are read (default ReadAuto).
func WithReader(r Reader) Option { return func(c *config) { c.reader = r } }

// work is one item of the order with what the stream works out for it at
// New: its grains, and whether it is retained.
type work struct {
	Item
	span     span  // the grains covering it
	cover    int64 // direct reader: the bytes its aligned read takes
	retained bool
	keep     int64 // a retained item: the bytes of its grains no earlier retained item holds
}

// slot is the state of one handing-out of an item: the k-th pass's copy
// of order item i lives in slots[i] while it is held (a stream holds at
// most one pass's worth of items).
type slot struct {
	err  error
	data segment.Segment // direct reader: the buffer's view
	at   int64           // direct reader: where in the buffer its read went
}

// Stream hands out a model's weights in order under a budget. Next and Close
// are for one goroutine; Stats may be called from any. Several streams may
// run over one Model at the same time.
type Stream struct {
	order    []work
	n        int64 // len(order)
	total    int64 // items over all passes; math.MaxInt64 for until Close
	limit    int64 // the most the held grains and buffer may take
	grain    int64
	ra       int64 // the kernel's readahead window; 0 when the stream reads exactly the grains it holds
	fetch    int64 // the bytes of one WILLNEED: a grain, or the kernel's readahead window where larger
	drop     bool
	progress func(Stats)
	direct   *direct // nil for the mapped reader

	ctx      context.Context
	cancel   context.CancelFunc
	stopWake func() bool
	done     chan struct{}

	mu        sync.Mutex
	cond      sync.Cond
	slots     []slot
	count     map[grainKey]int32 // how many held items cover each grain
	limbo     map[grainKey]bool  // grains a release in progress gives up
	hashed    int64              // with a signature: items [0, hashed) are written to their checks
	proven    int64              // with a signature: items [0, proven) may be handed out
	verr      error              // the first failure of the checks
	wholeDone bool               // the files no item lies in are checked
	pending   int                // shards handed to the hashing workers and not yet checked
	gathering bool               // with shards: a shard being gathered has some of its bytes, not all
	readIdle  bool               // the background goroutine waits: nothing admitted to read, no room to admit
	nextWait  bool               // Next waits for its item
	lo, hi    int64              // items [lo, hi) are held: admitted and not released
	ready     int64              // items [0, ready) are read
	cur       int64              // the item the caller holds, -1 before the first
	freed     int64              // items [0, freed) are released
	finished  int64              // bytes of items [lo, cur)
	closed    bool               // shutdown has run: the background goroutine stops, everything held is released
	relErr    error              // the first error of a release
	err       error              // what Next returns from now on
	stats     Stats
	pass      PassStats   // the current pass
	history   []PassStats // the finished passes
	passT0    time.Time
	readBy    [2]int64 // bytes read for the items of pass p, at readBy[p%2]

	checks   map[*mmapfile.File]*fileCheck // with a signature: each file's check
	scratch  []byte                        // the checking goroutine's buffer for the bytes between items
	gapRead  int64                         // bytes the checking goroutine has read from the files itself
	hashDone chan struct{}                 // closed when the checking goroutine ends
}

// New starts streaming m's weights: by default every delegate blob and
// tensor of m in use order (loader.Model.UseOrder), for a program method by
// method, each method's delegate blobs first (a segment shared by blobs only
// once). Tensors with no bytes in reach (unresolved external tensors) are
// left out. Cancelling ctx stops the reading; the next call to Next
// returns ctx's error and releases everything. Call Close when done.
func New(ctx context.Context, m *loader.Model, opts ...Option) (*Stream, error) {
	c := config{budget: DefaultBudget, passes: 1}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.passes < 0 {
		return nil, fmt.Errorf("stream: %d passes", c.passes)
	}
	multi := c.passes != 1
	items, orderName, err := plan(m, &c)
	if err != nil {
		return nil, err
	}
	ps := int64(platform.PageSize())
	for _, it := range items {
		if f := it.Data.File(); f != nil {
			ps = max(ps, int64(f.PageSize()))
		}
	}
	if c.budget < 2*ps {
		return nil, fmt.Errorf("%w: a budget of %s is less than the %s (two pages) the smallest window needs", ErrBudget, format.SizeName(c.budget), format.SizeName(2*ps))
	}
	budget := c.budget
	s := &Stream{drop: c.drop || multi, progress: c.progress, done: make(chan struct{}), cur: -1, grain: ps,
		count: make(map[grainKey]int32), limbo: make(map[grainKey]bool)}
	top := int64(maxGrain)
	if multi {
		top = maxPassGrain
	}
	for s.grain*2 <= min(top, budget/8) {
		s.grain *= 2
	}
	s.stats.Order, s.stats.Passes, s.stats.Budget = orderName, c.passes, budget

	if (c.reader == ReadDirect || c.reader == ReadAuto && multi) && len(items) > 0 {
		d, err := openDirect(items)
		if err != nil && c.reader == ReadDirect {
			return nil, fmt.Errorf("stream: %w", err)
		}
		s.direct = d // nil: the file system has no direct I/O, read mapped
	}
	s.stats.Reader = "mapped"
	s.limit = budget
	ra := kernelWindow(items)
	s.fetch = max(s.grain, ra)
	if s.direct != nil {
		s.stats.Reader = "direct"
	} else if ra > 0 && raWindows*ra <= budget/2 {
		s.limit, s.ra = budget-raWindows*ra, ra
	} else {
		// A page cache folio larger than a grain may outlive the release
		// of the grain it straddles; the budget keeps room for one.
		s.limit = budget - s.grain
	}

	ws := make([]work, len(items))
	for i, it := range items {
		it.Parts = 1
		ws[i] = work{Item: it, span: coverSpan(it.Data.File(), it.Data.Offset(), it.Data.Len(), s.grain)}
	}
	s.covers(ws)
	if err := s.chooseRetained(ws, &c); err != nil {
		s.direct.close()
		return nil, err
	}
	s.order = ws // release gives up the retained items it lists
	if err := s.checkRoom(ws, multi); err != nil {
		s.release(nil)
		return nil, err
	}
	if !multi {
		s.order = split(ws, s.limit-s.stats.Retained, s.grain)
		s.covers(s.order)
	}
	if s.direct != nil {
		if err := s.direct.alloc(s.order, s.limit-s.stats.Retained); err != nil {
			s.release(nil)
			return nil, fmt.Errorf("stream: %w", err)
		}
	}
	if err := s.prepareChecks(c.checks, c.passes); err != nil {
		s.release(nil)
		return nil, err
	}
	s.n = int64(len(s.order))
	s.total = s.n * int64(c.passes)
	if c.passes == 0 {
		s.total = math.MaxInt64
		if s.n == 0 {
			s.total = 0
		}
	}
	s.slots = make([]slot, len(s.order))
	s.cond.L = &s.mu
	s.stats.Items = len(s.order)
	for i := range s.order {
		s.stats.Bytes += s.order[i].Data.Len()
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.stopWake = context.AfterFunc(s.ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	go s.run()
	if s.checks != nil {
		s.hashDone = make(chan struct{})
		go s.hash()
	}
	return s, nil
}

// maxGrain is the largest grain: the largest page cache folio and huge
// mapping of a file with 4 KiB pages on x86-64 and arm64.
const maxGrain = 2 << 20

// maxPassGrain is the largest grain of a passes stream, whose retained
// weights are held in whole grains for as long as it runs.
const maxPassGrain = 64 << 10

// raWindows is how many readahead windows beyond the grains it holds the
// stream leaves free for the kernel's readahead (which reads the next window
// when a read reaches the current one).
const raWindows = 2

// checkRoom reports an error when the room the retained items leave cannot
// hold the largest streamed item of a passes stream (whole), or a grain
// of a single pass (which hands large items over in windows).
func (s *Stream) checkRoom(ws []work, multi bool) error {
	room := s.limit - s.stats.Retained
	if !multi {
		if room < s.grain {
			return fmt.Errorf("%w: the budget of %s leaves %s for streaming (%s retained, %s kept for the kernel's readahead), less than the %s (a grain) the smallest window needs",
				ErrBudget, format.SizeName(s.stats.Budget), format.SizeName(max(room, 0)), format.SizeName(s.stats.Retained), format.SizeName(s.stats.Budget-s.limit), format.SizeName(s.grain))
		}
		return nil
	}
	var big *work
	var need int64
	for i := range ws {
		w := &ws[i]
		if w.retained {
			continue
		}
		if n := s.room(w); n > need {
			big, need = w, n
		}
	}
	if big != nil && need > room {
		return fmt.Errorf("%w: %s (%s) needs %s in memory at once, but the budget of %s leaves %s for streaming (%s retained, %s kept for the kernel's readahead)",
			ErrBudget, big.Name, format.SizeName(big.Data.Len()), format.SizeName(need), format.SizeName(s.stats.Budget),
			format.SizeName(room), format.SizeName(s.stats.Retained), format.SizeName(s.stats.Budget-s.limit))
	}
	return nil
}

// release gives up the retained set with the grains in gone, and closes
// the direct reader; it returns the first error. New calls it when it
// fails after holding the retained set, shutdown once the stream stops.
func (s *Stream) release(gone []span) error {
	gone = s.releaseRetained(gone)
	return cmp.Or(releaseSpans(gone, s.unusedGrains(gone), s.grain, s.drop), s.direct.close())
}

// plan lists the items of m in the configured order, and says where the
// order comes from.
func plan(m *loader.Model, c *config) ([]Item, string, error) {
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
		return items, "given", addTensors(c.order)
	}
	name := "use"
	if fo, ok := m.Impl().(format.FileOrderer); ok && fo.FileOrder() {
		name = "file"
	}
	groups := []string{c.method}
	if c.method == "" && m.Groups() != nil {
		groups = m.Groups()
	}
	bu, _ := m.Impl().(format.BlobUser)
	seen := make(map[segment.Segment]bool) // a segment shared by blobs once
	for _, g := range groups {
		idx, err := m.UseOrder(g)
		if err != nil {
			return nil, "", err
		}
		if bu != nil {
			for _, d := range bu.GroupBlobs(g) {
				if d.Data.File() == nil || seen[d.Data] {
					continue
				}
				seen[d.Data] = true
				items = append(items, Item{Tensor: -1, Delegate: d.Index, Name: d.Name, Data: d.Data})
			}
		}
		if err := addTensors(idx); err != nil {
			return nil, "", err
		}
	}
	return items, name, nil
}

// split turns each item whose grains exceed half the room into windows of
// at most half the room, their ends on grain boundaries, and computes the
// grains of every window.
func split(ws []work, room, grain int64) []work {
	out := make([]work, 0, len(ws))
	w := max(grain, room/2/grain*grain)
	for _, x := range ws {
		it := x.Item
		f := it.Data.File()
		if x.retained || x.span.bytes() <= w {
			out = append(out, x)
			continue
		}
		start, end := it.Data.Offset(), it.Data.Offset()+it.Data.Len()
		sp := x.span
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

// at returns the order item that virtual item v hands out.
func (s *Stream) at(v int64) *work { return &s.order[v%s.n] }

// slot returns the state of virtual item v.
func (s *Stream) slot(v int64) *slot { return &s.slots[v%s.n] }

// data returns the bytes of read virtual item v, with s.mu held: its slot's
// buffer for the direct reader, else its view of the file.
func (s *Stream) data(v int64) segment.Segment {
	if w := s.at(v); s.direct == nil || w.retained {
		return w.Data
	}
	return s.slot(v).data
}

// streamed reports whether virtual item v needs reading: a streamed item,
// or a retained one in the first pass.
func (s *Stream) streamed(v int64) bool { return !s.at(v).retained || v < s.n }

// run is the background goroutine. It releases what the caller has
// finished with, admits items while the budget has room, and reads them in
// order. Its thread is its own, so that Stats.CPU can tell its CPU time.
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
	started := int64(0) // items [0, started) have their reads started
	var read span       // the grains read last, forgotten at each release
	for {
		s.mu.Lock()
		for !s.closed && s.ctx.Err() == nil && !s.wantRelease() && s.ready == s.hi {
			s.admit()
			if s.ready < s.hi {
				break
			}
			if !s.readIdle {
				s.readIdle = true
				s.wakeChecks()
			}
			s.cond.Wait()
		}
		s.readIdle = false
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
			for _, sp := range gone {
				s.limbo[grainKey{sp.f, sp.start / s.grain}] = true
			}
			s.admit()
			clear(s.limbo)
			free := s.unusedGrains(gone)
			to := s.lo
			s.mu.Unlock()
			err := releaseSpans(gone, free, s.grain, s.drop)
			s.mu.Lock()
			s.relErr = cmp.Or(s.relErr, err)
			s.freed = to
			read = span{}
			cpu()
			s.cond.Broadcast()
			s.mu.Unlock()
			continue
		}
		s.admit()
		to, v := s.hi, s.ready
		s.mu.Unlock()

		// Items that need no reading (retained, after the first pass) are
		// ready at once.
		j := v
		for j < to && !s.streamed(j) {
			j++
		}
		var err error
		var data segment.Segment
		if j == v && s.direct != nil && !s.at(v).retained {
			data, err = s.direct.read(s.at(v), s.slotAt(v))
			j = v + 1
		} else if j == v {
			for started = max(started, v); s.ra == 0 && started < to; started++ {
				if !s.mappedRead(started) {
					continue
				}
				sp := s.at(started).span
				if sp.f == read.f && sp.start < read.end && read.start <= sp.start {
					sp.start = min(read.end, sp.end)
				}
				fetchGrains(sp, s.fetch)
				read = s.at(started).span
			}
			j, err = s.populate(v, to)
		}
		s.mu.Lock()
		s.slot(v).err, s.slot(v).data = err, data
		s.ready = j
		cpu()
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// slotAt returns where in the buffer virtual item v's read goes.
func (s *Stream) slotAt(v int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slot(v).at
}

// mappedRead reports whether virtual item v is read through the mapping:
// a retained item in the first pass, or any item of the mapped reader.
func (s *Stream) mappedRead(v int64) bool {
	return s.streamed(v) && (s.direct == nil || s.at(v).retained)
}

// populate maps the pages of item v and of the next admitted items in its
// grains (in windowed mode item v alone; madvise POPULATE_READ), and
// returns the item after the last one it mapped. When the stream reads
// exactly, the range is advised random meanwhile, so that a page the
// readahead has not brought in is read alone.
func (s *Stream) populate(v, to int64) (int64, error) {
	w := s.at(v)
	f, lo, hi := w.Data.File(), w.Data.Offset(), w.Data.Offset()+w.Data.Len()
	j := v + 1
	for ; f.Mode() == mmapfile.ModeWhole && j < to && s.mappedRead(j) && s.at(j).span.within(w.span); j++ {
		d := s.at(j).Data
		lo, hi = min(lo, d.Offset()), max(hi, d.Offset()+d.Len())
	}
	_, err := w.Data.Bytes() // in windowed mode, maps the window
	if err == nil {
		if testHookRead != nil {
			testHookRead("populate", f, lo, hi-lo)
		}
		if s.ra == 0 {
			f.Advise(lo, hi-lo, mmapfile.AdviceRandom)
		}
		err = f.Advise(lo, hi-lo, mmapfile.AdvicePopulateRead)
		if s.ra == 0 {
			f.Advise(lo, hi-lo, mmapfile.AdviceNormal)
		}
	}
	if err != nil {
		// A page past the end of the file fails the read; a guarded
		// touch says whether that is truncation.
		return v + 1, w.Data.Touch()
	}
	return j, nil
}

// fetchGrains starts reading the grains of sp into the page cache (fadvise
// WILLNEED, which reads exactly the range, where a fault would read ahead
// past it), chunk bytes per call: the kernel reads at most a readahead
// window per call.
func fetchGrains(sp span, chunk int64) {
	end := min(sp.end, sp.f.Len())
	for at := sp.start; at < end; at += chunk {
		if testHookRead != nil {
			testHookRead("fetch", sp.f, at, min(chunk, end-at))
		}
		sp.f.WillNeed(at, min(chunk, end-at))
	}
}

// testHookRead, set by tests, sees every read the stream starts: how
// ("fetch": WILLNEED, "populate", "direct"), the file and the byte range.
var testHookRead func(how string, f *mmapfile.File, off, n int64)

// kernelWindow returns the largest kernel readahead window of the files
// the items are in, or 0 when one is unknown or a file is not mapped.
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
	now := time.Now()
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return Item{}, err
	}
	notify := false
	if s.cur >= 0 {
		d := s.at(s.cur).Data.Len()
		s.stats.Done++
		s.stats.DoneBytes += d
		s.finished += d
		s.pass.Items++
		s.pass.Bytes += d
		notify = s.progress != nil
	}
	st := s.stats
	s.cur++
	if s.cur == 0 || s.n > 0 && s.cur%s.n == 0 {
		if s.cur > 0 {
			s.endPass(now)
		}
		s.passT0 = now
	}
	if s.direct != nil && s.lo < s.cur {
		s.releaseItems(s.cur, nil)
		s.freed = s.lo
		s.cond.Broadcast()
	}
	if s.wantRelease() {
		s.cond.Broadcast()
	}
	waited := false
	for s.ctx.Err() == nil && s.relErr == nil && (s.verr == nil || s.cur < s.proven || s.pending > 0) && s.waiting() {
		waited = true
		if !s.nextWait {
			s.nextWait = true
			s.wakeChecks()
		}
		s.cond.Wait()
	}
	s.nextWait = false
	if waited {
		d := time.Since(now)
		s.stats.Stall += d
		s.pass.Stall += d
	}
	var it Item
	switch {
	case s.relErr != nil:
		s.err = fmt.Errorf("stream: releasing: %w", s.relErr)
	case s.verr != nil && s.cur >= s.proven && s.pending == 0:
		s.err = s.verr
	case s.cur >= s.total && s.checks != nil && s.finishChecks() != nil:
		s.err = s.verr
	case s.cur >= s.total:
		s.err = io.EOF
	case s.ctx.Err() != nil:
		s.err = s.ctx.Err()
	case s.slot(s.cur).err != nil:
		s.err = fmt.Errorf("stream: %s: %w", s.at(s.cur).Name, s.slot(s.cur).err)
	default:
		w := s.at(s.cur)
		it = w.Item
		it.Pass, it.Retained, it.Data = int(s.cur/s.n), w.retained, s.data(s.cur)
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

// waiting reports whether Next must wait: for the item it hands out next
// to be read (with a signature, proven), or at the end for the checks to
// finish.
func (s *Stream) waiting() bool {
	if s.checks == nil {
		return s.cur < s.total && s.ready <= s.cur
	}
	if s.cur < s.total {
		return s.proven <= s.cur
	}
	return s.hashed < s.total || !s.wholeDone || s.pending > 0
}

// endPass records the pass that the caller has just finished, with s.mu
// held.
func (s *Stream) endPass(now time.Time) {
	p := int(s.cur/s.n) - 1
	s.pass.Pass = p
	s.pass.Wall = now.Sub(s.passT0)
	s.pass.Retained = s.stats.Retained
	s.pass.Read = s.readBy[p%2]
	s.readBy[p%2] = 0
	s.pass.Peak = max(s.pass.Peak, s.stats.Resident)
	s.history = append(s.history, s.pass)
	s.pass = PassStats{Peak: s.stats.Resident}
	if s.cur < s.total {
		s.stats.Pass = p + 1
		s.stats.Done, s.stats.DoneBytes = 0, 0
	}
}

// noteResident records a new Resident, with s.mu held.
func (s *Stream) noteResident() {
	s.stats.Peak = max(s.stats.Peak, s.stats.Resident)
	s.pass.Peak = max(s.pass.Peak, s.stats.Resident)
}

// shutdown stops the background goroutine and releases every held item
// and the retained set, once. It is called with s.mu held and returns with
// it held.
func (s *Stream) shutdown() {
	if s.closed {
		return
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	if s.hashDone != nil {
		<-s.hashDone
	}
	s.mu.Lock()
	s.stopWake()
	s.cancel()
	s.relErr = cmp.Or(s.relErr, s.release(s.releaseItems(s.hi, nil)))
	if s.direct != nil {
		s.stats.Resident = 0
	}
	s.freed = s.hi
}

// Close stops the stream and releases every page and buffer it holds. It
// returns the first error met releasing them, if any.
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

// Passes returns the statistics of the passes finished so far, one per
// pass in order. The slice is the caller's.
func (s *Stream) Passes() []PassStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}
