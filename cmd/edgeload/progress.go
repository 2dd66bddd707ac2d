package main

import (
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// verifyChunk is how many bytes verifyModel reads between two progress
// reports.
const verifyChunk = 4 << 20

// verifyModel verifies m as m.Verify does, and calls progress with the
// bytes read so far and the total after each chunk of at most verifyChunk
// bytes. loader.Model.Verify reports no progress, so this runs its
// structural checks (m.Check) and then reads what Verify reads: every
// segment, every resolved tensor outside the segments (inline data, a data
// file's bytes) and every auxiliary tensor (a bundle's test tensors),
// through a CRC-32 as Verify does. Its report counts what Verify's would.
func verifyModel(m *loader.Model, progress func(done, total int64)) (loader.VerifyReport, error) {
	var r loader.VerifyReport
	if err := m.Check(); err != nil {
		return r, err
	}
	segs := m.Segments()
	type item struct {
		what string
		s    segment.Segment
	}
	var items []item
	for i, s := range segs {
		items = append(items, item{fmt.Sprintf("segment %d", i), s})
	}
	mf := m.File()
	for i := range m.NumTensors() {
		t := m.TensorAt(i)
		switch {
		case t.Location == format.LocExternal && !t.Resolved():
			r.Unresolved++
		case t.Data.File() == mf && inSegment(t.Data, segs):
			// read with its segment
		default:
			items = append(items, item{fmt.Sprintf("tensor %q", t.Name), t.Data})
		}
	}
	if aux, ok := m.Impl().(format.AuxTensors); ok {
		for _, t := range aux.AuxTensors() {
			items = append(items, item{fmt.Sprintf("test tensor %q", t.Name), t.Data})
			r.TestTensors++
		}
	}
	r.Tensors, r.Segments, r.Named = m.NumTensors(), len(segs), len(m.NamedData())
	var total int64
	for _, it := range items {
		total = addCapped(total, it.s.Len())
	}
	h := crc32.NewIEEE()
	progress(0, total)
	for _, it := range items {
		for off := int64(0); off < it.s.Len(); off += verifyChunk {
			c, err := it.s.Sub(off, min(verifyChunk, it.s.Len()-off))
			if err == nil {
				err = c.Checksum(h)
			}
			if err != nil {
				return r, fmt.Errorf("%s: reading %d bytes at offset %d: %w", it.what, it.s.Len(), it.s.Offset(), err)
			}
			r.BytesRead += c.Len()
			progress(r.BytesRead, total)
		}
	}
	return r, nil
}

// addCapped returns a+b, or MaxInt64 if that overflows.
func addCapped(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// inSegment reports whether s lies inside one of segs (same file).
func inSegment(s segment.Segment, segs []segment.Segment) bool {
	for _, seg := range segs {
		if s.File() == seg.File() && s.Offset() >= seg.Offset() && s.Len() >= 0 &&
			s.Offset()-seg.Offset() <= seg.Len()-s.Len() {
			return true
		}
	}
	return false
}

// progress shows on a terminal how far a long task is: one line, redrawn
// in place at most every progressEvery, first once the task has run
// progressAfter; clear erases it.
type progress struct {
	w     io.Writer
	label string
	now   func() time.Time
	start time.Time
	last  time.Time // when the line was last drawn; zero before
}

// Timing of the progress line.
const (
	progressAfter = time.Second
	progressEvery = 100 * time.Millisecond
)

// clock is the time progress lines see (tests replace it).
var clock = time.Now

func newProgress(w io.Writer, label string) *progress {
	return &progress{w: w, label: label, now: clock, start: clock()}
}

// update draws "LABEL: 1.2 GiB of 4.0 GiB (30%)" when it is time to.
func (p *progress) update(done, total int64) {
	t := p.now()
	if t.Sub(p.start) < progressAfter || (!p.last.IsZero() && t.Sub(p.last) < progressEvery && done < total) {
		return
	}
	p.last = t
	pct := int64(100)
	if total > 0 {
		pct = int64(float64(done) / float64(total) * 100)
	}
	fmt.Fprintf(p.w, "\r\x1b[Kedgeload: %s: %s of %s (%d%%)", p.label, sizeName(done), sizeName(total), pct)
}

// clear erases the line, if it was drawn. A nil progress does nothing.
func (p *progress) clear() {
	if p == nil || p.last.IsZero() {
		return
	}
	fmt.Fprint(p.w, "\r\x1b[K")
	p.last = time.Time{}
}
