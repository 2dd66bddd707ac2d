package repack_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/repack"
)

// Repack a program with every segment and constant on a 16 KiB boundary and
// its constants moved to a .ptd, then prove it holds the same tensors.
func Example() {
	dir, err := os.MkdirTemp("", "repack-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "model.pte")
	weights := filepath.Join(dir, "weights.ptd")

	res, err := repack.Repack("../testdata/tiny.pte", out, repack.Options{
		Align:       16384,
		TensorAlign: 16384,
		Externalize: weights,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d bytes, %d segments; weights.ptd: %d bytes\n", res.Format, res.Size, res.Segments, res.DataSize)

	diffs, err := repack.Check("../testdata/tiny.pte", out, weights)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("differences:", len(diffs))
	// Output:
	// pte: 32797 bytes, 3 segments; weights.ptd: 49156 bytes
	// differences: 0
}
