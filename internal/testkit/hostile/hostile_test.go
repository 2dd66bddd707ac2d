package hostile_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// Every generated file opens through loader.NewBytes as the format its
// name says, and passes the exercise.
func TestGeneratedFilesOpen(t *testing.T) {
	for _, gen := range []func() ([]hostile.Seed, error){hostile.GeneratedPTE, hostile.GeneratedPTD, hostile.GeneratedRTen} {
		seeds, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range seeds {
			m, err := loader.NewBytes(s.Data)
			if err != nil {
				t.Errorf("%s: %v", s.Name, err)
				continue
			}
			if !strings.HasSuffix(s.Name, "."+m.Format().String()) {
				t.Errorf("%s opened as %v", s.Name, m.Format())
			}
			if err := loadercheck.Model(m); err != nil {
				t.Errorf("%s: %v", s.Name, err)
			}
			end, err := hostile.FlatBufferEnd(s.Data)
			if err != nil || end <= 8 || end > int64(len(s.Data)) {
				t.Errorf("%s: FlatBufferEnd = %d, %v", s.Name, end, err)
			}
			var want int64
			switch {
			case m.Program() != nil:
				want = m.Program().Header().ProgramSize
			case m.DataFile() != nil:
				want = m.DataFile().Header().FlatBufferLen()
			default:
				want = m.RTen().Header().ModelOffset + m.RTen().Header().ModelLen
			}
			if end != want {
				t.Errorf("%s: FlatBufferEnd = %d, the region opened through loader ends at %d", s.Name, end, want)
			}
			t.Logf("%s: %d bytes, FlatBuffer region %d, %d tensors, %d segments", s.Name, len(s.Data), end, len(m.Tensors()), len(m.Segments()))
			m.Close()
		}
	}
}

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
