package loader_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
)

// UseOrder lists the weights in the order the model first uses them, here
// a program whose one instruction takes its second weight before its first
// and never uses the third: the order to prefetch (or stream) them in.
func ExampleModel_UseOrder() {
	dir, _ := os.MkdirTemp("", "order-example")
	defer os.RemoveAll(dir)
	weight := func(name string) writer.PTETensor {
		return writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: name}
	}
	w := &writer.PTE{Methods: []writer.PTEMethod{{
		Name:      "forward",
		Tensors:   []writer.PTETensor{weight("fc1.weight"), weight("fc2.weight"), weight("spare")},
		Operators: []string{"aten::linear"},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEKernelCall, A: 0, Args: []int32{1, 0}},
		},
	}}}
	path := filepath.Join(dir, "model.pte")
	if _, err := w.WriteFile(path); err != nil {
		log.Fatal(err)
	}

	m, err := loader.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	order, err := m.UseOrder("forward")
	if err != nil {
		log.Fatal(err)
	}
	for _, i := range order {
		t := m.TensorAt(i)
		fmt.Printf("tensor %d %s at %d\n", i, t.Name, t.Offset)
	}
	// Output:
	// tensor 1 fc2.weight at 784
	// tensor 0 fc1.weight at 768
	// tensor 2 spare at 800
}
