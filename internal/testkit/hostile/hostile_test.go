package hostile_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
)

func TestCheckError(t *testing.T) {
	good := format.Errorf("pte", "Program.version", 0x20, "version 3, want 0")
	if err := hostile.CheckError("pte", good); err != nil {
		t.Errorf("rejected a good error: %v", err)
	}
	if err := hostile.CheckError("ptd", good); err == nil {
		t.Error("accepted a pte error for ptd")
	}
	if err := hostile.CheckError("pte", format.ErrMalformed); err == nil {
		t.Error("accepted a bare sentinel from a format package")
	}
	if err := hostile.CheckError("", format.ErrMalformed); err != nil {
		t.Errorf("loader-level sentinel: %v", err)
	}
	if err := hostile.CheckError("pte", strings.NewReader("").UnreadByte()); err == nil {
		t.Error("accepted an error without a sentinel")
	}
}

// Mutations visits every step-th offset below end with each variant, one
// change at a time, and leaves the bytes as they were.
func TestMutations(t *testing.T) {
	b := []byte{0x00, 0x01, 0xff, 0x10, 0x20}
	orig := bytes.Clone(b)
	var seen []string
	n := hostile.Mutations(b, 4, 2, func(off int64, x byte) {
		changed := 0
		for i := range b {
			if b[i] != orig[i] {
				changed++
			}
		}
		if changed != 1 || b[off] != x {
			t.Errorf("at %d = %#x: %d bytes changed", off, x, changed)
		}
		seen = append(seen, fmt.Sprintf("%d:%#x", off, x))
	})
	if want := "[0:0xff 0:0x1 2:0x0 2:0xfe]"; fmt.Sprint(seen) != want || n != 4 {
		t.Errorf("visited %v (%d), want %s", seen, n, want)
	}
	if !bytes.Equal(b, orig) {
		t.Errorf("bytes left %v, want %v", b, orig)
	}
}
