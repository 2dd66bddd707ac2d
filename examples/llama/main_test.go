package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/stream"
)

// testModel describes a small Llama GGUF the tests write: random weights,
// the matrix types taken in turn from types.
type testModel struct {
	embd, layers, heads, headsKV, ff, vocab int
	types                                   []ggmlType
	tied, freqs                             bool
	// hole, when set, is the size of a tensor "hole" of int8 before the
	// weights, written as a hole in a sparse file.
	hole int64
}

// write writes the model as a GGUF v3 file at path.
func (tm testModel) write(t *testing.T, path string) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(tm.embd), uint64(tm.vocab)))
	le := binary.LittleEndian
	str := func(b []byte, s string) []byte { return append(le.AppendUint64(b, uint64(len(s))), s...) }
	var kv []byte
	nkv := 0
	u32 := func(k string, v int) {
		kv = le.AppendUint32(str(kv, k), 4)
		kv = le.AppendUint32(kv, uint32(v))
		nkv++
	}
	kv = str(le.AppendUint32(str(kv, "general.architecture"), 8), "llama")
	nkv++
	u32("llama.embedding_length", tm.embd)
	u32("llama.block_count", tm.layers)
	u32("llama.feed_forward_length", tm.ff)
	u32("llama.attention.head_count", tm.heads)
	u32("llama.attention.head_count_kv", tm.headsKV)
	kv = le.AppendUint32(le.AppendUint32(str(kv, "llama.attention.layer_norm_rms_epsilon"), 6), math.Float32bits(1e-5))
	nkv++

	type tensor struct {
		name string
		typ  ggmlType
		ne   []int
		data []byte
	}
	var ts []tensor
	next := 0
	mat := func(name string, in, out int, std float32) {
		typ := tm.types[next%len(tm.types)]
		next++
		var data []byte
		for range out {
			row := makeRow(r, typ, in, randomValues)
			if typ == typeF32 || typ == typeF16 {
				// makeRow's floats are N(0, 1): scale them as the quants are.
				for i := range row.want {
					row.want[i] *= std * 100
				}
				row.data = row.data[:0]
				for _, v := range row.want {
					if typ == typeF32 {
						row.data = le.AppendUint32(row.data, math.Float32bits(v))
					} else {
						row.data = le.AppendUint16(row.data, floatToHalf(v))
					}
				}
			}
			data = append(data, row.data...)
		}
		ts = append(ts, tensor{name, typ, []int{in, out}, data})
	}
	vec := func(name string, n int) {
		var data []byte
		for range n {
			data = le.AppendUint32(data, math.Float32bits(float32(0.5+r.Float64())))
		}
		ts = append(ts, tensor{name, typeF32, []int{n}, data})
	}
	hd := tm.embd / tm.heads
	mat("token_embd.weight", tm.embd, tm.vocab, 0.01)
	if tm.freqs {
		vec("rope_freqs.weight", hd/2)
	}
	for l := range tm.layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", tm.embd)
		mat(p+"attn_q.weight", tm.embd, tm.heads*hd, 0.01)
		mat(p+"attn_k.weight", tm.embd, tm.headsKV*hd, 0.01)
		mat(p+"attn_v.weight", tm.embd, tm.headsKV*hd, 0.01)
		mat(p+"attn_output.weight", tm.heads*hd, tm.embd, 0.01)
		vec(p+"ffn_norm.weight", tm.embd)
		mat(p+"ffn_gate.weight", tm.embd, tm.ff, 0.01)
		mat(p+"ffn_up.weight", tm.embd, tm.ff, 0.01)
		mat(p+"ffn_down.weight", tm.ff, tm.embd, 0.01)
	}
	vec("output_norm.weight", tm.embd)
	if !tm.tied {
		mat("output.weight", tm.embd, tm.vocab, 0.01)
	}

	h := le.AppendUint64(le.AppendUint64(le.AppendUint32([]byte("GGUF"), 3), uint64(len(ts)+min(int(tm.hole), 1))), uint64(nkv))
	h = append(h, kv...)
	off := int64(0)
	if tm.hole > 0 {
		h = le.AppendUint32(str(h, "hole"), 1)
		h = le.AppendUint64(le.AppendUint32(le.AppendUint64(h, uint64(tm.hole)), 24), 0) // int8, at 0
		off = (tm.hole + 31) / 32 * 32
	}
	for _, tn := range ts {
		h = le.AppendUint32(str(h, tn.name), uint32(len(tn.ne)))
		for _, d := range tn.ne {
			h = le.AppendUint64(h, uint64(d))
		}
		h = le.AppendUint64(le.AppendUint32(h, uint32(tn.typ)), uint64(off))
		off += int64(len(tn.data)+31) / 32 * 32
	}
	for len(h)%32 != 0 {
		h = append(h, 0)
	}
	head := len(h)
	for _, tn := range ts {
		h = append(h, tn.data...)
		for len(h)%32 != 0 {
			h = append(h, 0)
		}
	}
	if tm.hole == 0 {
		if err := os.WriteFile(path, h, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(h[:head], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(h[head:], int64(head)+(tm.hole+31)/32*32); err != nil {
		t.Skipf("no room for a sparse file past %d bytes here: %v", tm.hole, err)
	}
}

var (
	smallModel = testModel{embd: 256, layers: 2, heads: 8, headsKV: 2, ff: 512, vocab: 96, types: allTypes}
	tiedModel  = testModel{embd: 256, layers: 1, heads: 4, headsKV: 1, ff: 256, vocab: 64, types: []ggmlType{typeQ8_0, typeQ6_K, typeQ4_0}, tied: true, freqs: true}
)

func writeModel(t *testing.T, tm testModel) string {
	path := filepath.Join(t.TempDir(), "model.gguf")
	tm.write(t, path)
	return path
}

// TestGenerate runs the forward pass end to end on small generated models and
// checks that the ways of running it agree bit for bit: the weights streamed
// by the schedule or read from the mapping, one thread or two, and greedy
// decoding against the same tokens given as a prompt.
func TestGenerate(t *testing.T) {
	for name, tm := range map[string]testModel{"types": smallModel, "tied": tiedModel} {
		t.Run(name, func(t *testing.T) {
			path := writeModel(t, tm)
			ctx := context.Background()
			base := options{model: path, ids: []int{1, 5, 9}, n: 12, budget: 4 << 20, mode: "schedule", threads: 2}
			want, err := generate(ctx, base, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.tokens) != base.n || want.passes != len(base.ids)+base.n-1 || len(want.logits) != want.passes {
				t.Fatalf("%d tokens, %d passes, %d rows of logits", len(want.tokens), want.passes, len(want.logits))
			}
			if distinct := len(slices.Compact(slices.Sorted(slices.Values(want.tokens)))); distinct < 2 {
				t.Errorf("tokens %v: the model decodes to one token, too weak a test", want.tokens)
			}
			if want.stats.passes != want.passes || want.stats.read == 0 || want.stats.peak == 0 {
				t.Errorf("schedule stats %+v", want.stats)
			}
			// A budget of three quarters of the model: part retained, the
			// rest streamed every pass, by either reader.
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			budget := fi.Size() * 3 / 4
			for _, r := range []stream.Reader{stream.ReadMapped, stream.ReadDirect} {
				o := options{model: path, ids: base.ids, n: base.n, budget: budget, retain: stream.RetainAuto, reader: r, mode: "schedule", threads: 2}
				got, err := generate(ctx, o, false)
				if r == stream.ReadDirect && errors.Is(err, errors.ErrUnsupported) {
					t.Logf("no direct I/O here (the direct reader is checked where there is): %v", err)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.tokens, want.tokens) {
					t.Errorf("%s reader, part of the model retained: tokens %v, want %v", r, got.tokens, want.tokens)
				}
				if st := got.stats; st.retained == 0 || st.retained > budget || st.read <= st.retained || st.peak > budget {
					t.Errorf("%s reader, a budget of %d: stats %+v, want some retained, more read, within the budget", r, budget, st)
				}
			}
			for _, o := range []options{
				{model: path, ids: base.ids, n: base.n, mode: "mmap", threads: 1},
				{model: path, ids: base.ids, n: base.n, budget: 64 << 20, mode: "schedule", threads: 1},
				{model: path, ids: append(slices.Clone(base.ids), want.tokens[:base.n-1]...), n: 1, mode: "mmap", threads: 2},
			} {
				got, err := generate(ctx, o, true)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.tokens, want.tokens[len(want.tokens)-len(got.tokens):]) {
					t.Errorf("%s, %d threads, %d prompt tokens: tokens %v, want %v", o.mode, o.threads, len(o.ids), got.tokens, want.tokens)
				}
				for p := range got.logits {
					if !slices.Equal(got.logits[p], want.logits[p]) {
						t.Errorf("%s, %d threads, %d prompt tokens: logits of position %d differ", o.mode, o.threads, len(o.ids), p)
						break
					}
				}
			}
		})
	}
}

// TestOrder checks the schedule's order: each block's matrices in the order
// the pass multiplies by them, then the output matrix, which is token_embd
// when the model has no output.weight.
func TestOrder(t *testing.T) {
	for name, tm := range map[string]testModel{"types": smallModel, "tied": tiedModel} {
		t.Run(name, func(t *testing.T) {
			m, err := loader.Open(writeModel(t, tm))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			md, err := openModel(m)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, i := range md.order {
				names = append(names, m.TensorAt(i).Name)
			}
			var want []string
			for l := range tm.layers {
				for _, s := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
					want = append(want, fmt.Sprintf("blk.%d.%s.weight", l, s))
				}
			}
			if tm.tied {
				want = append(want, "token_embd.weight")
			} else {
				want = append(want, "output.weight")
			}
			if !slices.Equal(names, want) {
				t.Errorf("order %v\nwant %v", names, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	path := writeModel(t, smallModel)
	ctx := context.Background()
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{model: path, ids: []int{96}, n: 1, mode: "mmap"}, "not in the vocabulary"},
		{options{model: path, ids: []int{1}, n: 1, mode: "disk"}, "want schedule or mmap"},
		{options{model: path, ids: nil, n: 1, mode: "mmap"}, "no token ids"},
		// A budget too small for the largest matrix whole: the stream
		// splits it or refuses it.
		{options{model: path, ids: []int{1}, n: 1, budget: 64 << 10, mode: "schedule"}, "budget"},
		{options{model: "../../testdata/tiny.pte", ids: []int{1}, n: 1, mode: "mmap"}, "not GGUF"},
	} {
		_, err := generate(ctx, c.o, false)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%+v: error %v, want one saying %q (and no <nil>)", c.o, err, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "64MiB": 64 << 20, "1GiB": 1 << 30, "2G": 2 << 30, "512k": 512 << 10, "7B": 7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5G", "1XiB", "99999999999TiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
	if ids, err := parseIDs("1, 2,3"); err != nil || !slices.Equal(ids, []int{1, 2, 3}) {
		t.Errorf("parseIDs = %v, %v", ids, err)
	}
	if _, err := parseIDs("1,,2"); err == nil {
		t.Error("parseIDs(1,,2): no error")
	}
}

// TestLargerThanAddressSpace decodes a model whose weights lie past 4 GiB,
// after a hole: on a 32-bit system (CI runs this as linux/386) the loader
// maps it in windows and the schedule reads it pass after pass, with either
// reader, to the tokens of the same model without the hole.
func TestLargerThanAddressSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a sparse file past 4 GiB")
	}
	if emu := memstat.Emulator(); emu == "qemu-arm" {
		// qemu-arm 7.2 maps a 32-bit guest's file offsets past 4 GiB from
		// the wrong place; CI runs this test natively as linux/386.
		t.Skipf("under %s, whose mmap2 past 4 GiB maps the wrong place", emu)
	}
	ctx := context.Background()
	small := writeModel(t, smallModel)
	bigModel := smallModel
	bigModel.hole = 4<<30 + 4096
	big := writeModel(t, bigModel)
	want, err := generate(ctx, options{model: small, ids: []int{1, 5, 9}, n: 6, mode: "mmap", threads: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []stream.Reader{stream.ReadMapped, stream.ReadDirect} {
		got, err := generate(ctx, options{model: big, ids: []int{1, 5, 9}, n: 6, budget: 2 << 20, retain: stream.RetainAuto, reader: r, mode: "schedule", threads: 2}, false)
		if r == stream.ReadDirect && errors.Is(err, errors.ErrUnsupported) {
			t.Logf("no direct I/O here (the direct reader is checked where there is): %v", err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.tokens, want.tokens) {
			t.Errorf("%s reader, weights past 4 GiB: tokens %v, want %v", r, got.tokens, want.tokens)
		}
	}
}
