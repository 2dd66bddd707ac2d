package pte_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/segment"
)

// openParallel opens b with its values read by workers goroutines, however
// small the plan, and checks that the result is the in-order reading's:
// the same error, or the same tensors and value-to-tensor mapping.
func openParallel(b []byte, workers int) error {
	seq, serr := pte.NewBytes(b, pte.WithWorkers(1))
	par, perr := pte.NewBytes(b, pte.WithWorkers(workers), pte.WithPerWorker(1))
	if serr != nil || perr != nil {
		if serr == nil || perr == nil || serr.Error() != perr.Error() {
			return fmt.Errorf("%d workers: error %v, in order %v", workers, perr, serr)
		}
		return nil
	}
	defer seq.Close()
	defer par.Close()
	return samePrograms(seq, par)
}

// samePrograms compares what Open builds of a program's tensors.
func samePrograms(p, q *pte.Program) error {
	if p.NumTensors() != q.NumTensors() {
		return fmt.Errorf("%d tensors, want %d", q.NumTensors(), p.NumTensors())
	}
	for i := range p.NumTensors() {
		a, b := p.TensorData(i), q.TensorData(i)
		if a.Offset() != b.Offset() || a.Len() != b.Len() {
			return fmt.Errorf("tensor %d: data [%d +%d), want [%d +%d)", i, b.Offset(), b.Len(), a.Offset(), a.Len())
		}
	}
	pt, qt := p.Tensors(), q.Tensors()
	for i := range pt {
		a, b := pt[i], qt[i]
		if a.Data.Offset() != b.Data.Offset() || a.Data.Len() != b.Data.Len() {
			return fmt.Errorf("tensor %d: Data %v, want %v", i, b.Data, a.Data)
		}
		a.Data, b.Data = segment.Segment{}, segment.Segment{} // they map different files
		if !reflect.DeepEqual(a, b) {
			return fmt.Errorf("tensor %d: %+v, want %+v", i, b, a)
		}
	}
	pe, pu := p.External()
	if qe, qu := q.External(); qe != pe || qu != pu {
		return fmt.Errorf("External() = %d, %d; want %d, %d", qe, qu, pe, pu)
	}
	for _, m := range p.Methods() {
		for v := range m.NumValues() {
			a, aok := p.TensorAt(m.Name, v)
			b, bok := q.TensorAt(m.Name, v)
			if aok != bok || aok && a.Name != b.Name {
				return fmt.Errorf("TensorAt(%q, %d) differs", m.Name, v)
			}
		}
	}
	return nil
}

// Every generated program (tensors of every kind, values of every kind,
// and the sweep's malformed cases) reads the same on 2, 3 and 7 workers
// as in order.
func TestParallelSameAsInOrder(t *testing.T) {
	gen, err := hostile.GeneratedPTE()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range gen {
		for _, w := range []int{2, 3, 7} {
			if err := openParallel(s.Data, w); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no generated programs")
	}
}

// A plan of constants and activations mixed (some values make no record,
// so the workers' records move when joined) reads the same in parallel,
// with its records in value order.
func TestParallelJoinsInOrder(t *testing.T) {
	m, m2 := writer.MixedMethod("forward", 3000, 3), writer.MixedMethod("other", 3000, 3)
	p := writer.PTE{Methods: []writer.PTEMethod{m, m2}, SegmentAlignment: 128, TensorAlignment: 16}
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{2, 3, 4, 16} {
		if err := openParallel(b, w); err != nil {
			t.Fatal(err)
		}
	}
	before := pte.ParallelReads()
	q, err := pte.NewBytes(b, pte.WithWorkers(3), pte.WithPerWorker(1))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if got := pte.ParallelReads() - before; got != 2 {
		t.Fatalf("%d plans read in parallel, want 2", got)
	}
	last := int64(-1)
	for i := range q.NumTensors() {
		if off := q.TensorData(i).Offset(); off <= last {
			t.Fatalf("tensor %d at %d, not after the previous one's %d", i, off, last)
		}
		last = q.TensorData(i).Offset()
	}
}

// Every single-byte change (0x00, 0xFF, low bit flipped) of the generated
// programs' FlatBuffers reads the same on 3 workers as in order: the same
// error (structural or semantic) or the same tensors.
func TestParallelMutationsSameAsInOrder(t *testing.T) {
	gen, err := hostile.GeneratedPTE()
	if err != nil {
		t.Fatal(err)
	}
	step, why := hostile.Sampling()
	if step > 1 {
		t.Logf("every %dth offset (%s)", step, why)
	}
	cases := 0
	for _, s := range gen {
		end, err := hostile.FlatBufferEnd(s.Data)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		b := bytes.Clone(s.Data)
		cases += hostile.Mutations(b, end, step, func(off int64, x byte) {
			if err := openParallel(b, 3); err != nil {
				t.Errorf("%s, byte %d = %#x: %v", s.Name, off, x, err)
			}
		})
	}
	t.Logf("%d cases", cases)
}
