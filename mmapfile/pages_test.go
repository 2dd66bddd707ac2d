package mmapfile

import (
	"math"
	"testing"
)

// The page arithmetic for the page sizes that occur on real systems,
// independent of the host's page size.
func TestPageArithmetic(t *testing.T) {
	for _, ps := range []int64{4 << 10, 16 << 10, 64 << 10} {
		t.Run(itoa(ps), func(t *testing.T) {
			floorCeil := []struct{ x, floor, ceil int64 }{
				{0, 0, 0},
				{1, 0, ps},
				{128, 0, ps},
				{ps - 1, 0, ps},
				{ps, ps, ps},
				{ps + 1, ps, 2 * ps},
				{5*ps + 128, 5 * ps, 6 * ps},
				{1 << 32, 1 << 32, 1 << 32},
				{1<<32 + 1, 1 << 32, 1<<32 + ps},
				{math.MaxInt64, pageFloor(math.MaxInt64, ps), pageFloor(math.MaxInt64, ps)}, // saturates
			}
			for _, c := range floorCeil {
				if got := pageFloor(c.x, ps); got != c.floor {
					t.Errorf("pageFloor(%d) = %d, want %d", c.x, got, c.floor)
				}
				if got := pageCeil(c.x, ps); got != c.ceil {
					t.Errorf("pageCeil(%d) = %d, want %d", c.x, got, c.ceil)
				}
			}
			if got := pageFloor(math.MaxInt64, ps); got%ps != 0 || got > math.MaxInt64-ps+1 {
				t.Errorf("pageFloor(MaxInt64) = %d", got)
			}

			size := 10*ps + 300 // a file whose last page is partial
			cover := []struct{ off, n, start, end int64 }{
				{0, 0, 0, 0},
				{128, 0, 0, 0},
				{0, 1, 0, ps},
				{128, 256, 0, ps},
				{ps - 128, 256, 0, 2 * ps}, // straddles a boundary
				{ps, ps, ps, 2 * ps},
				{3*ps + 128, 2 * ps, 3 * ps, 6 * ps},
				{10 * ps, 300, 10 * ps, 11 * ps},
			}
			for _, c := range cover {
				s, e := coverPages(c.off, c.n, ps)
				if s != c.start || e != c.end {
					t.Errorf("coverPages(%d, %d) = [%d, %d), want [%d, %d)", c.off, c.n, s, e, c.start, c.end)
				}
			}
			inner := []struct{ off, n, start, end int64 }{
				{0, 0, 0, 0},
				{128, 256, ps, ps},                    // inside one page: nothing
				{0, ps, 0, ps},                        // exactly one page
				{0, ps - 1, 0, 0},                     // one byte short
				{128, 2 * ps, ps, 2 * ps},             // shares both ends
				{ps - 128, 3*ps + 256, ps, 4 * ps},    // 128-aligned, straddling
				{3 * ps, 7*ps + 300, 3 * ps, 11 * ps}, // ends at EOF: owns the partial last page
				{10*ps + 100, 200, 11 * ps, 11 * ps},  // tail inside the last page, not from its start
				{10 * ps, 300, 10 * ps, 11 * ps},      // the whole last page
				{10 * ps, 299, 10 * ps, 10 * ps},      // all but the last byte
			}
			for _, c := range inner {
				s, e := innerPages(c.off, c.n, size, ps)
				if s != c.start || e != c.end {
					t.Errorf("innerPages(%d, %d, size %d) = [%d, %d), want [%d, %d)", c.off, c.n, size, s, e, c.start, c.end)
				}
				if e > s && (s < c.off || (e > c.off+c.n && c.off+c.n != size)) {
					t.Errorf("innerPages(%d, %d) = [%d, %d) leaves the range", c.off, c.n, s, e)
				}
			}
			if got := pageCount(ps, 5*ps, ps); got != 4 {
				t.Errorf("pageCount = %d, want 4", got)
			}
			if got := pageCount(5*ps, ps, ps); got != 0 {
				t.Errorf("pageCount of an empty span = %d, want 0", got)
			}
		})
	}
}

func TestCheckRange(t *testing.T) {
	const size = 1000
	for _, c := range []struct {
		off, n int64
		ok     bool
	}{
		{0, 0, true}, {0, size, true}, {size, 0, true}, {999, 1, true}, {128, 872, true},
		{-1, 1, false}, {0, -1, false}, {size, 1, false}, {size + 1, 0, false}, {1, size, false},
		{1, math.MaxInt64, false}, {math.MaxInt64, 1, false}, {math.MaxInt64, math.MaxInt64, false},
		{math.MinInt64, 0, false}, {500, math.MinInt64, false},
	} {
		if got := checkRange(c.off, c.n, size); got != c.ok {
			t.Errorf("checkRange(%d, %d, %d) = %v, want %v", c.off, c.n, size, got, c.ok)
		}
	}
}

func TestCountResident(t *testing.T) {
	vec := []byte{1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1}
	if got := countResident(vec, 1); got != 10 {
		t.Errorf("per 1: %d, want 10", got)
	}
	if got := countResident(vec, 4); got != 2 { // [1111] [1011] [111]
		t.Errorf("per 4: %d, want 2", got)
	}
	if got := countResident(vec, 16); got != 0 {
		t.Errorf("per 16: %d, want 0", got)
	}
}

func itoa(ps int64) string {
	return map[int64]string{4 << 10: "4KiB", 16 << 10: "16KiB", 64 << 10: "64KiB"}[ps]
}
