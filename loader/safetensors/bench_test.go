package safetensors_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// zeros reads n zero bytes.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	clear(p[:k])
	z.n -= int64(k)
	return k, nil
}

// modelSources is a decoder-only model's tensor list: 24 layers of 12
// tensors plus embeddings and norms (about 300), bf16, small dimensions
// (the header is what Open reads).
func modelSources() []safetensors.Source {
	var srcs []safetensors.Source
	add := func(name string, dt format.DType, shape ...int64) {
		n := int64(dt.Size())
		for _, d := range shape {
			n *= d
		}
		srcs = append(srcs, safetensors.Source{Name: name, DType: dt, Shape: shape, Data: &zeros{n}})
	}
	add("model.embed_tokens.weight", format.BFloat16, 512, 64)
	for l := range 24 {
		p := fmt.Sprintf("model.layers.%d.", l)
		for _, m := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			add(p+"self_attn."+m+".weight", format.BFloat16, 64, 64)
		}
		add(p+"self_attn.q_norm.weight", format.BFloat16, 64)
		add(p+"self_attn.k_norm.weight", format.BFloat16, 64)
		for _, m := range []string{"gate_proj", "up_proj", "down_proj"} {
			add(p+"mlp."+m+".weight", format.BFloat16, 128, 64)
		}
		add(p+"input_layernorm.weight", format.BFloat16, 64)
		add(p+"post_attention_layernorm.weight", format.BFloat16, 64)
		add(p+"mlp.gate.bias", format.Float32, 64)
	}
	add("model.norm.weight", format.BFloat16, 64)
	add("lm_head.weight", format.BFloat16, 512, 64)
	return srcs
}

// loraSources is an adapter set: 10,000 small float32 tensors.
func loraSources() []safetensors.Source {
	var srcs []safetensors.Source
	for i := range 5000 {
		for _, ab := range []string{"lora_A", "lora_B"} {
			srcs = append(srcs, safetensors.Source{
				Name:  fmt.Sprintf("base_model.model.layers.%d.module_%d.%s.weight", i/50, i%50, ab),
				DType: format.Float32, Shape: []int64{4, 8}, Data: &zeros{128},
			})
		}
	}
	return srcs
}

func writeTemp(b *testing.B, srcs []safetensors.Source) (string, string) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "m.safetensors")
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := safetensors.Write(out, srcs, []safetensors.Meta{{Key: "format", Value: "pt"}}, 8); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return path, srcs[len(srcs)/2].Name
}

// BenchmarkOpen maps a file, parses its header and looks one tensor up,
// then closes: what a caller pays before the first tensor's bytes.
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		name string
		srcs []safetensors.Source
	}{{"model-300", modelSources()}, {"lora-10000", loraSources()}} {
		b.Run(c.name, func(b *testing.B) {
			path, name := writeTemp(b, c.srcs)
			b.ReportAllocs()
			for b.Loop() {
				mf, err := mmapfile.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				f, err := safetensors.NewFile(mf)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := f.Lookup(name); !ok {
					b.Fatal("lookup")
				}
				f.Close()
				mf.Close()
			}
		})
	}
}

// BenchmarkLookup looks a tensor up by name in the 10,000-tensor file.
func BenchmarkLookup(b *testing.B) {
	path, name := writeTemp(b, loraSources())
	mf, err := mmapfile.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer mf.Close()
	f, err := safetensors.NewFile(mf)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := f.Lookup(name); !ok {
			b.Fatal("lookup")
		}
	}
}

// headerOf returns the JSON header of a file Write makes of srcs.
func headerOf(b *testing.B, srcs []safetensors.Source) []byte {
	p, err := safetensors.NewPlan(srcs, nil, 8)
	if err != nil {
		b.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(p.Header)
	return p.Header[8 : 8+n]
}

// BenchmarkHeaderEncodingJSON decodes the 10,000-tensor header with
// encoding/json into the map a reader would build, for comparison with
// BenchmarkOpen/lora-10000 (which does everything NewFile does, mapping
// included). It checks less than NewFile: duplicate keys are kept, invalid
// UTF-8 becomes U+FFFD.
func BenchmarkHeaderEncodingJSON(b *testing.B) {
	js := headerOf(b, loraSources())
	type info struct {
		DType       string   `json:"dtype"`
		Shape       []uint64 `json:"shape"`
		DataOffsets []uint64 `json:"data_offsets"`
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(js)))
	for b.Loop() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(js, &m); err != nil {
			b.Fatal(err)
		}
		for k, v := range m {
			if k == "__metadata__" {
				continue
			}
			var t info
			if err := json.Unmarshal(v, &t); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkHeader parses the same header with NewFile, from memory.
func BenchmarkHeader(b *testing.B) {
	p, err := safetensors.NewPlan(loraSources(), nil, 8)
	if err != nil {
		b.Fatal(err)
	}
	file := make([]byte, p.Size)
	copy(file, p.Header)
	b.ReportAllocs()
	b.SetBytes(int64(len(p.Header) - 8))
	for b.Loop() {
		if _, err := safetensors.NewFile(mmapfile.NewBytes(file)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLookupAllocates nothing.
func TestLookupAllocs(t *testing.T) {
	f, err := open(mk(ok2, []byte{1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { f.Lookup("a"); f.Lookup("b") }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}
