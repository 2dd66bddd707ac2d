package pte_test

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

func openPTD(t testing.TB, rel string) *ptd.File {
	t.Helper()
	mf, err := mmapfile.Open(testmodels.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	f, err := ptd.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestLinkAddMul: pte/addmul-external.pte linked to ptd/addmul-external.ptd
// gives a = 4×3.0f and b = 4×2.0f through float32 views of the .ptd's
// mapping.
func TestLinkAddMul(t *testing.T) {
	data := openPTD(t, "ptd/addmul-external.ptd")
	p, err := mapOpen(t, testmodels.Path(t, "pte/addmul-external.pte"), nil, pte.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for name, want := range map[string]float32{"a": 3, "b": 2} {
		tt, ok := p.Tensor(name)
		if !ok || !tt.Resolved() || tt.Location != format.LocExternal || tt.DataFile != data.Name() {
			t.Fatalf("tensor %q: %+v", name, tt)
		}
		nd, _ := data.Entry(name)
		if tt.Offset != nd.Data.Offset() || tt.Data.File() != data.MappedFile() {
			t.Errorf("tensor %q at %d of %v, want the .ptd's bytes at %d", name, tt.Offset, tt.Data, nd.Data.Offset())
		}
		v, copied, err := tt.Data.Float32()
		if err != nil || copied || len(v) != 4 {
			t.Fatalf("tensor %q: %v copied=%v %v", name, v, copied, err)
		}
		for _, x := range v {
			if x != want {
				t.Errorf("tensor %q = %v, want 4×%v", name, v, want)
				break
			}
		}
	}
	if _, unresolved := p.External(); unresolved != 0 {
		t.Errorf("%d external tensors unresolved", unresolved)
	}
	// Linking again is a no-op.
	if err := p.Link(); err != nil {
		t.Errorf("second Link: %v", err)
	}
}

// TestLinkLegacyPTD: pte/linear-external.pte linked to the 2025-legacy
// ptd/linear-legacy-2025.ptd.
func TestLinkLegacyPTD(t *testing.T) {
	data := openPTD(t, "ptd/linear-legacy-2025.ptd")
	p, err := mapOpen(t, testmodels.Path(t, "pte/linear-external.pte"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if tt, _ := p.Tensor("linear.weight"); tt.Resolved() {
		t.Fatal("resolved before Link")
	}
	if err := p.Link(data); err != nil {
		t.Fatal(err)
	}
	exp := testmodels.Load(t, data.Name())
	for _, et := range exp.Tensors {
		tt, ok := p.Tensor(et.Name)
		if !ok || tt.Offset != *et.Offset || tt.NBytes != et.NBytes || tt.Data.Len() != et.NBytes {
			t.Errorf("tensor %q: %+v, want offset %d nbytes %d", et.Name, tt, *et.Offset, et.NBytes)
			continue
		}
		sum, err := tt.Data.SHA256()
		if err != nil || hexs(sum[:]) != et.SHA256 {
			t.Errorf("tensor %q: sha256 %x (%v), want %s", et.Name, sum, err, et.SHA256)
		}
	}
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// TestLinkSharing: two programs linked to one opened .ptd get views of the
// same bytes at the same addresses.
func TestLinkSharing(t *testing.T) {
	data := openPTD(t, "ptd/addmul-external.ptd")
	path := testmodels.Path(t, "pte/addmul-external.pte")
	p1, err := mapOpen(t, path, nil, pte.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	p2, err := mapOpen(t, path, nil, pte.WithData(data))
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	for _, name := range []string{"a", "b"} {
		t1, _ := p1.Tensor(name)
		t2, _ := p2.Tensor(name)
		b1, err1 := t1.Data.Bytes()
		b2, err2 := t2.Data.Bytes()
		if err1 != nil || err2 != nil || len(b1) == 0 {
			t.Fatal(err1, err2)
		}
		if &b1[0] != &b2[0] {
			t.Errorf("tensor %q: the two programs see different copies (%p, %p)", name, &b1[0], &b2[0])
		}
		nd, _ := data.Entry(name)
		b3, _ := nd.Data.Bytes()
		if unsafe.SliceData(b3) != unsafe.SliceData(b1) {
			t.Errorf("tensor %q is not the .ptd's own view", name)
		}
	}
}

// linkCase builds a program with one external tensor and a .ptd with one
// entry.
func linkCase(t *testing.T, tensor writer.PTETensor, entry writer.PTDEntry) error {
	t.Helper()
	tensor.Kind = writer.PTEExternal
	w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{tensor}}}}
	p, err := pte.NewFile(mmapfile.NewBytes(genBytes(t, w)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pd := &writer.PTD{Entries: []writer.PTDEntry{entry}}
	raw, err := pd.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := ptd.NewFile(mmapfile.NewBytes(raw), ptd.WithName("data.ptd"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = p.Link(f)
	tt := &p.Tensors()[0]
	if err != nil && (tt.Resolved() || tt.Data.Len() != 0) {
		t.Errorf("failed Link changed the tensor: %+v", tt)
	}
	return err
}

func TestLinkErrors(t *testing.T) {
	f32x4 := writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Name: "w"}
	layout := func(st int8, sizes ...int32) *writer.PTDLayout {
		return &writer.PTDLayout{ScalarType: st, Sizes: sizes}
	}
	if err := linkCase(t, f32x4, writer.PTDEntry{Key: "w", Layout: layout(writer.PTDScalarFloat32, 2, 2)}); err != nil {
		t.Fatalf("matching entry: %v", err)
	}
	// A longer entry is accepted and cut to the tensor's size.
	if err := linkCase(t, f32x4, writer.PTDEntry{Key: "w", Layout: layout(writer.PTDScalarFloat32, 2, 2), Size: 64}); err != nil {
		t.Fatalf("longer entry: %v", err)
	}
	transposed := f32x4
	transposed.DimOrder = []uint8{1, 0}
	for _, tc := range []struct {
		name     string
		tensor   writer.PTETensor
		entry    writer.PTDEntry
		sentinel error
		text     string
	}{
		{"missing", f32x4, writer.PTDEntry{Key: "other", Layout: layout(writer.PTDScalarFloat32, 2, 2)}, format.ErrNotFound, `"w"`},
		{"dtype", f32x4, writer.PTDEntry{Key: "w", Layout: layout(writer.PTDScalarFloat16, 2, 2)}, pte.ErrMismatch, "dtype float32 in the program, float16"},
		{"sizes", f32x4, writer.PTDEntry{Key: "w", Layout: layout(writer.PTDScalarFloat32, 4)}, pte.ErrMismatch, "sizes [2 2] in the program, [4]"},
		{"dim order", transposed, writer.PTDEntry{Key: "w", Layout: layout(writer.PTDScalarFloat32, 2, 2)}, pte.ErrMismatch, "dim order"},
		{"blob", f32x4, writer.PTDEntry{Key: "w", Size: 16}, pte.ErrMismatch, "opaque blob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := linkCase(t, tc.tensor, tc.entry)
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), `"w"`) {
				t.Errorf("got %v, want %v naming the tensor and mentioning %q", err, tc.sentinel, tc.text)
			}
		})
	}
}

// TestLinkTooSmall: an entry holding fewer bytes than the tensor needs is
// an error naming the tensor. A .ptd whose layout agrees with the tensor
// but whose segment is short is already refused by the .ptd reader at
// open (Link's own byte-count check is then a second line of defence), so
// the error comes from there and names the key, which is the tensor's
// fully-qualified name.
func TestLinkTooSmall(t *testing.T) {
	pd := &writer.PTD{Entries: []writer.PTDEntry{{Key: "w", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}}, Size: 8}}}
	raw, err := pd.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	f, err := ptd.NewFile(mmapfile.NewBytes(raw))
	if err == nil {
		// The .ptd reader accepted it: Link must refuse it.
		defer f.Close()
		w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
			{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Name: "w"}}}}}
		p, perr := pte.NewFile(mmapfile.NewBytes(genBytes(t, w)))
		if perr != nil {
			t.Fatal(perr)
		}
		defer p.Close()
		err = p.Link(f)
		if !errors.Is(err, pte.ErrMismatch) {
			t.Fatalf("Link of a short entry: %v", err)
		}
	}
	if err == nil || !strings.Contains(err.Error(), `"w"`) || !strings.Contains(err.Error(), "needs 16 bytes") {
		t.Errorf("got %v, want an error naming \"w\" and the 16 bytes it needs", err)
	}
}

