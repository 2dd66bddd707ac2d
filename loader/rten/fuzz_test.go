package rten_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
)

// fuzzSeeds returns generated files covering what the real ones lack:
// subgraphs, every dtype inline and external, V1, unaligned tensors,
// metadata, symbolic dimensions, unknown operator types.
func fuzzSeeds(tb testing.TB) [][]byte {
	sub := simpleModel()
	sub.Graph.Nodes[6].Operator.Then = &writer.RTenGraph{
		Nodes:   []writer.RTenNode{constant("t", format.Int8, false, []byte{1, 2}, 2), value("o")},
		Outputs: []uint32{1},
	}
	sub.Graph.Nodes[6].Operator.Else = &writer.RTenGraph{
		Nodes: []writer.RTenNode{
			constant("", format.Uint8, true, []byte{3}, 1),
			{Name: "loop", Operator: &writer.RTenOperator{Type: uint8(rten.OpLoop), Inputs: []int32{0, -1}, Body: &writer.RTenGraph{
				Nodes:   []writer.RTenNode{constant("k", format.Int32, false, i32(5), 1), value("v", 1)},
				Outputs: []uint32{1}, Captures: []uint32{0},
			}}},
		},
		Outputs: []uint32{0},
	}
	v1 := simpleModel()
	v1.V1 = true
	meta := simpleModel()
	meta.Metadata = &writer.RTenMetadata{ONNXHash: "abc", License: "MIT", RunURL: "u"}
	meta.Graph.Nodes[0].Value.Shape[0] = writer.RTenDim{Name: "batch"}
	meta.Graph.Nodes[4].Operator.Type = 200
	meta.Graph.Nodes[4].Operator.AttrsType = 7
	unaligned := simpleModel()
	unaligned.Align = 1
	unaligned.Graph.Nodes = append(unaligned.Graph.Nodes,
		constant("u8", format.Uint8, false, []byte{1, 2, 3}, 3), constant("f", format.Float32, false, f32(9), 1))
	var out [][]byte
	for _, w := range []*writer.RTen{simpleModel(), sub, v1, meta, unaligned} {
		out = append(out, bytesOf(tb, w))
	}
	return out
}

// FuzzOpen feeds arbitrary bytes to NewBytes. An error must be a
// *format.FormatError; a Model that opens must satisfy every invariant of
// checkModel, which touches every accessor and every constant's views.
func FuzzOpen(f *testing.F) {
	// the real files, when they are there (TestRealFiles enforces them)
	for _, b := range hostile.RealSeeds("rten") {
		f.Add(b)
	}
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	gen, err := rtencheck.Generated()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range gen {
		f.Add(s.Data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := rten.NewBytes(b)
		if err != nil {
			var fe *format.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *format.FormatError", err, err)
			}
			if m != nil {
				t.Fatal("non-nil Model with an error")
			}
			return
		}
		if bad := checkModel(m, int64(len(b))); bad != "" {
			t.Fatal(bad)
		}
		if order := m.UseOrder(); !isPermutation(order, len(m.Tensors())) {
			t.Fatalf("use order %v is not a permutation of the %d constants", order, len(m.Tensors()))
		}
		// Every view through every read path (checksums, copies, Touch).
		if err := rtencheck.Model(m); err != nil {
			t.Fatal(err)
		}
		// The copying reader must agree (on small inputs: the copies of a
		// multi-megabyte real file would slow the campaign down tenfold).
		if len(b) > 256<<10 {
			m.Close()
			return
		}
		r, err := rten.NewReaderAt(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("NewBytes accepted, NewReaderAt rejected: %v", err)
		}
		if err := rtencheck.Model(r); err != nil {
			t.Fatalf("NewReaderAt: %v", err)
		}
		if len(r.Constants()) != len(m.Constants()) {
			t.Fatal("NewReaderAt and NewBytes disagree")
		}
		r.Close()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFuzzSeeds runs the fuzz invariants over the generated seeds in a plain
// `go test` (the seed corpus runs too, but this names what failed).
func TestFuzzSeeds(t *testing.T) {
	for i, b := range fuzzSeeds(t) {
		m, err := rten.NewBytes(b)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if bad := checkModel(m, int64(len(b))); bad != "" {
			t.Errorf("seed %d: %s", i, bad)
		}
	}
}
