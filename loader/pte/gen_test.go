package pte_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// genBytes writes w in memory.
func genBytes(t testing.TB, w *writer.PTE) []byte {
	t.Helper()
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openGen writes w to a temporary file and opens it.
func openGen(t testing.TB, w *writer.PTE, opts ...pte.Option) (*pte.Program, writer.PTELayoutInfo) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gen.pte")
	info, err := w.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mapOpen(t, path, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, info
}

// richProgram has a bit of everything a program can hold.
func richProgram() *writer.PTE {
	return &writer.PTE{
		Methods: []writer.PTEMethod{
			{
				Name: "forward",
				Tensors: []writer.PTETensor{
					{ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}, Data: hostile.F32(1, 2, 3, 4), Name: "layer.weight"},
					{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{2}},
					{ScalarType: writer.PTEInt64, Sizes: []int32{3}, Data: []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}},
					{Kind: writer.PTEMutable, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(5, 6), Name: "cache"},
					{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Name: "ext.w"},
					{ScalarType: writer.PTEFloat16, Sizes: []int32{2, 3}, DimOrder: []uint8{1, 0}, Data: make([]byte, 12)},
				},
				Values: []writer.PTEValue{
					{Kind: writer.PTENull},
					{Kind: writer.PTEInt, Int: -7},
					{Kind: writer.PTEBool, Bool: true},
					{Kind: writer.PTEDouble, Double: 2.5},
					{Kind: writer.PTEString, String: "hello"},
					{Kind: writer.PTEIntList, Ints: []int64{1, 2, 3}},
					{Kind: writer.PTEDoubleList, Doubles: []float64{0.5}},
					{Kind: writer.PTEBoolList, Bools: []bool{true, false}},
					{Kind: writer.PTETensorList, Items: []int32{0, 1}},
					{Kind: writer.PTEOptionalTensorList, Items: []int32{-1, 2}},
				},
				Inputs:    []int32{1},
				Outputs:   []int32{1},
				Operators: []string{"aten::add.out"},
				Delegates: []writer.PTEDelegate{
					{ID: "XnnpackBackend", CompileSpecs: []writer.PTECompileSpec{{Key: "threads", Value: []byte{4}}}, Blob: writer.PTEBlob{Data: []byte("segment-blob")}},
					{ID: "Inline", Inline: true, Blob: writer.PTEBlob{Data: []byte("inline-blob")}},
				},
				NonConstBufferSizes: []int64{0, 64},
				EncodedInputs:       "in-spec",
				EncodedOutputs:      "out-spec",
			},
			{
				Name: "second",
				Tensors: []writer.PTETensor{
					{ScalarType: writer.PTEInt8, Sizes: []int32{5}, Data: []byte{1, 2, 3, 4, 5}},
				},
				Delegates: []writer.PTEDelegate{
					// shares the first method's delegate segment (segment 2:
					// constant 0, mutable 1, then delegates)
					{ID: "XnnpackBackend", Blob: writer.PTEBlob{Ref: 3}},
				},
			},
		},
		NamedData: []writer.PTEBlob{{Key: "sha-abc", Data: []byte("named!")}, {Key: "sha-def", Size: 100}},
	}
}

