package format

import (
	"math"
	"testing"
)

// A shape with a zero dimension has zero elements even when the product
// of its other dimensions would overflow or exceed maxBytes (regression:
// Numel checked the running product before it saw the zero, so rten and
// ptd disagreed with their own invariants about [131074 0] in a small
// file; found by rten.FuzzOpen, corpus entry ab5b5eefa9475989, and
// ptd.FuzzOpen, 36dc034044ccb155).
func TestNumelZeroDim(t *testing.T) {
	for _, c := range []struct {
		dims     []int64
		d        DType
		max      int64
		numel, n int64
		ok       bool
	}{
		{[]int64{131074, 0}, Float32, 1282, 0, 0, true},
		{[]int64{1 << 40, 1 << 40, 0}, Float64, math.MaxInt64, 0, 0, true},
		{[]int64{0, -1}, Float32, math.MaxInt64, 0, 0, false}, // negative still rejected
		{[]int64{0}, Invalid, math.MaxInt64, 0, 0, false},     // unknown dtype still rejected
		{[]int64{131074, 1}, Float32, 1282, 0, 0, false},      // too large for the file
		{[]int64{3, 4}, Int16, 1282, 12, 24, true},
		{[]int64{}, Float32, 4, 1, 4, true}, // a scalar
		{[]int64{1 << 31, 1 << 31, 1 << 31}, Uint8, math.MaxInt64, 0, 0, false},
	} {
		numel, n, ok := Numel(c.dims, c.d, c.max)
		if numel != c.numel || n != c.n || ok != c.ok {
			t.Errorf("Numel(%v, %v, %d) = %d, %d, %v; want %d, %d, %v", c.dims, c.d, c.max, numel, n, ok, c.numel, c.n, c.ok)
		}
	}
}
