package pte_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// constProgram returns a program of n float32 [16,16] constants in one
// constant segment, the layout of the bench package's files.
func constProgram(tb testing.TB, n int) []byte {
	tb.Helper()
	m := writer.PTEMethod{Name: "forward", Tensors: make([]writer.PTETensor, n)}
	for i := range m.Tensors {
		m.Tensors[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{16, 16}}
	}
	p := writer.PTE{Methods: []writer.PTEMethod{m}, SegmentAlignment: 128, TensorAlignment: 128}
	b, err := p.Bytes()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkParse measures what Open does beyond the system calls: headers,
// verification of the whole FlatBuffer, the semantic checks and a view of
// every tensor, over a program already in memory (NewBytes). With
// views=append the views come from one AppendTensorBytes, with views=data
// from TensorData one by one, with views=tensors from the tensor list
// (built by the first Tensors call); views=none takes none.
func BenchmarkParse(b *testing.B) {
	for _, n := range []int{64, 1024, 10000} {
		for _, views := range []string{"append", "data", "tensors", "none"} {
			b.Run(fmt.Sprintf("tensors=%d/views=%s", n, views), func(b *testing.B) {
				data := constProgram(b, n)
				b.ReportAllocs()
				least := time.Duration(math.MaxInt64)
				dst := make([][]byte, 0, n)
				for b.Loop() {
					t0 := time.Now()
					p, err := pte.NewFile(mmapfile.NewBytes(data))
					if err != nil {
						b.Fatal(err)
					}
					switch views {
					case "append":
						if dst, err = p.AppendTensorBytes(dst[:0]); err != nil {
							b.Fatal(err)
						}
					case "data":
						for i := range p.NumTensors() {
							if _, err := p.TensorData(i).Bytes(); err != nil {
								b.Fatal(err)
							}
						}
					case "none":
					default:
						for i := range p.Tensors() {
							if _, err := p.Tensors()[i].Data.Bytes(); err != nil {
								b.Fatal(err)
							}
						}
					}
					p.Close()
					least = min(least, time.Since(t0))
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/tensor")
				// The fastest op: on a machine whose speed varies, the
				// figure that repeats.
				b.ReportMetric(float64(least.Nanoseconds()), "min-ns/op")
			})
		}
	}
}

// BenchmarkParseReal is BenchmarkParse (views=none) on the real programs
// of ../shared/models: Open in memory, the general way's values (ints,
// lists, activations), chains, operators and delegates as upstream's tools
// write them. It skips where ../shared/models is absent.
func BenchmarkParseReal(b *testing.B) {
	for _, path := range testmodels.Files(b, "pte") {
		if filepath.Ext(path) != ".pte" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(path), func(b *testing.B) {
			b.ReportAllocs()
			least := time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				p, err := pte.NewFile(mmapfile.NewBytes(data))
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
				least = min(least, time.Since(t0))
			}
			b.ReportMetric(float64(least.Nanoseconds()), "min-ns/op")
		})
	}
}
