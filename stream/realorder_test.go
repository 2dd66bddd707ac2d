package stream

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
)

// keywordSpottingUsed is the weights the instructions of the real
// arduino-keyword-spotting.pte use, in the order they first use them, as
// value indices (its tensors are named "forward/values/N"). It was read
// independently of edgeload by testdata/useorder.py: the program dumped
// with flatc --json against internal/schema/program.fbs, and the arguments
// of its KernelCalls walked in order (TensorList items included).
var keywordSpottingUsed = []int{
	39, 40, 38, 37, 44, 45, 43, 42, 49, 50, 48, 47, 54, 55, 53, 52, 59, 60, 58, 57,
	64, 65, 63, 62, 69, 70, 68, 67, 74, 75, 73, 72, 79, 80, 78, 77, 81, 82,
}

// keywordSpottingOrder returns the names of the model's 83 weights in use
// order: keywordSpottingUsed, then the rest in value order.
func keywordSpottingOrder() []string {
	var names []string
	for _, v := range keywordSpottingUsed {
		names = append(names, fmt.Sprintf("forward/values/%d", v))
	}
	for v := range 83 {
		if !slices.Contains(keywordSpottingUsed, v) {
			names = append(names, fmt.Sprintf("forward/values/%d", v))
		}
	}
	return names
}

// TestRealUseOrder streams the real keyword-spotting model under a small
// budget and checks the names of the tensors, in the order Next hands them
// out, against the order read independently of edgeload.
func TestRealUseOrder(t *testing.T) {
	path := testmodels.Path(t, "pte/arduino-keyword-spotting.pte")
	exp := testmodels.Load(t, path)
	want := keywordSpottingOrder()
	if len(exp.Tensors) != len(want) {
		t.Fatalf("the expected values list %d tensors, the order %d", len(exp.Tensors), len(want))
	}
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := New(context.Background(), m, WithBudget(16<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if it.Part == it.Parts-1 {
			got = append(got, it.Name)
		}
	}
	if !slices.Equal(got, want) {
		for k := range min(len(got), len(want)) {
			if got[k] != want[k] {
				t.Fatalf("item %d is %s, want %s", k, got[k], want[k])
			}
		}
		t.Fatalf("streamed %d tensors, want %d", len(got), len(want))
	}
}