func TestGeneratedRich(t *testing.T) {
	w := richProgram()
	p, info := openGen(t, w)
	if h := p.Header(); !h.Extended || h.Length != 32 || !h.SegmentDataSizeKnown || h.ProgramSize != info.ProgramSize ||
		h.SegmentBase != info.SegmentBase || h.SegmentDataSize != info.SegmentDataSize || h.Identifier != "ET12" {
		t.Errorf("header %+v, writer %+v", h, info)
	}
	segs := p.Segments()
	if len(segs) != len(info.Segments) {
		t.Fatalf("%d segments, writer wrote %d", len(segs), len(info.Segments))
	}
	for i, s := range segs {
		if s.Offset() != info.Segments[i][0] || s.Len() != info.Segments[i][1] || s.Offset()%128 != 0 {
			t.Errorf("segment %d: %v, writer %v", i, s, info.Segments[i])
		}
	}
	// Tensors: constant, constant, mutable, external, constant (forward),
	// then the second method's constant.
	want := []struct {
		name     string
		explicit bool
		loc      format.Location
		dtype    format.DType
		value    int
		data     []byte
	}{
		{"layer.weight", true, format.LocSegment, format.Float32, 0, hostile.F32(1, 2, 3, 4)},
		{"forward/values/2", false, format.LocSegment, format.Int64, 2, w.Methods[0].Tensors[2].Data},
		{"cache", true, format.LocMutable, format.Float32, 3, hostile.F32(5, 6)},
		{"ext.w", true, format.LocExternal, format.Float32, 4, nil},
		{"forward/values/5", false, format.LocSegment, format.Float16, 5, make([]byte, 12)},
		{"second/values/0", false, format.LocSegment, format.Int8, 0, []byte{1, 2, 3, 4, 5}},
	}
	ts := p.Tensors()
	if len(ts) != len(want) {
		t.Fatalf("%d tensors, want %d", len(ts), len(want))
	}
	for i, wt := range want {
		g := &ts[i]
		if g.Name != wt.name || g.NameExplicit != wt.explicit || g.Location != wt.loc || g.DType != wt.dtype || g.Value != wt.value {
			t.Errorf("tensor %d: %q %v %s %s value %d, want %+v", i, g.Name, g.NameExplicit, g.Location, g.DType, g.Value, wt)
			continue
		}
		if wt.loc == format.LocExternal {
			if g.Offset != -1 || g.Data.Len() != 0 || g.NBytes != 16 {
				t.Errorf("external tensor: offset %d data %d nbytes %d", g.Offset, g.Data.Len(), g.NBytes)
			}
			continue
		}
		b, err := g.Data.Bytes()
		if err != nil || !bytes.Equal(b, wt.data) || g.NBytes != int64(len(wt.data)) {
			t.Errorf("tensor %q: bytes %v (%v), want %v", g.Name, b, err, wt.data)
		}
		m := 0
		if g.Method == "second" {
			m = 1
		}
		if g.Offset != info.Tensors[m][g.Value].Offset {
			t.Errorf("tensor %q at %d, writer put it at %d", g.Name, g.Offset, info.Tensors[m][g.Value].Offset)
		}
	}
	if got := ts[4].DimOrder; len(got) != 2 || got[0] != 1 || got[1] != 0 {
		t.Errorf("dim order %v", got)
	}
	if tt, ok := p.Tensor("cache"); !ok || tt.Location != format.LocMutable {
		t.Errorf("Tensor(cache) = %v, %v", tt, ok)
	}
	if tt, ok := p.ValueTensor("forward", 2); !ok || tt.Name != "forward/values/2" {
		t.Errorf("TensorAt(forward, 2) = %v, %v", tt, ok)
	}
	if _, ok := p.ValueTensor("forward", 1); ok {
		t.Error("TensorAt of a planned activation found a tensor")
	}
	if _, ok := p.ValueTensor("forward", 1000); ok {
		t.Error("TensorAt out of range found a tensor")
	}
	if _, ok := p.ValueTensor("nope", 0); ok {
		t.Error("TensorAt of an unknown method found a tensor")
	}
	if total, unresolved := p.External(); total != 1 || unresolved != 1 {
		t.Errorf("External() = %d, %d", total, unresolved)
	}

	// Values and methods.
	m, ok := p.Method("forward")
	if !ok || m.Index != 0 || len(p.Methods()) != 2 {
		t.Fatalf("Method(forward) = %v, %v", m, ok)
	}
	kinds := []pte.ValueKind{pte.KindTensor, pte.KindTensor, pte.KindTensor, pte.KindTensor, pte.KindTensor, pte.KindTensor,
		pte.KindNull, pte.KindInt, pte.KindBool, pte.KindDouble, pte.KindString, pte.KindIntList, pte.KindDoubleList,
		pte.KindBoolList, pte.KindTensorList, pte.KindOptionalTensorList}
	v, err := m.Values()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != len(kinds) || m.NumValues() != len(kinds) {
		t.Fatalf("%d values (NumValues %d), want %d", len(v), m.NumValues(), len(kinds))
	}
	for i, k := range kinds {
		if v[i].Kind != k {
			t.Errorf("value %d: kind %s, want %s", i, v[i].Kind, k)
		}
	}
	if _, err := m.Value(len(kinds)); err == nil {
		t.Errorf("Value(%d) of %d values: no error", len(kinds), len(kinds))
	}
	if v[7].Int != -7 || !v[8].Bool || v[9].Double != 2.5 || v[10].String != "hello" || len(v[11].Ints) != 3 || v[11].Ints[2] != 3 ||
		v[12].Doubles[0] != 0.5 || !v[13].Bools[0] || v[13].Bools[1] || v[14].Items[1] != 1 || v[15].Items[0] != -1 {
		t.Errorf("scalar values read back wrong: %+v", v[6:])
	}
	if tv := v[1].Tensor; tv == nil || !tv.Planned || tv.Location != format.LocNone || tv.Tensor != -1 || tv.DType != format.Float32 {
		t.Errorf("planned tensor value: %+v", tv)
	}
	if tv := v[0].Tensor; tv.Tensor != 0 || tv.FullyQualifiedName != "layer.weight" || tv.DataBufferIndex != 1 {
		t.Errorf("constant tensor value: %+v", tv)
	}
	if m.EncodedInputs != "in-spec" || m.EncodedOutputs != "out-spec" || len(m.Operators) != 1 || m.Operators[0].Name != "aten::add.out" ||
		len(m.NonConstBufferSizes) != 2 || m.NonConstBufferSizes[1] != 64 || len(m.Chains) != 1 || m.Chains[0].Instructions != 3 {
		t.Errorf("method metadata: %+v", m)
	}

	// Delegates: a segment blob, an inline blob, and the second method's
	// delegate sharing the first's segment.
	ds := p.Delegates()
	if len(ds) != 3 {
		t.Fatalf("%d delegates, want 3", len(ds))
	}
	for i, wd := range []struct {
		method, id string
		loc        pte.DelegateLocation
		data       string
	}{{"forward", "XnnpackBackend", pte.DelegateSegment, "segment-blob"}, {"forward", "Inline", pte.DelegateInline, "inline-blob"}, {"second", "XnnpackBackend", pte.DelegateSegment, "segment-blob"}} {
		d := ds[i]
		b, err := d.Data.Bytes()
		if d.Method != wd.method || d.ID != wd.id || d.Location != wd.loc || err != nil || string(b) != wd.data {
			t.Errorf("delegate %d: %s %s %s %q (%v), want %+v", i, d.Method, d.ID, d.Location, b, err, wd)
		}
	}
	if ds[0].Data.Offset() != ds[2].Data.Offset() || ds[0].SegmentIndex != 2 || ds[1].SegmentIndex != -1 {
		t.Errorf("shared delegate segment: %v vs %v", ds[0].Data, ds[2].Data)
	}
	if ds[1].Data.Offset() != info.Delegates[0][1].Offset {
		t.Errorf("inline delegate at %d, writer put it at %d", ds[1].Data.Offset(), info.Delegates[0][1].Offset)
	}
	if len(ds[0].CompileSpecs) != 1 || ds[0].CompileSpecs[0].Key != "threads" || !bytes.Equal(ds[0].CompileSpecs[0].Value, []byte{4}) {
		t.Errorf("compile specs %+v", ds[0].CompileSpecs)
	}
	if err := ds[0].Data.Release(); err != nil {
		t.Errorf("release delegate data: %v", err)
	}
	if b, _ := ds[0].Data.Bytes(); string(b) != "segment-blob" {
		t.Errorf("delegate data after Release: %q", b)
	}

	// Named data.
	nd := p.NamedData()
	if len(nd) != 2 {
		t.Fatalf("%d named data", len(nd))
	}
	e, ok := p.NamedDataByKey("sha-abc")
	if b, _ := e.Data.Bytes(); !ok || string(b) != "named!" || e.Data.Offset() != info.NamedData[0].Offset {
		t.Errorf("NamedDataByKey(sha-abc) = %q, %v", b, ok)
	}
	if e, ok := p.NamedDataByKey("sha-def"); !ok || e.Data.Len() != 100 {
		t.Errorf("NamedDataByKey(sha-def) = %+v, %v", e, ok)
	}
	if _, ok := p.NamedDataByKey("missing"); ok {
		t.Error("found a missing key")
	}
}

