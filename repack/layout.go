package repack

import (
	"cmp"
	"slices"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// piece is a run of bytes copied from src to dst (relative to the start of
// the output segment).
type piece struct {
	src segment.Segment
	dst int64
}

// segPlan is an output segment: its pieces, its size and its offset relative
// to the segment base.
type segPlan struct {
	pieces []piece
	size   int64
	off    int64
}

// span is a byte range [lo, hi).
type span struct{ lo, hi int64 }

// tensorSpans returns the bytes of m's tensors that lie in the file f, as
// absolute spans sorted by start.
func tensorSpans(m *loader.Model, f *mmapfile.File) []span {
	var out []span
	for i := range m.NumTensors() {
		d := m.TensorAt(i).Data
		if d.File() == f && d.Len() > 0 {
			out = append(out, span{d.Offset(), d.Offset() + d.Len()})
		}
	}
	slices.SortFunc(out, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	return out
}

// within returns the spans of sorted that start inside seg, relative to it.
func within(sorted []span, seg segment.Segment) []span {
	lo, hi := seg.Offset(), seg.Offset()+seg.Len()
	i, _ := slices.BinarySearchFunc(sorted, lo, func(s span, x int64) int { return cmp.Compare(s.lo, x) })
	var out []span
	for ; i < len(sorted) && sorted[i].lo < hi; i++ {
		out = append(out, span{sorted[i].lo - lo, sorted[i].hi - lo})
	}
	return out
}

// relayout places the sub-buffers of seg that start at offs on talign
// boundaries, in order. A sub-buffer runs to the next start, the last to the
// end of seg; a start inside a tensor's bytes (keep, sorted spans relative
// to seg) stays where it is in the sub-buffer that tensor starts in, so
// that a tensor reading past its own sub-buffer reads the same bytes. It
// returns the pieces, the new size and the new offset of every start; a
// start at or past the end of seg maps to the new end.
func relayout(seg segment.Segment, offs []uint64, keep []span, talign int64) ([]piece, int64, map[uint64]uint64, error) {
	size := uint64(seg.Len())
	starts := []uint64{0}
	for _, o := range offs {
		if o < size {
			starts = append(starts, o)
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	// The cuts: the starts no tensor's bytes run across.
	cuts := starts[:1:1]
	var reach int64
	j := 0
	for _, s := range starts[1:] {
		for ; j < len(keep) && keep[j].lo < int64(s); j++ {
			reach = max(reach, keep[j].hi)
		}
		if reach <= int64(s) {
			cuts = append(cuts, s)
		}
	}
	remap := make(map[uint64]uint64, len(starts))
	var pieces []piece
	var cur int64
	k := 0
	for c, s := range cuts {
		end := size
		if c+1 < len(cuts) {
			end = cuts[c+1]
		}
		dst := alignUp(cur, talign)
		sub, err := seg.Sub(int64(s), int64(end-s))
		if err != nil {
			return nil, 0, nil, err
		}
		pieces = append(pieces, piece{src: sub, dst: dst})
		for ; k < len(starts) && starts[k] < end; k++ {
			remap[starts[k]] = uint64(dst) + starts[k] - s
		}
		cur = dst + int64(end-s)
	}
	for _, o := range offs {
		if o >= size {
			remap[o] = uint64(cur)
		}
	}
	return pieces, cur, remap, nil
}
