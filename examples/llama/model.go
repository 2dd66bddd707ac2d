package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/gguf"
)

// config holds the hyperparameters of a Llama model, read from the GGUF
// metadata with the defaults llama.cpp uses.
type config struct {
	embd, layers, heads, headsKV, ff, vocab int
	headDim, headDimV, rot                  int
	eps                                     float32 // RMSNorm epsilon (required)
	freqBase, freqScale, attnFactor         float32 // RoPE
}

// layer holds the tensor indices of one block's matrices and copies of its
// norm weights.
type layer struct {
	attnNorm, ffnNorm              []float32
	wq, wk, wv, wo, gate, up, down int
}

// model is a Llama GGUF opened for the forward pass: its hyperparameters,
// the tensors of each block, and the order in which a token's pass uses the
// matrices.
type model struct {
	m      *loader.Model
	f      *gguf.File
	cfg    config
	embd   int // token_embd.weight
	output int // output.weight, or token_embd.weight when the output is tied to it
	layers []layer
	norm   []float32 // output_norm.weight
	freqs  []float32 // rope_freqs.weight (Llama 3), nil when absent

	// order lists the matrices in the order a pass uses them: each block's
	// wq, wk, wv, wo, gate, up, down, then the output matrix.
	order []int
}

// openModel reads the hyperparameters and finds the tensors of a Llama GGUF.
// The norm weights and RoPE factors (a few KiB) are copied; the matrices
// stay in the file.
func openModel(m *loader.Model) (*model, error) {
	f, ok := m.Impl().(*gguf.File)
	if !ok {
		return nil, fmt.Errorf("%s is a %s file, not GGUF", m.Name(), m.Format())
	}
	if arch, _ := f.MetaString("general.architecture"); arch != "llama" {
		return nil, fmt.Errorf("architecture %q: only llama is supported", arch)
	}
	md := &model{m: m, f: f}
	if err := md.readConfig(); err != nil {
		return nil, err
	}
	if err := md.findTensors(); err != nil {
		return nil, err
	}
	return md, nil
}

func (md *model) readConfig() error {
	f := md.f
	getUint := func(key string, def int, required bool) (int, error) {
		v, present := f.Metadata("llama." + key)
		if !present {
			if required {
				return 0, fmt.Errorf("metadata llama.%s is missing", key)
			}
			return def, nil
		}
		u, ok := v.AsUint()
		if !ok || u > math.MaxInt32 {
			return 0, fmt.Errorf("metadata llama.%s: want an integer (a scalar: per-layer arrays are not supported)", key)
		}
		return int(u), nil
	}
	getFloat := func(key string, def float32) (float32, error) {
		v, present := f.Metadata("llama." + key)
		if !present {
			return def, nil
		}
		x, ok := v.AsFloat()
		if !ok {
			return 0, fmt.Errorf("metadata llama.%s: want a float", key)
		}
		return float32(x), nil
	}
	c := &md.cfg
	var err error
	for _, k := range []struct {
		p        *int
		key      string
		def      int
		required bool
	}{
		{&c.embd, "embedding_length", 0, true},
		{&c.layers, "block_count", 0, true},
		{&c.ff, "feed_forward_length", 0, true},
		{&c.heads, "attention.head_count", 0, true},
	} {
		if *k.p, err = getUint(k.key, k.def, k.required); err != nil {
			return err
		}
	}
	if c.embd == 0 || c.heads == 0 || c.layers == 0 || c.ff == 0 || c.embd%c.heads != 0 {
		return fmt.Errorf("embedding_length %d, block_count %d, feed_forward_length %d, head_count %d: want positive values, the heads dividing the embedding", c.embd, c.layers, c.ff, c.heads)
	}
	if c.headsKV, err = getUint("attention.head_count_kv", c.heads, false); err != nil {
		return err
	}
	if c.headDim, err = getUint("attention.key_length", c.embd/c.heads, false); err != nil {
		return err
	}
	if c.headDimV, err = getUint("attention.value_length", c.embd/c.heads, false); err != nil {
		return err
	}
	if c.rot, err = getUint("rope.dimension_count", c.headDim, false); err != nil {
		return err
	}
	if c.headsKV == 0 || c.heads%c.headsKV != 0 {
		return fmt.Errorf("head_count %d, head_count_kv %d: the KV heads must divide the heads", c.heads, c.headsKV)
	}
	// llama.cpp's llama graph requires these (llama-model.cpp).
	if c.rot != c.headDim || c.headDimV != c.headDim || c.headDim == 0 || c.headDim%2 != 0 {
		return fmt.Errorf("rope dimension %d, key length %d, value length %d: llama needs them equal, even and positive", c.rot, c.headDim, c.headDimV)
	}
	if _, ok := f.Metadata("llama.attention.layer_norm_rms_epsilon"); !ok {
		return errors.New("metadata llama.attention.layer_norm_rms_epsilon is missing (llama.cpp requires it)")
	}
	if c.eps, err = getFloat("attention.layer_norm_rms_epsilon", 0); err != nil {
		return err
	}
	if c.freqBase, err = getFloat("rope.freq_base", 10000); err != nil {
		return err
	}
	if typ, ok := f.MetaString("llama.rope.scaling.type"); ok && typ != "linear" && typ != "none" {
		return fmt.Errorf("rope scaling %q is not supported (linear and none are)", typ)
	}
	scale, err := getFloat("rope.scaling.factor", 0)
	if err != nil {
		return err
	}
	if _, ok := f.Metadata("llama.rope.scaling.factor"); !ok {
		if scale, err = getFloat("rope.scale_linear", 0); err != nil {
			return err
		}
	}
	c.freqScale = 1
	if scale != 0 {
		c.freqScale = 1 / scale
	}
	if c.attnFactor, err = getFloat("rope.scaling.attn_factor", 1); err != nil {
		return err
	}
	if _, ok := f.Metadata("llama.expert_count"); ok {
		if n, _ := f.MetaUint("llama.expert_count"); n > 0 {
			return errors.New("mixture-of-experts llama models are not supported")
		}
	}
	return nil
}

