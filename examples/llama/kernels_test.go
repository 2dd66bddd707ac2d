package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHalf(t *testing.T) {
	for h := range 1 << 16 {
		f := halfToFloat(uint16(h))
		if f != f {
			if g := halfToFloat(floatToHalf(f)); g == g {
				t.Fatalf("NaN %#04x comes back as %v", h, g)
			}
			continue
		}
		if got := floatToHalf(f); got != uint16(h) && !(f == 0 && got&0x7fff == 0) {
			t.Fatalf("floatToHalf(halfToFloat(%#04x) = %v) = %#04x", h, f, got)
		}
	}
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {65519, 0x7bff}, // max, the first value that rounds to infinity
		{1 + 1.0/2048, 0x3c00},                     // halfway between 1 and its successor: to even
		{1 + 3.0/2048, 0x3c02},                     // halfway between 0x3c01 and 0x3c02: to even
		{float32(math.Ldexp(1, -24)), 0x0001},      // the smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000},      // half of it: to even (zero)
		{float32(math.Ldexp(1.5, -24)), 0x0002},    // 1.5 × the smallest: to even
		{float32(math.Ldexp(3, -26)), 0x0001},      // 0.75 × the smallest: up
		{float32(math.Ldexp(1023.5, -24)), 0x0400}, // rounds up into the normals
		{float32(math.Inf(-1)), 0xfc00},
	} {
		if got := floatToHalf(c.f); got != c.want {
			t.Errorf("floatToHalf(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}

// The test encoders below pack given integer values into ggml's blocks as
// ggml-common.h lays them out; the decoder and the kernels must read them
// back.

func putHalf(b []byte, f float32) { binary.LittleEndian.PutUint16(b, floatToHalf(f)) }

func encodeQ8_0(d float32, q []int8) []byte {
	b := make([]byte, sizeQ8)
	putHalf(b, d)
	for j, v := range q {
		b[2+j] = byte(v)
	}
	return b
}

// encodeQ4_0 packs nibbles n (0..15): element j in the low nibble of byte j,
// element j+16 in the high one.
func encodeQ4_0(d float32, n []uint8) []byte {
	b := make([]byte, sizeQ4)
	putHalf(b, d)
	for j := range 16 {
		b[2+j] = n[j] | n[j+16]<<4
	}
	return b
}

// encodeQ4_K packs 6-bit scales and mins and 256 nibbles: bytes 0-3 hold the
// scales of sub-blocks 0-3 and bytes 4-7 their mins, with the top two bits
// of sub-blocks 4-7's scales and mins above them; bytes 8-11 hold the low
// four bits of sub-blocks 4-7's scales (low nibble) and mins (high). Chunk c
// of 32 bytes holds elements 64c+l (low nibble) and 64c+32+l (high).
func encodeQ4_K(d, dmin float32, sc, m []uint8, n []uint8) []byte {
	b := make([]byte, sizeQ4K)
	putHalf(b, d)
	putHalf(b[2:], dmin)
	s := b[4:16]
	for j := range 4 {
		s[j] = sc[j] | (sc[j+4]>>4)<<6
		s[j+4] = m[j] | (m[j+4]>>4)<<6
		s[j+8] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
	}
	for c := range 4 {
		for l := range 32 {
			b[16+32*c+l] = n[64*c+l] | n[64*c+32+l]<<4
		}
	}
	return b
}

// encodeQ6_K packs 256 6-bit values q (0..63) and 16 int8 scales: for each
// half h of 128, ql[64h+l] holds the low bits of elements l (low nibble) and
// l+64 (high), ql[64h+32+l] those of l+32 and l+96, and qh[32h+l] the high
// two bits of l, l+32, l+64, l+96 from bit 0 up.
func encodeQ6_K(d float32, sc []int8, q []uint8) []byte {
	b := make([]byte, sizeQ6K)
	for h := range 2 {
		v := q[128*h:]
		for l := range 32 {
			b[64*h+l] = v[l]&0xf | (v[l+64]&0xf)<<4
			b[64*h+32+l] = v[l+32]&0xf | (v[l+96]&0xf)<<4
			b[128+32*h+l] = v[l]>>4 | (v[l+32]>>4)<<2 | (v[l+64]>>4)<<4 | (v[l+96]>>4)<<6
		}
	}
	for j, s := range sc {
		b[192+j] = byte(s)
	}
	putHalf(b[208:], d)
	return b
}

// testRow is a row of a type with the values its blocks decode to, computed
// from the integers the test packed.
type testRow struct {
	typ  ggmlType
	data []byte
	want []float32
}

// valuesMode picks the integers a generated row holds.
type valuesMode int

const (
	randomValues valuesMode = iota
	lowValues               // every quant at its lowest
	highValues              // every quant at its highest
)

func pick(r *rand.Rand, mode valuesMode, lo, hi int) int {
	switch mode {
	case lowValues:
		return lo
	case highValues:
		return hi
	}
	return lo + r.IntN(hi-lo+1)
}

// makeRow generates a row of n elements of type t.
func makeRow(r *rand.Rand, t ggmlType, n int, mode valuesMode) testRow {
	row := testRow{typ: t, want: make([]float32, n)}
	scale := func() float32 { return roundHalf(float32(0.001 + r.Float64()*0.01)) }
	switch t {
	case typeF32:
		for i := range n {
			v := float32(r.NormFloat64())
			row.data = binary.LittleEndian.AppendUint32(row.data, math.Float32bits(v))
			row.want[i] = v
		}
	case typeF16:
		for i := range n {
			h := floatToHalf(float32(r.NormFloat64()))
			row.data = binary.LittleEndian.AppendUint16(row.data, h)
			row.want[i] = halfToFloat(h)
		}
	case typeQ8_0:
		for b := range n / qk {
			d := scale()
			q := make([]int8, qk)
			for j := range q {
				q[j] = int8(pick(r, mode, -128, 127))
				row.want[b*qk+j] = float32(q[j]) * d
			}
			row.data = append(row.data, encodeQ8_0(d, q)...)
		}
	case typeQ4_0:
		for b := range n / qk {
			d := scale()
			q := make([]uint8, qk)
			for j := range q {
				q[j] = uint8(pick(r, mode, 0, 15))
				row.want[b*qk+j] = float32(int(q[j])-8) * d
			}
			row.data = append(row.data, encodeQ4_0(d, q)...)
		}
	case typeQ4_K:
		for b := range n / qkK {
			d, dmin := scale(), scale()
			sc, m, q := make([]uint8, 8), make([]uint8, 8), make([]uint8, qkK)
			for j := range 8 {
				sc[j], m[j] = uint8(pick(r, mode, 0, 63)), uint8(pick(r, mode, 0, 63))
			}
			for i := range q {
				q[i] = uint8(pick(r, mode, 0, 15))
				j := i / 32
				row.want[b*qkK+i] = d*float32(sc[j])*float32(q[i]) - dmin*float32(m[j])
			}
			row.data = append(row.data, encodeQ4_K(d, dmin, sc, m, q)...)
		}
	case typeQ6_K:
		for b := range n / qkK {
			d := scale()
			sc, q := make([]int8, 16), make([]uint8, qkK)
			for j := range sc {
				sc[j] = int8(pick(r, mode, -128, 127))
			}
			for i := range q {
				q[i] = uint8(pick(r, mode, 0, 63))
				row.want[b*qkK+i] = d * float32(sc[i/16]) * float32(int(q[i])-32)
			}
			row.data = append(row.data, encodeQ6_K(d, sc, q)...)
		}
	}
	return row
}

var allTypes = []ggmlType{typeF32, typeF16, typeQ8_0, typeQ4_0, typeQ4_K, typeQ6_K}

func TestDequantRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range allTypes {
		for _, mode := range []valuesMode{randomValues, lowValues, highValues} {
			row := makeRow(r, typ, 512, mode)
			if len(row.data) != typ.rowBytes(512) {
				t.Fatalf("%v: %d bytes, want %d", typ, len(row.data), typ.rowBytes(512))
			}
			got := make([]float32, 512)
			dequantRow(typ, row.data, got)
			for i := range got {
				if got[i] != row.want[i] {
					t.Fatalf("%v mode %d: element %d = %v, want %v", typ, mode, i, got[i], row.want[i])
				}
			}
		}
	}
}

// activationValues returns the values the kernels multiply for type t: x
// rounded to half for f16, the quantized values times their scale for the
// quantized types.
func activationValues(t ggmlType, a *activation) []float64 {
	v := make([]float64, len(a.x))
	switch t {
	case typeF32:
		for i, x := range a.x {
			v[i] = float64(x)
		}
	case typeF16:
		a.forHalf()
		for i, x := range a.h {
			v[i] = float64(x)
		}
	case typeQ8_0, typeQ4_0:
		a.forQ8()
		for i, q := range a.q8qs {
			v[i] = float64(q) * float64(a.q8d[i/qk])
		}
	default:
		a.forK()
		for i, q := range a.kqs {
			v[i] = float64(q) * float64(a.kd[i/qkK])
		}
	}
	return v
}

func TestActivationQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 1024)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
	}
	clear(x[256:512]) // an all-zero super-block
	// A block whose scale is 1 (amax 127) has values halfway between two
	// integers: they round to even, as x86's round instruction does.
	copy(x[512:], []float32{127, 2.5, -2.5, 3.5, -0.5, 126.5})
	var a activation
	a.set(x)
	a.forQ8()
	a.forK()
	if got, want := a.q8qs[512:518], []int8{127, 2, -2, 4, 0, 126}; !slices.Equal(got, want) {
		t.Errorf("q8_0 of %v: %v, want %v", x[512:518], got, want)
	}
	for b := range len(x) / qk {
		var amax float32
		for _, v := range x[b*qk : (b+1)*qk] {
			amax = max(amax, abs32(v))
		}
		if want := roundHalf(amax / 127); a.q8d[b] != want {
			t.Fatalf("q8_0 block %d: d = %v, want %v", b, a.q8d[b], want)
		}
		var sum int32
		for j := b * qk; j < (b+1)*qk; j++ {
			q := a.q8qs[j]
			sum += int32(q)
			if e := math.Abs(float64(x[j])*127/float64(amax) - float64(q)); amax != 0 && e > 0.5+1e-5 {
				t.Fatalf("q8_0 element %d: %d for %v (amax %v)", j, q, x[j], amax)
			}
		}
		if sum != a.q8sum[b] {
			t.Fatalf("q8_0 block %d: sum %d, want %d", b, a.q8sum[b], sum)
		}
	}
	for b := range len(x) / qkK {
		xb, q := x[b*qkK:(b+1)*qkK], a.kqs[b*qkK:(b+1)*qkK]
		var mx float32
		for _, v := range xb {
			if abs32(v) > abs32(mx) {
				mx = v
			}
		}
		for j, v := range xb {
			if mx == 0 {
				if q[j] != 0 {
					t.Fatalf("q8_K zero block %d: q[%d] = %d", b, j, q[j])
				}
				continue
			}
			if v == mx && q[j] != -127 {
				t.Fatalf("q8_K block %d: the largest value %v gives %d, want -127", b, v, q[j])
			}
			if e := math.Abs(float64(v)/float64(a.kd[b]) - float64(q[j])); e > 0.5+1e-4 {
				t.Fatalf("q8_K block %d element %d: %d for %v (d %v)", b, j, q[j], v, a.kd[b])
			}
		}
		for g := range 16 {
			var s int32
			for _, v := range q[16*g : 16*g+16] {
				s += int32(v)
			}
			if a.kbs[16*b+g] != s {
				t.Fatalf("q8_K block %d: bsums[%d] = %d, want %d", b, g, a.kbs[16*b+g], s)
			}
		}
	}
}

