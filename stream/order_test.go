package stream

import (
	"context"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
)

// orderModel is a program whose instructions use its weights in an order
// that is neither index order nor file order. Its values are the weights
// w0..w5 (values 0-5, written in that order, so that file order is index
// order), a TensorList of w4 and w1 (value 6) and an Int (value 7). Chain
// 0: a KernelCall of w3, the list and w3 again, a MoveCall naming w2 (not
// a use), a KernelCall of the Int and w5; chain 1: a KernelCall of w0.
// w2 is never used. Tensor 3 is larger than half of orderBudget, so that it
// comes in windows.
var orderModel = struct {
	sizes []int64
	want  []int // the tensors in use order, read off the instructions above
}{
	sizes: []int64{7000, 12000, 5000, 300000, 9000, 11000},
	want:  []int{3, 4, 1, 5, 0, 2},
}

const orderBudget = 256 << 10

// writeOrderModel writes orderModel into dir with the fill pattern of fill.
func writeOrderModel(t testing.TB, dir string) string {
	t.Helper()
	ts := make([]writer.PTETensor, len(orderModel.sizes))
	for i, n := range orderModel.sizes {
		ts[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{int32(n)},
			Fill: func(p []byte, off int64) { fill(i, p, off) }}
	}
	w := &writer.PTE{TensorAlignment: 16, Methods: []writer.PTEMethod{{
		Name:    "forward",
		Tensors: ts,
		Values: []writer.PTEValue{
			{Kind: writer.PTETensorList, Items: []int32{4, 1}},
			{Kind: writer.PTEInt, Int: 1},
		},
		Operators: []string{"aten::linear", "aten::add"},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEKernelCall, A: 0, Args: []int32{3, 6, 3}},
			{Kind: writer.PTEMoveCall, A: 2, B: 2},
			{Kind: writer.PTEKernelCall, A: 1, Args: []int32{7, 5}},
		},
		MoreChains: [][]writer.PTEInstruction{{
			{Kind: writer.PTEKernelCall, A: 1, Args: []int32{0}},
		}},
	}}}
	path := filepath.Join(dir, "order.pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUseOrderStreamed checks the exact sequence of items Next returns on
// orderModel: each tensor of the expected order in turn, a tensor larger
// than the windows as consecutive windows 0..Parts-1 that tile its bytes,
// and the bytes of each the pattern of that tensor.
func TestUseOrderStreamed(t *testing.T) {
	path := writeOrderModel(t, t.TempDir())
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// The test means something only if the expected order is neither
	// index order nor the order of the tensors' offsets in the file.
	byOffset := []int{0, 1, 2, 3, 4, 5}
	slices.SortFunc(byOffset, func(a, b int) int { return int(m.TensorData(a).Offset() - m.TensorData(b).Offset()) })
	if slices.Equal(orderModel.want, byOffset) || slices.IsSorted(orderModel.want) {
		t.Fatalf("the expected order %v is file order %v or index order", orderModel.want, byOffset)
	}

	s, err := New(context.Background(), m, WithBudget(orderBudget))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []int // one entry per tensor handed out whole or per last window
	windows := 0
	next := int64(0) // the offset the next window of the current tensor starts at
	h := crc32.NewIEEE()
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Tensor < 0 || it.Delegate != -1 {
			t.Fatalf("item %+v: the model has no delegate blob", it)
		}
		k := len(got)
		if k >= len(orderModel.want) || it.Tensor != orderModel.want[k] {
			t.Fatalf("item %d of the sequence is tensor %d (part %d of %d); the tensors so far %v, want the order %v",
				k, it.Tensor, it.Part, it.Parts, got, orderModel.want)
		}
		if it.Part == 0 {
			h.Reset()
			next = 0
		}
		if it.Offset != next || it.Parts < 1 || it.Part >= it.Parts {
			t.Fatalf("tensor %d window %d of %d at offset %d, want offset %d", it.Tensor, it.Part, it.Parts, it.Offset, next)
		}
		next += it.Data.Len()
		if err := it.Data.Checksum(h); err != nil {
			t.Fatal(err)
		}
		if it.Parts > 1 {
			windows++
		}
		if it.Part < it.Parts-1 {
			continue
		}
		if n := orderModel.sizes[it.Tensor]; next != n {
			t.Fatalf("tensor %d: windows cover %d bytes, want %d", it.Tensor, next, n)
		}
		if h.Sum32() != wantCRC(it.Tensor, orderModel.sizes[it.Tensor]) {
			t.Fatalf("tensor %d: wrong bytes", it.Tensor)
		}
		got = append(got, it.Tensor)
	}
	if !slices.Equal(got, orderModel.want) {
		t.Fatalf("streamed tensors %v, want %v", got, orderModel.want)
	}
	if windows < 2 {
		t.Fatalf("tensor 3 (%d bytes) came in %d windows under a %d-byte budget", orderModel.sizes[3], windows, orderBudget)
	}

	// WithMethod names the same single method: the same order.
	s2, err := New(context.Background(), m, WithMethod("forward"), WithBudget(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got = got[:0]
	for {
		it, err := s2.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Part == it.Parts-1 {
			got = append(got, it.Tensor)
		}
	}
	if !slices.Equal(got, orderModel.want) {
		t.Fatalf("WithMethod(\"forward\"): streamed tensors %v, want %v", got, orderModel.want)
	}
}
