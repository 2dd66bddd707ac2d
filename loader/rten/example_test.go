package rten_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// exampleFile writes a small V2 model (with the project's own writer) and
// returns its path: an input, a 2×2 weight in the tensor data section, an
// inline bias, MatMul and Add.
func exampleFile(dir string) string {
	p := filepath.Join(dir, "model.rten")
	if _, err := simpleModel().WriteFile(p); err != nil {
		log.Fatal(err)
	}
	return p
}

// Map a model file, open the model in it, list its constants and read one
// as []float32 without copying it. The mapping is the caller's: the
// model's Close leaves it open.
func Example() {
	dir, err := os.MkdirTemp("", "rten-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	mf, err := mmapfile.Open(exampleFile(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	m, err := rten.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	h := m.Header()
	fmt.Printf("version %d, %d nodes\n", h.Version, len(m.Graph().Nodes))
	for _, c := range m.Constants() {
		fmt.Printf("%s %s %v %s %d bytes\n", c.Name, c.DType, c.Shape, c.Location, c.NBytes)
	}
	w, _ := m.Constant("w")
	v, copied, err := w.Data.Float32()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v, "copied:", copied)
	// Output:
	// version 2, 7 nodes
	// w float32 [2 2] segment 16 bytes
	// b float32 [2] inline 8 bytes
	// [1 2 3 4] copied: false
}

// Walk the graph and its subgraphs and print the operators.
func ExampleGraph_Walk() {
	w := simpleModel()
	w.Graph.Nodes[6].Operator.Then = &writer.RTenGraph{
		Nodes:   []writer.RTenNode{constant("k", format.Int8, true, []byte{1}, 1), value("t")},
		Outputs: []uint32{1},
	}
	b, _, err := w.Bytes()
	if err != nil {
		log.Fatal(err)
	}
	m, err := rten.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		log.Fatal(err)
	}
	m.Graph().Walk(func(g *rten.Graph) bool {
		for _, n := range g.Nodes {
			switch n.Kind {
			case rten.KindOperator:
				fmt.Printf("%s: %s %q inputs %v subgraphs %d\n", g.Path, n.Op.Type, n.Name, n.Op.Inputs, len(n.Op.Subgraphs))
			case rten.KindConstant:
				fmt.Printf("%s: constant %q\n", g.Path, n.Constant.Name)
			}
		}
		return true
	})
	// Output:
	// graph: constant "w"
	// graph: constant "b"
	// graph: MatMul "matmul" inputs [0 1] subgraphs 0
	// graph: Add "add" inputs [3 2] subgraphs 1
	// graph/nodes/6/then_branch: constant "k"
}

// Errors are *format.FormatError values naming the field and file offset,
// and wrap sentinels for errors.Is.
func ExampleNewFile_error() {
	b, _, err := simpleModel().Bytes()
	if err != nil {
		log.Fatal(err)
	}
	b[4] = 3 // header version 3
	_, err = rten.NewFile(mmapfile.NewBytes(b))
	fmt.Println(err)
	// Output:
	// rten: header.version at offset 0x4: version 3; want 2 (this loader reads version 2, and headerless version 1 files)
}
