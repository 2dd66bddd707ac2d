package tflite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// bigModel returns a model of n float32 [64, 64] constants, each read by
// one operator, in the inline or the large-model layout.
func bigModel(n int, external bool) *tflitegen.Model {
	m := &tflitegen.Model{External: external, Buffers: make([]tflitegen.Buffer, n+1)}
	sg := tflitegen.Subgraph{Name: "main", Tensors: []tflitegen.Tensor{{Name: "x", Type: tflitefb.TensorTypeFLOAT32, Shape: []int32{64}}}}
	for i := 1; i <= n; i++ {
		data := make([]byte, 64*64*4)
		data[0] = byte(i)
		m.Buffers[i].Data = data
		sg.Tensors = append(sg.Tensors, tflitegen.Tensor{Name: "layer." + strconv.Itoa(i) + ".weight", Type: tflitefb.TensorTypeFLOAT32, Shape: []int32{64, 64}, Buffer: uint32(i)})
		sg.Ops = append(sg.Ops, tflitegen.Op{Inputs: []int32{0, int32(i)}, Outputs: []int32{0}})
	}
	m.Subgraphs = []tflitegen.Subgraph{sg}
	return m
}

func writeBig(b *testing.B, external bool) string {
	path := filepath.Join(b.TempDir(), fmt.Sprintf("big-%v.tflite", external))
	if err := os.WriteFile(path, bigModel(1000, external).Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpen maps a 1,000-tensor model (16 MB), opens it and takes a
// float32 view of every constant, in both layouts.
func BenchmarkOpen(b *testing.B) {
	for _, external := range []bool{false, true} {
		b.Run(fmt.Sprintf("external=%v", external), func(b *testing.B) {
			path := writeBig(b, external)
			b.ReportAllocs()
			for b.Loop() {
				mf, err := mmapfile.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				m, err := tflite.NewFile(mf)
				if err != nil {
					b.Fatal(err)
				}
				for i := range m.NumTensors() {
					if _, _, err := m.TensorData(i).Float32(); err != nil {
						b.Fatal(err)
					}
				}
				m.Close()
				mf.Close()
			}
		})
	}
}

// BenchmarkLookup looks a tensor up by name.
func BenchmarkLookup(b *testing.B) {
	m, err := open(bigModel(1000, false).Bytes())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := m.Lookup("layer.500.weight"); !ok {
			b.Fatal("not found")
		}
	}
}

// TestLookupAllocs checks that Lookup and the per-tensor accessors
// allocate nothing.
func TestLookupAllocs(t *testing.T) {
	m, err := open(bigModel(100, true).Bytes())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = m.UseOrder("main")
	n := testing.AllocsPerRun(100, func() {
		i, ok := m.Lookup("layer.50.weight")
		if !ok || m.TensorAt(i).Name != "layer.50.weight" {
			t.Fatal("Lookup")
		}
		_ = m.TensorData(i)
		_, _ = m.UseOrder("main")
		_, _ = m.UsedOrder("")
	})
	if n != 0 {
		t.Errorf("%v allocations per lookup, want 0", n)
	}
}
