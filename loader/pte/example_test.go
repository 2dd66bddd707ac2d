package pte_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// exampleFile writes a small program for the examples and returns its path.
func exampleFile(dir string) string {
	w := &writer.PTE{Methods: []writer.PTEMethod{{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Data: hostile.F32(1, 2, 3, 4), Name: "linear.weight"},
			{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(0.5, -0.5)},
			{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "shared.bias"},
		},
	}}}
	path := filepath.Join(dir, "model.pte")
	if _, err := w.WriteFile(path); err != nil {
		log.Fatal(err)
	}
	return path
}

// Map a program file, open the program in it and list its tensors: where
// their bytes live and what they hold, read through zero-copy views of the
// mapping. The mapping is the caller's: the program's Close leaves it open.
func Example() {
	dir, _ := os.MkdirTemp("", "pte-example")
	defer os.RemoveAll(dir)

	mf, err := mmapfile.Open(exampleFile(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	p, err := pte.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for _, t := range p.Tensors() {
		fmt.Printf("%s %s%v %s", t.Name, t.DType, t.Shape, t.Location)
		if t.Resolved() {
			v, _, _ := t.Data.Float32()
			fmt.Printf(" at %d: %v", t.Offset, v)
		}
		fmt.Println()
	}
	// Output:
	// linear.weight float32[2 2] segment at 640: [1 2 3 4]
	// forward/values/1 float32[2] segment at 656: [0.5 -0.5]
	// shared.bias float32[2] external
}

// Link a program's external tensors to the .ptd file holding their data.
// The tensor's view is the .ptd's own mapping: programs linked to the same
// opened .ptd share its pages.
func ExampleProgram_Link() {
	dir, _ := os.MkdirTemp("", "pte-example")
	defer os.RemoveAll(dir)
	pd := &writer.PTD{Entries: []writer.PTDEntry{{Key: "shared.bias",
		Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2}}, Data: hostile.F32(7, 8)}}}
	ptdPath := filepath.Join(dir, "weights.ptd")
	if _, err := pd.WriteFile(ptdPath); err != nil {
		log.Fatal(err)
	}
	dmf, err := mmapfile.Open(ptdPath)
	if err != nil {
		log.Fatal(err)
	}
	defer dmf.Close()
	data, err := ptd.NewFile(dmf)
	if err != nil {
		log.Fatal(err)
	}
	defer data.Close()

	mf, err := mmapfile.Open(exampleFile(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	p, err := pte.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	if err := p.Link(data); err != nil {
		log.Fatal(err)
	}
	t, _ := p.Tensor("shared.bias")
	v, _, _ := t.Data.Float32()
	fmt.Println(t.Name, v, filepath.Base(t.DataFile))
	// Output:
	// shared.bias [7 8] weights.ptd
}

// Errors are *format.FormatError values; errors.Is tells the kinds apart.
func ExampleNewFile_errors() {
	_, err := pte.NewFile(mmapfile.NewBytes([]byte("\x10\x00\x00\x00BP08\x00\x00\x00\x00\x00\x00\x00\x00")))
	fmt.Println(errors.Is(err, format.ErrUnknownFormat))
	fmt.Println(err)
	var fe *format.FormatError
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, fe.Offset)
	}
	// Output:
	// true
	// pte: identifier at offset 0x4: not an ExecuTorch program (identifier "BP08" at offset 4)
	// identifier 4
}
