package format

import (
	"math"
	"math/big"
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

// Numel agrees with exact big-integer arithmetic on shapes around the
// overflow and maxBytes edges.
func TestNumelExact(t *testing.T) {
	edges := []int64{0, 1, 2, 3, 7, 1 << 20, 1<<31 - 1, 1 << 31, 1<<32 + 1, 1 << 62, math.MaxInt64 / 3, math.MaxInt64, -1}
	maxes := []int64{0, 1, 4, 1282, 1 << 32, math.MaxInt64 / 4, math.MaxInt64 - 1, math.MaxInt64}
	for _, d := range []DType{Uint8, Int16, Float32, Float64, Invalid} {
		for _, m := range maxes {
			for _, a := range edges {
				for _, b := range edges {
					for _, dims := range [][]int64{{}, {a}, {a, b}, {b, a, 3}} {
						numel, n, ok := Numel(dims, d, m)
						wn, wb, wok := bigNumel(dims, d, m)
						if numel != wn || n != wb || ok != wok {
							t.Fatalf("Numel(%v, %v, %d) = %d, %d, %v; want %d, %d, %v", dims, d, m, numel, n, ok, wn, wb, wok)
						}
					}
				}
			}
		}
	}
}

// bigNumel is Numel's contract in exact arithmetic.
func bigNumel(dims []int64, d DType, maxBytes int64) (numel, nbytes int64, ok bool) {
	p := big.NewInt(1)
	for _, x := range dims {
		if x < 0 {
			return 0, 0, false
		}
		p.Mul(p, big.NewInt(x))
	}
	if p.Sign() == 0 && len(dims) > 0 {
		return 0, 0, d.Size() > 0
	}
	if d.Size() == 0 {
		return 0, 0, false
	}
	nb := new(big.Int).Mul(p, big.NewInt(int64(d.Size())))
	if nb.Cmp(big.NewInt(maxBytes)) > 0 {
		return 0, 0, false
	}
	return p.Int64(), nb.Int64(), true
}
