package main

import (
	"cmp"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"time"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
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
	inSegment := newSegIndex(mf, segs)
	for i := range m.NumTensors() {
		t := m.TensorAt(i)
		switch {
		case t.Location == format.LocExternal && !t.Resolved():
			r.Unresolved++
		case inSegment.contains(t.Data):
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

// segIndex answers whether a range lies inside one of a file's segments
// in O(log n): the segments sorted by offset, with the largest end of
// each prefix.
type segIndex struct {
	mf     *mmapfile.File
	starts []int64 // sorted
	maxEnd []int64 // maxEnd[i]: the largest end of the segments starting at or before starts[i]
}

func newSegIndex(mf *mmapfile.File, segs []segment.Segment) *segIndex {
	x := &segIndex{mf: mf}
	sorted := slices.Clone(segs)
	slices.SortFunc(sorted, func(a, b segment.Segment) int { return cmp.Compare(a.Offset(), b.Offset()) })
	end := int64(math.MinInt64)
	for _, s := range sorted {
		if s.File() != mf {
			continue
		}
		end = max(end, addCapped(s.Offset(), s.Len()))
		x.starts = append(x.starts, s.Offset())
		x.maxEnd = append(x.maxEnd, end)
	}
	return x
}

// contains reports whether s lies inside one of the segments: one that
// starts at or before s ends at or after it.
func (x *segIndex) contains(s segment.Segment) bool {
	if s.File() != x.mf || s.Len() < 0 {
		return false
	}
	i, found := slices.BinarySearch(x.starts, s.Offset())
	if found {
		// the last segment starting at s.Offset()
		for i+1 < len(x.starts) && x.starts[i+1] == s.Offset() {
			i++
		}
	} else {
		i--
	}
	return i >= 0 && x.maxEnd[i] >= addCapped(s.Offset(), s.Len())
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
