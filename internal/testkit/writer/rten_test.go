package writer_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// rtenRebuild turns a loaded model back into a writer description: every
// node (constants with their bytes and placement, values with their shapes
// and dtypes, operators with their types and references), graph inputs and
// outputs, and metadata. Operator attributes other than subgraphs are not
// carried (the loader does not decode them).
func rtenRebuild(t *testing.T, m *rten.Model) *writer.RTen {
	t.Helper()
	var graph func(g *rten.Graph) *writer.RTenGraph
	graph = func(g *rten.Graph) *writer.RTenGraph {
		out := &writer.RTenGraph{Nodes: make([]writer.RTenNode, len(g.Nodes)),
			Inputs: g.Inputs, Outputs: g.Outputs, Captures: g.Captures}
		for i, n := range g.Nodes {
			w := &out.Nodes[i]
			w.Name = n.Name
			switch n.Kind {
			case rten.KindConstant:
				c := n.Constant
				data, err := c.Data.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				shape := make([]uint32, len(c.Shape))
				for j, d := range c.Shape {
					shape[j] = uint32(d)
				}
				w.Constant = &writer.RTenConstant{DType: c.DType, Shape: shape, Inline: c.Location == format.LocInline, Data: data}
			case rten.KindValue:
				v := &writer.RTenValue{}
				if n.Value.HasShape {
					v.Shape = []writer.RTenDim{}
					for _, d := range n.Value.Shape {
						v.Shape = append(v.Shape, writer.RTenDim{Value: d.Value, Name: d.Name})
					}
				}
				if n.Value.HasDType {
					v.DType = n.Value.DType
				}
				w.Value = v
			case rten.KindOperator:
				o := &writer.RTenOperator{Type: uint8(n.Op.Type), AttrsType: n.Op.AttrsType, Inputs: n.Op.Inputs, Outputs: n.Op.Outputs}
				for _, s := range n.Op.Subgraphs {
					switch s.Attr {
					case "then_branch":
						o.Then = graph(s.Graph)
					case "else_branch":
						o.Else = graph(s.Graph)
					case "body":
						o.Body = graph(s.Graph)
					}
				}
				w.Operator = o
			}
		}
		return out
	}
	md := m.Metadata()
	return &writer.RTen{
		Graph: *graph(m.Graph()),
		Metadata: &writer.RTenMetadata{ONNXHash: md.ONNXHash, Description: md.Description, License: md.License,
			Commit: md.Commit, CodeRepository: md.CodeRepository, ModelRepository: md.ModelRepository,
			RunID: md.RunID, RunURL: md.RunURL},
	}
}

