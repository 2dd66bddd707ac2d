package stream_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"os"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/signing"
	"github.com/edgeload/edgeload/stream"
)

// Stream every weight of a model in use order, holding at most 1 MiB of
// weight pages resident.
func Example() {
	m, err := loader.Open("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := stream.New(context.Background(), m, stream.WithBudget(1<<20))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	var tensors, blobs int
	for {
		it, err := s.Next() // the item before is now the stream's to release
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		if err := it.Data.Checksum(crc32.NewIEEE()); err != nil { // use it: here, read every byte
			log.Fatal(err)
		}
		if it.Tensor >= 0 {
			tensors++
		} else {
			blobs++
		}
	}
	st := s.Stats()
	fmt.Printf("%d tensors, %d delegate blob, %d bytes, peak within budget: %v\n", tensors, blobs, st.Bytes, st.Peak <= st.Budget)
	// Output: 3 tensors, 1 delegate blob, 98 bytes, peak within budget: true
}

// A decode loop: every weight once per token, pass after pass, with the
// weights that fit in the budget kept resident across passes and the rest
// read anew each pass.
func Example_passes() {
	m, err := loader.Open("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	const tokens = 3
	s, err := stream.New(context.Background(), m,
		stream.WithPasses(tokens), // 0: until Close
		stream.WithBudget(1<<20),
		stream.WithRetain(stream.RetainAuto))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		it, err := s.Next() // it.Pass is the token; the item before is the stream's again
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		_ = it.Data // compute with the weight here
	}
	for _, p := range s.Passes() {
		fmt.Printf("pass %d: %d items, read from the file: %v\n", p.Pass, p.Items, p.Read > 0)
	}
	// Output:
	// pass 0: 4 items, read from the file: true
	// pass 1: 4 items, read from the file: false
	// pass 2: 4 items, read from the file: false
}

// Stream a sharded safetensors checkpoint checked against the signature
// model-signing made of its folder: an item goes out only once every
// shard of the signature it touches has matched.
func Example_signature() {
	b, err := signing.ReadBundle("../signing/testdata/oms/st-shards.sig")
	if err != nil {
		log.Fatal(err)
	}
	pem, err := os.ReadFile("../signing/testdata/oms/keys/ec-p384.pub.pem")
	if err != nil {
		log.Fatal(err)
	}
	key, err := signing.ParsePublicKey(pem)
	if err != nil {
		log.Fatal(err)
	}
	man, err := b.Verify(&signing.Trust{PublicKey: key}) // the signature itself
	if err != nil {
		log.Fatal(err)
	}
	m, err := loader.Open("../signing/testdata/oms/models/st-index/model.safetensors.index.json")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	checks, err := stream.SignatureChecks(m, man, nil) // checks config.json and the index whole
	if err != nil {
		log.Fatal(err)
	}
	s, err := stream.New(context.Background(), m, stream.WithBudget(1<<20), stream.WithSignature(checks))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	n := 0
	for {
		_, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err) // errors.Is(err, stream.ErrSignature): the *signing.Error names file and shard
		}
		n++
	}
	fmt.Println(n, "tensors, every byte of", len(man.Paths()), "files as signed")
	// Output: 3 tensors, every byte of 4 files as signed
}
