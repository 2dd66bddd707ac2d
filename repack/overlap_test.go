package repack_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/repack"
)

// A tensor may read past the start of the next sub-buffer: the loaders
// bound its bytes by its segment only. Placing sub-buffers on TensorAlign
// must not cut through it.
func TestOverlappingTensors(t *testing.T) {
	a, b := f32(3, 1), f32(4, 10)
	t.Run("pte", func(t *testing.T) {
		// "a" has 3 floats of data and a shape of 5: it reads its own 12
		// bytes, the 4 zero bytes that put "b" on 16, and b's first float.
		p := &writer.PTE{Methods: []writer.PTEMethod{{
			Name: "forward",
			Tensors: []writer.PTETensor{
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{5}, Name: "a", Data: a},
				{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "b", Data: b},
			},
		}}}
		in := filepath.Join(t.TempDir(), "in.pte")
		if _, err := p.WriteFile(in); err != nil {
			t.Fatal(err)
		}
		want := []repack.TensorSum{
			{Name: "a", DType: "float32", Shape: []int64{5}, SHA256: sha(slices.Concat(a, make([]byte, 4), b[:4]))},
			{Name: "b", DType: "float32", Shape: []int64{4}, SHA256: sha(b)},
		}
		checkRealigned(t, in, want)
	})
	t.Run("ptd", func(t *testing.T) {
		// The legacy layout: the tensors share a segment, as in the .pte.
		p := &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "a", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{5}}, Data: a},
			{Key: "b", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{4}}, Data: b},
		}}
		in := filepath.Join(t.TempDir(), "in.ptd")
		if _, err := p.WriteFile(in); err != nil {
			t.Fatal(err)
		}
		want := []repack.TensorSum{
			{Name: "a", DType: "float32", Shape: []int64{5}, SHA256: sha(slices.Concat(a, make([]byte, 4), b[:4]))},
			{Name: "b", DType: "float32", Shape: []int64{4}, SHA256: sha(b)},
		}
		checkRealigned(t, in, want)
	})
	t.Run("rten", func(t *testing.T) {
		// "b" starts 8 bytes into "a" and runs 8 bytes past its end, into
		// the zeros that put "c" on 64.
		c := f32(16, 100)
		r := &writer.RTen{Graph: writer.RTenGraph{Nodes: []writer.RTenNode{
			{Name: "a", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{4}, Data: slices.Concat(a, b[:4])}},
			{Name: "b", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{4}}},
			{Name: "c", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{16}, Data: c}},
		}}}
		info, err := r.Plan()
		if err != nil {
			t.Fatal(err)
		}
		off := uint64(info.Constants[0].DataOffset) + 8
		r.Graph.Nodes[1].Constant.DataOffset = &off
		in := filepath.Join(t.TempDir(), "in.rten")
		if _, err := r.WriteFile(in); err != nil {
			t.Fatal(err)
		}
		want := []repack.TensorSum{
			{Name: "a", DType: "float32", Shape: []int64{4}, SHA256: sha(slices.Concat(a, b[:4]))},
			{Name: "b", DType: "float32", Shape: []int64{4}, SHA256: sha(slices.Concat(a[8:], b[:4], make([]byte, 8)))},
			{Name: "c", DType: "float32", Shape: []int64{16}, SHA256: sha(c)},
		}
		checkRealigned(t, in, want)
	})
}

// checkRealigned checks that the model at in holds want, and still does
// when repacked with every tensor on 64 bytes.
func checkRealigned(t *testing.T, in string, want []repack.TensorSum) {
	t.Helper()
	sameSums(t, "input", sums(t, in), want)
	out := filepath.Join(filepath.Dir(in), "out")
	if _, err := repack.Repack(in, out, repack.Options{Align: 64, TensorAlign: 64}); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "output", sums(t, out), want)
}

// Two constants may share a buffer and read different lengths of it:
// Externalize stores the buffer once, long enough for both.
func TestExternalizeSharedBuffer(t *testing.T) {
	a, c := f32(3, 1), f32(4, 10)
	p := &writer.PTE{Methods: []writer.PTEMethod{{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{3}, Name: "a", Data: a},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{5}, Name: "b", BufferRef: 1},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "c", Data: c},
		},
	}}}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	if _, err := p.WriteFile(in); err != nil {
		t.Fatal(err)
	}
	want := []repack.TensorSum{
		{Name: "a", DType: "float32", Shape: []int64{3}, SHA256: sha(a)},
		{Name: "b", DType: "float32", Shape: []int64{5}, SHA256: sha(slices.Concat(a, make([]byte, 4), c[:4]))},
		{Name: "c", DType: "float32", Shape: []int64{4}, SHA256: sha(c)},
	}
	sameSums(t, "input", sums(t, in), want)
	out, data := filepath.Join(dir, "out.pte"), filepath.Join(dir, "out.ptd")
	if _, err := repack.Repack(in, out, repack.Options{Align: 64, Externalize: data}); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "output", sums(t, out, data), want)
}

// A delegate's blob may be the constant segment itself: its bytes must not
// change, so the constants keep their places there.
func TestBlobInConstantSegment(t *testing.T) {
	p := &writer.PTE{Methods: []writer.PTEMethod{{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{3}, Name: "a", Data: f32(3, 1)},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "b", Data: f32(4, 10)},
		},
		Delegates: []writer.PTEDelegate{{ID: "BackendA", Blob: writer.PTEBlob{Ref: 1}}},
	}}}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pte")
	if _, err := p.WriteFile(in); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pte")
	if _, err := repack.Repack(in, out, repack.Options{Align: 64, TensorAlign: 64}); err != nil {
		t.Fatal(err)
	}
	sameSums(t, "output", sums(t, out), sums(t, in))
	checkBlobs(t, in, out)
}
