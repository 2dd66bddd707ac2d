package bundle_test

import (
	"fmt"
	"log"

	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// A bundled program holds a program and test cases for its methods; the
// program is opened in place, as a section of the bundle's mapping.
func Example() {
	bmf, err := mmapfile.Open("../../testdata/tiny.bpte")
	if err != nil {
		log.Fatal(err)
	}
	defer bmf.Close()
	f, err := bundle.NewFile(bmf)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range f.TestSuites() {
		fmt.Printf("method %s: %d test cases\n", s.Method, len(s.Cases))
		in := s.Cases[0].Inputs[0].Tensor
		want := s.Cases[0].ExpectedOutputs[0].Tensor
		fmt.Printf("  input %v %v, expected output %v %v\n", in.DType, in.Shape, want.DType, want.Shape)
	}

	mf, err := f.OpenProgram()
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	p, err := pte.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	off, n := f.ProgramSection()
	fmt.Printf("program: %d bytes at offset %d of the bundle, %d method(s)\n", n, off, len(p.Methods()))
	// Output:
	// method forward: 2 test cases
	//   input float32 [1 2], expected output float32 [1 2]
	// program: 1309 bytes at offset 64 of the bundle, 1 method(s)
}
