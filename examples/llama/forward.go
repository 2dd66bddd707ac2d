package main

import (
	"fmt"
	"math"
)

// weights hands the forward pass its matrices, one pass (one token) at a
// time: begin starts a pass, get returns the bytes of the next matrix of
// the model's order, which stay valid until the next get, and end finishes
// the pass.
type weights interface {
	begin() error
	get(tensor int) ([]byte, error)
	end() error
	close() error
}

// runner runs the forward pass of a model one token at a time, keeping the
// KV cache and its buffers between tokens.
type runner struct {
	md   *model
	w    weights
	pool *pool

	pos     int       // the position of the next token
	kc, vc  []float32 // [layer][pos][kv head × head dim], values rounded to half
	ctx     int       // the positions the cache holds
	x, xb   []float32 // the residual stream and its normed copy
	q, k, v []float32
	att     []float32 // attention output, heads × head dim
	tmp     []float32 // a matrix's output added to the stream
	gate    []float32
	up      []float32
	logits  []float32
	scores  []float32
	rowBuf  []byte // a token_embd row
	cos     []float32
	sin     []float32
	a       activation
}

// newRunner makes a runner with room for ctx tokens.
func newRunner(md *model, w weights, p *pool, ctx int) *runner {
	c := md.cfg
	kv := c.headsKV * c.headDim
	return &runner{
		md: md, w: w, pool: p, ctx: ctx,
		kc: make([]float32, c.layers*ctx*kv), vc: make([]float32, c.layers*ctx*kv),
		x: make([]float32, c.embd), xb: make([]float32, c.embd),
		q: make([]float32, c.heads*c.headDim), k: make([]float32, kv), v: make([]float32, kv),
		att: make([]float32, c.heads*c.headDim), tmp: make([]float32, c.embd),
		gate: make([]float32, c.ff), up: make([]float32, c.ff),
		logits: make([]float32, c.vocab), scores: make([]float32, ctx),
		cos: make([]float32, c.rot/2), sin: make([]float32, c.rot/2),
	}
}

// matvec multiplies the next matrix of the order, tensor i, by the current
// activation into y.
func (r *runner) matvec(i int, y []float32) error {
	data, err := r.w.get(i)
	if err != nil {
		return err
	}
	r.pool.matvec(r.md.matrix(i, data), &r.a, y)
	return nil
}

// step runs the pass for token tok at the next position and returns the
// logits (valid until the next step).
func (r *runner) step(tok int) ([]float32, error) {
	md, c := r.md, r.md.cfg
	if tok < 0 || tok >= c.vocab {
		return nil, fmt.Errorf("token %d is not in the vocabulary (0..%d)", tok, c.vocab-1)
	}
	if r.pos >= r.ctx {
		return nil, fmt.Errorf("position %d is past the context of %d", r.pos, r.ctx)
	}
	if err := r.embed(tok); err != nil {
		return nil, err
	}
	if err := r.w.begin(); err != nil {
		return nil, err
	}
	r.rope()
	kvDim := c.headsKV * c.headDim
	for l := range md.layers {
		L := &md.layers[l]
		rmsNorm(r.xb, r.x, L.attnNorm, c.eps)
		r.a.set(r.xb)
		if err := r.matvec(L.wq, r.q); err != nil {
			return nil, err
		}
		if err := r.matvec(L.wk, r.k); err != nil {
			return nil, err
		}
		if err := r.matvec(L.wv, r.v); err != nil {
			return nil, err
		}
		for h := range c.heads {
			r.rotate(r.q[h*c.headDim : (h+1)*c.headDim])
		}
		for h := range c.headsKV {
			r.rotate(r.k[h*c.headDim : (h+1)*c.headDim])
		}
		base := (l*r.ctx + r.pos) * kvDim
		for i := range kvDim {
			r.kc[base+i] = roundHalf(r.k[i])
			r.vc[base+i] = roundHalf(r.v[i])
		}
		r.attention(l)
		r.a.set(r.att)
		if err := r.matvec(L.wo, r.tmp); err != nil {
			return nil, err
		}
		add(r.x, r.tmp)

		rmsNorm(r.xb, r.x, L.ffnNorm, c.eps)
		r.a.set(r.xb)
		if err := r.matvec(L.gate, r.gate); err != nil {
			return nil, err
		}
		if err := r.matvec(L.up, r.up); err != nil {
			return nil, err
		}
		for i, g := range r.gate {
			r.gate[i] = g / (1 + float32(math.Exp(float64(-g)))) * r.up[i]
		}
		r.a.set(r.gate)
		if err := r.matvec(L.down, r.tmp); err != nil {
			return nil, err
		}
		add(r.x, r.tmp)
	}
	rmsNorm(r.xb, r.x, md.norm, c.eps)
	r.a.set(r.xb)
	if err := r.matvec(md.output, r.logits); err != nil {
		return nil, err
	}
	if err := r.w.end(); err != nil {
		return nil, err
	}
	r.pos++
	return r.logits, nil
}

