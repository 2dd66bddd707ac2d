package ptn_test

import (
	"archive/zip"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptnfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptn"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// member is a zip member a test package holds.
type member struct {
	name   string
	data   []byte
	method uint16 // zip.Store or zip.Deflate
	raw    bool   // sizes in the local header (no data descriptor)
}

// zipOf stores the members in order.
func zipOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		var w io.Writer
		var err error
		if m.raw {
			w, err = zw.CreateRaw(&zip.FileHeader{Name: m.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(m.data),
				CompressedSize64: uint64(len(m.data)), UncompressedSize64: uint64(len(m.data))})
		} else {
			w, err = zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: m.method})
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ptg(p *ptnfb.ProgramT) []byte {
	b := flatbuffers.NewBuilder(256)
	b.FinishWithFileIdentifier(p.Pack(b), []byte(ptn.Identifier))
	return b.FinishedBytes()
}

func tensorArg(name string) *ptnfb.NamedArgumentT {
	return &ptnfb.NamedArgumentT{Arg: &ptnfb.ArgumentT{Value: &ptnfb.ArgumentValueT{Type: ptnfb.ArgumentValueTensorArg, Value: &ptnfb.TensorArgT{Name: name}}}}
}

func listArg(names ...string) *ptnfb.NamedArgumentT {
	return &ptnfb.NamedArgumentT{Arg: &ptnfb.ArgumentT{Value: &ptnfb.ArgumentValueT{Type: ptnfb.ArgumentValueTensorListArg, Value: &ptnfb.TensorListArgT{Names: names}}}}
}

func optArg(names []string, has []bool) *ptnfb.NamedArgumentT {
	return &ptnfb.NamedArgumentT{Arg: &ptnfb.ArgumentT{Value: &ptnfb.ArgumentValueT{Type: ptnfb.ArgumentValueOptionalTensorListArg,
		Value: &ptnfb.OptionalTensorListArgT{Names: names, HasValue: has}}}}
}

func constant(name, key string, kind int8, mutated bool, quant ...string) *ptnfb.NamedTensorRefT {
	meta := &ptnfb.TensorMetaT{Dtype: 6}
	if len(quant) > 0 {
		ag := &ptnfb.AffineGroupT{ScaleDataKey: quant[0]}
		if len(quant) > 1 {
			ag.ZeroPointDataKey = quant[1]
		}
		meta.Dtype = 0
		meta.Quant = &ptnfb.QuantSpecT{Scheme: &ptnfb.QuantSchemeT{Type: ptnfb.QuantSchemeAffineGroup, Value: ag}}
	}
	return &ptnfb.NamedTensorRefT{Name: name, DataKey: key, Meta: meta, Kind: kind, Mutated: mutated}
}

func placeholders(names ...string) []*ptnfb.NodeT {
	var ns []*ptnfb.NodeT
	for _, n := range names {
		ns = append(ns, &ptnfb.NodeT{Name: n, OpKind: 1})
	}
	return ns
}

// testProgram has two methods: forward reads its constants through each
// kind of tensor argument; decode reads one quantized constant.
func testProgram() *ptnfb.ProgramT {
	forward := &ptnfb.MethodT{
		Name: "forward",
		Constants: []*ptnfb.NamedTensorRefT{
			constant("p_w", "linear.weight", 1, false),
			constant("p_b", "linear.bias", 1, false),
			constant("b_cache", "cache", 2, true),
			constant("p_q", "q.weight", 1, false, "q.scale", "q.zp"),
			constant("p_unused", "unused.weight", 3, false),
			constant("p_alias", "linear.weight2", 1, false),
		},
		MutableBuffers: []*ptnfb.MutableBufferSpecT{{Name: "b_kv", Fqn: "layers.0.kv"}},
		Graph: &ptnfb.GraphT{Nodes: append(placeholders("p_w", "p_b", "b_cache", "p_q", "p_unused", "p_alias", "x"),
			&ptnfb.NodeT{Name: "add", Target: "aten.add", Inputs: []*ptnfb.NamedArgumentT{tensorArg("p_b"), listArg("p_w", "x"),
				optArg([]string{"p_q", "p_alias"}, []bool{true, false})}},
			&ptnfb.NodeT{Name: "mul", Target: "aten.mul", Inputs: []*ptnfb.NamedArgumentT{tensorArg("add"), tensorArg("p_alias"), tensorArg("p_w")}},
			&ptnfb.NodeT{Name: "output", OpKind: 2, Inputs: []*ptnfb.NamedArgumentT{tensorArg("mul")}},
		)},
	}
	decode := &ptnfb.MethodT{
		Name:      "decode",
		Constants: []*ptnfb.NamedTensorRefT{constant("c_q", "q.weight", 1, false, "q.scale")},
		Graph: &ptnfb.GraphT{Nodes: append(placeholders("c_q"),
			&ptnfb.NodeT{Name: "mm", Inputs: []*ptnfb.NamedArgumentT{tensorArg("c_q")}})},
	}
	return &ptnfb.ProgramT{Version: "1", Methods: []*ptnfb.MethodT{forward, decode}}
}

