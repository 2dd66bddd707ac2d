// Command llamagen writes a Llama GGUF file with random q8_0 weights, the
// model examples/llama decodes in the benchmark of a model larger than RAM.
//
// Usage:
//
//	llamagen [-embd 2560] [-layers 30] [-ff 6912] [-heads 20] [-kv 4] [-vocab 8192] [-seed 1] FILE
//
// The defaults give a 2.2 GB model (2.1 billion weights, head size 128, four
// KV heads for twenty query heads, a separate output matrix over a vocabulary
// of 8192). The tensors are written about in the order a forward pass reads
// them (token_embd, then each block's attn_norm, attn_q, attn_k, attn_v,
// attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm and
// output; llama.cpp reads attn_v before attn_k), 32-aligned, with llama.cpp's metadata and a placeholder
// vocabulary (<unk>, <s>, </s>, the 256 byte tokens, then t259, t260, ...),
// so that llama.cpp loads it too. Every matrix is q8_0: per block of 32 a
// half-precision scale near 1/(73·sqrt(fan-in)) and 32 random int8 values,
// so that every output of a matrix-vector product with a normalised input
// has a variance near 1; the norm weights are float32 near 1. The same seed
// gives the same file.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

// GGUF metadata value types.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufString  = 8
	ggufArray   = 9
)

// ggml type ids.
const (
	typeF32  = 0
	typeQ8_0 = 8
)

const align = 32

type tensor struct {
	name string
	typ  uint32
	ne   []uint64 // innermost first
	fill func(w *bufio.Writer, r *rand.Rand) error
}

func (t tensor) bytes() uint64 {
	n := uint64(1)
	for _, d := range t.ne {
		n *= d
	}
	if t.typ == typeQ8_0 {
		return n / 32 * 34
	}
	return n * 4
}

// header is the start of the file: the metadata and tensor infos, with a
// count of the metadata pairs written.
type header struct {
	b   []byte
	kvs uint64
}

func (h *header) u32(v uint32) { h.b = binary.LittleEndian.AppendUint32(h.b, v) }
func (h *header) u64(v uint64) { h.b = binary.LittleEndian.AppendUint64(h.b, v) }
func (h *header) str(s string) { h.u64(uint64(len(s))); h.b = append(h.b, s...) }
func (h *header) key(k string, typ uint32) {
	h.str(k)
	h.u32(typ)
	h.kvs++
}
func (h *header) kvString(k, v string) {
	h.key(k, ggufString)
	h.str(v)
}
func (h *header) kvUint32(k string, v uint32) {
	h.key(k, ggufUint32)
	h.u32(v)
}
func (h *header) kvFloat32(k string, v float32) {
	h.key(k, ggufFloat32)
	h.u32(math.Float32bits(v))
}

// halfBits encodes f (a normal number in half's range) as IEEE half
// precision, rounding to nearest.
func halfBits(f float32) uint16 {
	b := math.Float32bits(f)
	e := int(b>>23&0xff) - 127 + 15
	m := b & 0x7fffff
	h := uint32(e)<<10 | m>>13
	if m&0x1fff > 0x1000 || m&0x1fff == 0x1000 && h&1 == 1 {
		h++
	}
	return uint16(b>>16&0x8000) | uint16(h)
}

// q8Fill writes rows×cols q8_0 weights.
func q8Fill(rows, cols uint64) func(*bufio.Writer, *rand.Rand) error {
	scale := 1 / (73 * math.Sqrt(float64(cols)))
	return func(w *bufio.Writer, r *rand.Rand) error {
		var blk [34]byte
		for range rows * cols / 32 {
			binary.LittleEndian.PutUint16(blk[:], halfBits(float32(scale*(0.5+r.Float64()))))
			for j := 2; j < 34; j += 8 {
				binary.LittleEndian.PutUint64(blk[j:], r.Uint64())
			}
			if _, err := w.Write(blk[:]); err != nil {
				return err
			}
		}
		return nil
	}
}

// normFill writes n float32 values in [0.5, 1.5).
func normFill(n uint64) func(*bufio.Writer, *rand.Rand) error {
	return func(w *bufio.Writer, r *rand.Rand) error {
		var b [4]byte
		for range n {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(float32(0.5+r.Float64())))
			if _, err := w.Write(b[:]); err != nil {
				return err
			}
		}
		return nil
	}
}

