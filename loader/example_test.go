package loader_test

import (
	"errors"
	"fmt"
	"log"
	"os"

	_ "github.com/edgeload/edgeload/formats" // every built-in format
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// Open sniffs the format, maps the file and lists its tensors the same way
// for every format the program imports (this file imports package formats,
// which registers every built-in one); each tensor's Data is a zero-copy
// view.
func ExampleOpen() {
	m, err := loader.Open("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Format(), m.Size(), "bytes")
	for _, t := range m.Tensors() {
		fmt.Printf("%-16s %-7s %v %s at %d, %d bytes\n", t.Name, t.DType, t.Shape, t.Location, t.Offset, t.NBytes)
	}
	w, _ := m.Tensor("linear.weight")
	v, copied, err := w.Data.Float32()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v, "copied:", copied)
	// Format-specific details stay with the format's package.
	p, _ := loader.As[*pte.Program](m)
	for _, d := range p.Delegates() {
		fmt.Println("delegate", d.ID, "in segment", d.SegmentIndex)
	}
	// Output:
	// pte 1309 bytes
	// linear.weight    float32 [3 2] segment at 1024, 24 bytes
	// linear.bias      float32 [3] segment at 1056, 12 bytes
	// forward/values/2 float32 [] segment at 1072, 4 bytes
	// [0.5 0.75 1 1.25 1.5 1.75] copied: false
	// delegate XnnpackBackend in segment 1
}

// A runtime that wants a data pointer for every weight, and nothing else,
// takes them all in one call: no tensor list (names, shapes) is built, and
// nothing is copied or touched.
func ExampleModel_AppendTensorBytes() {
	m, err := loader.Open("../testdata/tiny.pte")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	views, err := m.AppendTensorBytes(nil)
	if err != nil {
		log.Fatal(err)
	}
	for i, b := range views {
		fmt.Printf("tensor %d: %d bytes, the same as TensorData: %v\n", i, len(b), m.TensorData(i).Len() == int64(len(b)))
	}
	// Output:
	// tensor 0: 24 bytes, the same as TensorData: true
	// tensor 1: 12 bytes, the same as TensorData: true
	// tensor 2: 4 bytes, the same as TensorData: true
}

// A program's external tensors are resolved against .ptd files given with
// WithData; their views point into the .ptd's mapping.
func ExampleWithData() {
	m, err := loader.Open("../testdata/tiny-external.pte", loader.WithData("../testdata/tiny.ptd"))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for _, t := range m.Tensors() {
		fmt.Println(t.Name, t.Location, t.DataFile, t.Offset)
	}
	// Output:
	// linear.weight external ../testdata/tiny.ptd 320
	// linear.bias external ../testdata/tiny.ptd 352
}

// Errors are values: sentinels for errors.Is, and *FormatError with the
// format, field and file offset.
func ExampleOpen_errors() {
	// Bytes that are no model at all.
	junk := append([]byte("\x1c\x00\x00\x00XY08"), make([]byte, 56)...)
	fmt.Println(loader.Sniff(junk))
	_, err := loader.New(mmapfile.NewBytes(junk))
	fmt.Println(errors.Is(err, loader.ErrUnknownFormat))

	// A program whose identifier is a later version.
	tiny, _ := os.ReadFile("../testdata/tiny.pte")
	copy(tiny[4:8], "ET13")
	_, err = loader.New(mmapfile.NewBytes(tiny))
	var fe *loader.FormatError
	fmt.Println(errors.Is(err, loader.ErrUnsupportedVersion), errors.As(err, &fe), fe.Format, fe.Field, fe.Offset)
	// Output:
	// unknown
	// true
	// true true pte identifier 4
}

// Verify reads every tensor and segment, fault-safe, and checks how they
// fit together.
func ExampleModel_Verify() {
	m, err := loader.Open("../testdata/tiny-v2.rten")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	r, err := m.Verify()
	fmt.Printf("%d tensors, %d segments, %d bytes read, err=%v\n", r.Tensors, r.Segments, r.BytesRead, err)
	// Output:
	// 2 tensors, 1 segments, 36 bytes read, err=<nil>
}