// testConstants are the program.safetensors tensors: name, dtype, bytes.
var testConstants = []struct {
	name string
	dt   format.DType
	data []byte
}{
	{"cache", format.Int64, []byte{1, 0, 0, 0, 0, 0, 0, 0}},
	{"linear.bias", format.Float32, []byte{1, 2, 3, 4}},
	{"linear.weight", format.Float32, []byte{5, 6, 7, 8, 9, 10, 11, 12}},
	{"q.scale", format.Float16, []byte{13, 14}},
	{"q.weight", format.Uint8, []byte{15, 16, 17}},
	{"q.zp", format.Uint8, []byte{18}},
	{"unused.weight", format.Float32, []byte{19, 20, 21, 22}},
}

func constantsFile(t testing.TB) []byte {
	var srcs []safetensors.Source
	for _, c := range testConstants {
		srcs = append(srcs, safetensors.Source{Name: c.name, DType: c.dt, Shape: []int64{int64(len(c.data) / max(c.dt.Size(), 1))}, Data: bytes.NewReader(c.data)})
	}
	var buf bytes.Buffer
	if _, err := safetensors.Write(&buf, srcs, nil, 8); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func aliasesJSON(m map[string]string) []byte {
	b, _ := json.MarshalIndent(m, "", "  ") // sorted keys, as json.dumps(sort_keys=True)
	return b
}

// testPackage lays the members out as write_ptn does: program.ptg, then
// program.safetensors, then aliases.json.
func testPackage(t testing.TB, raw bool) []byte {
	return zipOf(t,
		member{name: ptn.GraphMember, data: ptg(testProgram()), raw: raw},
		member{name: ptn.ConstantsMember, data: constantsFile(t), raw: raw},
		member{name: ptn.AliasesMember, data: aliasesJSON(map[string]string{"linear.weight2": "linear.weight"}), raw: raw},
	)
}

func TestPackage(t *testing.T) {
	for _, raw := range []bool{false, true} {
		b := testPackage(t, raw)
		if !ptn.Sniff(b) {
			t.Fatal("Sniff refuses the package")
		}
		f, err := ptn.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatalf("raw %v: %v", raw, err)
		}
		if f.NumTensors() != len(testConstants)+1 {
			t.Fatalf("%d tensors", f.NumTensors())
		}
		for _, c := range testConstants {
			i, ok := f.Lookup(c.name)
			if !ok {
				t.Fatalf("%q missing", c.name)
			}
			tt := f.TensorAt(i)
			got, _ := tt.Data.Bytes()
			if tt.Offset < 0 || tt.Offset+tt.NBytes > int64(len(b)) || !bytes.Equal(b[tt.Offset:tt.Offset+tt.NBytes], c.data) ||
				!bytes.Equal(got, c.data) || tt.DType != c.dt || tt.Location != format.LocSegment {
				t.Errorf("%q: %v at %d: %x; want %v %x", c.name, tt.DType, tt.Offset, got, c.dt, c.data)
			}
			if _, alias := f.AliasOf(i); alias {
				t.Errorf("%q listed as an alias", c.name)
			}
		}
		a, ok := f.Lookup("linear.weight2")
		w, _ := f.Lookup("linear.weight")
		if o, alias := f.AliasOf(a); !ok || !alias || o != w || f.TensorAt(a).Data != f.TensorAt(w).Data {
			t.Errorf("alias: %d -> %d, %v", a, o, alias)
		}
		if g := f.Groups(); !slices.Equal(g, []string{"forward", "decode"}) {
			t.Errorf("groups %v", g)
		}
		names := func(order []int) []string {
			var out []string
			for _, i := range order {
				out = append(out, f.TensorAt(i).Name)
			}
			return out
		}
		// derived by hand from testProgram: a method lists what it binds
		// (decode: q.weight and its scale, nothing forward alone binds);
		// group "" then lists the tensors no method binds
		wantForward := []string{"linear.bias", "linear.weight", "q.weight", "q.scale", "q.zp", "linear.weight2", "cache", "unused.weight"}
		wantDecode := []string{"q.weight", "q.scale"}
		for g, want := range map[string][]string{"forward": wantForward, "decode": wantDecode, "": wantForward} {
			o, err := f.UseOrder(g)
			if err != nil || !slices.Equal(names(o), want) {
				t.Errorf("UseOrder(%q) = %v, %v; want %v", g, names(o), err, want)
			}
		}
		if _, err := f.UseOrder("nope"); !errors.Is(err, format.ErrNotFound) {
			t.Errorf("UseOrder(nope): %v", err)
		}
		m, _ := f.Method("forward")
		if len(m.Constants) != 6 || !m.Constants[2].Mutated || m.Constants[2].Kind != 2 ||
			!slices.Equal(m.Constants[3].QuantKeys, []string{"q.scale", "q.zp"}) ||
			len(m.MutableBuffers) != 1 || m.MutableBuffers[0] != (ptn.MutableBuffer{Name: "b_kv", FQN: "layers.0.kv"}) {
			t.Errorf("forward: %+v", m)
		}
		if f.Version() != "1" || len(f.Segments()) != 1 || f.ConstantsHeaderSize() <= 0 {
			t.Errorf("version %q, %d segments, header %d", f.Version(), len(f.Segments()), f.ConstantsHeaderSize())
		}
		var sb strings.Builder
		if err := f.ReportText(&sb); err != nil || !strings.Contains(sb.String(), `method "forward": 6 constants (1 mutated), 4 read by its nodes, 1 mutable buffers`) {
			t.Errorf("ReportText: %q, %v", sb.String(), err)
		}
		js, err := json.Marshal(f.ReportFields()[2].Value)
		if err != nil || string(js) != `{"linear.weight2":"linear.weight"}` {
			t.Errorf("aliases report %s, %v", js, err)
		}
	}
}

