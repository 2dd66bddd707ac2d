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
		for range 2048 {
			_ = a.Make(2)
		}
	})
	// Chunks of 8, 16, ..., 512 elements (64 bytes, doubling) hold 508
	// two-element slices; 512 fit in each 1024-element chunk after them:
	// 7 + 4 chunks for 2048.
	if n > 11 {
		t.Errorf("%v allocations for 2048 two-element slices, want 11", n)
	}
	// One small slice costs one small chunk: 64 bytes, or one element
	// when an element is larger.
	var a Slices[int64]
	if s := a.Make(1); cap(a.buf) != 8 || len(s) != 1 {
		t.Errorf("the first chunk of int64s holds %d elements, want 8", cap(a.buf))
	}
	var none Slices[struct{}] // zero-size elements: no division by their size
	if s := none.Make(3); len(s) != 3 {
		t.Errorf("Make(3) of zero-size elements has length %d", len(s))
	}
	var big Slices[[100]byte]
	if s := big.Make(1); cap(big.buf) != 1 || len(s) != 1 {
		t.Errorf("the first chunk of 100-byte elements holds %d, want 1", cap(big.buf))
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

// TestSlicesWasteBound is TestWasteBound for Slices, whose large requests
// get allocations of their own (no waste) and leave the chunk in use.
func TestSlicesWasteBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var a Slices[int32]
		var used, allocated, last int
		var chunk *int32
		for range 300 {
			n := 1 + rng.IntN(Chunk+10) // some larger than a chunk
			if round%2 == 0 {
				n = 1 + rng.IntN(16)
			}
			s := a.Make(n)
			used += n
			if cap(a.buf) > 0 {
				if c := &a.buf[:1][0]; c != chunk {
					chunk, last = c, cap(a.buf)
					allocated += last
				}
			}
			if inChunk := len(a.buf) >= n && &s[0] == &a.buf[len(a.buf)-n]; !inChunk {
				if n < Chunk/4 {
					t.Fatalf("round %d: a %d-element request was not served from a chunk", round, n)
				}
				allocated += n
			}
		}
		if allocated-last > 2*used {
			t.Fatalf("round %d: %d elements allocated (last chunk %d) for %d handed out", round, allocated, last, used)
		}
	}
}
