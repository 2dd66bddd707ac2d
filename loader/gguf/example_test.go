package gguf_test

import (
	"fmt"
	"log"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

// Open a GGUF file, read its metadata and a tensor's bytes.
func Example() {
	mf, err := mmapfile.Open("testdata/values-align64.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer mf.Close()
	f, err := gguf.NewFile(mf)
	if err != nil {
		log.Fatal(err) // a *format.FormatError
	}
	arch, _ := f.MetaString("general.architecture")
	fmt.Println("version", f.Version(), "alignment", f.Alignment(), "arch", arch)

	t, ok := f.Tensor("token_embd.weight") // no allocation
	if !ok {
		log.Fatal("no token_embd.weight")
	}
	elems, size := t.Block()
	fmt.Println(t.Type, t.Shape, t.NE[:t.NDims], t.NumBlocks(), "blocks of", elems, "in", size, "bytes")
	raw, _ := t.Data.Bytes() // the raw blocks, zero copy
	fmt.Println(len(raw) == int(t.NBytes))

	order, _ := f.UseOrder("")
	for _, i := range order {
		fmt.Println(f.TensorAt(i).Name)
	}
	// Output:
	// version 3 alignment 64 arch llama
	// q8_0 [4 64] [64 4] 8 blocks of 32 in 34 bytes
	// true
	// token_embd.weight
	// output.weight
}

// Read a vocabulary lazily: nothing is decoded until iterated.
func ExampleArray_All() {
	f, err := gguf.NewFile(mmapfile.NewBytes(ggufcheck.ModelShaped(1, 5)))
	if err != nil {
		log.Fatal(err)
	}
	tokens, _ := f.MetaArray("tokenizer.ggml.tokens")
	for i, v := range tokens.All() {
		s, _ := v.AsString()
		fmt.Println(i, s)
	}
	// Output:
	// 0 tok0
	// 1 tok1
	// 2 tok2
	// 3 tok3
	// 4 tok4
}
