package mmapfile

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/edgeload/edgeload/platform"
)

// ModeWindowed: ranges mapped on demand as windows, cached by range.

// window is one mapping of the file range [start, end) in windowed mode.
type window struct {
	start, end int64
	data       []byte // len == end-start
	unmapped   bool
}

// span is a page-aligned file range, the key of the window cache.
type span struct{ start, end int64 }

// windowsFrom returns the index in byStart of the first window that
// starts at or after s.
func (f *File) windowsFrom(s int64) int {
	i, _ := slices.BinarySearchFunc(f.byStart, s, func(w *window, s int64) int { return cmp.Compare(w.start, s) })
	return i
}

// addWindow records a newly mapped window.
func (f *File) addWindow(key span, w *window) {
	f.wins[key] = w
	i, _ := slices.BinarySearchFunc(f.byStart, w, func(a, b *window) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	f.byStart = slices.Insert(f.byStart, i, w)
	f.maxWin = max(f.maxWin, w.end-w.start)
}

// window returns a window that contains [off, off+n), mapping it if needed.
func (f *File) window(off, n int64) (*window, error) {
	start, end := coverPages(f.base+off, n, f.ps)
	end = min(end, f.limit)
	key := span{start, end}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, f.closedErr("view")
	}
	if w := f.wins[key]; w != nil {
		return w, nil
	}
	for i := f.windowsFrom(start - f.maxWin); i < len(f.byStart) && f.byStart[i].start <= start; i++ {
		if w := f.byStart[i]; end <= w.end {
			f.wins[key] = w // remember the alias: the next lookup is O(1)
			return w, nil
		}
	}
	if end-start > math.MaxInt {
		return nil, f.rangeErr("view (window larger than the address space)", off, n)
	}
	b, err := platform.Map(f.fd, start, int(end-start))
	if err != nil {
		return nil, fmt.Errorf("mmapfile: map window [%d,%d) of %s: %w", start, end, f.name, err)
	}
	w := &window{start: start, end: end, data: b}
	f.addWindow(key, w)
	return w, nil
}

// forWindows calls fn for every distinct mapped window that intersects the
// file range [start, end) (file offsets), with the intersection as a slice of the window.
// It holds the window lock.
func (f *File) forWindows(start, end int64, fn func(b []byte) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return f.closedErr("window")
	}
	var err error
	for i := f.windowsFrom(start - f.maxWin); i < len(f.byStart) && f.byStart[i].start < end; i++ {
		w := f.byStart[i]
		if s, e := max(start, w.start), min(end, w.end); s < e {
			err = cmp.Or(err, fn(w.data[s-w.start:e-w.start]))
		}
	}
	return err
}

// Evict unmaps, in windowed mode, the cached windows that lie wholly inside
// the pages covering [off, off+n). Views of those windows become invalid:
// touching them afterwards crashes the process, so only evict ranges whose
// views are no longer used. In whole mode it is Release(off, n, false), which
// keeps views valid; in ModeMemory and ModeCopy it is a no-op.
func (f *File) Evict(off, n int64) error {
	if err := f.check("evict", off, n); err != nil {
		return err
	}
	switch f.mode {
	case ModeWhole:
		return f.Release(off, n, false)
	case ModeWindowed:
	default:
		return nil
	}
	start, end := coverPages(f.base+off, n, f.ps)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return f.closedErr("evict")
	}
	return f.unmapWindows(start, end)
}

// unmapWindows unmaps the windows that lie wholly inside the file span
// [start, end). f.mu must be held.
func (f *File) unmapWindows(start, end int64) error {
	var err error
	for k, w := range f.wins {
		if w.start < start || w.end > end {
			continue
		}
		delete(f.wins, k)
		if !w.unmapped {
			w.unmapped = true
			err = cmp.Or(err, platform.Unmap(w.data))
		}
	}
	f.byStart = slices.DeleteFunc(f.byStart, func(w *window) bool { return w.unmapped })
	return err
}
