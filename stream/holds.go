package stream

import (
	"cmp"
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
)

// holds counts, for every file and grain size, the streams in the process
// that hold each grain, so that no stream releases or unmaps pages another
// still needs.
var holds = struct {
	sync.Mutex
	m map[*mmapfile.File]map[int64]map[int64]int32 // file, grain size, grain index
}{m: make(map[*mmapfile.File]map[int64]map[int64]int32)}

// holdGrains counts one more stream holding each grain of f at offsets at.
func holdGrains(f *mmapfile.File, grain int64, at []int64) {
	holds.Lock()
	defer holds.Unlock()
	bySize := holds.m[f]
	if bySize == nil {
		bySize = make(map[int64]map[int64]int32)
		holds.m[f] = bySize
	}
	count := bySize[grain]
	if count == nil {
		count = make(map[int64]int32)
		bySize[grain] = count
	}
	for _, off := range at {
		count[off/grain]++
	}
}

// releaseSpans counts one stream fewer holding each grain of gone (grains
// of the given size), then releases the parts of the spans in free that no
// stream holds (madvise DONTNEED; with drop also fadvise DONTNEED). In
// windowed mode it unmaps the windows inside a free span that no stream
// holds any of (a view of a held grain could be served from such a window).
func releaseSpans(gone, free []span, grain int64, drop bool) error {
	holds.Lock()
	defer holds.Unlock()
	for _, s := range gone {
		bySize := holds.m[s.f]
		count := bySize[grain]
		if count[s.start/grain]--; count[s.start/grain] <= 0 {
			delete(count, s.start/grain)
		}
		if len(count) == 0 {
			delete(bySize, grain)
		}
		if len(bySize) == 0 {
			delete(holds.m, s.f)
		}
	}
	var err error // the first
	for _, s := range free {
		held := heldIn(s)
		size := s.f.Len()
		if s.f.Mode() == mmapfile.ModeWindowed && len(held) == 0 && s.start < size {
			err = cmp.Or(err, s.f.Evict(s.start, min(s.end, size)-s.start))
		}
		for _, r := range uncovered(s, held) {
			if end := min(r.end, size); end > r.start {
				err = cmp.Or(err, s.f.Release(r.start, end-r.start, drop))
			}
		}
	}
	return err
}

// heldIn returns the grains within or overlapping s that some stream holds.
// It is called with holds locked.
func heldIn(s span) []span {
	var held []span
	for grain, count := range holds.m[s.f] {
		for g := s.start / grain; g*grain < s.end; g++ {
			if count[g] > 0 {
				held = append(held, span{f: s.f, start: g * grain, end: (g + 1) * grain})
			}
		}
	}
	return held
}
