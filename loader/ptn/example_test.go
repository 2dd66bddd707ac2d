package ptn_test

import (
	"fmt"
	"log"

	"github.com/edgeload/edgeload/loader/ptn"
	"github.com/edgeload/edgeload/mmapfile"
)

// Example opens a package, lists its members, and reads a method's
// constants in the order its nodes use them.
func Example() {
	mf, err := mmapfile.Open("testdata/tiny.ptn")
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	f, err := ptn.NewFile(mf)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range f.Members() {
		fmt.Println(m.Name, m.Size, "bytes")
	}
	order, err := f.UseOrder("forward")
	if err != nil {
		log.Fatal(err)
	}
	for _, i := range order {
		t := f.TensorAt(i)
		owner, alias := f.AliasOf(i)
		v, copied, _ := t.Data.Float32()
		if alias {
			fmt.Println(t.Name, "alias of", f.TensorAt(owner).Name)
		} else if t.DType.String() == "float32" {
			fmt.Println(t.Name, t.Shape, v, "copied:", copied)
		} else {
			fmt.Println(t.Name, t.DType, t.Shape)
		}
	}
	// Output:
	// program.ptg 1012 bytes
	// program.safetensors 216 bytes
	// aliases.json 15 bytes
	// w2 alias of w
	// b [2] [0.5 -0.5] copied: true
	// w [2 3] [0 1 2 3 4 5] copied: true
	// step int64 []
}
