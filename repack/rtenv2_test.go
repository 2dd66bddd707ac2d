package repack_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/repack"
)

// modelFB returns the Model FlatBuffer of an RTen file's bytes.
func modelFB(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) >= 32 && string(b[:4]) == "RTEN" {
		off := binary.LittleEndian.Uint64(b[8:])
		n := binary.LittleEndian.Uint64(b[16:])
		return b[off : off+n]
	}
	return b
}

// unpackModel unpacks an RTen file's Model with the object API and
// returns it with every constant's data fields cleared (they are what
// V1 → V2 changes), and the constants as they were.
func unpackModel(t *testing.T, b []byte) (*rtenfb.ModelT, []*rtenfb.ConstantNodeT, int) {
	t.Helper()
	m := rtenfb.GetRootAsModel(modelFB(t, b), 0).UnPack()
	var consts []*rtenfb.ConstantNodeT
	attrs := 0
	var walk func(g *rtenfb.GraphT)
	walk = func(g *rtenfb.GraphT) {
		if g == nil {
			return
		}
		for _, n := range g.Nodes {
			if n == nil || n.Data == nil {
				continue
			}
			switch v := n.Data.Value.(type) {
			case *rtenfb.ConstantNodeT:
				c := *v
				consts = append(consts, &c)
				v.Data, v.Dtype, v.DataOffset = nil, nil, nil
			case *rtenfb.OperatorNodeT:
				if v.Attrs == nil {
					continue
				}
				attrs++
				switch a := v.Attrs.Value.(type) {
				case *rtenfb.IfAttrsT:
					walk(a.ThenBranch)
					walk(a.ElseBranch)
				case *rtenfb.LoopAttrsT:
					walk(a.Body)
				}
			}
		}
	}
	walk(m.Graph)
	return m, consts, attrs
}

// checkV1toV2 checks the V2 file out made from the V1 file in: the same
// model (every operator with its attributes, every value, the metadata)
// with every inline constant now in the data section on 64 bytes.
func checkV1toV2(t *testing.T, in, out []byte, minAttrs int) {
	t.Helper()
	if loader.Sniff(out) != "rten" || string(out[:4]) != "RTEN" || binary.LittleEndian.Uint32(out[4:]) != 2 {
		t.Fatalf("output is not an RTen V2 file: % x", out[:8])
	}
	mi, ci, attrs := unpackModel(t, in)
	mo, co, _ := unpackModel(t, out)
	if attrs < minAttrs {
		t.Errorf("the input has %d operators with attributes, want at least %d", attrs, minAttrs)
	}
	if !reflect.DeepEqual(mi, mo) {
		t.Error("the model (operators, attributes, values, metadata) differs between input and output")
	}
	if len(ci) != len(co) {
		t.Fatalf("%d constants in, %d out", len(ci), len(co))
	}
	for i := range ci {
		if ci[i].Data == nil {
			continue
		}
		c := co[i]
		if c.Data != nil || c.DataOffset == nil || c.Dtype == nil {
			t.Errorf("constant %d: still inline or without dtype/data_offset", i)
			continue
		}
		if *c.DataOffset%64 != 0 {
			t.Errorf("constant %d: data_offset %d not on 64", i, *c.DataOffset)
		}
	}
}

func TestRTenV1toV2Real(t *testing.T) {
	v1 := testmodels.Path(t, "rten/mnist-v1.rten")
	v2 := testmodels.Path(t, "rten/mnist-v2.rten")
	wantV2 := expectedSums(testmodels.Load(t, v2).Tensors)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := l.opts
			opts.Upgrade = true
			out, b := repackFile(t, v1, dir, "mnist.rten", opts)
			sameSums(t, "V1 → V2 vs expected mnist-v2", sums(t, out), wantV2)
			sameSums(t, "V1 → V2 vs expected mnist-v1", sums(t, out), expectedSums(testmodels.Load(t, v1).Tensors))
			diffs, err := repack.Check(out, v2)
			if err != nil || len(diffs) != 0 {
				t.Errorf("Check against the real mnist-v2.rten: %v %v", diffs, err)
			}
			checkV1toV2(t, mustRead(t, v1), b, 5)
			checkAlignment(t, out, b, l.opts.Align, l.opts.TensorAlign)
			m, err := loader.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := m.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
			if v := as[*rten.Model](m).Header().Version; v != 2 {
				t.Errorf("version %d", v)
			}
			// The V2 input with Upgrade is realigned as without it.
			out2, _ := repackFile(t, v2, dir, "mnist-v2.rten", opts)
			sameSums(t, "V2 with --rten-v2", sums(t, out2), wantV2)
		})
	}
}

