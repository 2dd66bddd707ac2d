package bundle_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/bpfb"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

func tiny(t testing.TB) (*writer.BPTE, []byte) {
	t.Helper()
	p, err := writer.TinyBPTE()
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

func f32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// The writer's bundle reads back value by value, and its program is the
// program the writer embedded, mapped in place.
func TestTiny(t *testing.T) {
	p, b := tiny(t)
	f, err := bundle.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version() != 2 {
		t.Errorf("Version %d", f.Version())
	}
	off, n := f.ProgramSection()
	if off%32 != 0 || n != int64(len(p.Program)) || !bytes.Equal(b[off:off+n], p.Program) {
		t.Fatalf("program [%d +%d), want the %d bytes written, 32-aligned", off, n, len(p.Program))
	}
	if pb, err := f.Program().Bytes(); err != nil || !bytes.Equal(pb, p.Program) {
		t.Fatalf("Program(): %v", err)
	}
	suites := f.TestSuites()
	if len(suites) != 1 || suites[0].Method != "forward" || len(suites[0].Cases) != 2 {
		t.Fatalf("suites %+v", suites)
	}
	for j, c := range suites[0].Cases {
		wc := p.Suites[0].Cases[j]
		if len(c.Inputs) != len(wc.Inputs) || len(c.ExpectedOutputs) != len(wc.Outputs) {
			t.Fatalf("case %d: %d inputs %d outputs", j, len(c.Inputs), len(c.ExpectedOutputs))
		}
		for k, v := range append(append([]bundle.Value(nil), c.Inputs...), c.ExpectedOutputs...) {
			w := append(append([]writer.BPTEValue(nil), wc.Inputs...), wc.Outputs...)[k]
			switch {
			case w.Tensor != nil:
				got, err := v.Tensor.Data.Bytes()
				if v.Kind != bundle.KindTensor || err != nil || !bytes.Equal(got, w.Tensor.Data) || v.Tensor.DType != format.Float32 ||
					!slices.Equal(v.Tensor.Shape, shapeOf(w.Tensor.Sizes)) ||
					v.Tensor.Location != format.LocInline || v.Tensor.Offset%16 != 0 || !bytes.Equal(b[v.Tensor.Offset:v.Tensor.Offset+v.Tensor.NBytes], w.Tensor.Data) {
					t.Errorf("case %d value %d: %+v", j, k, v.Tensor)
				}
				if hostile.Tensor(&v.Tensor) != nil {
					t.Errorf("case %d value %d: %v", j, k, hostile.Tensor(&v.Tensor))
				}
				_ = f32(got)
			case w.Kind == bpfb.ValueUnionInt:
				if v.Kind != bundle.KindInt || v.Int != w.Int {
					t.Errorf("case %d value %d: %+v, want int %d", j, k, v, w.Int)
				}
			case w.Kind == bpfb.ValueUnionBool:
				if v.Kind != bundle.KindBool || v.Bool != w.Bool {
					t.Errorf("case %d value %d: %+v", j, k, v)
				}
			case w.Kind == bpfb.ValueUnionDouble:
				if v.Kind != bundle.KindDouble || v.Double != w.Double {
					t.Errorf("case %d value %d: %+v", j, k, v)
				}
			}
		}
	}
	if got := len(f.Tensors()); got != 4 {
		t.Errorf("%d test tensors, want 4", got)
	}
	pf, err := f.OpenProgram()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := pte.NewFile(pf)
	if err != nil {
		t.Fatalf("the embedded program: %v", err)
	}
	if len(prog.Methods()) != 1 || prog.FileSize() != n {
		t.Errorf("program: %d methods, size %d", len(prog.Methods()), prog.FileSize())
	}
	prog.Close()
	pf.Close()
}

// The real bundled program, mapped, reads as the schema says.
func TestOpenReal(t *testing.T) {
	path := testmodels.Path(t, "pte/bundled-program.bpte")
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	f, err := bundle.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Name() != path || f.File().Len() != 4608 {
		t.Errorf("Name %q, Len %d", f.Name(), f.File().Len())
	}
	s := f.TestSuites()
	if len(s) != 1 || s[0].Method != "forward" || len(s[0].Cases) != 10 {
		t.Fatalf("suites: %d", len(s))
	}
	for _, tn := range f.Tensors() {
		if err := hostile.Tensor(tn); err != nil {
			t.Error(err)
		}
	}
}

func TestErrors(t *testing.T) {
	_, good := tiny(t)
	mod := func(fn func(b []byte) []byte) []byte { return fn(bytes.Clone(good)) }
	badTensor := func(fn func(*writer.BPTETensor)) []byte {
		p, _ := tiny(t)
		fn(p.Suites[0].Cases[0].Inputs[0].Tensor)
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	noProg, err := (&writer.BPTE{NoProgram: true}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		b        []byte
		sentinel error
		field    string
	}{
		{"short", good[:7], format.ErrTruncated, "identifier"},
		{"BP09", mod(func(b []byte) []byte { copy(b[4:], "BP09"); return b }), format.ErrUnsupportedVersion, "identifier"},
		{"ET12", mod(func(b []byte) []byte { copy(b[4:], "ET12"); return b }), format.ErrUnknownFormat, "identifier"},
		{"cut", good[:len(good)/2], format.ErrMalformed, ""},
		{"no program", noProg, format.ErrMalformed, "BundledProgram.program"},
		{"data too short", badTensor(func(x *writer.BPTETensor) { x.Data = x.Data[:7] }), format.ErrMalformed, ".inputs[0].val.data"},
		{"negative size", badTensor(func(x *writer.BPTETensor) { x.Sizes[0] = -1 }), format.ErrMalformed, ".inputs[0].val.sizes"},
		{"bad dtype", badTensor(func(x *writer.BPTETensor) { x.ScalarType = 9 }), format.ErrMalformed, ".inputs[0].val.scalar_type"},
	} {
		_, err := bundle.NewFile(mmapfile.NewBytes(c.b))
		var fe *format.FormatError
		if err == nil || !errors.As(err, &fe) || fe.Format != "bpte" {
			t.Errorf("%s: %v, want a bpte FormatError", c.name, err)
			continue
		}
		if c.sentinel != format.ErrMalformed && !errors.Is(err, c.sentinel) {
			t.Errorf("%s: %v, want %v", c.name, err, c.sentinel)
		}
		if !strings.Contains(fe.Field, c.field) {
			t.Errorf("%s: field %q, want %q", c.name, fe.Field, c.field)
		}
		if err := hostile.CheckError("bpte", err); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := bundle.NewFile(nil); err == nil {
		t.Error("NewFile(nil) succeeded")
	}
}

// Every prefix of a bundle and every single-byte change of its metadata
// gives a bundle or a clear error, never a panic.
func TestTruncateAndMutate(t *testing.T) {
	_, good := tiny(t)
	for n := 0; n < len(good); n++ {
		if f, err := bundle.NewFile(mmapfile.NewBytes(good[:n])); err == nil {
			exercise(t, f)
		} else if err := hostile.CheckError("bpte", err); err != nil {
			t.Fatalf("prefix %d: %v", n, err)
		}
	}
	b := bytes.Clone(good)
	for i := range b {
		if i >= 64 && i < 64+1309 {
			continue // the program's bytes are not the bundle's business
		}
		for _, v := range []byte{0, 0xff, b[i] ^ 0x80} {
			old := b[i]
			b[i] = v
			if f, err := bundle.NewFile(mmapfile.NewBytes(b)); err == nil {
				exercise(t, f)
			} else if err := hostile.CheckError("bpte", err); err != nil {
				t.Fatalf("byte %d = %#x: %v", i, v, err)
			}
			b[i] = old
		}
	}
}

// exercise reads everything an opened bundle offers.
func exercise(t *testing.T, f *bundle.File) {
	t.Helper()
	size := f.File().Len()
	off, n := f.ProgramSection()
	if off < 0 || n < 0 || off > size || n > size-off {
		t.Fatalf("program [%d +%d) outside %d bytes", off, n, size)
	}
	prog, err := f.Program().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// The embedded program, as pte's FuzzOpen checks one: if it opens and
	// its methods check, a full verification of its FlatBuffer (lazy
	// instructions included) passes.
	if p, err := pte.NewFile(mmapfile.NewBytes(prog)); err == nil {
		if p.VerifyMethods() == nil {
			region, err := p.ProgramData().Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if err := fbverify.NewWalk(region, fbverify.Options{Format: "pte"}).Verify("Program", ptefb.VerifyProgram); err != nil {
				t.Fatalf("the embedded program opened and checked, but a full verification rejects it: %v", err)
			}
		}
		p.Close()
	}
	for _, s := range f.TestSuites() {
		for _, c := range s.Cases {
			for _, v := range append(append([]bundle.Value(nil), c.Inputs...), c.ExpectedOutputs...) {
				_ = v.Kind.String()
			}
		}
	}
	for _, tn := range f.Tensors() {
		if err := hostile.Tensor(tn); err != nil {
			t.Fatal(err)
		}
		if tn.Offset < 0 || tn.NBytes > size-tn.Offset {
			t.Fatalf("tensor %q [%d +%d) outside", tn.Name, tn.Offset, tn.NBytes)
		}
	}
	if pf, err := f.OpenProgram(mmapfile.WithName("p")); err != nil {
		t.Fatal(err)
	} else {
		pf.Close()
	}
	f.Close()
}

func TestKindString(t *testing.T) {
	for k, s := range map[bundle.Kind]string{bundle.KindNone: "none", bundle.KindTensor: "tensor", bundle.KindInt: "int", bundle.KindBool: "bool", bundle.KindDouble: "double", 9: "Kind(9)"} {
		if k.String() != s {
			t.Errorf("%d: %q", k, k.String())
		}
	}
}

// FuzzOpen reads arbitrary bytes as a bundled program: never a panic; an
// error is a bpte FormatError; a bundle that opens has every view inside
// the file.
func FuzzOpen(f *testing.F) {
	_, good := tiny(f)
	f.Add(good)
	if b, err := os.ReadFile(filepath.Join(testmodels.Root(), "..", "shared", "models", "pte", "bundled-program.bpte")); err == nil {
		f.Add(b)
	}
	empty, err := (&writer.BPTE{Program: []byte("x")}).Bytes()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(empty)
	f.Fuzz(func(t *testing.T, data []byte) {
		bf, err := bundle.NewFile(mmapfile.NewBytes(data))
		if err != nil {
			if err := hostile.CheckError("bpte", err); err != nil {
				t.Fatal(err)
			}
			return
		}
		exercise(t, bf)
	})
}

// A test case's value offset 4 GiB past the table it wraps to in 32-bit
// arithmetic (the root) is refused like any offset past the buffer.
func TestValueOffsetWrap(t *testing.T) {
	_, b := tiny(t)
	fb := hostile.FB{B: b}
	// method_test_suites[0].test_cases[0].inputs[0]
	tc := fb.Path([2]int{1, 0}, [2]int{1, 0})
	pos, _ := fb.Vector(tc, 0)
	root := fb.Root()
	q := pos + 4
	if root >= q {
		t.Fatalf("root table at %d is not before the value offset at %d", root, q)
	}
	fb.PutU32(q, uint32(int64(root)+1<<32-int64(q)))
	_, err := bundle.NewFile(mmapfile.NewBytes(b))
	if err == nil || !strings.Contains(err.Error(), "inputs[0]") || !strings.Contains(err.Error(), "past the end") {
		t.Fatalf("NewBytes = %v, want an offset past the end at inputs[0]", err)
	}
}

// shapeOf returns the writer's sizes as a shape.
func shapeOf(sizes []int32) []int64 {
	out := make([]int64, len(sizes))
	for i, n := range sizes {
		out[i] = int64(n)
	}
	return out
}