// TestLinkAtOpenFails: WithData makes Open fail when a tensor is missing.
func TestLinkAtOpenFails(t *testing.T) {
	data := openPTD(t, "ptd/addmul-external.ptd")
	_, err := mapOpen(t, testmodels.Path(t, "pte/linear-external.pte"), nil, pte.WithData(data))
	if !errors.Is(err, format.ErrNotFound) || !strings.Contains(err.Error(), "linear.weight") || !strings.Contains(err.Error(), "linear.bias") {
		t.Errorf("got %v, want ErrNotFound naming both tensors", err)
	}
}

// TestTensorDataBeforeLink: an external tensor has no data before Link,
// which TensorData says without building the tensor list or the methods;
// after Link it gives the .ptd's bytes, as the list does.
func TestTensorDataBeforeLink(t *testing.T) {
	data := openPTD(t, "ptd/addmul-external.ptd")
	p, err := mapOpen(t, testmodels.Path(t, "pte/addmul-external.pte"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.NumTensors() == 0 {
		t.Fatal("no tensors")
	}
	views, err := p.AppendTensorBytes(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.NumTensors() {
		if d := p.TensorData(i); d.Len() != 0 || views[i] != nil {
			t.Errorf("tensor %d before Link: TensorData %v, view of %d bytes", i, d, len(views[i]))
		}
	}
	if pte.TensorListBuilt(p) || pte.MethodsBuilt(p) {
		t.Fatalf("TensorData before Link built the tensor list (%v) or the methods (%v)", pte.TensorListBuilt(p), pte.MethodsBuilt(p))
	}
	if err := p.Link(data); err != nil {
		t.Fatal(err)
	}
	ts := p.Tensors()
	for i := range ts {
		d := p.TensorData(i)
		if ts[i].Location != format.LocExternal || d.Len() != ts[i].NBytes || d.Offset() != ts[i].Data.Offset() || d.File() != data.MappedFile() {
			t.Errorf("tensor %q after Link: TensorData %v, Data %v", ts[i].Name, d, ts[i].Data)
		}
	}
}
