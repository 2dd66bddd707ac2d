package main

import (
	"encoding/binary"
	"math"
)

// The quantized kernels multiply four weights by four activation values with
// one 64-bit multiplication. A weight word holds four small unsigned values
// (nibbles, at most 15) in 16-bit lanes, W = w0 + w1·2^16 + w2·2^32 + w3·2^48;
// the activation word holds four q8 values (-127..127) in reverse order,
// A = a3 + a2·2^16 + a1·2^32 + a0·2^48 (packQ8). In the product W·A mod 2^64
// the lane at bit 48 is w0·a0 + w1·a1 + w2·a2 + w3·a3, plus what the lower
// lanes carry or borrow. Up to four products summed keep that lane within
// ±4·4·15·127 = ±30480 (an int16) and the lower lanes within ±2^47, so adding
// 2^47 before taking the top 16 bits gives the exact dot product of 16
// weight nibbles with their activations.
const (
	lanes4 = 0x000F000F000F000F // the low nibble of bytes 0, 2, 4 and 6
	lanes2 = 0x0030003000300030 // bits 4-5 of bytes 0, 2, 4 and 6
	flip8  = 0x8080808080808080 // int8 → uint8 (+128) in every byte
	bias47 = 1 << 47
)

// top returns the signed 16-bit top lane of an accumulator started at bias47.
func top(acc uint64) int32 { return int32(int16(acc >> 48)) }

// packQ8 packs q8 activation values for the kernels: the 8 values of group g
// (elements 8g..8g+7) become two words, the even elements reversed in dst[2g]
// and the odd ones in dst[2g+1], so that they meet the lanes of a little-
// endian weight word masked with lanes4 (even bytes) and shifted by 8 (odd
// bytes).
func packQ8(dst []uint64, q []int8) {
	for g := range len(q) / 8 {
		a := q[8*g : 8*g+8 : 8*g+8]
		dst[2*g] = uint64(int64(a[6]) + int64(a[4])<<16 + int64(a[2])<<32 + int64(a[0])<<48)
		dst[2*g+1] = uint64(int64(a[7]) + int64(a[5])<<16 + int64(a[3])<<32 + int64(a[1])<<48)
	}
}

// dotQ8_0 returns the dot product of a q8_0 row with the q8_0 activation:
// per block, d_w·d_a·Σ w·a. The weights are made unsigned (w+128) and split
// into nibbles, 16·hi + lo, so Σ w·a = 16·Σ hi·a + Σ lo·a − 128·Σ a.
func dotQ8_0(w []byte, a *activation) float32 {
	nb := len(a.q8d)
	w = w[:nb*sizeQ8]
	p := a.q8p[:nb*8]
	sa := a.q8sum[:nb]
	var sum float32
	for b := range nb {
		blk := (*[sizeQ8]byte)(w[b*sizeQ8:])
		pb := (*[8]uint64)(p[8*b:])
		lo0, lo1, hi0, hi1 := uint64(bias47), uint64(bias47), uint64(bias47), uint64(bias47)

		u := binary.LittleEndian.Uint64(blk[2:]) ^ flip8
		lo0 += (u & lanes4) * pb[0]
		lo1 += (u >> 8 & lanes4) * pb[1]
		hi0 += (u >> 4 & lanes4) * pb[0]
		hi1 += (u >> 12 & lanes4) * pb[1]
		u = binary.LittleEndian.Uint64(blk[10:]) ^ flip8
		lo0 += (u & lanes4) * pb[2]
		lo1 += (u >> 8 & lanes4) * pb[3]
		hi0 += (u >> 4 & lanes4) * pb[2]
		hi1 += (u >> 12 & lanes4) * pb[3]
		u = binary.LittleEndian.Uint64(blk[18:]) ^ flip8
		lo0 += (u & lanes4) * pb[4]
		lo1 += (u >> 8 & lanes4) * pb[5]
		hi0 += (u >> 4 & lanes4) * pb[4]
		hi1 += (u >> 12 & lanes4) * pb[5]
		u = binary.LittleEndian.Uint64(blk[26:]) ^ flip8
		lo0 += (u & lanes4) * pb[6]
		lo1 += (u >> 8 & lanes4) * pb[7]
		hi0 += (u >> 4 & lanes4) * pb[6]
		hi1 += (u >> 12 & lanes4) * pb[7]

		s := 16*(top(hi0)+top(hi1)) + top(lo0) + top(lo1) - 128*sa[b]
		sum += half(blk[:]) * a.q8d[b] * float32(s)
	}
	return sum
}

