package main

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ggmlType is a ggml tensor type id as GGUF stores it.
type ggmlType uint32

// The weight types the forward pass reads (ggml's ids).
const (
	typeF32  ggmlType = 0
	typeF16  ggmlType = 1
	typeQ4_0 ggmlType = 2
	typeQ8_0 ggmlType = 8
	typeQ4_K ggmlType = 12
	typeQ6_K ggmlType = 14
)

// Block sizes of ggml's block types (ggml-common.h): QK_K = 256 elements in
// a k-quant super-block, 32 in q4_0 and q8_0.
const (
	qk      = 32
	qkK     = 256
	sizeQ8  = 2 + qk            // d (f16), qs[32] int8
	sizeQ4  = 2 + qk/2          // d (f16), qs[16]: element j in the low nibble of byte j, j+16 in the high
	sizeQ4K = 2 + 2 + 12 + 128  // d, dmin (f16), 6-bit scales and mins of 8 sub-blocks, qs[128]
	sizeQ6K = 128 + 64 + 16 + 2 // ql[128] low 4 bits, qh[64] high 2 bits, scales[16] int8, d (f16)
)

func (t ggmlType) String() string {
	switch t {
	case typeF32:
		return "f32"
	case typeF16:
		return "f16"
	case typeQ4_0:
		return "q4_0"
	case typeQ8_0:
		return "q8_0"
	case typeQ4_K:
		return "q4_K"
	case typeQ6_K:
		return "q6_K"
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// block returns how many elements one block of t holds and its size in
// bytes; ok is false for a type the forward pass does not read.
func (t ggmlType) block() (elems, bytes int, ok bool) {
	switch t {
	case typeF32:
		return 1, 4, true
	case typeF16:
		return 1, 2, true
	case typeQ4_0:
		return qk, sizeQ4, true
	case typeQ8_0:
		return qk, sizeQ8, true
	case typeQ4_K:
		return qkK, sizeQ4K, true
	case typeQ6_K:
		return qkK, sizeQ6K, true
	}
	return 0, 0, false
}

// rowBytes returns the size of a row of n elements of type t.
func (t ggmlType) rowBytes(n int) int {
	e, b, _ := t.block()
	return n / e * b
}

// scaleMinK4 returns the 6-bit scale and min of sub-block j of a q4_K block
// from its 12 packed bytes: sub-blocks 0-3 in the low 6 bits of bytes 0-3
// (scales) and 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11 with
// their top two bits in the top bits of bytes 0-7.
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// dequantRow decodes a row of type t into dst (len(dst) elements), with the
// float operations of ggml's own dequantize_row functions.
func dequantRow(t ggmlType, src []byte, dst []float32) {
	switch t {
	case typeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case typeF16:
		for i := range dst {
			dst[i] = half(src[2*i:])
		}
	case typeQ8_0:
		for b := 0; b < len(dst)/qk; b++ {
			blk := src[b*sizeQ8 : (b+1)*sizeQ8]
			d := half(blk)
			y := dst[b*qk : (b+1)*qk]
			for j := range y {
				y[j] = float32(int8(blk[2+j])) * d
			}
		}
	case typeQ4_0:
		for b := 0; b < len(dst)/qk; b++ {
			blk := src[b*sizeQ4 : (b+1)*sizeQ4]
			d := half(blk)
			y := dst[b*qk : (b+1)*qk]
			for j := range qk / 2 {
				y[j] = float32(int(blk[2+j]&0xf)-8) * d
				y[j+qk/2] = float32(int(blk[2+j]>>4)-8) * d
			}
		}
	case typeQ4_K:
		for b := 0; b < len(dst)/qkK; b++ {
			blk := src[b*sizeQ4K : (b+1)*sizeQ4K]
			d, dmin := half(blk), half(blk[2:])
			scales, q := blk[4:16], blk[16:]
			y := dst[b*qkK : (b+1)*qkK]
			for c := range 4 { // 64 elements: 32 low nibbles, then 32 high
				sc, m := scaleMinK4(2*c, scales)
				d1, m1 := d*float32(sc), dmin*float32(m)
				sc, m = scaleMinK4(2*c+1, scales)
				d2, m2 := d*float32(sc), dmin*float32(m)
				qc := q[32*c : 32*c+32]
				for l, v := range qc {
					y[64*c+l] = d1*float32(v&0xf) - m1
					y[64*c+32+l] = d2*float32(v>>4) - m2
				}
			}
		}
	case typeQ6_K:
		for b := 0; b < len(dst)/qkK; b++ {
			blk := src[b*sizeQ6K : (b+1)*sizeQ6K]
			d := half(blk[208:])
			y := dst[b*qkK : (b+1)*qkK]
			for n := range 2 { // 128 elements from ql[64], qh[32], scales[8]
				ql, qh := blk[64*n:64*n+64], blk[128+32*n:128+32*n+32]
				sc := blk[192+8*n : 192+8*n+8]
				yn := y[128*n : 128*n+128]
				for l := range 32 {
					is := l / 16
					q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
					q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
					q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
					q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
					yn[l] = d * float32(int8(sc[is])) * float32(q1)
					yn[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
					yn[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
					yn[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
				}
			}
		}
	}
}