// TestRTenV1toV2Subgraphs converts the writer-made V1 model of
// subgraphModel.
func TestRTenV1toV2Subgraphs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "sub-v1.rten")
	if _, err := subgraphModel().WriteFile(in); err != nil {
		t.Fatal(err)
	}
	want := sums(t, in)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			opts := l.opts
			opts.Upgrade = true
			out, b := repackFile(t, in, t.TempDir(), "sub.rten", opts)
			sameSums(t, "V1 → V2", sums(t, out), want)
			checkV1toV2(t, mustRead(t, in), b, 3)
			checkAlignment(t, out, b, l.opts.Align, l.opts.TensorAlign)
			m, err := loader.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if _, err := m.Verify(); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
	// The mapping copy gives the same bytes as the kernel's.
	a := filepath.Join(dir, "a.rten")
	if _, err := repack.Repack(in, a, repack.Options{Upgrade: true}); err != nil {
		t.Fatal(err)
	}
	defer repack.SetKernelCopy(false)()
	bb := filepath.Join(dir, "b.rten")
	if _, err := repack.Repack(in, bb, repack.Options{Upgrade: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, a), mustRead(t, bb)) {
		t.Error("kernel and mapping copies differ")
	}
}

// TestRTenV1toV2Hostile overwrites every 4-byte word of a V1 model with
// hostile values: Repack with Upgrade must give an error or an output that
// holds the tensors of the (mutated) input, never a panic.
func TestRTenV1toV2Hostile(t *testing.T) {
	good, _, err := subgraphModel().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.rten")
	out := filepath.Join(dir, "out.rten")
	step := 4
	if hostile.Slow() {
		step = 16
	}
	ok, refused := 0, 0
	for off := 0; off+4 <= len(good); off += step {
		for _, v := range []uint32{0, 0xffffffff, 0x7ffffff0, uint32(len(good))} {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[off:], v)
			if err := os.WriteFile(in, b, 0o644); err != nil {
				t.Fatal(err)
			}
			want, err := repack.Sums(in)
			if err != nil {
				continue
			}
			if _, err := repack.Repack(in, out, repack.Options{Upgrade: true, Align: 16}); err != nil {
				refused++
				continue
			}
			ok++
			got, err := repack.Sums(out)
			if err != nil {
				t.Fatalf("word %d = %#x: output does not verify: %v", off, v, err)
			}
			for _, d := range repack.Compare(want, got) {
				t.Errorf("word %d = %#x: %s", off, v, d)
			}
		}
	}
	t.Logf("%d converted, %d refused", ok, refused)
}