// TestGeneratedHeader24: a 24-byte extended header has no segment data
// size; segments are checked against the file.
func TestGeneratedHeader24(t *testing.T) {
	w := &writer.PTE{HeaderLength: 24, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEFloat32, Sizes: []int32{3}, Data: hostile.F32(1, 2, 3)},
	}}}}
	raw := genBytes(t, w)
	p, err := pte.NewFile(mmapfile.NewBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	h := p.Header()
	if h.Length != 24 || h.SegmentDataSizeKnown || h.SegmentBase == 0 {
		t.Errorf("header %+v", h)
	}
	got, _, err := p.Tensors()[0].Data.Float32()
	if err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("tensor %v %v", got, err)
	}
	// Cut the file inside the constant segment: the segment check must say
	// the file is truncated.
	_, err = pte.NewFile(mmapfile.NewBytes(raw[:len(raw)-4]))
	if !errors.Is(err, format.ErrTruncated) {
		t.Errorf("truncated 24-byte-header file: %v, want ErrTruncated", err)
	}
}

// TestGeneratedHeaderLonger: a header longer than 32 bytes is accepted and
// its later fields ignored.
func TestGeneratedHeaderLonger(t *testing.T) {
	w := &writer.PTE{HeaderLength: 48, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEInt32, Sizes: []int32{1}, Data: []byte{9, 0, 0, 0}},
	}}}}
	p, err := pte.NewFile(mmapfile.NewBytes(genBytes(t, w)))
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Header(); h.Length != 48 || !h.SegmentDataSizeKnown {
		t.Errorf("header %+v", h)
	}
}

