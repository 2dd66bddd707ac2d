package pte

import (
	"testing"

	"github.com/edgeload/edgeload/loader/internal/fbverify"
)

// listElem must say what the schema says: the element size of the one
// field of each KernelTypes member that is a table holding only a vector
// of scalars, and 0 for every other member, or evalue's fast path would
// verify a member differently from the walk.
func TestListElem(t *testing.T) {
	u := descEValue.Fields[0].Union
	if len(u) != len(listElem) {
		t.Fatalf("KernelTypes has %d tags, listElem %d", len(u), len(listElem))
	}
	lists := 0
	for tag, d := range u {
		var want int64
		if d != nil && len(d.Fields) == 1 && d.Fields[0].Kind == fbverify.ScalarVector && d.Fields[0].ID == 0 {
			want = int64(d.Fields[0].Size)
			lists++
		}
		if listElem[tag] != want {
			t.Errorf("listElem[%d] = %d, want %d", tag, listElem[tag], want)
		}
	}
	if lists != 5 {
		t.Errorf("%d list members, want 5 (IntList, DoubleList, BoolList, TensorList, OptionalTensorList)", lists)
	}
}