func main() {
	embd := flag.Uint64("embd", 2560, "embedding length")
	layers := flag.Uint64("layers", 30, "blocks")
	ff := flag.Uint64("ff", 6912, "feed-forward length")
	heads := flag.Uint64("heads", 20, "query heads")
	kv := flag.Uint64("kv", 4, "key/value heads")
	vocab := flag.Uint64("vocab", 8192, "vocabulary size (at least 259)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if flag.NArg() != 1 || *embd%32 != 0 || *ff%32 != 0 || *heads == 0 || *embd%*heads != 0 || *kv == 0 || *heads%*kv != 0 || *vocab < 259 {
		fmt.Fprintln(os.Stderr, "usage: llamagen [-embd N] [-layers N] [-ff N] [-heads N] [-kv N] [-vocab N] [-seed N] FILE\n(embd and ff multiples of 32, heads dividing embd, kv dividing heads, vocab at least 259)")
		os.Exit(2)
	}
	if err := write(flag.Arg(0), *embd, *layers, *ff, *heads, *kv, *vocab, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "llamagen:", err)
		os.Exit(1)
	}
}

func write(path string, embd, layers, ff, heads, kv, vocab, seed uint64) error {
	hd := embd / heads
	var ts []tensor
	mat := func(name string, in, out uint64) {
		ts = append(ts, tensor{name, typeQ8_0, []uint64{in, out}, q8Fill(out, in)})
	}
	norm := func(name string) { ts = append(ts, tensor{name, typeF32, []uint64{embd}, normFill(embd)}) }
	mat("token_embd.weight", embd, vocab)
	for l := range layers {
		p := fmt.Sprintf("blk.%d.", l)
		norm(p + "attn_norm.weight")
		mat(p+"attn_q.weight", embd, heads*hd)
		mat(p+"attn_k.weight", embd, kv*hd)
		mat(p+"attn_v.weight", embd, kv*hd)
		mat(p+"attn_output.weight", heads*hd, embd)
		norm(p + "ffn_norm.weight")
		mat(p+"ffn_gate.weight", embd, ff)
		mat(p+"ffn_up.weight", embd, ff)
		mat(p+"ffn_down.weight", ff, embd)
	}
	norm("output_norm.weight")
	mat("output.weight", embd, vocab)

	var h header
	h.kvString("general.architecture", "llama")
	h.kvString("general.name", "edgeload llamagen")
	h.kvUint32("general.file_type", 7) // LLAMA_FTYPE_MOSTLY_Q8_0
	h.kvUint32("llama.context_length", 4096)
	h.kvUint32("llama.embedding_length", uint32(embd))
	h.kvUint32("llama.block_count", uint32(layers))
	h.kvUint32("llama.feed_forward_length", uint32(ff))
	h.kvUint32("llama.attention.head_count", uint32(heads))
	h.kvUint32("llama.attention.head_count_kv", uint32(kv))
	h.kvUint32("llama.rope.dimension_count", uint32(hd))
	h.kvFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	h.kvString("tokenizer.ggml.model", "llama")
	h.key("tokenizer.ggml.tokens", ggufArray)
	h.u32(ggufString)
	h.u64(vocab)
	for i := range vocab {
		switch {
		case i < 3:
			h.str([]string{"<unk>", "<s>", "</s>"}[i])
		case i < 259:
			h.str(fmt.Sprintf("<0x%02X>", i-3))
		default:
			h.str(fmt.Sprintf("t%d", i))
		}
	}
	h.key("tokenizer.ggml.scores", ggufArray)
	h.u32(ggufFloat32)
	h.u64(vocab)
	for range vocab {
		h.u32(0)
	}
	h.key("tokenizer.ggml.token_type", ggufArray)
	h.u32(ggufInt32)
	h.u64(vocab)
	for i := range vocab {
		switch {
		case i == 0:
			h.u32(2) // unknown
		case i < 3:
			h.u32(3) // control
		case i < 259:
			h.u32(6) // byte
		default:
			h.u32(1) // normal
		}
	}
	h.kvUint32("tokenizer.ggml.bos_token_id", 1)
	h.kvUint32("tokenizer.ggml.eos_token_id", 2)
	h.kvUint32("tokenizer.ggml.unknown_token_id", 0)

	kvs := h.b
	h.b = append([]byte("GGUF"), 3, 0, 0, 0)
	h.u64(uint64(len(ts)))
	h.u64(h.kvs)
	h.b = append(h.b, kvs...)
	var off uint64
	for _, t := range ts {
		h.str(t.name)
		h.u32(uint32(len(t.ne)))
		for _, d := range t.ne {
			h.u64(d)
		}
		h.u32(t.typ)
		h.u64(off)
		off += (t.bytes() + align - 1) / align * align
	}
	for len(h.b)%align != 0 {
		h.b = append(h.b, 0)
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 4<<20)
	if _, err := w.Write(h.b); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0x11a3a))
	var pad [align]byte
	for _, t := range ts {
		if err := t.fill(w, r); err != nil {
			return err
		}
		if n := t.bytes() % align; n != 0 {
			if _, err := w.Write(pad[:align-n]); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
