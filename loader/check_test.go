package loader_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/readcount"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestCheck: Check accepts what Verify accepts without reading a weight,
// rejects what Verify rejects structurally, and reports ErrClosed.
func TestCheck(t *testing.T) {
	dir := filepath.Join(testmodels.Root(), "testdata")
	for _, name := range []string{"tiny.pte", "tiny.ptd", "tiny-v1.rten", "tiny-v2.rten", "tiny.bpte"} {
		m, err := loader.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Check(); err != nil {
			t.Errorf("%s: Check: %v", name, err)
		}
		if _, err := m.Verify(); err != nil {
			t.Errorf("%s: Verify: %v", name, err)
		}
		m.Close()
		if err := m.Check(); !errors.Is(err, loader.ErrClosed) {
			t.Errorf("%s: Check after Close = %v, want ErrClosed", name, err)
		}
	}

	// Through a counting ReaderAt (every view a read): Check reads nothing
	// after Open, Verify reads the weights.
	b, err := os.ReadFile(filepath.Join(dir, "tiny.pte"))
	if err != nil {
		t.Fatal(err)
	}
	rc := &readcount.ReaderAt{R: bytes.NewReader(b)}
	m, err := loader.New(mmapfile.NewReaderAt(rc, int64(len(b))))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	opened := rc.Reads
	if err := m.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if rc.Reads != opened {
		t.Errorf("Check made %d reads, want none", rc.Reads-opened)
	}
	if r, err := m.Verify(); err != nil || r.BytesRead == 0 || rc.Reads == opened {
		t.Errorf("Verify read %d bytes in %d reads, %v", r.BytesRead, rc.Reads-opened, err)
	}
}

// TestCheckRejects: a program whose one instruction names an operator the
// method does not have opens (Open leaves instructions to a method's first
// use), and both Check and Verify refuse it.
func TestCheckRejects(t *testing.T) {
	b, err := (&writer.PTE{Methods: []writer.PTEMethod{{
		Name:         "forward",
		Tensors:      []writer.PTETensor{{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{2}}},
		Inputs:       []int32{0},
		Outputs:      []int32{0},
		Operators:    []string{"op"},
		Instructions: []writer.PTEInstruction{{Kind: writer.PTEKernelCall, A: 7}},
	}}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	m, err := loader.New(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer m.Close()
	if err := m.Check(); !errors.Is(err, format.ErrMalformed) || !strings.Contains(err.Error(), "op_index") {
		t.Errorf("Check = %v, want a malformed-file error naming op_index", err)
	}
	if _, err := m.Verify(); !errors.Is(err, format.ErrMalformed) || !strings.Contains(err.Error(), "op_index") {
		t.Errorf("Verify = %v, want a malformed-file error naming op_index", err)
	}
}
