package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
)

// A generated file and the tensor every load looks up.
type genFile struct {
	Case   string `json:"case"`
	Path   string `json:"path"`
	Tensor string `json:"tensor"`
}

// generate writes the three benchmark files into dir, sparse past their
// headers (no load reads a weight), and returns them.
func generate(dir string) ([]genFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g := genFile{Case: "gguf-300", Path: filepath.Join(dir, "model-300.gguf"), Tensor: "blk.16.ffn_down.weight"}
	if err := writeGGUF(g.Path); err != nil {
		return nil, err
	}
	m := genFile{Case: "st-300", Path: filepath.Join(dir, "model-300.safetensors")}
	srcs := stModel()
	m.Tensor = srcs[len(srcs)/2].Name
	if err := writeST(m.Path, srcs); err != nil {
		return nil, err
	}
	l := genFile{Case: "st-10000", Path: filepath.Join(dir, "lora-10000.safetensors")}
	srcs = stLoRA()
	l.Tensor = srcs[len(srcs)/2].Name
	if err := writeST(l.Path, srcs); err != nil {
		return nil, err
	}
	return []genFile{g, m, l}, nil
}

// stModel is a decoder-only model's tensor list in bf16: 24 layers of 12
// tensors, embeddings, final norm and output head (291 tensors, 1.2 GB).
func stModel() []safetensors.Source {
	const hidden, ffn, vocab = 1024, 2816, 150000
	var srcs []safetensors.Source
	add := func(name string, dt format.DType, shape ...int64) {
		srcs = append(srcs, safetensors.Source{Name: name, DType: dt, Shape: shape})
	}
	add("model.embed_tokens.weight", format.BFloat16, vocab, hidden)
	for l := range 24 {
		p := "model.layers." + strconv.Itoa(l) + "."
		for _, m := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			add(p+"self_attn."+m+".weight", format.BFloat16, hidden, hidden)
		}
		add(p+"self_attn.q_norm.weight", format.BFloat16, hidden/16)
		add(p+"self_attn.k_norm.weight", format.BFloat16, hidden/16)
		add(p+"mlp.gate_proj.weight", format.BFloat16, ffn, hidden)
		add(p+"mlp.up_proj.weight", format.BFloat16, ffn, hidden)
		add(p+"mlp.down_proj.weight", format.BFloat16, hidden, ffn)
		add(p+"input_layernorm.weight", format.BFloat16, hidden)
		add(p+"post_attention_layernorm.weight", format.BFloat16, hidden)
		add(p+"mlp.gate.bias", format.Float32, hidden)
	}
	add("model.norm.weight", format.BFloat16, hidden)
	add("lm_head.weight", format.BFloat16, vocab, hidden)
	return srcs
}

// stLoRA is a LoRA adapter set: rank-16 A and B matrices in float32 for
// 10 projections of 500 layers (10,000 tensors).
func stLoRA() []safetensors.Source {
	var srcs []safetensors.Source
	mods := []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
		"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "cross_attn.q_proj", "cross_attn.k_proj", "cross_attn.v_proj"}
	for l := range 500 {
		for _, m := range mods {
			p := "base_model.model.model.layers." + strconv.Itoa(l) + "." + m
			srcs = append(srcs,
				safetensors.Source{Name: p + ".lora_A.weight", DType: format.Float32, Shape: []int64{16, 1024}},
				safetensors.Source{Name: p + ".lora_B.weight", DType: format.Float32, Shape: []int64{1024, 16}})
		}
	}
	return srcs
}

// writeST writes the header edgeload's writer lays out for srcs and
// extends the file to its full size with a hole.
func writeST(path string, srcs []safetensors.Source) error {
	p, err := safetensors.NewPlan(srcs, []safetensors.Meta{{Key: "format", Value: "pt"}}, 8)
	if err != nil {
		return err
	}
	return writeSparse(path, p.Header, p.Size)
}

