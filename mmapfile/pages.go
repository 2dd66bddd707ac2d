package mmapfile

import "math"

// The page arithmetic of the package, as pure functions of an explicit page
// size so that it can be tested for 4 KiB, 16 KiB and 64 KiB pages on any
// host. ps is always a power of two; offsets and lengths are non-negative and
// already range-checked against the file size by checkRange.

// isPow2 reports whether n is a positive power of two.
func isPow2(n int64) bool { return n > 0 && n&(n-1) == 0 }

// pageFloor rounds x down to a multiple of ps.
func pageFloor(x, ps int64) int64 { return x &^ (ps - 1) }

// pageCeil rounds x up to a multiple of ps, saturating at the largest
// multiple of ps that fits in an int64 instead of overflowing.
func pageCeil(x, ps int64) int64 {
	if x > math.MaxInt64-(ps-1) {
		return pageFloor(math.MaxInt64, ps)
	}
	return pageFloor(x+ps-1, ps)
}

// checkRange reports whether [off, off+n) lies inside [0, size) without
// overflowing: off and n are non-negative, off <= size and n <= size-off.
func checkRange(off, n, size int64) bool {
	return off >= 0 && n >= 0 && size >= 0 && off <= size && n <= size-off
}

// coverPages returns the page-aligned span [start, end) of the pages that
// cover the range [off, off+n); it is empty (start == end) when n == 0.
func coverPages(off, n, ps int64) (start, end int64) {
	if n == 0 {
		s := pageFloor(off, ps)
		return s, s
	}
	return pageFloor(off, ps), pageCeil(off+n, ps)
}

// innerPages returns the page-aligned span [start, end) of the pages that lie
// wholly inside the range [off, off+n) of a file of the given size: the pages
// a release may drop without touching a neighbour's bytes. A range that ends
// at the end of the file owns the file's last, partial page (no neighbour can
// follow it). The span is empty (start >= end is normalised to start == end)
// when no page qualifies.
func innerPages(off, n, size, ps int64) (start, end int64) {
	start = pageCeil(off, ps)
	if n > 0 && off+n == size {
		end = pageCeil(size, ps)
	} else {
		end = pageFloor(off+n, ps)
	}
	if end <= start {
		return start, start
	}
	return start, end
}

// pageCount returns the number of ps-sized pages in the aligned span
// [start, end).
func pageCount(start, end, ps int64) int {
	if end <= start {
		return 0
	}
	return int((end - start) / ps)
}
