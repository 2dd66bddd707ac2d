package signing_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/edgeload/edgeload/signing"
)

// A folder holding a safetensors index and its shards, checked against
// the signature model-signing made of it with a key.
func Example() {
	b, err := signing.ReadBundle("testdata/oms/st-files.sig")
	if err != nil {
		log.Fatal(err)
	}
	pem, err := os.ReadFile("testdata/oms/keys/ec-p256.pub.pem")
	if err != nil {
		log.Fatal(err)
	}
	key, err := signing.ParsePublicKey(pem)
	if err != nil {
		log.Fatal(err)
	}
	res, err := signing.Verify(context.Background(), b, &signing.Trust{PublicKey: key}, "testdata/oms/models/st-index", nil)
	if err != nil {
		log.Fatal(err) // a *signing.Error: errors.Is(err, signing.ErrDigest), ...
	}
	fmt.Println(res.Files, "files,", res.Bytes, "bytes verified")
	// Output: 4 files, 5229 bytes verified
}

// A reader that checks a model while it reads it: each shard is proven
// when its last byte arrives, and nothing past a bad shard is.
func ExampleManifest_NewCheck() {
	b, err := signing.ReadBundle("testdata/oms/st-shards.sig")
	if err != nil {
		log.Fatal(err)
	}
	pem, _ := os.ReadFile("testdata/oms/keys/ec-p384.pub.pem")
	key, err := signing.ParsePublicKey(pem)
	if err != nil {
		log.Fatal(err)
	}
	m, err := b.Verify(&signing.Trust{PublicKey: key}) // the signature first
	if err != nil {
		log.Fatal(err)
	}
	data, err := os.ReadFile("testdata/oms/models/st-index/model-00002-of-00002.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	data[1500] ^= 1 // a flipped bit in the second shard
	c, err := m.NewCheck("model-00002-of-00002.safetensors", int64(len(data)))
	if err != nil {
		log.Fatal(err)
	}
	_, err = io.CopyBuffer(c, bytes.NewReader(data), make([]byte, 512))
	fmt.Println("proven:", c.Verified(), "bytes")
	fmt.Println(err)
	// Output:
	// proven: 1000 bytes
	// signing: file model-00002-of-00002.safetensors shard [1000, 2000): digest mismatch: sha256 6b95cc4b25c1… read, 234f1b2b51c4… signed
}
