package bundle_test

import (
	"slices"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/bundle"
)

// Every dimension of a test tensor's shape reads back as written, in
// order, for shapes whose first dimension is not 1 (the tiny bundle's are
// all [1, 2]).
func TestShapes(t *testing.T) {
	prog, err := writer.TinyPTE().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	shapes := [][]int32{{3, 2}, {2, 1, 4}, {5}, {}}
	var ins []writer.BPTEValue
	for _, s := range shapes {
		n := 1
		for _, d := range s {
			n *= int(d)
		}
		ins = append(ins, writer.BPTEValue{Tensor: &writer.BPTETensor{ScalarType: writer.PTEFloat32, Sizes: s, Data: make([]byte, 4*n)}})
	}
	b, err := (&writer.BPTE{Version: 2, Program: prog, Suites: []writer.BPTESuite{{Method: "forward", Cases: []writer.BPTECase{{Inputs: ins}}}}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := bundle.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := f.TestSuites()[0].Cases[0].Inputs
	if len(got) != len(shapes) {
		t.Fatalf("%d inputs, want %d", len(got), len(shapes))
	}
	for i, s := range shapes {
		if want := shapeOf(s); !slices.Equal(got[i].Tensor.Shape, want) {
			t.Errorf("input %d: shape %v, want %v", i, got[i].Tensor.Shape, want)
		}
	}
}
