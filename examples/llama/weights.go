package main

import (
	"context"
	"fmt"
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

// passStats is what the schedule reports over the passes.
type passStats struct {
	passes   int
	read     int64         // bytes of weights read from the file
	stall    time.Duration // time the forward pass waited for a weight
	peak     int64         // the most bytes of weights held at once
	retained int64         // bytes kept resident across passes
	reader   string        // how streamed weights are read: mapped or direct
}

// scheduleWeights streams the matrices in the forward pass's order under a
// byte budget with package stream: one pass per token, the retained set
// resident across passes, the rest read every pass with read-ahead that
// runs on into the next pass.
type scheduleWeights struct {
	order []int
	s     *stream.Stream
	pos   int // the index in order of the next matrix
	pass  int
	stats passStats
}

// newScheduleWeights opens the schedule, so that a budget or retain the
// stream refuses is an error before the first token.
func newScheduleWeights(ctx context.Context, m *loader.Model, order []int, budget, retain int64, reader stream.Reader) (*scheduleWeights, error) {
	opts := []stream.Option{stream.WithOrder(order), stream.WithPasses(0), stream.WithBudget(budget), stream.WithReader(reader)}
	if retain != 0 {
		opts = append(opts, stream.WithRetain(retain))
	}
	s, err := stream.New(ctx, m, opts...)
	if err != nil {
		return nil, err
	}
	return &scheduleWeights{order: order, s: s}, nil
}

// begin starts a pass.
func (w *scheduleWeights) begin() error {
	w.pos = 0
	return nil
}

// get returns the next matrix of the pass, which must be tensor i. Its
// bytes are valid until the next get.
func (w *scheduleWeights) get(i int) ([]byte, error) {
	if w.pos >= len(w.order) || w.order[w.pos] != i {
		return nil, fmt.Errorf("the forward pass asked for tensor %d out of the schedule's order", i)
	}
	it, err := w.s.Next()
	if err != nil {
		return nil, fmt.Errorf("stream: %w", err)
	}
	if it.Tensor != i || it.Pass != w.pass {
		return nil, fmt.Errorf("stream handed out %s of pass %d, want tensor %d of pass %d", it.Name, it.Pass, i, w.pass)
	}
	w.pos++
	return it.Data.Bytes()
}

// end finishes a pass: every matrix of the order must have been used.
func (w *scheduleWeights) end() error {
	if w.pos != len(w.order) {
		return fmt.Errorf("a pass ended after %d of %d matrices", w.pos, len(w.order))
	}
	w.pass++
	w.stats.passes++
	return nil
}

// close stops the schedule and keeps its statistics.
func (w *scheduleWeights) close() error {
	if w.s == nil {
		return nil
	}
	st := w.s.Stats()
	w.stats.read, w.stats.stall, w.stats.peak, w.stats.retained, w.stats.reader = st.Read, st.Stall, st.Peak, st.Retained, st.Reader
	err := w.s.Close()
	w.s = nil
	return err
}