// subgraphModel is a V1 model with If and Loop subgraphs holding constants
// of every dtype, metadata, symbolic dims, an empty constant and an
// attribute table without described fields.
func subgraphModel() *writer.RTen {
	f32 := func(n int, seed byte) []byte {
		b := make([]byte, 4*n)
		for i := range b {
			b[i] = seed + byte(i*7)
		}
		return b
	}
	sub := func(name string, seed byte) *writer.RTenGraph {
		return &writer.RTenGraph{
			Nodes: []writer.RTenNode{
				{Name: name + ".x", Value: &writer.RTenValue{Shape: []writer.RTenDim{{Name: "batch"}, {Value: 3}}, DType: format.Float32}},
				{Name: name + ".w", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{3}, Inline: true, Data: f32(3, seed)}},
				{Name: name + ".add", Operator: &writer.RTenOperator{Type: uint8(rtenfb.OperatorTypeAdd), Inputs: []int32{0, 1}, Outputs: []int32{3}}},
				{Name: name + ".y", Value: &writer.RTenValue{}},
			},
			Inputs:  []uint32{0},
			Outputs: []uint32{3},
		}
	}
	w := writer.RTen{
		V1:       true,
		Metadata: &writer.RTenMetadata{Description: "subgraphs", License: "MIT"},
		Graph: writer.RTenGraph{
			Nodes: []writer.RTenNode{
				{Name: "cond", Value: &writer.RTenValue{Shape: []writer.RTenDim{}, DType: format.Int32}},
				{Name: "i32", Constant: &writer.RTenConstant{DType: format.Int32, Shape: []uint32{2, 2}, Inline: true, Data: f32(4, 1)}},
				{Name: "i8", Constant: &writer.RTenConstant{DType: format.Int8, Shape: []uint32{5}, Inline: true, Data: []byte{1, 2, 3, 4, 5}, NoDType: true}},
				{Name: "u8", Constant: &writer.RTenConstant{DType: format.Uint8, Shape: []uint32{3}, Inline: true, Data: []byte{9, 8, 7}}},
				{Name: "empty", Constant: &writer.RTenConstant{DType: format.Float32, Shape: []uint32{0}, Inline: true}},
				{Name: "if", Operator: &writer.RTenOperator{Type: uint8(rtenfb.OperatorTypeIf), Inputs: []int32{0}, Outputs: []int32{7}, Then: sub("then", 10), Else: sub("else", 20)}},
				{Name: "loop", Operator: &writer.RTenOperator{Type: uint8(rtenfb.OperatorTypeLoop), Inputs: []int32{-1, 0}, Outputs: []int32{8}, Body: sub("body", 30)}},
				{Name: "if.out", Value: &writer.RTenValue{}},
				{Name: "loop.out", Value: &writer.RTenValue{}},
				{Name: "mn", Operator: &writer.RTenOperator{Type: uint8(rtenfb.OperatorTypeMultinomial), AttrsType: uint8(rtenfb.OperatorAttrsMultinomialAttrs), Inputs: []int32{7}, Outputs: []int32{10}}},
				{Name: "mn.out", Value: &writer.RTenValue{}},
			},
			Inputs:  []uint32{0},
			Outputs: []uint32{7, 8, 10},
		},
	}
	return &w
}