func writeSparse(path string, head []byte, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(head); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// GGUF value types and tensor types used below.
const (
	gU32, gI32, gF32, gStr, gArr = 4, 5, 6, 8, 9
	tF32, tQ4K, tQ6K             = 0, 12, 14
)

// ggufWriter builds a GGUF v3 header.
type ggufWriter struct{ bytes.Buffer }

func (w *ggufWriter) u32(v uint32) { w.Write(binary.LittleEndian.AppendUint32(nil, v)) }
func (w *ggufWriter) u64(v uint64) { w.Write(binary.LittleEndian.AppendUint64(nil, v)) }
func (w *ggufWriter) str(s string) { w.u64(uint64(len(s))); w.WriteString(s) }
func (w *ggufWriter) key(k string, t uint32) {
	w.str(k)
	w.u32(t)
}

// writeGGUF writes a llama-shaped GGUF v3: 33 blocks of 9 tensors plus
// embeddings, output norm and output (300 tensors), Q4_K weights, F32
// norms, Q6_K output, and a 150,000-token vocabulary (tokens, scores,
// token types), 1.2 GB with the data region a hole.
func writeGGUF(path string) error {
	const layers, hidden, ffn, vocab = 33, 2048, 5632, 150000
	type tinfo struct {
		name string
		typ  uint32
		ne   []uint64
	}
	var ts []tinfo
	ts = append(ts, tinfo{"token_embd.weight", tQ4K, []uint64{hidden, vocab}})
	for l := range layers {
		p := "blk." + strconv.Itoa(l) + "."
		ts = append(ts,
			tinfo{p + "attn_norm.weight", tF32, []uint64{hidden}},
			tinfo{p + "attn_q.weight", tQ4K, []uint64{hidden, hidden}},
			tinfo{p + "attn_k.weight", tQ4K, []uint64{hidden, hidden / 8}},
			tinfo{p + "attn_v.weight", tQ6K, []uint64{hidden, hidden / 8}},
			tinfo{p + "attn_output.weight", tQ4K, []uint64{hidden, hidden}},
			tinfo{p + "ffn_norm.weight", tF32, []uint64{hidden}},
			tinfo{p + "ffn_gate.weight", tQ4K, []uint64{hidden, ffn}},
			tinfo{p + "ffn_up.weight", tQ4K, []uint64{hidden, ffn}},
			tinfo{p + "ffn_down.weight", tQ6K, []uint64{ffn, hidden}})
	}
	ts = append(ts, tinfo{"output_norm.weight", tF32, []uint64{hidden}}, tinfo{"output.weight", tQ6K, []uint64{hidden, vocab}})

	var w ggufWriter
	w.WriteString("GGUF")
	w.u32(3)
	w.u64(uint64(len(ts)))
	nkv := 0
	kvs := new(ggufWriter)
	kstr := func(k, v string) { kvs.key(k, gStr); kvs.str(v); nkv++ }
	ku32 := func(k string, v uint32) { kvs.key(k, gU32); kvs.u32(v); nkv++ }
	kf32 := func(k string, v float32) { kvs.key(k, gF32); kvs.u32(math.Float32bits(v)); nkv++ }
	kstr("general.architecture", "llama")
	kstr("general.name", "peerbench")
	ku32("general.alignment", 32)
	ku32("llama.block_count", layers)
	ku32("llama.context_length", 4096)
	ku32("llama.embedding_length", hidden)
	ku32("llama.feed_forward_length", ffn)
	ku32("llama.attention.head_count", 32)
	ku32("llama.attention.head_count_kv", 4)
	kf32("llama.rope.freq_base", 10000)
	kf32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	ku32("general.file_type", 15)
	kstr("tokenizer.ggml.model", "gpt2")
	kvs.key("tokenizer.ggml.tokens", gArr)
	kvs.u32(gStr)
	kvs.u64(vocab)
	for i := range vocab {
		kvs.str(token(i))
	}
	nkv++
	kvs.key("tokenizer.ggml.scores", gArr)
	kvs.u32(gF32)
	kvs.u64(vocab)
	for i := range vocab {
		kvs.u32(math.Float32bits(float32(-i)))
	}
	nkv++
	kvs.key("tokenizer.ggml.token_type", gArr)
	kvs.u32(gI32)
	kvs.u64(vocab)
	for range vocab {
		kvs.u32(1)
	}
	nkv++
	ku32("tokenizer.ggml.bos_token_id", 1)
	ku32("tokenizer.ggml.eos_token_id", 2)
	w.u64(uint64(nkv))
	w.Write(kvs.Bytes())

	var off uint64
	for _, t := range ts {
		w.str(t.name)
		w.u32(uint32(len(t.ne)))
		for _, d := range t.ne {
			w.u64(d)
		}
		w.u32(t.typ)
		w.u64(off)
		off += align(tensorBytes(t.typ, t.ne), 32)
	}
	head := w.Bytes()
	data := align(uint64(len(head)), 32)
	head = append(head, make([]byte, data-uint64(len(head)))...)
	if len(ts) != 300 {
		return fmt.Errorf("gguf: %d tensors", len(ts))
	}
	return writeSparse(path, head, int64(data+off))
}

// token is a byte-level BPE-looking token: a word piece of 1 to 12 letters,
// some with the leading-space marker.
func token(i int) string {
	const letters = "etaoinshrdlucmfwypvbgkqjxz"
	n := 1 + i%12
	b := make([]byte, 0, n+2)
	if i%3 == 0 {
		b = append(b, "Ġ"...)
	}
	x := uint32(i)*2654435761 + 1
	for range n {
		b = append(b, letters[x%26])
		x = x*1103515245 + 12345
	}
	return string(b) + strconv.Itoa(i)
}

func align(n, a uint64) uint64 { return (n + a - 1) / a * a }

func tensorBytes(typ uint32, ne []uint64) uint64 {
	n := uint64(1)
	for _, d := range ne {
		n *= d
	}
	switch typ {
	case tQ4K:
		return n / 256 * 144
	case tQ6K:
		return n / 256 * 210
	}
	return n * 4
}
