package gguf_test

import (
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
)

// BenchmarkOpen opens a model-shaped file (300 tensors, a 150,000-token
// vocabulary with scores and types) and looks one tensor up.
func BenchmarkOpen(b *testing.B) {
	data := ggufcheck.ModelShaped(33, 150000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := open(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := f.Lookup("blk.32.ffn_down.weight"); !ok {
			b.Fatal("not found")
		}
	}
}

// BenchmarkLookup looks a tensor up by name in that file: no allocation.
func BenchmarkLookup(b *testing.B) {
	f, err := open(ggufcheck.ModelShaped(33, 150000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := f.Lookup("blk.17.attn_v.weight"); !ok {
			b.Fatal("not found")
		}
	}
}
