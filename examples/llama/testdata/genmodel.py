"""Writes the small Llama GGUF files examples/llama's tests run in both its
forward pass and llama.cpp: random weights of every type it reads (f32, f16,
q8_0, q4_0, q4_K, q6_K), written as raw ggml blocks with gguf-py (random
bytes for the quants, so every bit of every field is exercised, and scales
chosen for weights of about 1/sqrt(fan-in)).

    python3 genmodel.py DIR      # writes DIR/llama-types.gguf and DIR/llama-tied.gguf

The output is the same for the same gguf-py and numpy (fixed seeds).

Both models keep the blocks' share of the residual stream small: token
embeddings of RMS 0.01, and attn_output and ffn_down scaled so that each
block adds about a tenth of that. A forward pass that quantizes its
activations (llama.cpp, examples/llama) is then exact to float rounding until
a rounding difference flips one quantized value, and what such a flip changes
downstream is bounded by the blocks' share, well below what a real bug
changes (see TestLlamaCpp). The output norm weights have random signs, so
that a tied output does not simply favour the token just read.

llama-types.gguf: 2 blocks, embedding 256, 8 query heads sharing 2 KV heads
(head size 32), FFN 512, vocabulary 320, RMSNorm epsilon 1e-4 against token
embeddings of RMS about 0.01 (so that the epsilon weighs on every norm),
RoPE base 500000, and a separate output matrix. Each matrix of a block has
another type.

llama-tied.gguf: 2 blocks, embedding 256, 4 query heads sharing 1 KV head
(head size 64), FFN 512, vocabulary 288, no output matrix (the output is
tied to token_embd, a q8_0 matrix), RoPE base left at llama.cpp's default,
and Llama 3's per-frequency factors (rope_freqs.weight).
"""

import sys
from pathlib import Path

import numpy as np
import gguf

Q = gguf.GGMLQuantizationType


def half(rng, shape, scale):
    """Half-precision scales around scale (positive)."""
    return (scale * rng.uniform(0.5, 1.5, size=shape)).astype(np.float16)


def blocks(rng, qtype, rows, cols, std):
    """A [rows, cols] matrix of type qtype with random quants whose decoded
    weights have about the given standard deviation."""
    if qtype == Q.F32:
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)
    if qtype == Q.F16:
        return (rng.standard_normal((rows, cols)) * std).astype(np.float16)
    if qtype == Q.Q8_0:
        nb = rows * cols // 32
        d = half(rng, (nb, 1), std / 73.3).view(np.uint8)
        qs = rng.integers(-127, 128, size=(nb, 32), dtype=np.int8).view(np.uint8)
        return np.concatenate([d, qs], axis=1).reshape(rows, -1)
    if qtype == Q.Q4_0:
        nb = rows * cols // 32
        d = half(rng, (nb, 1), std / 4.6).view(np.uint8)
        qs = rng.integers(0, 256, size=(nb, 16), dtype=np.uint8)
        return np.concatenate([d, qs], axis=1).reshape(rows, -1)
    if qtype == Q.Q4_K:
        nb = rows * cols // 256
        # w = d·sc·q − dmin·m with sc, m, q random: sc and m average 31.5,
        # q 7.5, so dmin = 7.5·d keeps the mean near 0.
        d = std / (32 * 4.6)
        dd = half(rng, (nb, 1), d).view(np.uint8)
        dmin = half(rng, (nb, 1), 7.5 * d).view(np.uint8)
        scales = rng.integers(0, 256, size=(nb, 12), dtype=np.uint8)
        qs = rng.integers(0, 256, size=(nb, 128), dtype=np.uint8)
        return np.concatenate([dd, dmin, scales, qs], axis=1).reshape(rows, -1)
    if qtype == Q.Q6_K:
        nb = rows * cols // 256
        ql = rng.integers(0, 256, size=(nb, 128), dtype=np.uint8)
        qh = rng.integers(0, 256, size=(nb, 64), dtype=np.uint8)
        sc = rng.integers(-128, 128, size=(nb, 16), dtype=np.int8).view(np.uint8)
        d = half(rng, (nb, 1), std / (74 * 18.5)).view(np.uint8)
        return np.concatenate([ql, qh, sc, d], axis=1).reshape(rows, -1)
    raise ValueError(qtype)


