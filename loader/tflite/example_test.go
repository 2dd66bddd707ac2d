package tflite_test

import (
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// Open a model, look a constant up by name and walk the main subgraph's
// constants in the order its operators first read them.
func Example() {
	mf := mmapfile.NewBytes(tflitegen.Sample(true).Bytes()) // or mmapfile.Open("model.tflite")
	defer mf.Close()
	m, err := tflite.NewFile(mf)
	if err != nil {
		fmt.Println(err)
		return
	}
	if i, ok := m.Lookup("q"); ok {
		t := m.Tensors()[i]
		q, err := m.Quantization(t)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(t.Name, t.DType, t.Shape, t.NBytes, "bytes, blockwise scales in tensor", q.Blockwise.Scales)
	}
	used, _ := m.UsedOrder("main")
	for _, i := range used {
		fmt.Println("use", m.TensorAt(i).Name)
	}
	// Output:
	// q int4 [2 2] 2 bytes, blockwise scales in tensor 3
	// use 0/tensors/4
	// use 0/w
	// use q
	// use 0/c
}
