package bench_test

import (
	"fmt"

	"github.com/edgeload/edgeload/bench"
)

// The standard benchmark files: their names, tensor counts and sizes.
func ExampleStandard() {
	for _, s := range bench.Standard(true)[:3] {
		fmt.Printf("%s: %d × %v float32, %d MiB, %s\n", s.Name, s.Tensors, s.Dims, s.DataBytes()>>20, s.FileName())
	}
	fmt.Println(bench.Key(7))
	// Output:
	// pte-64M: 64 × [512 512] float32, 64 MiB, pte-64M.pte
	// pte-1G: 256 × [1024 1024] float32, 1024 MiB, pte-1G.pte
	// pte-4G: 1024 × [1024 1024] float32, 4096 MiB, pte-4G.pte
	// w0007
}