func TestGeneratedNoHeader(t *testing.T) {
	w := &writer.PTE{NoHeader: true, Methods: []writer.PTEMethod{{Name: "forward"}}}
	raw := genBytes(t, w)
	p, err := pte.NewFile(mmapfile.NewBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	if h := p.Header(); h.Extended || h.ProgramSize != int64(len(raw)) || h.SegmentBase != 0 {
		t.Errorf("header %+v", h)
	}
	if s := p.Segments(); len(s) != 1 || s[0].Len() != 0 || s[0].Offset() != 0 {
		t.Errorf("segments %v", s)
	}
}

func TestGeneratedSegmentAlignment16K(t *testing.T) {
	w := &writer.PTE{SegmentAlignment: 16384, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(1, 2)},
		{Kind: writer.PTEMutable, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(3, 4)},
	}}}, NamedData: []writer.PTEBlob{{Key: "k", Data: []byte("x")}}}
	p, _ := openGen(t, w)
	if len(p.Segments()) != 3 {
		t.Fatalf("%d segments", len(p.Segments()))
	}
	for i, s := range p.Segments() {
		if s.Offset()%16384 != 0 {
			t.Errorf("segment %d at %d: not 16 KiB aligned", i, s.Offset())
		}
	}
	for i, want := range [][]float32{{1, 2}, {3, 4}} {
		got, _, err := p.Tensors()[i].Data.Float32()
		if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("tensor %d: %v %v", i, got, err)
		}
	}
}

func TestGeneratedLegacyInline(t *testing.T) {
	w := &writer.PTE{Legacy: true, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(7, 8)},
	}}}}
	raw := genBytes(t, w)
	p, err := pte.NewFile(mmapfile.NewBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	tt := p.Tensors()[0]
	if !p.Legacy() || tt.Location != format.LocInline || tt.Offset+8 > p.Header().ProgramSize {
		t.Fatalf("legacy tensor %+v", tt)
	}
	if !bytes.Equal(raw[tt.Offset:tt.Offset+8], hostile.F32(7, 8)) {
		t.Errorf("offset %d does not hold the tensor's bytes", tt.Offset)
	}
	if b, _ := tt.Data.Bytes(); !bytes.Equal(b, hostile.F32(7, 8)) {
		t.Errorf("view %v", b)
	}
}

