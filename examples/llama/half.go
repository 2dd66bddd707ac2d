package main

import "math"

// halfTable maps every IEEE 754 half-precision bit pattern to its float32
// value.
var halfTable = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = halfToFloat(uint16(h))
	}
	return &t
}()

// halfToFloat decodes an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0: // zero or subnormal: mant × 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// floatToHalf encodes f as IEEE 754 half precision, rounding to nearest even
// (as the F16C instructions and ggml's conversion do).
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// A subnormal half: m × 2^-24 with m = (1.mant × 2^(exp-127)) / 2^-24.
		if e < -10 {
			return sign
		}
		full := mant | 0x800000
		s := uint(14 - e)
		m := full >> s
		rem, half := full&(1<<s-1), uint32(1)<<(s-1)
		if rem > half || rem == half && m&1 == 1 {
			m++
		}
		return sign | uint16(m)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // a carry into the exponent gives the right value, infinity included
	}
	return sign | uint16(h)
}

// roundHalf returns f rounded to the nearest half-precision value.
func roundHalf(f float32) float32 { return halfTable[floatToHalf(f)] }

// half reads the little-endian half at b[0:2].
func half(b []byte) float32 { return halfTable[uint16(b[0])|uint16(b[1])<<8] }
