package main

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/gguf"
)

// TestWrite writes a small model and reads it back with edgeload's GGUF
// reader: the metadata llama.cpp needs, every tensor with its shape and
// type, and q8_0 scales near 1/(73·sqrt(fan-in)).
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	const embd, layers, ff, heads, kv, vocab = 128, 3, 320, 4, 2, 300
	if err := write(path, embd, layers, ff, heads, kv, vocab, 7); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f := m.Impl().(*gguf.File)
	for key, want := range map[string]uint64{
		"llama.embedding_length": embd, "llama.block_count": layers, "llama.feed_forward_length": ff,
		"llama.attention.head_count": heads, "llama.attention.head_count_kv": kv, "llama.rope.dimension_count": embd / heads,
	} {
		if got, ok := f.MetaUint(key); !ok || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
		}
	}
	if a, ok := f.MetaArray("tokenizer.ggml.tokens"); !ok || a.Len() != vocab {
		t.Errorf("tokenizer.ggml.tokens: %v", ok)
	}
	if eps, ok := f.MetaFloat("llama.attention.layer_norm_rms_epsilon"); !ok || float32(eps) != 1e-5 {
		t.Errorf("epsilon %v, %v", eps, ok)
	}
	if n := m.NumTensors(); n != 2+9*layers+1 {
		t.Errorf("%d tensors", n)
	}
	order, err := m.UseOrder("")
	if err != nil {
		t.Fatal(err)
	}
	// The file is in use order but for each block's attn_k and attn_v,
	// which llama.cpp computes V first.
	want := make([]string, m.NumTensors())
	for i := range want {
		want[i] = m.TensorAt(i).Name
		if strings.HasSuffix(want[i], ".attn_v.weight") {
			want[i-1], want[i] = want[i], want[i-1]
		}
	}
	for k, i := range order {
		if got := m.TensorAt(i).Name; got != want[k] {
			t.Fatalf("use order %d is %s, want %s", k, got, want[k])
		}
	}
	const hd = embd / heads
	for name, ne := range map[string][2]int64{
		"token_embd.weight": {embd, vocab}, "blk.2.attn_q.weight": {embd, heads * hd}, "blk.2.attn_k.weight": {embd, kv * hd},
		"blk.0.attn_output.weight": {heads * hd, embd}, "blk.1.ffn_up.weight": {embd, ff}, "blk.1.ffn_down.weight": {ff, embd},
		"output.weight": {embd, vocab},
	} {
		ti, ok := f.Tensor(name)
		if !ok || ti.Type != typeQ8_0 || ti.NE[0] != ne[0] || ti.NE[1] != ne[1] {
			t.Fatalf("%s: %v", name, ti)
		}
		b, err := ti.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		want := 1 / (73 * math.Sqrt(float64(ne[0])))
		for blk := 0; blk < len(b); blk += 34 {
			h := binary.LittleEndian.Uint16(b[blk:])
			d := math.Ldexp(1+float64(h&0x3ff)/1024, int(h>>10&0x1f)-15)
			if h>>15 != 0 || d < 0.49*want || d > 1.51*want {
				t.Fatalf("%s block %d: scale %v, want about %v", name, blk/34, d, want)
			}
		}
	}
	if ti, ok := f.Tensor("blk.0.ffn_norm.weight"); !ok || ti.Type != typeF32 || ti.NE[0] != embd {
		t.Errorf("blk.0.ffn_norm.weight: %v", ti)
	}
}