// TestDot checks every kernel against the float64 dot product of the values
// the row decodes to with the values of the activation form it reads, on
// random rows and on rows with every quant at an extreme (which the packed
// multiplications must hold without overflow) against activations of ±127.
func TestDot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 1024
	inputs := map[string][]float32{}
	for _, name := range []string{"random", "+", "-", "alternating"} {
		x := make([]float32, n)
		for i := range x {
			switch name {
			case "random":
				x[i] = float32(r.NormFloat64())
			case "+":
				x[i] = 1
			case "-":
				x[i] = -1
			default:
				x[i] = float32(1 - 2*(i%2))
			}
		}
		inputs[name] = x
	}
	for _, typ := range allTypes {
		for _, mode := range []valuesMode{randomValues, lowValues, highValues} {
			for name, x := range inputs {
				row := makeRow(r, typ, n, mode)
				var a activation
				a.set(x)
				got := kernel(typ, &a)(row.data, &a)
				av := activationValues(typ, &a)
				var want, mag float64
				for i, w := range row.want {
					want += float64(w) * av[i]
					mag += math.Abs(float64(w) * av[i])
				}
				if math.Abs(float64(got)-want) > 1e-5*mag+1e-30 {
					t.Errorf("%v, values %d, input %s: %v, want %v (magnitude %v)", typ, mode, name, got, want, mag)
				}
			}
		}
	}
}

