package pte_test

import (
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// The fields the loader does not verify (a chain's stack frames, a plan's
// non-constant buffer devices) are verified as Relayout copies them, with
// 64-bit offsets: an element offset whose target lies 4 GiB on, which the
// generated code's 32-bit arithmetic wraps to an in-bounds table (the
// root), is refused.
func TestRelayoutOffsetWrap(t *testing.T) {
	prog := &ptefb.ProgramT{ExecutionPlan: []*ptefb.ExecutionPlanT{{
		Name: "forward",
		Chains: []*ptefb.ChainT{{Stacktrace: []*ptefb.FrameListT{{
			Items: []*ptefb.FrameT{{Filename: "model.py", Lineno: 3, Name: "forward"}},
		}}}},
		NonConstBufferDevice: []*ptefb.NonConstBufferDeviceT{{BufferIdx: 1}},
	}}}
	b := flatbuffers.NewBuilder(0)
	b.FinishWithFileIdentifier(prog.Pack(b), []byte(pte.Identifier))
	good := b.FinishedBytes()
	relayout := func(buf []byte) error {
		p, err := pte.NewFile(mmapfile.NewBytes(buf))
		if err != nil {
			t.Fatalf("the loader refuses the program: %v", err)
		}
		defer p.Close()
		_, err = p.Relayout(format.RelayoutOptions{Align: 64})
		return err
	}
	if err := relayout(good); err != nil {
		t.Fatalf("valid program: %v", err)
	}
	for _, c := range []struct {
		name string
		elem func(f hostile.FB) int // the position of the element's offset
	}{
		{"frame", func(f hostile.FB) int {
			list := f.Path([2]int{1, 0}, [2]int{5, 0}, [2]int{3, 0})
			pos, _ := f.Vector(list, 0)
			return pos + 4
		}},
		{"non_const_buffer_device", func(f hostile.FB) int {
			pos, _ := f.Vector(f.Path([2]int{1, 0}), 9)
			return pos + 4
		}},
	} {
		f := hostile.FB{B: append([]byte(nil), good...)}
		q := c.elem(f)
		f.PutU32(q, uint32(int64(f.Root())+1<<32-int64(q)))
		if err := relayout(f.B); err == nil || !strings.Contains(err.Error(), "past the end of the FlatBuffer") {
			t.Errorf("%s: offset wrapping to the root: %v, want an offset past the end", c.name, err)
		}
	}
}

// Relayout builds the methods it reads (their constants, their delegates)
// when it is the first call after Open: externalizing a freshly opened
// program gives what it gives after Methods.
func TestRelayoutFirstCall(t *testing.T) {
	layout := func(methodsFirst bool) *format.Layout {
		mf, err := mmapfile.Open("../../testdata/tiny.pte")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { mf.Close() })
		p, err := pte.NewFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		if methodsFirst {
			p.Methods()
		}
		l, err := p.Relayout(format.RelayoutOptions{Align: 64, DataFile: "tiny.ptd"})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first, after := layout(false), layout(true)
	if len(after.Files) != 1 || after.Files[0].Size == 0 {
		t.Fatalf("after Methods: %d data files", len(after.Files))
	}
	if len(first.Files) != 1 || first.Files[0].Size != after.Files[0].Size || first.Size != after.Size || string(first.Head) != string(after.Head) {
		t.Errorf("first call: %d data files, size %d; after Methods: size %d, data file %d", len(first.Files), first.Size, after.Size, after.Files[0].Size)
	}
}