// TestNoConstants: a package of program.ptg alone is valid.
func TestNoConstants(t *testing.T) {
	p := &ptnfb.ProgramT{Version: "1", Methods: []*ptnfb.MethodT{{Name: "forward", Graph: &ptnfb.GraphT{Nodes: placeholders("x")}}}}
	f, err := ptn.NewFile(mmapfile.NewBytes(zipOf(t, member{name: ptn.GraphMember, data: ptg(p)})))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumTensors() != 0 || len(f.Segments()) != 0 || f.ConstantsHeaderSize() != -1 {
		t.Errorf("%d tensors, %d segments", f.NumTensors(), len(f.Segments()))
	}
}

// TestRefuses: each way a package can be wrong.
func TestRefuses(t *testing.T) {
	prog := ptg(testProgram())
	consts := constantsFile(t)
	al := aliasesJSON(map[string]string{"linear.weight2": "linear.weight"})
	missingKey := testProgram()
	missingKey.Methods[1].Constants[0].DataKey = "nope"
	missingQuant := testProgram()
	missingQuant.Methods[1].Constants[0].Meta.Quant.Scheme.Value.(*ptnfb.AffineGroupT).ScaleDataKey = "nope"
	badID := ptg(testProgram())
	copy(badID[4:], "XXXX")
	twoMethods := testProgram()
	twoMethods.Methods[1].Name = "forward"
	cases := []struct {
		name string
		file []byte
		is   error
		msg  string
	}{
		{"compressed", zipOf(t, member{name: ptn.GraphMember, data: prog, method: zip.Deflate}), ptn.ErrCompressed, "compressed"},
		{"compressed extra", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: "x", data: prog, method: zip.Deflate}), ptn.ErrCompressed, "compressed"},
		{"no graph", zipOf(t, member{name: ptn.ConstantsMember, data: consts}), format.ErrMalformed, "no program.ptg"},
		{"aliases alone", zipOf(t, member{name: ptn.GraphMember, data: ptg(&ptnfb.ProgramT{Methods: []*ptnfb.MethodT{}})}, member{name: ptn.AliasesMember, data: []byte("{}")}), format.ErrMalformed, "without"},
		{"alias of nothing", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: aliasesJSON(map[string]string{"linear.weight2": "nope"})}), format.ErrMalformed, "not a key"},
		{"alias is a key", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: aliasesJSON(map[string]string{"linear.bias": "linear.weight", "linear.weight2": "linear.weight"})}), format.ErrMalformed, "is a key"},
		{"alias twice", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: []byte(`{"a":"cache","a":"cache"}`)}), format.ErrMalformed, "twice"},
		{"aliases not strings", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: []byte(`{"a":1}`)}), format.ErrMalformed, "not a string"},
		{"data key missing", zipOf(t, member{name: ptn.GraphMember, data: ptg(missingKey)}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: al}), format.ErrMalformed, `"nope"`},
		{"quant key missing", zipOf(t, member{name: ptn.GraphMember, data: ptg(missingQuant)}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: al}), format.ErrMalformed, `"nope"`},
		{"identifier", zipOf(t, member{name: ptn.GraphMember, data: badID}), format.ErrUnknownFormat, "identifier"},
		{"method twice", zipOf(t, member{name: ptn.GraphMember, data: ptg(twoMethods)}, member{name: ptn.ConstantsMember, data: consts}, member{name: ptn.AliasesMember, data: al}), format.ErrMalformed, "twice"},
		{"bad constants", zipOf(t, member{name: ptn.GraphMember, data: prog}, member{name: ptn.ConstantsMember, data: consts[:len(consts)-1]}), format.ErrTruncated, "program.safetensors"},
		{"not a zip", []byte("PK\x03\x04 hello"), format.ErrMalformed, "zip"},
	}
	for _, c := range cases {
		_, err := ptn.NewFile(mmapfile.NewBytes(c.file))
		var fe *format.FormatError
		if err == nil || !errors.Is(err, c.is) || !errors.As(err, &fe) || fe.Format != "ptn" || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want a ptn FormatError wrapping %v saying %q", c.name, err, c.is, c.msg)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestTiny reads testdata/tiny.ptn, which Python's zipfile wrote as
// ExecuTorch's writer does (testdata/gen_tiny.py): every tensor at the
// offset, with the bytes, the generator computed from the zip's local
// header; the use order derived by hand from testdata/tiny.json.
func TestTiny(t *testing.T) {
	b, err := os.ReadFile("testdata/tiny.ptn")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		DType  string  `json:"dtype"`
		Shape  []int64 `json:"shape"`
		Offset int64   `json:"offset"`
		NBytes int64   `json:"nbytes"`
		SHA256 string  `json:"sha256"`
	}
	e, err := os.ReadFile("testdata/tiny.expected.json")
	if err != nil || json.Unmarshal(e, &want) != nil {
		t.Fatal(err)
	}
	mf, err := mmapfile.Open("testdata/tiny.ptn")
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	if !ptn.Sniff(b) {
		t.Error("Sniff refuses tiny.ptn")
	}
	f, err := ptn.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if f.NumTensors() != len(want) {
		t.Errorf("%d tensors, want %d", f.NumTensors(), len(want))
	}
	for name, w := range want {
		i, ok := f.Lookup(name)
		if !ok {
			t.Errorf("%q missing", name)
			continue
		}
		g := f.TensorAt(i)
		sum, err := g.Data.SHA256()
		if err != nil || hex.EncodeToString(sum[:]) != w.SHA256 || g.Offset != w.Offset || g.NBytes != w.NBytes ||
			safetensors.Code(g.DType) != w.DType || !slices.Equal(g.Shape, w.Shape) {
			t.Errorf("%q: %v %v at %d, %d bytes; want %+v", name, g.DType, g.Shape, g.Offset, g.NBytes, w)
		}
	}
	o, err := f.UseOrder("forward")
	var names []string
	for _, i := range o {
		names = append(names, f.TensorAt(i).Name)
	}
	if err != nil || !slices.Equal(names, []string{"w2", "b", "w", "step"}) {
		t.Errorf("use order %v, %v", names, err)
	}
	m, _ := f.Method("forward")
	if m == nil || len(m.MutableBuffers) != 1 || m.MutableBuffers[0].FQN != "kv_cache" || !m.Constants[3].Mutated {
		t.Errorf("forward: %+v", m)
	}
}