// TestGeneratedVersionAndIdentifier: unknown ET digits and a newer
// Program.version are unsupported versions; other identifiers are not
// programs.
func TestGeneratedVersionAndIdentifier(t *testing.T) {
	base := func() *writer.PTE { return &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward"}}} }
	for _, tc := range []struct {
		mod      func(*writer.PTE)
		sentinel error
		text     string
	}{
		{func(w *writer.PTE) { w.Identifier = "ET13" }, format.ErrUnsupportedVersion, `"ET13"`},
		{func(w *writer.PTE) { w.Identifier = "ET99" }, format.ErrUnsupportedVersion, `"ET99"`},
		{func(w *writer.PTE) { w.Identifier = "BP08" }, format.ErrUnknownFormat, `not an ExecuTorch program (identifier "BP08" at offset 4)`},
		{func(w *writer.PTE) { w.Identifier = "E\x00\x01T" }, format.ErrUnknownFormat, `"E\x00\x01T"`},
		{func(w *writer.PTE) { w.Version = 1 }, format.ErrUnsupportedVersion, "version 1"},
	} {
		w := base()
		tc.mod(w)
		_, err := pte.NewFile(mmapfile.NewBytes(genBytes(t, w)))
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("got %v, want %v mentioning %s", err, tc.sentinel, tc.text)
		}
		var fe *format.FormatError
		if !errors.As(err, &fe) || fe.Format != "pte" {
			t.Errorf("%v is not a pte *FormatError", err)
		}
	}
}

// TestGeneratedSemanticErrors: every index and range the loader checks,
// broken one at a time, fails Open (or, for an instruction, the method's
// check) with an error naming the field.
func TestGeneratedSemanticErrors(t *testing.T) {
	one := func(mod func(m *writer.PTEMethod, w *writer.PTE)) *writer.PTE {
		w := &writer.PTE{Methods: []writer.PTEMethod{{
			Name: "forward",
			Tensors: []writer.PTETensor{
				{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(1, 2)},
				{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{2}},
			},
			Inputs: []int32{1}, Outputs: []int32{1}, Operators: []string{"op"},
			Delegates: []writer.PTEDelegate{{ID: "d", Blob: writer.PTEBlob{Data: []byte{1}}}},
		}}}
		mod(&w.Methods[0], w)
		return w
	}
	for _, tc := range []struct {
		name  string
		w     *writer.PTE
		field string
		text  string
	}{
		{"data_buffer_idx", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[0].BufferRef = 5 }), "values[0].val.data_buffer_idx", "out of range"},
		{"legacy data_buffer_idx", one(func(m *writer.PTEMethod, w *writer.PTE) { w.Legacy = true; m.Tensors[0].BufferRef = 9 }), "data_buffer_idx", "out of range"},
		{"mutable without segments", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].BufferRef = 1 }), "data_buffer_idx", "no mutable_data_segments"},
		{"tensor past segment", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[0].Sizes = []int32{3} }), "data_buffer_idx", "outside its"},
		{"legacy storage too small", one(func(m *writer.PTEMethod, w *writer.PTE) { w.Legacy = true; m.Tensors[0].Sizes = []int32{3} }), "storage", "holds 8"},
		{"reserved scalar type", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].ScalarType = 9 }), "values[1].val.scalar_type", "COMPLEXFLOAT"},
		{"bits scalar type", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].ScalarType = 20 }), "scalar_type", "reserved"},
		{"unknown scalar type", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].ScalarType = 30 }), "scalar_type", "not an ExecuTorch ScalarType"},
		{"negative size", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].Sizes = []int32{2, -1} }), "sizes[1]", "negative"},
		{"numel overflow", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Tensors[0].Sizes = []int32{math.MaxInt32, math.MaxInt32, math.MaxInt32}
			m.Tensors[0].Size = 8
		}), "sizes", "overflows"},
		{"dim order", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Tensors[1].Sizes = []int32{2, 2}
			m.Tensors[1].DimOrder = []uint8{1, 1}
		}), "dim_order[1]", "permutation"},
		{"dim order length", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].DimOrder = []uint8{0, 1} }), "dim_order", "entries for 1 sizes"},
		{"input", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Inputs = []int32{2} }), "execution_plan[0].inputs[0]", "out of range"},
		{"output", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Outputs = []int32{-1} }), "outputs[0]", "out of range"},
		{"tensor list", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Values = []writer.PTEValue{{Kind: writer.PTETensorList, Items: []int32{0, 3}}}
		}), "values[2].val.items[1]", "out of range"},
		{"optional tensor list", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Values = []writer.PTEValue{{Kind: writer.PTEOptionalTensorList, Items: []int32{-2}}}
		}), "items[0]", "out of range"},
		{"op_index", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEKernelCall, A: 1}}
		}), "instructions[0].instr_args.op_index", "out of range"},
		{"kernel args", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEKernelCall, Args: []int32{0, 7}}}
		}), "instr_args.args[1]", "out of range"},
		{"delegate_index", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEDelegateCall, A: 1}}
		}), "delegate_index", "out of range"},
		{"move", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEMoveCall, A: 0, B: 2}}
		}), "move_to", "out of range"},
		{"jump cond", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEJumpFalseCall, A: 5}}
		}), "cond_value_index", "out of range"},
		{"jump destination", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEJumpFalseCall, A: 0, B: 2}}
		}), "destination_instruction", "out of range"},
		{"free", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Instructions = []writer.PTEInstruction{{Kind: writer.PTEFreeCall, A: -1}}
		}), "value_index", "out of range"},
		{"delegate segment", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Delegates[0].Blob = writer.PTEBlob{Ref: 10} }), "processed.index", "out of range"},
		{"delegate inline", one(func(m *writer.PTEMethod, _ *writer.PTE) {
			m.Delegates[0].Inline = true
			m.Delegates[0].Blob = writer.PTEBlob{Ref: 1}
		}), "processed.index", "backend_delegate_data has 0"},
		{"named data", one(func(_ *writer.PTEMethod, w *writer.PTE) { w.NamedData = []writer.PTEBlob{{Key: "k", Ref: 3}} }), "named_data[0].segment_index", "out of range"},
		{"external without name", one(func(m *writer.PTEMethod, _ *writer.PTE) { m.Tensors[1].Kind = writer.PTEExternal }), "fully_qualified_name", "no fully-qualified name"},
		{"duplicate method", one(func(m *writer.PTEMethod, w *writer.PTE) {
			w.Methods = append(w.Methods, writer.PTEMethod{Name: "forward"})
		}), "execution_plan[1].name", "repeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openChecked(genBytes(t, tc.w))
			var fe *format.FormatError
			if !errors.As(err, &fe) || !errors.Is(err, format.ErrMalformed) {
				t.Fatalf("got %v, want a malformed-file *FormatError", err)
			}
			if !strings.Contains(fe.Field, tc.field) || !strings.Contains(fe.Msg, tc.text) {
				t.Errorf("got %q, want field ~%q and message ~%q", err, tc.field, tc.text)
			}
		})
	}
}

