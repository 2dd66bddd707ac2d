package stream

import (
	"cmp"
	"slices"
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// span is the page-aligned range [start, end) of a file that covers an item.
type span struct {
	f          *mmapfile.File
	start, end int64
}

func (s span) bytes() int64 { return s.end - s.start }

// coverSpan returns the pages of f covering [off, off+n).
func coverSpan(f *mmapfile.File, off, n int64) span {
	ps := int64(f.PageSize())
	if n == 0 {
		return span{f: f, start: off &^ (ps - 1), end: off &^ (ps - 1)}
	}
	return span{f: f, start: off &^ (ps - 1), end: (off + n + ps - 1) &^ (ps - 1)}
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

// bytesOf returns the total length of spans.
func bytesOf(spans []span) int64 {
	var n int64
	for _, s := range spans {
		n += s.bytes()
	}
	return n
}

// holds records, for every file, the spans that all streams in the process
// hold, so that no stream releases or unmaps pages another still needs.
var holds = struct {
	sync.Mutex
	m map[*mmapfile.File][]span
}{m: make(map[*mmapfile.File][]span)}

func holdSpan(s span) {
	holds.Lock()
	holds.m[s.f] = append(holds.m[s.f], s)
	holds.Unlock()
}

// releaseSpan drops one hold of s and releases the pages of s that no other
// hold covers; in windowed mode it unmaps s's window when no other hold lies
// inside it (a view of such a hold could be served from that window).
func releaseSpan(s span, drop bool) error {
	holds.Lock()
	defer holds.Unlock()
	hs := holds.m[s.f]
	if i := slices.Index(hs, s); i >= 0 {
		hs = slices.Delete(hs, i, i+1)
	}
	if len(hs) == 0 {
		delete(holds.m, s.f)
	} else {
		holds.m[s.f] = hs
	}
	if s.start == s.end {
		return nil
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	size := s.f.Len()
	if s.f.Mode() == mmapfile.ModeWindowed && !containsAny(s, hs) {
		keep(s.f.Evict(s.start, min(s.end, size)-s.start))
	}
	// The range reaches back over pages a fault near a held item may have
	// mapped, and over the folio a released neighbour may have left in the
	// page cache (the page cache drops only whole, unmapped folios).
	lo := max(0, s.start-dropReach*int64(s.f.PageSize()))
	for _, r := range uncovered(span{f: s.f, start: lo, end: s.end}, hs) {
		end := min(r.end, size)
		if end > r.start {
			keep(s.f.Release(r.start, end-r.start, false))
		}
	}
	if drop && s.f.Fd() != ^uintptr(0) {
		keep(platform.FadviseDontNeed(s.f, lo, min(s.end, size)-lo))
	}
	return firstErr
}

// dropReach is how many pages before a released span a release reaches:
// the largest folio ext4 and xfs use with 4 KiB pages.
const dropReach = 512

// containsAny reports whether some span of hs lies wholly inside s.
func containsAny(s span, hs []span) bool {
	for _, h := range hs {
		if h.f == s.f && s.start <= h.start && h.end <= s.end {
			return true
		}
	}
	return false
}
