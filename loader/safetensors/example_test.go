package safetensors_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// Example writes a small safetensors file, maps it, and reads a tensor by
// name through a float32 view.
func Example() {
	dir, err := os.MkdirTemp("", "safetensors-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	out, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	_, err = safetensors.Write(out, []safetensors.Source{
		{Name: "linear.weight", DType: format.Float32, Shape: []int64{2, 2}, Data: bytes.NewReader(hostile.F32(1, 2, 3, 4))},
		{Name: "linear.bias", DType: format.Float32, Shape: []int64{2}, Data: bytes.NewReader(hostile.F32(0.5, -0.5))},
	}, []safetensors.Meta{{Key: "format", Value: "pt"}}, 0)
	if err != nil {
		log.Fatal(err)
	}
	if err := out.Close(); err != nil {
		log.Fatal(err)
	}

	mf, err := mmapfile.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	f, err := safetensors.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	w, ok := f.Tensor("linear.weight")
	if !ok {
		log.Fatal("no linear.weight")
	}
	v, copied, err := w.Data.Float32()
	if err != nil {
		log.Fatal(err)
	}
	kind, _ := f.MetadataValue("format")
	fmt.Println(w.Name, w.DType, w.Shape, v, "copied:", copied)
	fmt.Println("data at", f.DataOffset(), "format", kind)
	// Output:
	// linear.weight float32 [2 2] [1 2 3 4] copied: false
	// data at 176 format pt
}

// ExampleOpenIndex opens a checkpoint split into shards by its index.
func ExampleOpenIndex() {
	m, err := safetensors.OpenIndex("testdata/sharded/model.safetensors.index.json")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	i, ok := m.Lookup("model.layers.2.norm.weight")
	if !ok {
		log.Fatal("not found")
	}
	t := m.TensorAt(i)
	fmt.Println(len(m.Shards()), "shards,", m.NumTensors(), "tensors")
	fmt.Println(t.Name, t.DType, t.Shape, "in", filepath.Base(t.DataFile))
	// Output:
	// 4 shards, 15 tensors
	// model.layers.2.norm.weight float32 [16] in model-00003-of-00004.safetensors
}