// TestRTenV1toV2UnknownField refuses a V1 model whose attribute table has
// a field the schema does not describe (which a rewrite would drop), and
// converts the same model when the table has no field.
func TestRTenV1toV2UnknownField(t *testing.T) {
	build := func(field bool) []byte {
		b := flatbuffers.NewBuilder(256)
		b.StartObject(1)
		if field {
			b.PrependUint32Slot(0, 5, 0)
		}
		attrs := b.EndObject()
		rtenfb.OperatorNodeStart(b)
		rtenfb.OperatorNodeAddType(b, rtenfb.OperatorTypeMultinomial)
		rtenfb.OperatorNodeAddAttrsType(b, rtenfb.OperatorAttrsMultinomialAttrs)
		rtenfb.OperatorNodeAddAttrs(b, attrs)
		op := rtenfb.OperatorNodeEnd(b)
		name := b.CreateString("mn")
		rtenfb.NodeStart(b)
		rtenfb.NodeAddName(b, name)
		rtenfb.NodeAddDataType(b, rtenfb.NodeKindOperatorNode)
		rtenfb.NodeAddData(b, op)
		node := rtenfb.NodeEnd(b)
		rtenfb.GraphStartNodesVector(b, 1)
		b.PrependUOffsetT(node)
		nodes := b.EndVector(1)
		rtenfb.GraphStart(b)
		rtenfb.GraphAddNodes(b, nodes)
		g := rtenfb.GraphEnd(b)
		rtenfb.ModelStart(b)
		rtenfb.ModelAddSchemaVersion(b, 1)
		rtenfb.ModelAddGraph(b, g)
		b.Finish(rtenfb.ModelEnd(b))
		return b.FinishedBytes()
	}
	dir := t.TempDir()
	for _, field := range []bool{false, true} {
		in := filepath.Join(dir, "in.rten")
		if err := os.WriteFile(in, build(field), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := repack.Sums(in); err != nil {
			t.Fatalf("the input does not verify: %v", err)
		}
		out := filepath.Join(dir, "out.rten")
		_, err := repack.Repack(in, out, repack.Options{Upgrade: true})
		if field && (err == nil || !strings.Contains(err.Error(), "MultinomialAttrs")) {
			t.Errorf("a field the schema does not describe: error %v, want one naming MultinomialAttrs", err)
		}
		if !field && err != nil {
			t.Errorf("an empty MultinomialAttrs: %v", err)
		}
		os.Remove(out)
	}
}

// sharedV1 is a V1 model whose objects are shared: the leaf graph has n
// nodes (each with its own name) of one ConstantNode with 4 KiB of inline
// float data, and each of depth graphs above it has an If operator whose
// then and else branches are both the graph below. The file is a few KiB;
// copied once per reference, the constant's data would be written
// n × 2^depth times.
func sharedV1(n, depth int) []byte {
	b := flatbuffers.NewBuilder(0)
	const elems = 1024
	rtenfb.FloatDataStartDataVector(b, elems)
	for i := range elems {
		b.PrependFloat32(float32(elems - i))
	}
	vec := b.EndVector(elems)
	rtenfb.FloatDataStart(b)
	rtenfb.FloatDataAddData(b, vec)
	fd := rtenfb.FloatDataEnd(b)
	rtenfb.ConstantNodeStartShapeVector(b, 1)
	b.PrependUint32(elems)
	shape := b.EndVector(1)
	rtenfb.ConstantNodeStart(b)
	rtenfb.ConstantNodeAddShape(b, shape)
	rtenfb.ConstantNodeAddDataType(b, rtenfb.ConstantDataFloatData)
	rtenfb.ConstantNodeAddData(b, fd)
	c := rtenfb.ConstantNodeEnd(b)

	graph := func(nodes []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		rtenfb.GraphStartNodesVector(b, len(nodes))
		for i := len(nodes) - 1; i >= 0; i-- {
			b.PrependUOffsetT(nodes[i])
		}
		v := b.EndVector(len(nodes))
		rtenfb.GraphStart(b)
		rtenfb.GraphAddNodes(b, v)
		return rtenfb.GraphEnd(b)
	}
	node := func(name string, kind rtenfb.NodeKind, data flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		s := b.CreateString(name)
		rtenfb.NodeStart(b)
		rtenfb.NodeAddName(b, s)
		rtenfb.NodeAddDataType(b, kind)
		rtenfb.NodeAddData(b, data)
		return rtenfb.NodeEnd(b)
	}
	var nodes []flatbuffers.UOffsetT
	for i := range n {
		nodes = append(nodes, node("w"+strconv.Itoa(i), rtenfb.NodeKindConstantNode, c))
	}
	g := graph(nodes)
	for d := range depth {
		rtenfb.IfAttrsStart(b)
		rtenfb.IfAttrsAddThenBranch(b, g)
		rtenfb.IfAttrsAddElseBranch(b, g)
		attrs := rtenfb.IfAttrsEnd(b)
		rtenfb.OperatorNodeStart(b)
		rtenfb.OperatorNodeAddType(b, rtenfb.OperatorTypeIf)
		rtenfb.OperatorNodeAddAttrsType(b, rtenfb.OperatorAttrsIfAttrs)
		rtenfb.OperatorNodeAddAttrs(b, attrs)
		op := rtenfb.OperatorNodeEnd(b)
		g = graph([]flatbuffers.UOffsetT{node("if"+strconv.Itoa(d), rtenfb.NodeKindOperatorNode, op)})
	}
	rtenfb.ModelStart(b)
	rtenfb.ModelAddSchemaVersion(b, 1)
	rtenfb.ModelAddGraph(b, g)
	b.Finish(rtenfb.ModelEnd(b))
	return b.FinishedBytes()
}

// TestRTenV1toV2Shared converts sharedV1: every shared object (the
// constant, its data, the subgraphs) is written once, so the output holds
// one 4 KiB tensor in its data section, is no larger than the input plus
// the header and padding, and has the input's tensors.
func TestRTenV1toV2Shared(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "shared-v1.rten")
	b := sharedV1(8, 4)
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := sums(t, in)
	out := filepath.Join(dir, "shared.rten")
	if _, err := repack.Repack(in, out, repack.Options{Upgrade: true, Align: 16}); err != nil {
		t.Fatal(err)
	}
	ob := mustRead(t, out)
	if len(ob) < 32 || string(ob[:4]) != "RTEN" {
		t.Fatalf("output is not an RTen V2 file: % x", ob[:min(len(ob), 8)])
	}
	if data := int64(len(ob)) - int64(binary.LittleEndian.Uint64(ob[24:])); data != 4096 {
		t.Errorf("data section of %d bytes, want the shared constant's 4096 once", data)
	}
	// The header, padding before the data section, and the data_offset and
	// dtype the rebuild adds to the one constant.
	if margin := 128; len(ob) > len(b)+margin {
		t.Errorf("output of %d bytes from an input of %d", len(ob), len(b))
	}
	sameSums(t, "V1 → V2 of shared objects", sums(t, out), want)
	checkV1toV2(t, b, ob, 0)
}
