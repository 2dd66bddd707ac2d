package safetensors_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// allCodes lists every dtype the format has, with the safetensors code
// and bit width the format's specification gives (written out here, not
// taken from the package).
var allCodes = []struct {
	dt   format.DType
	code string
	bits int
}{
	{format.Bool, "BOOL", 8}, {format.Float4E2M1FN, "F4", 4}, {format.Float6E2M3FN, "F6_E2M3", 6},
	{format.Float6E3M2FN, "F6_E3M2", 6}, {format.Uint8, "U8", 8}, {format.Int8, "I8", 8},
	{format.Float8E5M2, "F8_E5M2", 8}, {format.Float8E4M3FN, "F8_E4M3", 8}, {format.Float8E8M0FNU, "F8_E8M0", 8},
	{format.Float8E4M3FNUZ, "F8_E4M3FNUZ", 8}, {format.Float8E5M2FNUZ, "F8_E5M2FNUZ", 8},
	{format.Int16, "I16", 16}, {format.Uint16, "U16", 16}, {format.Float16, "F16", 16}, {format.BFloat16, "BF16", 16},
	{format.Int32, "I32", 32}, {format.Uint32, "U32", 32}, {format.Float32, "F32", 32},
	{format.Complex64, "C64", 64}, {format.Float64, "F64", 64}, {format.Int64, "I64", 64}, {format.Uint64, "U64", 64},
}

// genTensor is a tensor a test writes: its bytes are random.
type genTensor struct {
	name  string
	dt    format.DType
	shape []int64
	data  []byte
}

// genTensors makes one tensor of every dtype with a few shapes (a
// scalar, an empty one), in an order that leaves them unaligned if
// written as given.
func genTensors(seed uint64) []genTensor {
	r := rand.New(rand.NewPCG(seed, 7))
	var out []genTensor
	for i, c := range allCodes {
		shapes := [][]int64{{3, 4}, {}, {0, 5}, {8}}
		sh := shapes[(i+int(seed))%len(shapes)]
		numel := int64(1)
		for _, d := range sh {
			numel *= d
		}
		nbits := numel * int64(c.bits)
		if nbits%8 != 0 { // scalar of a sub-byte type: give it whole bytes
			sh, nbits = []int64{8}, 8*int64(c.bits)
		}
		b := make([]byte, nbits/8)
		for k := range b {
			b[k] = byte(r.Uint32())
			if c.dt == format.Bool {
				b[k] &= 1
			}
		}
		out = append(out, genTensor{name: "t" + c.code + "/" + string(rune('a'+i)), dt: c.dt, shape: sh, data: b})
	}
	// odd-sized first: the writer must reorder
	slices.SortStableFunc(out, func(a, b genTensor) int { return a.dt.Size() - b.dt.Size() })
	return out
}

func sources(ts []genTensor) []safetensors.Source {
	var srcs []safetensors.Source
	for _, t := range ts {
		srcs = append(srcs, safetensors.Source{Name: t.name, DType: t.dt, Shape: t.shape, Data: bytes.NewReader(t.data)})
	}
	return srcs
}

func writeBytes(tb testing.TB, ts []genTensor, meta []safetensors.Meta, align int64) []byte {
	tb.Helper()
	var buf bytes.Buffer
	p, err := safetensors.Write(&buf, sources(ts), meta, align)
	if err != nil {
		tb.Fatal(err)
	}
	if int64(buf.Len()) != p.Size {
		tb.Fatalf("wrote %d bytes, plan says %d", buf.Len(), p.Size)
	}
	return buf.Bytes()
}

// TestWriteReadBack writes every dtype at several alignments and reads
// the file back: each tensor has the bytes, dtype and shape it was given,
// the data buffer starts on the alignment and each tensor at a multiple
// of its element size.
func TestWriteReadBack(t *testing.T) {
	ts := genTensors(1)
	meta := []safetensors.Meta{{Key: "format", Value: "pt"}, {Key: "quote\"\n\\", Value: "é ✓"}}
	for _, align := range []int64{0, 8, 64, 4096} {
		b := writeBytes(t, ts, meta, align)
		f, err := safetensors.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatalf("align %d: %v", align, err)
		}
		want := max(align, 8)
		if f.DataOffset()%want != 0 {
			t.Errorf("align %d: data at %d", align, f.DataOffset())
		}
		if got := f.Metadata(); !slices.Equal(got, meta) {
			t.Errorf("metadata %q, want %q", got, meta)
		}
		for _, g := range ts {
			i, ok := f.Lookup(g.name)
			if !ok {
				t.Fatalf("%q missing", g.name)
			}
			x := f.TensorAt(i)
			b, err := x.Data.Bytes()
			if err != nil || !bytes.Equal(b, g.data) || x.DType != g.dt || !slices.Equal(x.Shape, g.shape) {
				t.Errorf("align %d: %q: %v %v %x, %v; want %v %v %x", align, g.name, x.DType, x.Shape, b, err, g.dt, g.shape, g.data)
			}
			if sz := int64(g.dt.Size()); sz > 0 && x.Offset%sz != 0 {
				t.Errorf("align %d: %q (%v) at %d", align, g.name, g.dt, x.Offset)
			}
		}
	}
}

