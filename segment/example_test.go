package segment_test

import (
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// writeWeights writes a file with four little-endian float32 values at
// offset 128 and returns its path.
func writeWeights(dir string) string {
	data := make([]byte, 256)
	for i, v := range []float32{0.5, -1, 2.25, 3} {
		binary.LittleEndian.PutUint32(data[128+4*i:], math.Float32bits(v))
	}
	path := filepath.Join(dir, "weights.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// A segment is a tensor's byte range; its typed view reinterprets the
// mapped bytes in place when they are aligned.
func ExampleSegment_Float32() {
	dir, _ := os.MkdirTemp("", "segment-example")
	defer os.RemoveAll(dir)
	f, err := mmapfile.Open(writeWeights(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	s, err := segment.New(f, 128, 16)
	if err != nil {
		log.Fatal(err)
	}
	w, copied, err := s.Float32()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w, "copied:", copied)

	// One byte further the floats are misaligned: the view is a copy, and
	// says so.
	odd, _ := segment.New(f, 129, 16)
	_, copied, _ = odd.Float32()
	fmt.Println("misaligned copied:", copied)
	// Output:
	// [0.5 -1 2.25 3] copied: false
	// misaligned copied: true
}

// After initialisation a segment's pages can be released; the view stays
// valid and faults its pages back in when read.
func ExampleSegment_Release() {
	dir, _ := os.MkdirTemp("", "segment-example")
	defer os.RemoveAll(dir)
	f, err := mmapfile.Open(writeWeights(dir))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	s, _ := segment.New(f, 128, 16)
	if err := s.Prefetch(); err != nil {
		log.Fatal(err)
	}
	w, _, _ := s.Float32()
	if err := s.Release(segment.DropPageCache()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(w[2])
	sum, _ := s.SHA256()
	fmt.Printf("%x\n", sum[:4])
	// Output:
	// 2.25
	// f8c6246c
}

// As works for any element type, including named ones.
func ExampleAs() {
	type q8 int8
	f := mmapfile.NewBytes([]byte{1, 0xff, 3, 0x80})
	s, _ := segment.New(f, 0, 4)
	v, _, _ := segment.As[q8](s)
	fmt.Println(v)
	// Output: [1 -1 3 -128]
}
