package stream

import (
	"cmp"
	"slices"

	"github.com/edgeload/edgeload/mmapfile"
)

// span is a range [start, end) of a file, aligned to the stream's grain.
type span struct {
	f          *mmapfile.File
	start, end int64
}

func (s span) bytes() int64 { return s.end - s.start }

// within reports whether s lies inside o.
func (s span) within(o span) bool { return s.f == o.f && o.start <= s.start && s.end <= o.end }

// coverSpan returns the grains of f covering [off, off+n); grain is a power
// of two.
func coverSpan(f *mmapfile.File, off, n, grain int64) span {
	start := off &^ (grain - 1)
	if n == 0 {
		return span{f: f, start: start, end: start}
	}
	return span{f: f, start: start, end: (off + n + grain - 1) &^ (grain - 1)}
}

// grainKey names one grain of a file.
type grainKey struct {
	f *mmapfile.File
	g int64 // the grain's offset divided by the grain
}

// uncovered returns the parts of x that no span in others (spans of x's
// file that overlap it, as heldIn gives) covers, in order. It sorts others.
func uncovered(x span, others []span) []span {
	slices.SortFunc(others, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var out []span
	at := x.start
	for _, o := range others {
		if o.start > at {
			out = append(out, span{f: x.f, start: at, end: min(o.start, x.end)})
		}
		at = max(at, o.end)
		if at >= x.end {
			break
		}
	}
	if at < x.end {
		out = append(out, span{f: x.f, start: at, end: x.end})
	}
	return out
}

// coalesce sorts spans by file (in order of first appearance) and start,
// and joins those that touch, in place.
func coalesce(spans []span) []span {
	first := make(map[*mmapfile.File]int)
	for i, s := range spans {
		if _, ok := first[s.f]; !ok {
			first[s.f] = i
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(first[a.f], first[b.f]), cmp.Compare(a.start, b.start))
	})
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && out[n-1].f == s.f && out[n-1].end >= s.start {
			out[n-1].end = max(out[n-1].end, s.end)
			continue
		}
		out = append(out, s)
	}
	return out
}