def add_matrix(w, rng, name, qtype, rows, cols, std):
    data = blocks(rng, qtype, rows, cols, std)
    if qtype in (Q.F32, Q.F16):
        w.add_tensor(name, data)
    else:
        w.add_tensor(name, data, raw_dtype=qtype)  # the shape in bytes: gguf-py derives the elements


def add_vocab(w, n):
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    toks += ["t%d" % i for i in range(n - len(toks))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (n - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * n)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def write(path, seed, embd, heads, heads_kv, ff, vocab, layer_types, embd_type, out_type,
          eps, freq_base=None, rope_freqs=False, embd_std=0.01, attn_scale=0.0015, ffn_scale=0.001):
    rng = np.random.default_rng(seed)
    hd = embd // heads
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(256)
    w.add_embedding_length(embd)
    w.add_block_count(len(layer_types))
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(heads_kv)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(eps)
    if freq_base is not None:
        w.add_rope_freq_base(freq_base)
    add_vocab(w, vocab)

    add_matrix(w, rng, "token_embd.weight", embd_type, vocab, embd, embd_std)
    if rope_freqs:
        w.add_tensor("rope_freqs.weight", rng.uniform(1, 8, size=hd // 2).astype(np.float32))
    for l, t in enumerate(layer_types):
        def norm(name):
            w.add_tensor("blk.%d.%s.weight" % (l, name), rng.uniform(0.5, 1.5, size=embd).astype(np.float32))
        norm("attn_norm")
        add_matrix(w, rng, "blk.%d.attn_q.weight" % l, t["q"], heads * hd, embd, embd ** -0.5)
        add_matrix(w, rng, "blk.%d.attn_k.weight" % l, t["k"], heads_kv * hd, embd, embd ** -0.5)
        add_matrix(w, rng, "blk.%d.attn_v.weight" % l, t["v"], heads_kv * hd, embd, embd ** -0.5)
        add_matrix(w, rng, "blk.%d.attn_output.weight" % l, t["o"], embd, heads * hd, attn_scale * (heads * hd) ** -0.5)
        norm("ffn_norm")
        add_matrix(w, rng, "blk.%d.ffn_gate.weight" % l, t["gate"], ff, embd, embd ** -0.5)
        add_matrix(w, rng, "blk.%d.ffn_up.weight" % l, t["up"], ff, embd, embd ** -0.5)
        add_matrix(w, rng, "blk.%d.ffn_down.weight" % l, t["down"], embd, ff, ffn_scale * ff ** -0.5)
    # Random signs: the output is not aligned with the token's own embedding,
    # which would otherwise dominate a tied output.
    w.add_tensor("output_norm.weight", (rng.choice([-1, 1], size=embd) * rng.uniform(0.5, 1.5, size=embd)).astype(np.float32))
    if out_type is not None:
        add_matrix(w, rng, "output.weight", out_type, vocab, embd, embd ** -0.5 * 4)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    write(out / "llama-types.gguf", seed=41, embd=256, heads=8, heads_kv=2, ff=512, vocab=320,
          layer_types=[
              dict(q=Q.Q8_0, k=Q.F32, v=Q.F16, o=Q.Q4_K, gate=Q.Q6_K, up=Q.Q4_0, down=Q.Q8_0),
              dict(q=Q.Q4_0, k=Q.Q4_K, v=Q.F32, o=Q.F16, gate=Q.Q8_0, up=Q.Q4_K, down=Q.Q6_K),
          ],
          embd_type=Q.Q4_K, out_type=Q.Q6_K, eps=1e-4, freq_base=500000.0)
    write(out / "llama-tied.gguf", seed=42, embd=256, heads=4, heads_kv=1, ff=512, vocab=288,
          layer_types=[
              dict(q=Q.Q6_K, k=Q.Q8_0, v=Q.Q4_0, o=Q.Q8_0, gate=Q.Q4_K, up=Q.F16, down=Q.Q4_0),
              dict(q=Q.F16, k=Q.Q6_K, v=Q.Q4_K, o=Q.Q4_0, gate=Q.Q8_0, up=Q.Q6_K, down=Q.Q4_K),
          ],
          embd_type=Q.Q8_0, out_type=None, eps=1e-5, rope_freqs=True, embd_std=0.01)


if __name__ == "__main__":
    main()
