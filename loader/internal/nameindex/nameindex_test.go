package nameindex

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// firstIndex is what the Index replaces: a map of each name's first
// position.
func firstIndex(names []string) map[string]int {
	m := make(map[string]int, len(names))
	for i, s := range names {
		if _, dup := m[s]; !dup {
			m[s] = i
		}
	}
	return m
}

func check(t *testing.T, names []string, absent ...string) {
	t.Helper()
	x := New(len(names), func(i int) string { return names[i] })
	want := firstIndex(names)
	for s, w := range want {
		if i, ok := x.Lookup(s); !ok || i != w {
			t.Fatalf("Lookup(%q) = %d, %v; want %d, true", s, i, ok, w)
		}
	}
	for _, s := range absent {
		if _, in := want[s]; in {
			continue
		}
		if i, ok := x.Lookup(s); ok {
			t.Fatalf("Lookup(%q) = %d, true; want absent", s, i)
		}
	}
}

func TestMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 7, 8, 9, 100, 1000, 10000} {
		names := make([]string, n)
		for i := range names {
			// Small alphabets repeat names; lengths from 0 (the empty name).
			b := make([]byte, r.IntN(4))
			for k := range b {
				b[k] = "ab/."[r.IntN(4)]
			}
			if r.IntN(2) == 0 {
				b = strconv.AppendInt(b, int64(r.IntN(n)), 10)
			}
			names[i] = string(b)
		}
		check(t, names, "", "zz", "a", "forward/values/0", strconv.Itoa(n+1))
	}
}

func TestDistinct(t *testing.T) {
	names := make([]string, 100000)
	for i := range names {
		names[i] = "forward/values/" + strconv.Itoa(i)
	}
	check(t, names, "forward/values/100000", "forward/values/-1", "forward/values/")
}

func TestAllSame(t *testing.T) {
	names := make([]string, 5000)
	for i := range names {
		names[i] = "w"
	}
	check(t, names, "", "ww")
}

func TestInsert(t *testing.T) {
	names := []string{"a", "b", "a", "", "c", "b", "", "a"}
	x := Make(len(names), func(i int) string { return names[i] })
	first := map[string]int{}
	for i, s := range names {
		j, repeat := x.Insert(i)
		f, seen := first[s]
		if repeat != seen || seen && j != f {
			t.Fatalf("Insert(%d) (%q) = %d, %v; want %d, %v", i, s, j, repeat, f, seen)
		}
		if !seen {
			first[s] = i
		}
		// What is inserted is found at once; what is not yet, is not.
		if k, ok := x.Lookup(s); !ok || k != first[s] {
			t.Fatalf("after Insert(%d): Lookup(%q) = %d, %v", i, s, k, ok)
		}
		if _, ok := x.Lookup("d"); ok {
			t.Fatal("found a name never inserted")
		}
	}
	// A position added again finds itself.
	if j, repeat := x.Insert(1); !repeat || j != 1 {
		t.Fatalf("Insert(1) again = %d, %v; want 1, true", j, repeat)
	}
	for _, bad := range []func(){
		func() { x.Insert(len(names)) },
		func() { x.Insert(-1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Insert outside the room did not panic")
				}
			}()
			bad()
		}()
	}
}

func TestEmpty(t *testing.T) {
	var zero Index
	if _, ok := zero.Lookup(""); ok {
		t.Fatal("the zero Index found a name")
	}
	calls := 0
	x := New(0, func(int) string { calls++; return "" })
	if _, ok := x.Lookup(""); ok || calls != 0 {
		t.Fatalf("New(0): found a name, or called key %d times", calls)
	}
}

func TestNewPanics(t *testing.T) {
	for _, n := range []int{-1, math.MinInt} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d) did not panic", n)
				}
			}()
			New(n, func(int) string { return "" })
		}()
	}
}

func TestLookupAllocs(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("layer.%d.weight", i)
	}
	x := New(len(names), func(i int) string { return names[i] })
	i := 0
	if a := testing.AllocsPerRun(1000, func() {
		if _, ok := x.Lookup(names[i%len(names)]); !ok {
			t.Fatal("not found")
		}
		x.Lookup("absent")
		i++
	}); a != 0 {
		t.Fatalf("Lookup allocates %v times a run", a)
	}
}

// BenchmarkIndex compares building the index and looking a name up with
// the map a Go user would write (firstIndex), at 1024 and 100,000 names.
func BenchmarkIndex(b *testing.B) {
	for _, n := range []int{1024, 100000} {
		names := make([]string, n)
		for i := range names {
			names[i] = "forward/values/" + strconv.Itoa(i)
		}
		key := func(i int) string { return names[i] }
		b.Run(fmt.Sprintf("n=%d/op=build/impl=index", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(n, key)
			}
		})
		b.Run(fmt.Sprintf("n=%d/op=build/impl=map", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				firstIndex(names)
			}
		})
		x, m := New(n, key), firstIndex(names)
		b.Run(fmt.Sprintf("n=%d/op=lookup/impl=index", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := x.Lookup(names[i]); !ok {
					b.Fatal("not found")
				}
				if i++; i == n {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/op=lookup/impl=map", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok := m[names[i]]; !ok {
					b.Fatal("not found")
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}