// TestRTenRebuildMNIST rebuilds the real mnist-v2.rten (written by
// rten-convert) through the writer and checks that the loader reads back
// the same constants (names, dtypes, shapes, placement, the same
// data_offset values, since both align to 64, and the same bytes), the
// same graph and metadata. The V1 rebuild must match mnist-v1.rten's
// expected values.
func TestRTenRebuildMNIST(t *testing.T) {
	orig, err := rten.NewFile(mapFile(t, testmodels.Path(t, "rten/mnist-v2.rten")))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	w := rtenRebuild(t, orig)
	p := filepath.Join(t.TempDir(), "mnist-rebuilt.rten")
	info, err := w.WriteFile(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := rten.NewFile(mapFile(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	oc, bc := orig.Constants(), back.Constants()
	if len(oc) != len(bc) || len(bc) != 10 {
		t.Fatalf("%d constants back, %d in the original", len(bc), len(oc))
	}
	for i := range oc {
		o, b := &oc[i], &bc[i]
		osum, err1 := o.Data.SHA256()
		bsum, err2 := b.Data.SHA256()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if o.Name != b.Name || o.NameExplicit != b.NameExplicit || o.DType != b.DType || !reflect.DeepEqual(o.Shape, b.Shape) ||
			o.Location != b.Location || o.NBytes != b.NBytes || o.DataOffset != b.DataOffset || osum != bsum {
			t.Errorf("constant %d: rebuilt %s %v %v %v %d data_offset %d, original %s %v %v %v %d data_offset %d (same bytes %v)",
				i, b.Name, b.DType, b.Shape, b.Location, b.NBytes, b.DataOffset,
				o.Name, o.DType, o.Shape, o.Location, o.NBytes, o.DataOffset, osum == bsum)
		}
		if b.Offset != info.Constants[i].Offset {
			t.Errorf("%s read at %d, writer placed it at %d", b.Name, b.Offset, info.Constants[i].Offset)
		}
	}
	og, bg := orig.Graph(), back.Graph()
	if !reflect.DeepEqual(og.Inputs, bg.Inputs) || !reflect.DeepEqual(og.Outputs, bg.Outputs) || len(og.Nodes) != len(bg.Nodes) {
		t.Errorf("graph I/O %v %v (%d nodes), original %v %v (%d nodes)", bg.Inputs, bg.Outputs, len(bg.Nodes), og.Inputs, og.Outputs, len(og.Nodes))
	}
	for i := range og.Nodes {
		on, bn := og.Nodes[i], bg.Nodes[i]
		if on.Name != bn.Name || on.Kind != bn.Kind ||
			(on.Op != nil && (on.Op.Type != bn.Op.Type || !reflect.DeepEqual(on.Op.Inputs, bn.Op.Inputs) || !reflect.DeepEqual(on.Op.Outputs, bn.Op.Outputs))) ||
			(on.Value != nil && !reflect.DeepEqual(on.Value, bn.Value)) {
			t.Errorf("node %d differs: %+v vs %+v", i, bn, on)
		}
	}
	if orig.Metadata() != back.Metadata() {
		t.Errorf("metadata %+v, original %+v", back.Metadata(), orig.Metadata())
	}

	// the same model as V1: every constant inline, bytes as in mnist-v1
	w.V1 = true
	b, _, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	v1, err := rten.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	exp := testmodels.Load(t, testmodels.Path(t, "rten/mnist-v1.rten"))
	if v1.Header().Version != 1 || len(v1.Segments()) != 0 || len(v1.Constants()) != len(exp.Tensors) {
		t.Fatalf("V1 rebuild: %+v, %d segments, %d constants", v1.Header(), len(v1.Segments()), len(v1.Constants()))
	}
	for i, e := range exp.Tensors {
		c := &v1.Constants()[i]
		sum, _ := c.Data.SHA256()
		if c.Name != e.Name || c.Location != format.LocInline || c.NBytes != e.NBytes || hexString(sum[:]) != e.SHA256 {
			t.Errorf("V1 rebuild constant %d: %s %v %d bytes, want %s %d bytes sha %s", i, c.Name, c.Location, c.NBytes, e.Name, e.NBytes, e.SHA256)
		}
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

func rtenF32(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// rtenModel is a small model with one external constant of each kind of
// source (Data, Fill, a hole) and an inline one.
func rtenModel(fillCalls *[]int64) *writer.RTen {
	return &writer.RTen{Graph: writer.RTenGraph{
		Nodes: []writer.RTenNode{
			{Name: "data", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{3}, Data: rtenF32(1, 2, 3)}},
			{Name: "fill", Constant: &writer.RTenConstant{DType: format.Uint8, Shape: []uint32{3 << 20}, Fill: func(p []byte, off int64) {
				*fillCalls = append(*fillCalls, off)
				for i := range p {
					p[i] = byte((off + int64(i)) % 251)
				}
			}}},
			{Name: "hole", Constant: &writer.RTenConstant{DType: format.Int32, Shape: []uint32{1 << 20}}},
			{Name: "inline", Constant: &writer.RTenConstant{DType: format.Int8, Shape: []uint32{2}, Inline: true, Data: []byte{0x80, 0x7f}}},
			{Name: "out", Value: &writer.RTenValue{DType: format.Float32}},
		},
		Outputs: []uint32{4},
	}}
}

// TestRTenWriteFile: WriteFile and Bytes write the same file; Plan
// predicts where every constant goes; Fill is streamed in chunks; holes
// read as zeros and stay sparse.
func TestRTenWriteFile(t *testing.T) {
	var calls []int64
	w := rtenModel(&calls)
	plan, err := w.Plan()
	if err != nil {
		t.Fatal(err)
	}
	calls = nil
	p := filepath.Join(t.TempDir(), "m.rten")
	info, err := w.WriteFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan, info) {
		t.Errorf("Plan %+v, WriteFile %+v", plan, info)
	}
	if want := []int64{0, 1 << 20, 2 << 20}; !reflect.DeepEqual(calls, want) {
		t.Errorf("Fill called at %v, want 1 MiB chunks at %v", calls, want)
	}
	onDisk, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	calls = nil
	mem, binfo, err := w.Bytes()
	if err != nil || !bytes.Equal(mem, onDisk) || !reflect.DeepEqual(binfo, info) {
		t.Fatalf("Bytes differs from WriteFile (%d vs %d bytes, %v)", len(mem), len(onDisk), err)
	}
	if int64(len(onDisk)) != info.FileSize || string(onDisk[:4]) != "RTEN" ||
		binary.LittleEndian.Uint64(onDisk[24:]) != uint64(info.TensorDataOffset) || info.TensorDataOffset%64 != 0 {
		t.Errorf("file of %d bytes, header %x, layout %+v", len(onDisk), onDisk[:32], info)
	}
	m, err := rten.NewFile(mapFile(t, p))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i, c := range m.Constants() {
		pl := info.Constants[i]
		if c.Name != pl.Name || c.Offset != pl.Offset || c.NBytes != pl.NBytes || c.DataOffset != pl.DataOffset ||
			(c.Location == format.LocInline) != pl.Inline {
			t.Errorf("constant %s: read %d+%d (data_offset %d, %v), placed %+v", c.Name, c.Offset, c.NBytes, c.DataOffset, c.Location, pl)
		}
		if c.External() && c.DataOffset%64 != 0 {
			t.Errorf("%s data_offset %d not 64-aligned", c.Name, c.DataOffset)
		}
	}
	fill, _ := m.Constant("fill")
	fb, _ := fill.Data.Bytes()
	for i := range fb {
		if fb[i] != byte(i%251) {
			t.Fatalf("fill byte %d = %d, want %d", i, fb[i], i%251)
		}
	}
	hole, _ := m.Constant("hole")
	hb, _ := hole.Data.Bytes()
	if len(hb) != 4<<20 || bytes.Count(hb, []byte{0}) != len(hb) {
		t.Errorf("hole: %d bytes, not all zero", len(hb))
	}
	in, _ := m.Constant("inline")
	ib, _ := in.Data.Bytes()
	if !bytes.Equal(ib, []byte{0x80, 0x7f}) || in.Location != format.LocInline {
		t.Errorf("inline constant %x at %v", ib, in.Location)
	}
	if disk, ok := writer.DiskUsage(p); ok && disk > 3<<20+256<<10 {
		t.Errorf("file takes %d bytes on disk; the 4 MiB hole should be sparse", disk)
	}
}

// TestRTenKnobs: the header knobs write exactly the fields asked for.
func TestRTenKnobs(t *testing.T) {
	var calls []int64
	w := rtenModel(&calls)
	w.ModelOffset = 64
	w.HeaderVersion = 7
	w.SchemaVersion = 3
	w.Align = writer.RTenAlignElement
	b, info, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if le.Uint32(b[4:]) != 7 || le.Uint64(b[8:]) != 64 || info.ModelOffset != 64 || le.Uint64(b[16:]) != uint64(info.ModelLen) {
		t.Errorf("header %x, layout %+v", b[:32], info)
	}
	if info.TensorDataOffset != info.ModelOffset+info.ModelLen {
		t.Errorf("element alignment: section at %d, model data ends at %d", info.TensorDataOffset, info.ModelOffset+info.ModelLen)
	}
	le.PutUint32(b[4:], 2)
	if _, err := rten.NewFile(mmapfile.NewBytes(b)); err == nil {
		t.Error("schema version 3 accepted")
	}
	w.SchemaVersion = 0
	b, _, _ = w.Bytes()
	le.PutUint32(b[4:], 2)
	m, err := rten.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatalf("model data at 64, element alignment: %v", err)
	}
	for _, c := range m.Constants() {
		if c.Offset%int64(c.DType.Size()) != 0 {
			t.Errorf("%s at %d is not element-aligned", c.Name, c.Offset)
		}
	}

	for _, bad := range []*writer.RTen{
		{ModelOffset: 20},
		{ModelOffset: 36},
		{Align: -2},
		{Graph: writer.RTenGraph{Nodes: []writer.RTenNode{{Constant: &writer.RTenConstant{DType: format.Float64, Shape: []uint32{1}}}}}},
		{Graph: writer.RTenGraph{Nodes: []writer.RTenNode{{Constant: &writer.RTenConstant{DType: format.Int8, Shape: []uint32{1 << 31, 1 << 31, 1 << 31}}}}}},
	} {
		if _, err := bad.Plan(); err == nil {
			t.Errorf("Plan accepted %+v", bad)
		}
	}
}