// TestGeneratedHeaderErrors corrupts the extended header field by field.
func TestGeneratedHeaderErrors(t *testing.T) {
	w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEFloat32, Sizes: []int32{64}},
	}}}}
	good := genBytes(t, w)
	if _, err := pte.NewFile(mmapfile.NewBytes(good)); err != nil {
		t.Fatal(err)
	}
	put32 := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	put64 := func(off int, v uint64) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint64(b[off:], v)
		return b
	}
	size := uint64(len(good))
	ps := binary.LittleEndian.Uint64(good[16:])
	base := binary.LittleEndian.Uint64(good[24:])
	for _, tc := range []struct {
		name     string
		b        []byte
		sentinel error
		text     string
	}{
		{"short length", put32(12, 16), format.ErrMalformed, "shorter than the minimum"},
		{"huge length", put32(12, math.MaxUint32), format.ErrTruncated, "past the end"},
		{"program size small", put64(16, 8), format.ErrMalformed, "smaller than the headers"},
		{"program size past file", put64(16, size+1), format.ErrTruncated, "exceeds the file"},
		{"base inside program", put64(24, ps-16), format.ErrMalformed, "inside the program"},
		{"base past file", put64(24, size+128), format.ErrTruncated, "past the end"},
		{"data size past file", put64(32, size), format.ErrTruncated, "truncated"},
		{"data size overflow", put64(32, math.MaxUint64), format.ErrMalformed, "overflow"},
		{"data size small", put64(32, 1), format.ErrMalformed, "ends past the segment data"},
		{"segment base without data", put64(24, 0), format.ErrMalformed, "declares no segment data"},
		{"truncated file", good[:size-1], format.ErrTruncated, "truncated"},
		{"cut in program", good[:ps-1], format.ErrTruncated, "program_size"},
		{"cut in header", good[:20], format.ErrTruncated, "extended header"},
		{"tiny", good[:5], format.ErrTruncated, "shorter than the 8-byte"},
	} {
		_ = base
		t.Run(tc.name, func(t *testing.T) {
			_, err := pte.NewFile(mmapfile.NewBytes(tc.b))
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("got %v, want %v mentioning %q", err, tc.sentinel, tc.text)
			}
		})
	}
}