// TestMatvec checks that the pool computes every row of a product, once, with
// any number of threads.
func TestMatvec(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	const rows, cols = 37, 512
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, typ := range allTypes {
		m := matrix{typ: typ, rows: rows, cols: cols, rowBytes: typ.rowBytes(cols)}
		for range rows {
			m.data = append(m.data, makeRow(r, typ, cols, randomValues).data...)
		}
		var a activation
		a.set(x)
		dot := kernel(typ, &a)
		for _, threads := range []int{1, 2, 3} {
			p := newPool(threads)
			y := make([]float32, rows+1)
			y[rows] = 42
			for range 3 {
				a.set(x)
				p.matvec(m, &a, y)
				for i := range rows {
					if want := dot(m.data[i*m.rowBytes:(i+1)*m.rowBytes], &a); y[i] != want {
						t.Fatalf("%v, %d threads: row %d = %v, want %v", typ, threads, i, y[i], want)
					}
				}
				if y[rows] != 42 {
					t.Fatalf("%v, %d threads: wrote past the rows", typ, threads)
				}
			}
			p.close()
		}
	}
}

func BenchmarkMatvec(b *testing.B) {
	const rows, cols = 4096, 4096
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]float32, rows)
	for _, typ := range allTypes {
		m := matrix{typ: typ, rows: rows, cols: cols, rowBytes: typ.rowBytes(cols)}
		m.data = make([]byte, rows*m.rowBytes)
		proto := makeRow(r, typ, cols, randomValues).data
		for i := range rows {
			copy(m.data[i*m.rowBytes:], proto)
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%v/threads=%d", typ, threads), func(b *testing.B) {
				p := newPool(threads)
				defer p.close()
				var a activation
				b.SetBytes(int64(len(m.data)))
				for b.Loop() {
					a.set(x)
					p.matvec(m, &a, y)
				}
			})
		}
	}
}
