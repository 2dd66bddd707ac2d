package main

import "math"

// activation is the input vector of the matrix-vector products that share it
// (Q, K and V read the same normed vector, gate and up another), in the forms
// the kernels read. As llama.cpp does, a quantized weight type multiplies a
// quantized copy of the vector: q8_0 blocks for q8_0 and q4_0 weights, q8_K
// super-blocks for q4_K and q6_K, half precision for f16. Each form is made
// once per vector, on first use.
type activation struct {
	x []float32

	// q8_0: per 32-element block the scale d (a half, widened), the
	// quantized values, their sum, and the values packed for the kernels
	// (see packQ8).
	q8d   []float32
	q8qs  []int8
	q8sum []int32
	q8p   []uint64

	// q8_K: per 256-element super-block the scale d (a float), the
	// quantized values, the sums of each 16 of them, and the packed
	// values.
	kd  []float32
	kqs []int8
	kbs []int32
	kp  []uint64

	// f16: the vector rounded to half precision.
	h []float32

	haveQ8, haveK, haveH bool
}

// set makes x the vector and forgets the forms made of the previous one.
func (a *activation) set(x []float32) {
	a.x = x
	a.haveQ8, a.haveK, a.haveH = false, false, false
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// forQ8 makes the q8_0 form: per block amax/127 as the scale (stored as a
// half) and round-half-even(x × 127/amax), as ggml's x86 quantize_row_q8_0
// computes it.
func (a *activation) forQ8() {
	if a.haveQ8 {
		return
	}
	a.haveQ8 = true
	nb := len(a.x) / qk
	a.q8d, a.q8qs, a.q8sum = grow(a.q8d, nb), grow(a.q8qs, nb*qk), grow(a.q8sum, nb)
	a.q8p = grow(a.q8p, nb*qk/4)
	for b := range nb {
		xb := a.x[b*qk : (b+1)*qk]
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		a.q8d[b] = roundHalf(amax / 127)
		q := a.q8qs[b*qk : (b+1)*qk]
		var s int32
		for j, v := range xb {
			q[j] = int8(math.RoundToEven(float64(v * id)))
			s += int32(q[j])
		}
		a.q8sum[b] = s
	}
	packQ8(a.q8p, a.q8qs)
}

// forK makes the q8_K form: per super-block, with max the element of largest
// magnitude, iscale = -127/max, q = min(127, round-half-even(x × iscale)),
// d = 1/iscale and the sums of each 16 values, as ggml's
// quantize_row_q8_K_ref computes it.
func (a *activation) forK() {
	if a.haveK {
		return
	}
	a.haveK = true
	nb := len(a.x) / qkK
	a.kd, a.kqs, a.kbs = grow(a.kd, nb), grow(a.kqs, nb*qkK), grow(a.kbs, nb*qkK/16)
	a.kp = grow(a.kp, nb*qkK/4)
	for b := range nb {
		xb := a.x[b*qkK : (b+1)*qkK]
		q := a.kqs[b*qkK : (b+1)*qkK]
		var mx, amax float32
		for _, v := range xb {
			if ax := abs32(v); ax > amax {
				amax, mx = ax, v
			}
		}
		if amax == 0 {
			a.kd[b] = 0
			clear(q)
			clear(a.kbs[b*16 : b*16+16])
			continue
		}
		iscale := -127 / mx
		for j, v := range xb {
			q[j] = int8(min(127, math.RoundToEven(float64(iscale*v))))
		}
		for g := range 16 {
			var s int32
			for _, v := range q[16*g : 16*g+16] {
				s += int32(v)
			}
			a.kbs[b*16+g] = s
		}
		a.kd[b] = 1 / iscale
	}
	packQ8(a.kp, a.kqs)
}

// forHalf makes the f16 form.
func (a *activation) forHalf() {
	if a.haveH {
		return
	}
	a.haveH = true
	a.h = grow(a.h, len(a.x))
	for i, v := range a.x {
		a.h[i] = roundHalf(v)
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