// tensor returns the index of the named tensor and checks its type and shape
// (GGUF's ne order: the row length first).
func (md *model) tensor(name string, ne ...int) (int, error) {
	i, ok := md.f.Lookup(name)
	if !ok {
		return -1, fmt.Errorf("tensor %s is missing", name)
	}
	t := md.f.TensorInfo(i)
	typ := ggmlType(t.Type)
	elems, _, ok := typ.block()
	if !ok {
		return -1, fmt.Errorf("tensor %s: type %v is not supported (f32, f16, q8_0, q4_0, q4_K and q6_K are)", name, t.Type)
	}
	want := [4]int64{1, 1, 1, 1}
	for k, n := range ne {
		want[k] = int64(n)
	}
	if t.NE != want {
		return -1, fmt.Errorf("tensor %s: shape (ne) %v, want %v", name, t.NE[:max(t.NDims, 1)], want[:len(ne)])
	}
	if ne[0]%elems != 0 {
		return -1, fmt.Errorf("tensor %s: rows of %d elements are not whole %v blocks", name, ne[0], typ)
	}
	return i, nil
}

// vector copies a one-dimensional weight of n elements as float32.
func (md *model) vector(name string, n int) ([]float32, error) {
	i, err := md.tensor(name, n)
	if err != nil {
		return nil, err
	}
	typ := ggmlType(md.f.TensorInfo(i).Type)
	buf := make([]byte, typ.rowBytes(n))
	if _, err := md.m.TensorData(i).CopyTo(buf); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", name, err)
	}
	v := make([]float32, n)
	dequantRow(typ, buf, v)
	return v, nil
}

func (md *model) findTensors() error {
	c := &md.cfg
	var err error
	e, ok := md.f.Tensor("token_embd.weight")
	if !ok {
		return errors.New("tensor token_embd.weight is missing")
	}
	c.vocab = int(e.NE[1])
	if md.embd, err = md.tensor("token_embd.weight", c.embd, c.vocab); err != nil {
		return err
	}
	if md.norm, err = md.vector("output_norm.weight", c.embd); err != nil {
		return err
	}
	md.output = md.embd
	if _, ok := md.f.Lookup("output.weight"); ok {
		if md.output, err = md.tensor("output.weight", c.embd, c.vocab); err != nil {
			return err
		}
	}
	if _, ok := md.f.Lookup("rope_freqs.weight"); ok {
		if md.freqs, err = md.vector("rope_freqs.weight", c.rot/2); err != nil {
			return err
		}
	}
	q, kv := c.heads*c.headDim, c.headsKV*c.headDim
	md.layers = make([]layer, c.layers)
	for l := range md.layers {
		L := &md.layers[l]
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", l, s) }
		for _, s := range []string{"attn_qkv", "ffn_gate_inp"} {
			if _, ok := md.f.Lookup(name(s)); ok {
				return fmt.Errorf("tensor %s: fused QKV and experts are not supported", name(s))
			}
		}
		for _, s := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
			if _, ok := md.f.Lookup(fmt.Sprintf("blk.%d.%s.bias", l, s)); ok {
				return fmt.Errorf("tensor blk.%d.%s.bias: biases are not supported", l, s)
			}
		}
		if L.attnNorm, err = md.vector(name("attn_norm"), c.embd); err != nil {
			return err
		}
		if L.ffnNorm, err = md.vector(name("ffn_norm"), c.embd); err != nil {
			return err
		}
		for _, t := range []struct {
			p       *int
			s       string
			in, out int
		}{
			{&L.wq, "attn_q", c.embd, q},
			{&L.wk, "attn_k", c.embd, kv},
			{&L.wv, "attn_v", c.embd, kv},
			{&L.wo, "attn_output", q, c.embd},
			{&L.gate, "ffn_gate", c.embd, c.ff},
			{&L.up, "ffn_up", c.embd, c.ff},
			{&L.down, "ffn_down", c.ff, c.embd},
		} {
			if *t.p, err = md.tensor(name(t.s), t.in, t.out); err != nil {
				return err
			}
			md.order = append(md.order, *t.p)
		}
	}
	md.order = append(md.order, md.output)
	return nil
}

// matrix returns tensor i as a matrix over data (its bytes).
func (md *model) matrix(i int, data []byte) matrix {
	t := md.f.TensorInfo(i)
	typ := ggmlType(t.Type)
	cols, rows := int(t.NE[0]), int(t.NE[1])
	return matrix{typ: typ, rows: rows, cols: cols, rowBytes: typ.rowBytes(cols), data: data}
}
