package fbcopy_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbcopy"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
)

var le = binary.LittleEndian

// dump writes every field of the table at pos as the description says,
// by plain reads (the buffers are verified first): scalars as numbers,
// strings and vectors by their bytes, tables and unions recursively. Two
// buffers with the same meaning dump the same, whatever their layout. A
// dump stops at 1 MB (shared tables repeat in it).
func dump(b []byte, d *fbverify.TableDesc, pos int64, w *strings.Builder, depth int) {
	if depth > 64 || w.Len() > 1<<20 {
		w.WriteString("...")
		return
	}
	vt := pos - int64(int32(le.Uint32(b[pos:])))
	vtsize := int64(le.Uint16(b[vt:]))
	slot := func(id int) int64 {
		if e := vt + 4 + 2*int64(id); 4+2*int64(id)+2 <= vtsize {
			return int64(le.Uint16(b[e:]))
		}
		return 0
	}
	ref := func(p int64) int64 { return p + int64(le.Uint32(b[p:])) }
	fmt.Fprintf(w, "%s{", d.Name)
	for _, f := range d.Fields {
		fo := slot(f.ID)
		if fo == 0 && f.Kind != fbverify.KindUnion {
			continue
		}
		p := pos + fo
		fmt.Fprintf(w, " %s=", f.Name)
		switch f.Kind {
		case fbverify.KindScalar:
			fmt.Fprintf(w, "%x", b[p:p+int64(f.Size)])
		case fbverify.KindString:
			q := ref(p)
			fmt.Fprintf(w, "%q", b[q+4:q+4+int64(le.Uint32(b[q:]))])
		case fbverify.KindVector:
			q := ref(p)
			fmt.Fprintf(w, "[%x]", b[q+4:q+4+int64(le.Uint32(b[q:]))*int64(f.Size)])
		case fbverify.KindTable:
			dump(b, f.Table, ref(p), w, depth+1)
		case fbverify.KindTables, fbverify.KindStrings:
			q := ref(p)
			w.WriteString("[")
			for i := range int64(le.Uint32(b[q:])) {
				e := ref(q + 4 + 4*i)
				if f.Kind == fbverify.KindTables {
					dump(b, f.Table, e, w, depth+1)
				} else {
					fmt.Fprintf(w, "%q,", b[e+4:e+4+int64(le.Uint32(b[e:]))])
				}
			}
			w.WriteString("]")
		case fbverify.KindUnion:
			tag := byte(0)
			if fo != 0 {
				tag = b[p]
			}
			fmt.Fprintf(w, "%d:", tag)
			if tag != 0 {
				dump(b, f.Members[tag], ref(pos+slot(f.ID+1)), w, depth+1)
			}
		}
	}
	w.WriteString(" }")
}

func dumpAll(b []byte, root *fbverify.TableDesc) string {
	var w strings.Builder
	dump(b, root, int64(le.Uint32(b)), &w, 0)
	return w.String()
}

// copyCase is a FlatBuffer of a real or generated file and its root.
type copyCase struct {
	name   string
	buf    []byte
	root   *fbverify.TableDesc
	ident  string
	verify func(*fbverify.Walk, int64) error
}

func cases(t testing.TB) []copyCase {
	var cs []copyCase
	for _, p := range testmodels.Files(t, "tflite") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, copyCase{filepath.Base(p), b, tflitefb.ModelDesc, "TFL3", tflitefb.VerifyModel})
	}
	cs = append(cs, copyCase{"tflitegen", tflitegen.Sample(false).Bytes(), tflitefb.ModelDesc, "TFL3", tflitefb.VerifyModel})
	for _, p := range testmodels.Files(t, "rten") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[:4]) == "RTEN" {
			off, n := le.Uint64(b[8:]), le.Uint64(b[16:])
			b = b[off : off+n]
		}
		cs = append(cs, copyCase{filepath.Base(p), b, rtenfb.ModelDesc, "", rtenfb.VerifyModel})
	}
	for _, p := range testmodels.Files(t, "pte") {
		if strings.HasSuffix(p, ".bpte") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[8:12]) == "eh00" {
			b = b[:le.Uint64(b[16:])] // the program's bytes, headers included
		}
		cs = append(cs, copyCase{filepath.Base(p), b, ptefb.ProgramDesc, "", ptefb.VerifyProgram})
	}
	for _, p := range []string{"../../testdata/tiny.ptd"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// The FH01 header gives where the FlatBuffer's body is and its size.
		cs = append(cs, copyCase{filepath.Base(p), b[:le.Uint64(b[16:])+le.Uint64(b[24:])], ptdfb.FlatTensorDesc, "", ptdfb.VerifyFlatTensor})
	}
	return cs
}