// embed sets the residual stream to the token's row of token_embd, read
// straight from the mapping (fault-safe) rather than through the weights.
func (r *runner) embed(tok int) error {
	md := r.md
	typ := ggmlType(md.f.TensorInfo(md.embd).Type)
	rb := typ.rowBytes(md.cfg.embd)
	r.rowBuf = grow(r.rowBuf, rb)
	row, err := md.m.TensorData(md.embd).Sub(int64(tok)*int64(rb), int64(rb))
	if err != nil {
		return err
	}
	if _, err := row.CopyTo(r.rowBuf); err != nil {
		return fmt.Errorf("token_embd.weight row %d: %w", tok, err)
	}
	dequantRow(typ, r.rowBuf, r.x)
	return nil
}

// rmsNorm sets y to x / sqrt(mean(x²) + eps) × w, summing the squares in
// float64 as ggml does.
func rmsNorm(y, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		y[i] = v * scale * w[i]
	}
}

func add(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

// rope computes the rotation of each pair of dimensions for the current
// position as ggml's rope does for llama ("normal" mode: pairs of adjacent
// values): θ_i = pos·base^(−2i/n_rot) by repeated float32 multiplication,
// divided by the Llama 3 frequency factor where the model has them, scaled
// by the linear factor.
func (r *runner) rope() {
	c := r.md.cfg
	thetaScale := float32(math.Pow(float64(c.freqBase), float64(-2/float32(c.rot))))
	theta := float32(r.pos)
	for i := range c.rot / 2 {
		t := theta
		if r.md.freqs != nil {
			t /= r.md.freqs[i]
		}
		t *= c.freqScale
		r.cos[i] = float32(math.Cos(float64(t))) * c.attnFactor
		r.sin[i] = float32(math.Sin(float64(t))) * c.attnFactor
		theta *= thetaScale
	}
}

// rotate applies the current position's rotation to one head.
func (r *runner) rotate(h []float32) {
	for i := range len(r.cos) {
		x0, x1 := h[2*i], h[2*i+1]
		h[2*i] = x0*r.cos[i] - x1*r.sin[i]
		h[2*i+1] = x0*r.sin[i] + x1*r.cos[i]
	}
}

// attention computes each head's softmax(q·K/√d)·V over the cached
// positions 0..pos, into att. Query head h reads KV head h/(heads/headsKV),
// as ggml's broadcast does. Like llama.cpp's default (no flash attention, a
// half-precision cache), the query and the probabilities are rounded to
// half before their products, which are summed in float32.
func (r *runner) attention(l int) {
	c := r.md.cfg
	hd, kvDim, group := c.headDim, c.headsKV*c.headDim, c.heads/c.headsKV
	scale := 1 / float32(math.Sqrt(float64(hd)))
	n := r.pos + 1
	kc := r.kc[l*r.ctx*kvDim : (l*r.ctx+n)*kvDim]
	vc := r.vc[l*r.ctx*kvDim : (l*r.ctx+n)*kvDim]
	s := r.scores[:n]
	for h := range c.heads {
		q := r.q[h*hd : (h+1)*hd]
		for i, v := range q {
			q[i] = roundHalf(v)
		}
		off := h / group * hd
		mx := float32(math.Inf(-1))
		for t := range n {
			k := kc[t*kvDim+off : t*kvDim+off+hd]
			var d float32
			for i, v := range q {
				d += v * k[i]
			}
			s[t] = d * scale
			mx = max(mx, s[t])
		}
		var sum float64
		for t, v := range s {
			e := float32(math.Exp(float64(v - mx)))
			s[t] = e
			sum += float64(e)
		}
		inv := float32(1 / sum)
		for t := range s {
			s[t] = roundHalf(s[t] * inv)
		}
		out := r.att[h*hd : (h+1)*hd]
		clear(out)
		for t, p := range s {
			v := vc[t*kvDim+off : t*kvDim+off+hd]
			for i := range out {
				out[i] += p * v[i]
			}
		}
	}
}

// argmax returns the index of the largest logit (the first of equal ones).
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
