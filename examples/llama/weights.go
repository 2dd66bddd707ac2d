package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
	"github.com/edgeload/edgeload/stream"
)

// mmapWeights reads the matrices straight from the mapping: plain page
// faults, with the kernel's LRU deciding what stays in memory. In windowed
// mode (a 32-bit address space) it unmaps each matrix's window when it moves
// on, as the kernel would drop pages, so that a pass fits the address space.
type mmapWeights struct {
	m    *loader.Model
	last segment.Segment
}

func (w *mmapWeights) begin() error { return nil }
func (w *mmapWeights) end() error   { return nil }
func (w *mmapWeights) close() error { return nil }
func (w *mmapWeights) get(i int) ([]byte, error) {
	if w.m.Mode() == mmapfile.ModeWindowed {
		if err := w.last.Evict(); err != nil {
			return nil, err
		}
		w.last = w.m.TensorData(i)
	}
	return w.m.TensorData(i).Bytes()
}

// passStats sums what the schedule reports over the passes.
type passStats struct {
	passes   int
	read     int64         // bytes of weights read
	stall    time.Duration // time the forward pass waited for a weight
	peak     int64         // the most bytes of weight pages held at once
	retained int64         // bytes kept resident across passes
}

// scheduleWeights streams the matrices in the model's order under a byte
// budget with package stream, one pass per token.
type scheduleWeights struct {
	ctx            context.Context
	m              *loader.Model
	order          []int
	budget, retain int64

	s     *stream.Stream
	pos   int // the index in order of the next matrix
	stats passStats
}

// openSchedule starts the stream of the matrices in order.
//
// TODO(WithPasses): when package stream has the pass schedule, open one
// stream for the whole run here,
//
//	stream.New(ctx, m, stream.WithOrder(order), stream.WithPasses(0),
//		stream.WithBudget(budget), stream.WithRetain(retain))
//
// and make end bookkeeping only (keep the stream open: the next pass
// follows), reading Read, Stall, Peak and Retained from Stats. Until then
// each token opens a stream of one pass.
func openSchedule(ctx context.Context, m *loader.Model, order []int, budget, retain int64) (*stream.Stream, error) {
	if retain != 0 {
		return nil, errors.New("-retain needs package stream's pass schedule (stream.WithRetain), which this build does not have")
	}
	return stream.New(ctx, m, stream.WithOrder(order), stream.WithBudget(budget))
}

// newScheduleWeights opens the schedule, so that a budget or retain the
// stream refuses is an error before the first token.
func newScheduleWeights(ctx context.Context, m *loader.Model, order []int, budget, retain int64) (*scheduleWeights, error) {
	w := &scheduleWeights{ctx: ctx, m: m, order: order, budget: budget, retain: retain}
	var err error
	if w.s, err = openSchedule(ctx, m, order, budget, retain); err != nil {
		return nil, err
	}
	return w, nil
}

// begin starts a pass, opening the stream again if the last pass closed it.
func (w *scheduleWeights) begin() error {
	w.pos = 0
	if w.s != nil {
		return nil
	}
	var err error
	w.s, err = openSchedule(w.ctx, w.m, w.order, w.budget, w.retain)
	return err
}

// get returns the next matrix of the pass, which must be tensor i.
func (w *scheduleWeights) get(i int) ([]byte, error) {
	if w.pos >= len(w.order) || w.order[w.pos] != i {
		return nil, fmt.Errorf("the forward pass asked for tensor %d out of the schedule's order", i)
	}
	t0 := time.Now()
	it, err := w.s.Next()
	w.stats.stall += time.Since(t0)
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	if it.Tensor != i || it.Parts != 1 {
		return nil, fmt.Errorf("stream handed out %s (part %d of %d), want tensor %d whole: raise -budget above twice the largest matrix", it.Name, it.Part, it.Parts, i)
	}
	w.pos++
	return it.Data.Bytes()
}

// end finishes a pass: the stream of one pass must be at its end.
func (w *scheduleWeights) end() error {
	if w.pos != len(w.order) {
		return fmt.Errorf("a pass ended after %d of %d matrices", w.pos, len(w.order))
	}
	w.stats.passes++
	if _, err := w.s.Next(); err != io.EOF {
		return fmt.Errorf("stream: the pass has more items than the order (%v)", err)
	}
	st := w.s.Stats()
	w.stats.read += st.Bytes
	w.stats.peak = max(w.stats.peak, st.Peak)
	err := w.s.Close()
	w.s = nil
	return err
}

func (w *scheduleWeights) close() error {
	if w.s == nil {
		return nil
	}
	err := w.s.Close()
	w.s = nil
	return err
}