// TestCopyRealFiles copies the FlatBuffers of real files of four formats:
// each copy verifies, holds every field of the input with its value
// (dump), and copies again to the same bytes.
func TestCopyRealFiles(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			out, err := fbcopy.New(c.buf, fbverify.Options{Format: "x"}).Copy(c.root, c.ident)
			if err != nil {
				t.Fatal(err)
			}
			if c.ident != "" && string(out[4:8]) != c.ident {
				t.Errorf("identifier %q", out[4:8])
			}
			if err := fbverify.NewWalk(out, fbverify.Options{}).Verify(c.root.Name, c.verify); err != nil {
				t.Fatalf("the copy does not verify: %v", err)
			}
			if got, want := dumpAll(out, c.root), dumpAll(c.buf, c.root); got != want {
				t.Errorf("the copy differs:\n got %.2000s\nwant %.2000s", got, want)
			}
			again, err := fbcopy.New(out, fbverify.Options{}).Copy(c.root, c.ident)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(out) {
				t.Errorf("copying the copy gives other bytes")
			}
			if len(out) > len(c.buf)+1024 {
				t.Errorf("copy of %d bytes from %d", len(out), len(c.buf))
			}
		})
	}
}

// TestEdit drops, sets, tracks and replaces fields of a generated TFLite
// model, and checks each in the copy by plain reads.
func TestEdit(t *testing.T) {
	in := tflitegen.Sample(false).Bytes()
	c := fbcopy.New(in, fbverify.Options{Format: "tflite"})
	var mark fbcopy.Mark
	tracked := false
	c.Edit = func(tab *fbcopy.Table) error {
		switch tab.Desc {
		case tflitefb.ModelDesc:
			tab.Drop(3) // description
			v, err := tab.Uint(0)
			if err != nil {
				return err
			}
			tab.SetUint(0, v+100) // version
			name := tab.Copier().B.CreateString("edited")
			tab.SetRef(3, name)
			if !tab.Has(4) {
				return fmt.Errorf("the model has no buffers")
			}
		case tflitefb.BufferDesc:
			if !tracked && tab.Has(0) {
				tab.Drop(0)
				tab.SetUint(1, 0)
				tab.SetUint(2, 7)
				mark, tracked = tab.Track(1), true
			}
		}
		return nil
	}
	out, err := c.Copy(tflitefb.ModelDesc, "TFL3")
	if err != nil {
		t.Fatal(err)
	}
	if !tracked {
		t.Fatal("no inline buffer")
	}
	pos := c.Position(mark)
	le.PutUint64(out[pos:], 0x1234)
	m := tflitefb.GetRootAsModel(out, 0)
	if m.Version() != 103 || string(m.Description()) != "edited" {
		t.Errorf("version %d, description %q", m.Version(), m.Description())
	}
	found := false
	var b tflitefb.Buffer
	for i := range m.BuffersLength() {
		m.Buffers(&b, i)
		if b.Offset() == 0x1234 && b.Size() == 7 && b.DataLength() == 0 {
			found = true
		}
	}
	if !found {
		t.Error("no buffer with the tracked offset patched in and the size set")
	}
}

