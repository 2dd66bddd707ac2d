package loader_test

import (
	"archive/zip"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/mmapfile"
)

// writeZip writes an archive holding tiny.pte twice, stored and deflated,
// after a 4-byte entry; it returns its path.
func writeZip(dir string) string {
	model, err := os.ReadFile("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, "app.apk")
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	w := zip.NewWriter(f)
	for _, e := range []struct {
		name   string
		method uint16
		data   []byte
	}{{"pad", zip.Store, []byte("abcd")}, {"assets/model.pte", zip.Store, model}, {"assets/packed.pte", zip.Deflate, model}} {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: e.name, Method: e.method})
		if err != nil {
			log.Fatal(err)
		}
		fw.Write(e.data)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	return path
}

// OpenZipEntry maps a model stored uncompressed in a zip archive or APK in
// place: offsets are relative to the entry, as if it were a file of its
// own. A compressed entry is refused, with the fix in the message.
func ExampleWithZipEntry() {
	dir, err := os.MkdirTemp("", "edgeload-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	apk := writeZip(dir)

	m, err := loader.Open(apk, loader.WithZipEntry("assets/model.pte"))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	at, n := m.File().Section()
	w, _ := m.Tensor("linear.weight")
	fmt.Printf("%s, %d bytes at offset %d of the archive\n", m.Format(), n, at)
	fmt.Printf("linear.weight at %d of the entry\n", w.Offset)

	_, err = loader.Open(apk, loader.WithZipEntry("assets/packed.pte"))
	fmt.Println(errors.Is(err, loader.ErrCompressed))
	// Output:
	// pte, 1309 bytes at offset 99 of the archive
	// linear.weight at 1024 of the entry
	// true
}

// OpenSection opens a model that sits at an offset in a larger file, with
// offsets relative to its start; nothing outside it is readable.
func ExampleWithSection() {
	model, err := os.ReadFile("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "edgeload-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "blob.bin")
	// 1000 bytes of something else, the model, and more after it.
	if err := os.WriteFile(path, append(append(make([]byte, 1000), model...), "trailer"...), 0o644); err != nil {
		log.Fatal(err)
	}

	m, err := loader.Open(path, loader.WithSection(1000, int64(len(model))))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	w, _ := m.Tensor("linear.weight")
	fmt.Println(m.Format(), m.Size(), w.Offset)
	// Output:
	// pte 1309 1024
}

// OpenFile opens a model through a file the caller already has open, such
// as a descriptor passed by a supervisor (os.NewFile(fd, name)). The
// caller keeps it and closes it after the Model.
func ExampleNew() {
	f, err := os.Open("../testdata/tiny-v2.rten")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	mf, err := mmapfile.NewFile(f)
	if err != nil {
		log.Fatal(err)
	}
	m, err := loader.New(mf)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Format(), m.NumTensors(), "tensors")
	// Output:
	// rten 2 tensors
}

// Open of a bundled program (.bpte) opens the program it embeds, mapped in
// place; As gives the bundle's own value (a *bundle.Program) with its
// method test suites, whose tensors are views too.
func ExampleAs() {
	m, err := loader.Open("../testdata/tiny.bpte")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Format(), m.Size(), "bytes of program")
	b, _ := loader.As[*bundle.Program](m)
	for _, s := range b.Bundle.TestSuites() {
		out := s.Cases[0].ExpectedOutputs[0].Tensor
		v, _, err := out.Data.Float32()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d cases; case 0 expects %v\n", s.Method, len(s.Cases), v)
	}
	r, err := m.Verify()
	fmt.Println(r.TestTensors, "test tensors verified", err)
	// Output:
	// bpte 1309 bytes of program
	// forward: 2 cases; case 0 expects [3 5]
	// 4 test tensors verified <nil>
}