// dotQ4_0 returns the dot product of a q4_0 row with the q8_0 activation:
// per block, d_w·d_a·Σ (n−8)·a over the nibbles n, where byte j holds element
// j in its low nibble and element j+16 in its high one.
func dotQ4_0(w []byte, a *activation) float32 {
	nb := len(a.q8d)
	w = w[:nb*sizeQ4]
	p := a.q8p[:nb*8]
	sa := a.q8sum[:nb]
	var sum float32
	for b := range nb {
		blk := (*[sizeQ4]byte)(w[b*sizeQ4:])
		pb := (*[8]uint64)(p[8*b:])
		e, o := uint64(bias47), uint64(bias47)

		u := binary.LittleEndian.Uint64(blk[2:]) // elements 0-7 and 16-23
		e += (u & lanes4) * pb[0]
		o += (u >> 8 & lanes4) * pb[1]
		e += (u >> 4 & lanes4) * pb[4]
		o += (u >> 12 & lanes4) * pb[5]
		u = binary.LittleEndian.Uint64(blk[10:]) // elements 8-15 and 24-31
		e += (u & lanes4) * pb[2]
		o += (u >> 8 & lanes4) * pb[3]
		e += (u >> 4 & lanes4) * pb[6]
		o += (u >> 12 & lanes4) * pb[7]

		s := top(e) + top(o) - 8*sa[b]
		sum += half(blk[:]) * a.q8d[b] * float32(s)
	}
	return sum
}

// dotQ4_K returns the dot product of a q4_K row with the q8_K activation: per
// super-block, d·d_a·Σ_j sc_j·Σ n·a − dmin·d_a·Σ_j m_j·Σ a over its eight
// sub-blocks j of 32, whose nibbles n lie in four chunks of 32 bytes (the low
// nibbles are sub-block 2c, the high ones 2c+1).
func dotQ4_K(w []byte, a *activation) float32 {
	nb := len(a.kd)
	w = w[:nb*sizeQ4K]
	p := a.kp[:nb*qkK/4]
	bs := a.kbs[:nb*16]
	var sum float32
	for b := range nb {
		blk := (*[sizeQ4K]byte)(w[b*sizeQ4K:])
		pb := (*[qkK / 4]uint64)(p[b*qkK/4:])
		bsb := (*[16]int32)(bs[16*b:])
		scales := blk[4:16]
		var isum, msum int32
		for c := range 4 {
			q := (*[32]byte)(blk[16+32*c:])
			pl := (*[8]uint64)(pb[16*c:])   // sub-block 2c: groups 8c..8c+3
			ph := (*[8]uint64)(pb[16*c+8:]) // sub-block 2c+1: groups 8c+4..8c+7
			le, lo, he, ho := uint64(bias47), uint64(bias47), uint64(bias47), uint64(bias47)
			for k := range 4 {
				u := binary.LittleEndian.Uint64(q[8*k:])
				le += (u & lanes4) * pl[2*k]
				lo += (u >> 8 & lanes4) * pl[2*k+1]
				he += (u >> 4 & lanes4) * ph[2*k]
				ho += (u >> 12 & lanes4) * ph[2*k+1]
			}
			sc, m := scaleMinK4(2*c, scales)
			isum += int32(sc) * (top(le) + top(lo))
			msum += int32(m) * (bsb[4*c] + bsb[4*c+1])
			sc, m = scaleMinK4(2*c+1, scales)
			isum += int32(sc) * (top(he) + top(ho))
			msum += int32(m) * (bsb[4*c+2] + bsb[4*c+3])
		}
		d := a.kd[b]
		sum += half(blk[:])*d*float32(isum) - half(blk[2:])*d*float32(msum)
	}
	return sum
}

