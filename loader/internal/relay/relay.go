// Package relay plans the segments of a file being laid out anew: each
// segment a list of pieces of the old file, the sub-buffers of a segment
// (a program's constants, a legacy .ptd's tensors, an RTen data section's
// tensors) placed on an alignment boundary, and the segments placed one
// after another on theirs. The format packages' Relayout methods share it.
package relay

import (
	"cmp"
	"slices"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Piece is a run of bytes of the old file (Src) at Dst, relative to the
// start of its segment in the new one.
type Piece struct {
	Src segment.Segment
	Dst int64
}

// Seg is a segment of the new file: its pieces, its size, and (once
// Place has run) its offset from the segment data's start.
type Seg struct {
	Pieces []Piece
	Size   int64
	Off    int64
}

// Whole is a segment copied as it is.
func Whole(s segment.Segment) Seg { return Seg{Pieces: []Piece{{Src: s}}, Size: s.Len()} }

// Place places segs one after another, each on align, and returns the
// size of the segment data.
func Place(segs []Seg, align int64) int64 {
	var cur int64
	for i := range segs {
		segs[i].Off = format.AlignUp(cur, align)
		cur = segs[i].Off + segs[i].Size
	}
	return cur
}

// Pieces returns the pieces of segs for a format.Layout whose segment
// data starts at base.
func Pieces(segs []Seg, base int64) []format.Piece {
	var out []format.Piece
	for _, s := range segs {
		for _, p := range s.Pieces {
			out = append(out, format.Piece{Offset: base + s.Off + p.Dst, Data: p.Src})
		}
	}
	return out
}

// Span is a byte range [Lo, Hi).
type Span struct{ Lo, Hi int64 }

// TensorSpans returns the bytes of m's tensors that lie in the file f, as
// absolute spans sorted by start.
func TensorSpans(m format.Model, f *mmapfile.File) []Span {
	var out []Span
	for i := range m.NumTensors() {
		d := m.TensorData(i)
		if d.File() == f && d.Len() > 0 {
			out = append(out, Span{d.Offset(), d.Offset() + d.Len()})
		}
	}
	slices.SortFunc(out, func(a, b Span) int { return cmp.Compare(a.Lo, b.Lo) })
	return out
}

// Within returns the spans of sorted that start inside seg, relative to
// it.
func Within(sorted []Span, seg segment.Segment) []Span {
	lo, hi := seg.Offset(), seg.Offset()+seg.Len()
	i, _ := slices.BinarySearchFunc(sorted, lo, func(s Span, x int64) int { return cmp.Compare(s.Lo, x) })
	var out []Span
	for ; i < len(sorted) && sorted[i].Lo < hi; i++ {
		out = append(out, Span{sorted[i].Lo - lo, sorted[i].Hi - lo})
	}
	return out
}

// Subs places the sub-buffers of seg that start at offs on talign
// boundaries, in order. A sub-buffer runs to the next start, the last to
// the end of seg; a start inside a tensor's bytes (keep, sorted spans
// relative to seg) stays where it is in the sub-buffer that tensor starts
// in, so that a tensor reading past its own sub-buffer reads the same
// bytes. It returns the segment and the new offset of every start; a start
// at or past the end of seg maps to the new end.
func Subs(seg segment.Segment, offs []uint64, keep []Span, talign int64) (Seg, map[uint64]uint64, error) {
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
		for ; j < len(keep) && keep[j].Lo < int64(s); j++ {
			reach = max(reach, keep[j].Hi)
		}
		if reach <= int64(s) {
			cuts = append(cuts, s)
		}
	}
	remap := make(map[uint64]uint64, len(starts))
	var out Seg
	k := 0
	for c, s := range cuts {
		end := size
		if c+1 < len(cuts) {
			end = cuts[c+1]
		}
		dst := format.AlignUp(out.Size, talign)
		sub, err := seg.Sub(int64(s), int64(end-s))
		if err != nil {
			return Seg{}, nil, err
		}
		out.Pieces = append(out.Pieces, Piece{Src: sub, Dst: dst})
		for ; k < len(starts) && starts[k] < end; k++ {
			remap[starts[k]] = uint64(dst) + starts[k] - s
		}
		out.Size = dst + int64(end-s)
	}
	for _, o := range offs {
		if o >= size {
			remap[o] = uint64(out.Size)
		}
	}
	return out, remap, nil
}
