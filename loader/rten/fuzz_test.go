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
	"github.com/edgeload/edgeload/mmapfile"
)

// fuzzSeeds returns the generated files covering what the real ones lack
// (rtencheck.Generated: subgraphs, every dtype inline and external, V1,
// unaligned tensors, metadata, symbolic dimensions, unknown operator
// types), and one it does not make: If attributes (then/else subgraphs,
// a Loop nested in one) on an Add, an operator that takes no subgraph.
func fuzzSeeds(tb testing.TB) []hostile.Seed {
	gen, err := rtencheck.Generated()
	if err != nil {
		tb.Fatal(err)
	}
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
	return append(gen, hostile.Seed{Name: "if-attrs-on-add.rten", Data: bytesOf(tb, sub)})
}

// FuzzOpen feeds arbitrary bytes to NewBytes. An error must be a
// *format.FormatError; a Model that opens must satisfy every invariant of
// checkModel, which touches every accessor and every constant's views.
func FuzzOpen(f *testing.F) {
	// the real files, when they are there (TestRealFiles enforces them)
	for _, b := range hostile.RealSeeds("rten") {
		f.Add(b)
	}
	for _, s := range fuzzSeeds(f) {
		f.Add(s.Data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := rten.NewFile(mmapfile.NewBytes(b))
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
		// Every accessor and view through every read path (checksums,
		// copies, Touch: rtencheck.Model), and the invariants it leaves out.
		if bad := checkModel(m, int64(len(b))); bad != "" {
			t.Fatal(bad)
		}
		if order := mustOrder(m); !isPermutation(order, len(m.Tensors())) {
			t.Fatalf("use order %v is not a permutation of the %d constants", order, len(m.Tensors()))
		}
		// The copying reader must agree (on small inputs: the copies of a
		// multi-megabyte real file would slow the campaign down tenfold).
		if len(b) > 256<<10 {
			m.Close()
			return
		}
		r, err := rten.NewFile(mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))))
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
	for _, s := range fuzzSeeds(t) {
		m, err := rten.NewFile(mmapfile.NewBytes(s.Data))
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if bad := checkModel(m, int64(len(s.Data))); bad != "" {
			t.Errorf("%s: %s", s.Name, bad)
		}
		m.Close()
	}
}