// dotQ6_K returns the dot product of a q6_K row with the q8_K activation: per
// super-block, d·d_a·Σ_g sc_g·Σ (q−32)·a over its sixteen groups g of 16. A
// value q is 4 low bits from ql and 2 high bits from qh; the lanes hold q−32
// (−32..31), whose products stay small enough for two per accumulator.
func dotQ6_K(w []byte, a *activation) float32 {
	nb := len(a.kd)
	w = w[:nb*sizeQ6K]
	p := a.kp[:nb*qkK/4]
	const minus32 = 0x0020002000200020
	var sum float32
	for b := range nb {
		blk := (*[sizeQ6K]byte)(w[b*sizeQ6K:])
		var isum int32
		for n := range 2 { // 128 elements from ql[64n:64n+64], qh[32n:32n+32], scales[8n:8n+8]
			ql := (*[64]byte)(blk[64*n:])
			qh := (*[32]byte)(blk[128+32*n:])
			sc := (*[8]byte)(blk[192+8*n:])
			pn := (*[32]uint64)(p[b*qkK/4+32*n:])
			for g := range 2 { // elements l in [16g, 16g+16) of each quarter
				// Quarter i holds elements l+32i: q1 = ql[l] low | qh[l] bits 0-1,
				// q2 = ql[l+32] low | bits 2-3, q3 = ql[l] high | bits 4-5,
				// q4 = ql[l+32] high | bits 6-7.
				var e1, o1, e2, o2, e3, o3, e4, o4 uint64 = bias47, bias47, bias47, bias47, bias47, bias47, bias47, bias47
				for k := 2 * g; k < 2*g+2; k++ {
					l0 := binary.LittleEndian.Uint64(ql[8*k:])
					l1 := binary.LittleEndian.Uint64(ql[32+8*k:])
					h := binary.LittleEndian.Uint64(qh[8*k:])
					e1 += (l0&lanes4 | h<<4&lanes2 - minus32) * pn[2*k]
					o1 += (l0>>8&lanes4 | h>>4&lanes2 - minus32) * pn[2*k+1]
					e2 += (l1&lanes4 | h<<2&lanes2 - minus32) * pn[8+2*k]
					o2 += (l1>>8&lanes4 | h>>6&lanes2 - minus32) * pn[8+2*k+1]
					e3 += (l0>>4&lanes4 | h&lanes2 - minus32) * pn[16+2*k]
					o3 += (l0>>12&lanes4 | h>>8&lanes2 - minus32) * pn[16+2*k+1]
					e4 += (l1>>4&lanes4 | h>>2&lanes2 - minus32) * pn[24+2*k]
					o4 += (l1>>12&lanes4 | h>>10&lanes2 - minus32) * pn[24+2*k+1]
				}
				isum += int32(int8(sc[g]))*(top(e1)+top(o1)) + int32(int8(sc[g+2]))*(top(e2)+top(o2)) +
					int32(int8(sc[g+4]))*(top(e3)+top(o3)) + int32(int8(sc[g+6]))*(top(e4)+top(o4))
			}
		}
		sum += half(blk[208:]) * a.kd[b] * float32(isum)
	}
	return sum
}

// dotF16 returns the dot product of an f16 row with the activation rounded to
// half precision, accumulated in float32.
func dotF16(w []byte, a *activation) float32 {
	x := a.h
	w = w[:2*len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += halfTable[binary.LittleEndian.Uint16(w[2*i:])] * x[i]
		s1 += halfTable[binary.LittleEndian.Uint16(w[2*i+2:])] * x[i+1]
		s2 += halfTable[binary.LittleEndian.Uint16(w[2*i+4:])] * x[i+2]
		s3 += halfTable[binary.LittleEndian.Uint16(w[2*i+6:])] * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += halfTable[binary.LittleEndian.Uint16(w[2*i:])] * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotF32 returns the dot product of an f32 row with the activation.
func dotF32(w []byte, a *activation) float32 {
	x := a.x
	w = w[:4*len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * x[i]
		s1 += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i+4:])) * x[i+1]
		s2 += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i+8:])) * x[i+2]
		s3 += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i+12:])) * x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * x[i]
	}
	return (s0 + s1) + (s2 + s3)
}
