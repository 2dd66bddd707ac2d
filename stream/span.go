package stream

import (
	"cmp"
	"slices"
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
)

// span is a range [start, end) of a file, aligned to the stream's grain.
type span struct {
	f          *mmapfile.File
	start, end int64
}

func (s span) bytes() int64 { return s.end - s.start }

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

// uncovered returns the parts of x that no span in others covers, in order.
func uncovered(x span, others []span) []span {
	var in []span
	for _, o := range others {
		if o.f == x.f && o.start < x.end && x.start < o.end {
			in = append(in, o)
		}
	}
	if len(in) == 0 {
		if x.start == x.end {
			return nil
		}
		return []span{x}
	}
	slices.SortFunc(in, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	var out []span
	at := x.start
	for _, o := range in {
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
// and joins those that touch.
func coalesce(spans []span) []span {
	var out []span
	for len(spans) > 0 {
		f := spans[0].f
		var mine, rest []span
		for _, s := range spans {
			if s.f == f {
				mine = append(mine, s)
			} else {
				rest = append(rest, s)
			}
		}
		slices.SortFunc(mine, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		for _, s := range mine {
			if n := len(out); n > 0 && out[n-1].f == f && out[n-1].end >= s.start {
				out[n-1].end = max(out[n-1].end, s.end)
				continue
			}
			out = append(out, s)
		}
		spans = rest
	}
	return out
}

// holds records, for every file, the spans of the items that all streams in
// the process hold, so that no stream releases or unmaps pages another
// still needs.
var holds = struct {
	sync.Mutex
	m map[*mmapfile.File][]span
}{m: make(map[*mmapfile.File][]span)}

func holdSpan(s span) {
	holds.Lock()
	holds.m[s.f] = append(holds.m[s.f], s)
	holds.Unlock()
}

// releaseSpans drops one hold of each span in done, then releases the parts
// of the spans in free that no hold covers (madvise DONTNEED; with drop
// also fadvise DONTNEED). In windowed mode it unmaps the windows inside a
// free span when no hold lies inside it (a view of such a hold could be
// served from that window).
func releaseSpans(done, free []span, drop bool) error {
	holds.Lock()
	defer holds.Unlock()
	for _, s := range done {
		hs := holds.m[s.f]
		if i := slices.Index(hs, s); i >= 0 {
			hs = slices.Delete(hs, i, i+1)
		}
		if len(hs) == 0 {
			delete(holds.m, s.f)
		} else {
			holds.m[s.f] = hs
		}
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, s := range free {
		hs := holds.m[s.f]
		size := s.f.Len()
		if s.f.Mode() == mmapfile.ModeWindowed && !containsAny(s, hs) && s.start < size {
			keep(s.f.Evict(s.start, min(s.end, size)-s.start))
		}
		for _, r := range uncovered(s, hs) {
			if end := min(r.end, size); end > r.start {
				keep(s.f.Release(r.start, end-r.start, drop))
			}
		}
	}
	return firstErr
}

// containsAny reports whether some span of hs lies wholly inside s.
func containsAny(s span, hs []span) bool {
	for _, h := range hs {
		if h.f == s.f && s.start <= h.start && h.end <= s.end {
			return true
		}
	}
	return false
}