// TestRefusesUnknown: a table with a field past the schema's, or a union
// member it does not list, is refused, not copied without it.
func TestRefusesUnknown(t *testing.T) {
	// A Buffer with a field 5 (the schema has 3) in a Model's buffers.
	b := flatbuffers.NewBuilder(0)
	b.StartObject(6)
	b.PrependUint32Slot(5, 7, 0)
	buf := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(buf)
	bufs := b.EndVector(1)
	tflitefb.ModelStart(b)
	tflitefb.ModelAddBuffers(b, bufs)
	b.Finish(tflitefb.ModelEnd(b))
	_, err := fbcopy.New(b.FinishedBytes(), fbverify.Options{}).Copy(tflitefb.ModelDesc, "")
	if err == nil || !strings.Contains(err.Error(), "field 5") || !strings.Contains(err.Error(), "buffers") {
		t.Errorf("unknown field: %v", err)
	}

	// An Operator whose builtin options have tag 250.
	b = flatbuffers.NewBuilder(0)
	b.StartObject(0)
	opt := b.EndObject()
	tflitefb.OperatorStart(b)
	tflitefb.OperatorAddBuiltinOptionsType(b, 250)
	tflitefb.OperatorAddBuiltinOptions(b, opt)
	op := b.EndObject()
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(op)
	ops := b.EndVector(1)
	tflitefb.SubGraphStart(b)
	tflitefb.SubGraphAddOperators(b, ops)
	sg := tflitefb.SubGraphEnd(b)
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(sg)
	sgs := b.EndVector(1)
	tflitefb.ModelStart(b)
	tflitefb.ModelAddSubgraphs(b, sgs)
	b.Finish(tflitefb.ModelEnd(b))
	_, err = fbcopy.New(b.FinishedBytes(), fbverify.Options{}).Copy(tflitefb.ModelDesc, "")
	if err == nil || !strings.Contains(err.Error(), "union member 250") {
		t.Errorf("unknown union member: %v", err)
	}
}

// TestShared: a vector whose 100000 elements all point to one table of a
// large vector is copied in proportion to the input, the table once.
func TestShared(t *testing.T) {
	b := flatbuffers.NewBuilder(0)
	data := b.CreateByteVector(make([]byte, 1<<16))
	tflitefb.BufferStart(b)
	tflitefb.BufferAddData(b, data)
	buf := tflitefb.BufferEnd(b)
	const n = 100000
	b.StartVector(4, n, 4)
	for range n {
		b.PrependUOffsetT(buf)
	}
	bufs := b.EndVector(n)
	tflitefb.ModelStart(b)
	tflitefb.ModelAddBuffers(b, bufs)
	b.Finish(tflitefb.ModelEnd(b))
	in := b.FinishedBytes()
	out, err := fbcopy.New(in, fbverify.Options{}).Copy(tflitefb.ModelDesc, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > len(in)+64 {
		t.Errorf("copy of %d bytes from %d", len(out), len(in))
	}
}

// TestHostile: every real FlatBuffer of less than 64 KiB with one byte
// changed, at every offset of the first 256 bytes and a spread of 256 of
// the rest, copies or fails with an error: no panic, and no copy out of
// proportion to the input. (FuzzCopy goes further.)
func TestHostile(t *testing.T) {
	for _, c := range cases(t) {
		if len(c.buf) >= 64<<10 {
			continue
		}
		buf := append([]byte(nil), c.buf...)
		step := max(1, len(buf)/256)
		for i := 0; i < len(buf); i++ {
			if i >= 256 && i%step != 0 {
				continue
			}
			for _, x := range []byte{0xFF, 0x01} {
				old := buf[i]
				buf[i] ^= x
				out, err := fbcopy.New(buf, fbverify.Options{}).Copy(c.root, c.ident)
				if err == nil && len(out) > 2*len(buf)+math.MaxUint16 {
					t.Errorf("%s: byte %d ^ %#x: copy of %d bytes from %d", c.name, i, x, len(out), len(buf))
				}
				buf[i] = old
			}
		}
	}
}

// FuzzCopy copies TFLite models: no panic, a copy in proportion to its
// input, and one that copies succeeds on verifies and holds every field
// of the input with its value (the copier verified all that dump reads).
func FuzzCopy(f *testing.F) {
	for _, c := range cases(f) {
		if c.root == tflitefb.ModelDesc && len(c.buf) < 64<<10 {
			f.Add(c.buf)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := fbcopy.New(in, fbverify.Options{}).Copy(tflitefb.ModelDesc, "TFL3")
		if err != nil {
			return
		}
		if len(out) > 2*len(in)+math.MaxUint16 {
			t.Fatalf("copy of %d bytes from %d", len(out), len(in))
		}
		if err := fbverify.NewWalk(out, fbverify.Options{}).Verify("Model", tflitefb.VerifyModel); err != nil {
			t.Fatalf("the copy does not verify: %v", err)
		}
		if got, want := dumpAll(out, tflitefb.ModelDesc), dumpAll(in, tflitefb.ModelDesc); got != want {
			t.Fatalf("the copy differs:\n got %.1000s\nwant %.1000s", got, want)
		}
	})
}
