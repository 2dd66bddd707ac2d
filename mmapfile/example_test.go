package mmapfile_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/mmapfile"
)

// Open maps a file; View returns a range of it without copying, at any
// offset (here a 128-byte-aligned one, as in model files).
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "mmapfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "weights.bin")
	data := make([]byte, 1000)
	copy(data[128:], "hello, mapped world")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}

	f, err := mmapfile.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	v, err := f.View(128, 19)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d bytes, zero-copy %v: %s\n", f.Len(), f.ZeroCopy(), v)

	// The pages under the view may be released; the view stays valid.
	if err := f.Release(0, f.Len(), false); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("after release: %s\n", v)

	_, err = f.View(990, 20)
	fmt.Println(errors.Is(err, mmapfile.ErrRange))
	// Output:
	// 1000 bytes, zero-copy true: hello, mapped world
	// after release: hello, mapped world
	// true
}

// A windowed File maps only the pages around the ranges asked for, which is
// how files larger than a 32-bit address space are read.
func ExampleWithMode() {
	dir, err := os.MkdirTemp("", "mmapfile-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(path, []byte("0123456789abcdef"), 0o644); err != nil {
		log.Fatal(err)
	}
	f, err := mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWindowed))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	v, _ := f.View(10, 6)
	buf := make([]byte, 4)
	n, _ := f.ReadAt(buf, 2)
	fmt.Println(f.Mode(), string(v), string(buf[:n]))
	// Output: windowed abcdef 2345
}

// NewBytes gives the same API over bytes already in memory.
func ExampleNewBytes() {
	f := mmapfile.NewBytes([]byte("in-memory model"))
	v, _ := f.View(3, 6)
	fmt.Println(f.Mode(), string(v))
	// Output: memory memory
}