// TestWriteRefuses checks the writer's refusals.
func TestWriteRefuses(t *testing.T) {
	f32 := func(name string) safetensors.Source {
		return safetensors.Source{Name: name, DType: format.Float32, Shape: []int64{1}, Data: bytes.NewReader(make([]byte, 4))}
	}
	cases := map[string]struct {
		srcs  []safetensors.Source
		meta  []safetensors.Meta
		align int64
	}{
		"duplicate":      {srcs: []safetensors.Source{f32("a"), f32("a")}},
		"metadata name":  {srcs: []safetensors.Source{f32("__metadata__")}},
		"metadata twice": {meta: []safetensors.Meta{{Key: "k"}, {Key: "k"}}},
		"bad utf8":       {srcs: []safetensors.Source{f32("\xff")}},
		"no code":        {srcs: []safetensors.Source{{Name: "q", DType: format.Q4_0, Shape: []int64{32}}}},
		"odd f4":         {srcs: []safetensors.Source{{Name: "q", DType: format.Float4E2M1FN, Shape: []int64{3}}}},
		"negative":       {srcs: []safetensors.Source{{Name: "q", DType: format.Uint8, Shape: []int64{-1}}}},
		"align":          {srcs: []safetensors.Source{f32("a")}, align: 24},
		"short reader":   {srcs: []safetensors.Source{{Name: "q", DType: format.Uint8, Shape: []int64{3}, Data: bytes.NewReader([]byte{1})}}},
	}
	for name, c := range cases {
		if _, err := safetensors.Write(new(bytes.Buffer), c.srcs, c.meta, c.align); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestWritePython reads the writer's output with the upstream Python
// package: every tensor has its dtype code, shape and bytes. It is skipped
// when Python or the package is missing, and fails then under CI=true.
func TestWritePython(t *testing.T) {
	py := pythonWith(t, "safetensors")
	ts := genTensors(2)
	dir := t.TempDir()
	for _, align := range []int64{8, 4096} {
		path := filepath.Join(dir, "out.safetensors")
		if err := os.WriteFile(path, writeBytes(t, ts, []safetensors.Meta{{Key: "k", Value: "v"}}, align), 0o644); err != nil {
			t.Fatal(err)
		}
		script := `
import hashlib, json, sys
from safetensors import deserialize
out = {}
for name, t in deserialize(open(sys.argv[1], "rb").read()):
    out[name] = {"dtype": t["dtype"], "shape": list(t["shape"]), "sha256": hashlib.sha256(bytes(t["data"])).hexdigest()}
json.dump(out, sys.stdout)
`
		res, err := exec.Command(py, "-c", script, path).Output()
		if err != nil {
			t.Fatalf("python: %v", err)
		}
		var got map[string]struct {
			DType  string  `json:"dtype"`
			Shape  []int64 `json:"shape"`
			SHA256 string  `json:"sha256"`
		}
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ts) {
			t.Errorf("python read %d tensors, want %d", len(got), len(ts))
		}
		for _, g := range ts {
			sum := sha256.Sum256(g.data)
			p := got[g.name]
			code := ""
			for _, c := range allCodes {
				if c.dt == g.dt {
					code = c.code
				}
			}
			if p.DType != code || !slices.Equal(p.Shape, g.shape) || p.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("align %d: %q: python read %+v; want %s %v %x", align, g.name, p, code, g.shape, sum)
			}
		}
	}
}

// pythonWith returns the python3 interpreter if it imports module, and
// skips the test otherwise (fails under CI=true).
func pythonWith(t *testing.T, module string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import "+module).Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with %s required under CI=true: %v", module, err)
		}
		t.Skipf("python3 with %s not available: %v", module, err)
	}
	return py
}
