package arena

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestStringsCopy(t *testing.T) {
	var a Strings
	src := []byte("abc")
	var got []string
	var want []string
	for i := range 3000 {
		b := fmt.Appendf(src[:0], "key%04d", i)
		if i == 2000 {
			b = []byte(strings.Repeat("x", 10*Chunk)) // larger than a chunk
		}
		want = append(want, string(b))
		got = append(got, a.Copy(b))
		for j := range b {
			b[j] = '!' // the caller reuses its buffer
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("string %d = %.20q, want %.20q", i, got[i], want[i])
		}
	}
	if a.Copy(nil) != "" || a.Copy([]byte{}) != "" {
		t.Error("Copy of nothing is not empty")
	}
}

func TestStringsAllocs(t *testing.T) {
	b := []byte("w0000")
	n := testing.AllocsPerRun(10, func() {
		var a Strings
		for range 4096 {
			_ = a.Copy(b)
		}
	})
	// Chunks of 64, 128, ..., 2048 bytes hold 803 five-byte strings; 819
	// fit in each 4 KiB chunk after them: 6 + 5 chunks for 4096.
	if n > 11 {
		t.Errorf("%v allocations for 4096 five-byte strings, want 11", n)
	}
}

func TestSlicesMake(t *testing.T) {
	var a Slices[int64]
	var all [][]int64
	for i := range 500 {
		n := i % 7
		if i == 300 {
			n = 3 * Chunk
		}
		s := a.Make(n)
		if len(s) != n || cap(s) != n || s == nil {
			t.Fatalf("Make(%d): len %d cap %d nil %v", n, len(s), cap(s), s == nil)
		}
		for j := range s {
			if s[j] != 0 {
				t.Fatalf("Make(%d)[%d] = %d, want zero", n, j, s[j])
			}
			s[j] = int64(i)
		}
		all = append(all, s)
	}
	// appending to one slice must not write into the next
	all[10] = append(all[10], -1)
	for i, s := range all {
		for j, v := range s {
			if i != 10 && v != int64(i) || i == 10 && j < len(s)-1 && v != 10 {
				t.Fatalf("slice %d[%d] = %d: slices overlap", i, j, v)
			}
		}
	}
	c := a.Copy([]int64{4, 5})
	if len(c) != 2 || c[0] != 4 || c[1] != 5 || cap(c) != 2 {
		t.Errorf("Copy = %v (cap %d)", c, cap(c))
	}
}

func TestSlicesAllocs(t *testing.T) {
	n := testing.AllocsPerRun(10, func() {
		var a Slices[int64]
		for range 512 {
			_ = a.Make(2)
		}
	})
	if n > 1 {
		t.Errorf("%v allocations for 512 two-element slices, want 1", n)
	}
}

// TestWasteBound checks the package's bound on waste: over any sequence of
// requests, the chunks allocated hold at most twice what was handed out,
// plus the last chunk.
func TestWasteBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var a Strings
		var used, allocated, last int
		var chunk *byte
		for range 300 {
			n := 1 + rng.IntN(4*Chunk+10) // some larger than a chunk
			if round%2 == 0 {
				n = 1 + rng.IntN(64)
			}
			a.Copy(make([]byte, n))
			used += n
			if c := &a.buf[:1][0]; c != chunk {
				chunk, last = c, cap(a.buf)
				allocated += last
			}
		}
		if allocated-last > 2*used {
			t.Fatalf("round %d: %d bytes in chunks (last %d) for %d handed out", round, allocated, last, used)
		}
	}
}
