package memlimit

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestFillMatchesValue checks that Fill, called with chunks of awkward
// sizes and offsets (as a writer may), writes exactly Value's encoding.
func TestFillMatchesValue(t *testing.T) {
	for _, i := range []int{0, 1, 250, 251, 1023} {
		want := make([]byte, 4096)
		for j := range len(want) / 4 {
			binary.LittleEndian.PutUint32(want[4*j:], math.Float32bits(Value(i, j)))
		}
		for _, chunk := range []int{1, 3, 4, 7, 1000, 4096} {
			got := make([]byte, len(want))
			for off := 0; off < len(got); off += chunk {
				Fill(i, got[off:min(off+chunk, len(got))], int64(off))
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("tensor %d, chunk %d: byte %d is %#x, want %#x", i, chunk, k, got[k], want[k])
				}
			}
		}
	}
}

// TestExpectedSum compares the closed form with a sum over every element,
// and checks that neighbouring tensors' sums differ (so that reading the
// wrong tensor is caught).
func TestExpectedSum(t *testing.T) {
	for _, i := range []int{0, 1, 2, 36, 250, 1023} {
		v := make([]float32, TensorElems)
		var brute float64
		for j := range v {
			v[j] = Value(i, j)
			brute += float64(v[j])
		}
		if got := ExpectedSum(i); got != brute {
			t.Errorf("ExpectedSum(%d) = %v, element-wise sum %v", i, got, brute)
		}
		if got := Sum(v); got != brute {
			t.Errorf("Sum(tensor %d) = %v, want %v", i, got, brute)
		}
	}
	for i := 1; i < Tensors; i++ {
		if ExpectedSum(i) == ExpectedSum(i-1) {
			t.Errorf("tensors %d and %d have the same sum %v", i-1, i, ExpectedSum(i))
		}
	}
}

// TestSmallModelRoundTrip writes a 4-tensor model with the same tensors as
// the 4 GiB one and checks, through edgeload, every tensor's name, shape
// and sum: the checks the child makes, on a file small enough for any run.
func TestSmallModelRoundTrip(t *testing.T) {
	const n = 4
	ts := make([]writer.PTETensor, n)
	for i := range ts {
		ts[i] = writer.PTETensor{
			ScalarType: writer.PTEFloat32,
			Sizes:      []int32{1024, TensorElems / 1024},
			Name:       TensorName(i),
			Fill:       func(p []byte, off int64) { Fill(i, p, off) },
		}
	}
	path := filepath.Join(t.TempDir(), "small.pte")
	w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	p, err := pte.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := p.Tensors()
	if len(got) != n {
		t.Fatalf("%d tensors, want %d", len(got), n)
	}
	for i := range got {
		v, _, err := got[i].Data.Float32()
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Name != TensorName(i) || len(v) != TensorElems {
			t.Errorf("tensor %d: %s with %d elements", i, got[i].Name, len(v))
		}
		if s := Sum(v); s != ExpectedSum(i) {
			t.Errorf("tensor %d: sum %v, want %v", i, s, ExpectedSum(i))
		}
	}
}

// ExampleFill shows the values the writer is given for the start of
// tensor 1, and the sum the child expects for the whole tensor
// (4177 full periods of 0..250, then 7..155).
func ExampleFill() {
	p := make([]byte, 16)
	Fill(1, p, 0)
	var vs []string
	for k := 0; k < len(p); k += 4 {
		vs = append(vs, fmt.Sprint(math.Float32frombits(binary.LittleEndian.Uint32(p[k:]))))
	}
	fmt.Println(strings.Join(vs, " "))
	fmt.Printf("%.0f\n", ExpectedSum(1))
	// Output:
	// 7 8 9 10
	// 131065444
}
