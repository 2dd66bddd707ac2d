package pte_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// regionProgram writes a program of n named float32 [4,4] constants and
// returns its path and bytes.
func regionProgram(t *testing.T, n int, prefix string) (string, []byte) {
	t.Helper()
	m := writer.PTEMethod{Name: "forward", Tensors: make([]writer.PTETensor, n)}
	for i := range m.Tensors {
		m.Tensors[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32,
			Sizes: []int32{4, 4}, Name: fmt.Sprintf("%s.%d", prefix, i)}
	}
	w := writer.PTE{Methods: []writer.PTEMethod{m}, SegmentAlignment: 128, TensorAlignment: 128}
	path := filepath.Join(t.TempDir(), prefix+".pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// summary lists what a program's tensors are: name, shape, offset, size.
func summary(p *pte.Program) []string {
	var s []string
	for i, t := range p.Tensors() {
		d := p.TensorData(i)
		s = append(s, fmt.Sprintf("%s %v %d %d %d %d", t.Name, t.Shape, t.Data.Offset(), t.NBytes, d.Offset(), d.Len()))
	}
	return s
}

// mappedPages counts the pages of the program region that are mapped into
// the process (pagemap); -1 where that cannot be seen.
func mappedPages(t *testing.T, p *pte.Program) int {
	t.Helper()
	if !platform.ZeroCopy || memstat.Emulator() != "" {
		return -1
	}
	b, err := p.ProgramData().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	n, err := memstat.PresentPages(b)
	if errors.Is(err, errors.ErrUnsupported) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A small program region is read into a pooled buffer (loader/internal/region): Open
// maps none of its pages, programs opened one after another through the
// same buffers read as they do from memory, and after Close the tensor
// list, never built, stays empty instead of reading the returned buffer.
// A large one (over 256 KiB) is read in place, through the mapping.
func TestProgramRegion(t *testing.T) {
	small, smallBytes := regionProgram(t, 40, "small")
	large, largeBytes := regionProgram(t, 6000, "large")
	if n := len(largeBytes); n < 300<<10 {
		t.Fatalf("the large program is %d bytes: too small to test reading in place", n)
	}
	want := map[string][]string{}
	for path, b := range map[string][]byte{small: smallBytes, large: largeBytes} {
		p, err := pte.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatal(err)
		}
		want[path] = summary(p)
		p.Close()
	}
	// Large, small, small, large: buffers of both sizes come back from
	// the pool holding another program's bytes.
	for i, path := range []string{large, small, small, large} {
		p, err := mapOpen(t, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		mapped := mappedPages(t, p)
		switch {
		case mapped < 0:
			t.Log("pagemap not available: the mapping is not checked")
		case path == small && mapped != 0:
			t.Errorf("open %d (small): %d pages of the program region mapped at Open, want 0 (read with pread)", i, mapped)
		case path == large && mapped == 0:
			t.Errorf("open %d (large): no page of the program region mapped at Open, want it read in place", i)
		}
		if got := summary(p); !slices.Equal(got, want[path]) {
			t.Errorf("open %d (%s): tensors differ from NewBytes (%d vs %d)", i, filepath.Base(path), len(got), len(want[path]))
		}
		p.Close()
	}
	// Closed before anything built the tensor list.
	p, err := mapOpen(t, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.ValueTensor("forward", 0); !ok {
		// TensorAt builds the list: close a second program unused.
		t.Fatal("TensorAt(forward, 0) not found")
	}
	p.Close()
	q, err := mapOpen(t, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := q.NumTensors()
	m := &q.Methods()[0]
	q.Close()
	if ts := q.Tensors(); len(ts) != 0 {
		t.Errorf("Tensors after Close = %d tensors, want none (the region is gone)", len(ts))
	}
	if _, ok := q.ValueTensor("forward", 0); ok {
		t.Error("TensorAt after Close found a tensor")
	}
	if _, ok := q.Tensor("small.0"); ok {
		t.Error("Tensor after Close found a tensor")
	}
	if n != 40 || q.NumTensors() != n {
		t.Errorf("NumTensors = %d before Close, %d after, want 40", n, q.NumTensors())
	}
	// The records are dropped at Close: a view after Close is empty and,
	// once the caller has closed the file too, reports the closed file.
	q.MappedFile().Close()
	if d := q.TensorData(n - 1); d.Len() != 0 {
		t.Errorf("TensorData after Close = %v, want an empty segment", d)
	} else if _, err := d.Bytes(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("TensorData(%d).Bytes() after Close: %v, want ErrClosed", n-1, err)
	}
	if _, err := q.AppendTensorBytes(nil); !errors.Is(err, format.ErrClosed) {
		t.Errorf("AppendTensorBytes after Close: %v, want ErrClosed", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("TensorData(NumTensors()) after Close did not panic")
			}
		}()
		q.TensorData(n)
	}()
	if _, err := m.Value(0); err == nil {
		t.Error("Value after Close succeeded")
	}
	// Methods not built before Close are not built after it.
	r, err := mapOpen(t, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if ms := r.Methods(); len(ms) != 0 || r.NumMethods() != 1 {
		t.Errorf("Methods after Close = %d methods (NumMethods %d), want none (of 1)", len(ms), r.NumMethods())
	}
	if _, ok := r.Method("forward"); ok {
		t.Error("Method after Close found a method never built")
	}
}