// TestSegmentOverflow: a segment offset that wraps the 64-bit sum is an
// error, not a wrapped-around view.
func TestSegmentOverflow(t *testing.T) {
	w := &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
		{ScalarType: writer.PTEUint8, Sizes: []int32{1}, Data: []byte{0xAB}},
	}}}}
	raw := genBytes(t, w)
	p, err := pte.NewFile(mmapfile.NewBytes(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Find the DataSegment size field (the u64 1) and the offset field
	// before it is absent (0); patch the size to 2^64-1.
	segOff := p.Segments()[0]
	_ = segOff
	idx := bytes.Index(raw[:p.Header().ProgramSize], []byte{1, 0, 0, 0, 0, 0, 0, 0})
	for idx >= 0 && idx < 40 { // skip the header
		next := bytes.Index(raw[idx+1:p.Header().ProgramSize], []byte{1, 0, 0, 0, 0, 0, 0, 0})
		if next < 0 {
			idx = -1
			break
		}
		idx += 1 + next
	}
	if idx < 0 {
		t.Skip("size field not found")
	}
	b := bytes.Clone(raw)
	binary.LittleEndian.PutUint64(b[idx:], math.MaxUint64)
	if _, err := pte.NewFile(mmapfile.NewBytes(b)); !errors.Is(err, format.ErrMalformed) || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("got %v, want an overflow error", err)
	}
}

// TestReservedScalarTypes checks DTypeOf over the whole int8 range.
func TestReservedScalarTypes(t *testing.T) {
	known := 0
	for st := math.MinInt8; st <= math.MaxInt8; st++ {
		d, err := pte.DTypeOf(int8(st))
		reserved := (st >= 8 && st <= 10) || (st >= 18 && st <= 21)
		valid := st >= 0 && st <= 29 && !reserved
		if valid != (err == nil) {
			t.Errorf("DTypeOf(%d) = %v, %v", st, d, err)
		}
		if err == nil {
			known++
			if back, ok := pte.ScalarTypeOf(d); !ok || back != int8(st) || !d.Valid() {
				t.Errorf("ScalarTypeOf(%s) = %d, %v", d, back, ok)
			}
		} else if !errors.Is(err, format.ErrMalformed) {
			t.Errorf("DTypeOf(%d): %v does not wrap ErrMalformed", st, err)
		}
		if reserved && (err == nil || !strings.Contains(err.Error(), "reserved")) {
			t.Errorf("DTypeOf(%d) = %v: want a reserved-type error", st, err)
		}
	}
	if known != 23 {
		t.Errorf("%d known scalar types, want 23", known)
	}
	for st, want := range map[int8]format.DType{0: format.Uint8, 6: format.Float32, 15: format.BFloat16, 16: format.QUInt4x2, 29: format.Uint64} {
		if d, _ := pte.DTypeOf(st); d != want {
			t.Errorf("DTypeOf(%d) = %s, want %s", st, d, want)
		}
	}
}

// TestNewFileAndClose: a program's Close leaves its file to the caller
// (views still read); the caller's Close of the file ends the views.
func TestNewFileAndClose(t *testing.T) {
	w := richProgram()
	path := filepath.Join(t.TempDir(), "p.pte")
	if _, err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	p, err := mapOpen(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mf := p.MappedFile()
	if p.Name() != path {
		t.Errorf("Name() = %q", p.Name())
	}
	p2, err := pte.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Tensors()[0].Data.Bytes(); err != nil {
		t.Errorf("closing a NewFile program closed the file: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := p.Tensors()[0].Data.Bytes(); err != nil {
		t.Errorf("view after the program's Close: %v, want the bytes (the file is open)", err)
	}
	mf.Close()
	if _, err := p.Tensors()[0].Data.Bytes(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("view after the file's Close: %v, want ErrClosed", err)
	}
	if err := p.Link(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("Link after Close: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
