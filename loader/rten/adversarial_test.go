package rten_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// rtenTarget opens with NewBytes and exercises every accessor and view.
var rtenTarget = hostile.Target{Format: "rten", Open: func(b []byte) (func() error, error) {
	m, err := rten.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return nil, err
	}
	return func() error {
		defer m.Close()
		return rtencheck.Model(m)
	}, nil
}}

// Field ids of the RTen schema (FORMATS.md §3).
const (
	fModelGraph   = 1
	fGraphNodes   = 0
	fGraphInputs  = 1
	fNodeName     = 0
	fNodeDataType = 1
	fNodeData     = 2
	fConstShape   = 0
	fConstDataTag = 1
	fConstDType   = 3
	fConstDataOff = 4
	hModelOffset  = 8
	hModelLen     = 16
	hTensorData   = 24
)

type rtenCase struct {
	name  string
	patch func(b []byte, fb hostile.FB)
	want  error
	field string
}

// checkRejected runs b through the bounded harness and checks the error.
func checkRejected(t *testing.T, b []byte, want error, field string) {
	t.Helper()
	err := hostile.Case(t, rtenTarget, t.Name(), b)
	if err == nil {
		t.Fatalf("opened")
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, want) {
		t.Errorf("error %v (%T), want a *FormatError wrapping %v", err, err, want)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("error %q does not name %q", err, field)
	}
	t.Log(err)
}

// TestAdversarial builds hostile RTen files by patching one field of a
// valid V2 model (simpleModel: an external and an inline constant, two
// operators): header offsets and sizes overflowing uint64 and int on
// 32-bit, the model data overlapping the header, vectors claiming 2^31
// elements, offsets looping back, unknown union tags, strings without
// terminators, data_offset overflows, numel × element size overflowing,
// unknown dtypes. Each must be rejected with an rten *FormatError naming
// the field, within the sweep's time and allocation bounds.
func TestAdversarial(t *testing.T) {
	base := bytesOf(t, simpleModel())
	if err := hostile.Case(t, rtenTarget, "base", bytes.Clone(base)); err != nil {
		t.Fatalf("base model: %v", err)
	}
	node := func(fb hostile.FB, i int) int { return fb.Path([2]int{fModelGraph, -1}, [2]int{fGraphNodes, i}) }
	constant := func(fb hostile.FB, i int) int { return fb.Table(node(fb, i), fNodeData) }
	cases := []rtenCase{
		{"model_offset 2^64-8", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hModelOffset, 1<<64-8) }, format.ErrTruncated, "model_offset"},
		{"model_offset inside the header", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hModelOffset, 8) }, format.ErrMalformed, "model_offset"},
		{"model_len 2^64-1", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hModelLen, 1<<64-1) }, format.ErrTruncated, "model_len"},
		{"model_len 2^32 (int on 32-bit)", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hModelLen, 1<<32) }, format.ErrTruncated, "model_len"},
		{"tensor_data_offset 2^64-1", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hTensorData, 1<<64-1) }, format.ErrTruncated, "tensor_data_offset"},
		{"tensor data overlapping the model", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hTensorData, 40) }, format.ErrMalformed, "tensor_data_offset"},
		{"tensor data overlapping the header", func(b []byte, _ hostile.FB) { hostile.FB{B: b}.PutU64(hTensorData, 0) }, format.ErrMalformed, "tensor_data_offset"},
		{"nodes claims 2^31 nodes", func(_ []byte, fb hostile.FB) {
			p, _ := fb.Vector(fb.Table(fb.Root(), fModelGraph), fGraphNodes)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "nodes"},
		{"shape claims 2^31 dims", func(_ []byte, fb hostile.FB) {
			p, _ := fb.Vector(constant(fb, 1), fConstShape)
			fb.PutU32(p, 1<<31)
		}, format.ErrMalformed, "shape"},
		{"name length 2^32-1", func(_ []byte, fb hostile.FB) {
			fb.PutU32(fb.Table(node(fb, 1), fNodeName), 1<<32-1)
		}, format.ErrMalformed, "name"},
		{"name without terminator", func(_ []byte, fb hostile.FB) {
			s := fb.Table(node(fb, 1), fNodeName)
			fb.PutU8(s+4+int(fb.B[s]), 'x')
		}, format.ErrMalformed, "name"},
		{"offset looping back (wraps in 32 bits)", func(_ []byte, fb hostile.FB) {
			p := fb.MustField(fb.Root(), fModelGraph)
			fb.PutU32(p, -uint32(p))
		}, format.ErrMalformed, "graph"},
		{"node offset past 4 GiB (wraps to the Model table in 32 bits)", func(_ []byte, fb hostile.FB) {
			p, _ := fb.Vector(fb.Table(fb.Root(), fModelGraph), fGraphNodes)
			wrapTo(fb, p+4, fb.Root())
		}, format.ErrMalformed, "nodes[0]"},
		{"node offset to itself", func(_ []byte, fb hostile.FB) {
			p, _ := fb.Vector(fb.Table(fb.Root(), fModelGraph), fGraphNodes)
			fb.PutU32(p+4, 0)
		}, format.ErrMalformed, "nodes[0]"},
		{"vtable at the table itself", func(_ []byte, fb hostile.FB) { fb.PutU32(node(fb, 0), 0) }, format.ErrMalformed, "nodes[0]"},
		{"unknown NodeKind 4", func(_ []byte, fb hostile.FB) { fb.PutU8(fb.MustField(node(fb, 0), fNodeDataType), 4) }, format.ErrMalformed, "nodes[0]"},
		{"unknown NodeKind 255", func(_ []byte, fb hostile.FB) { fb.PutU8(fb.MustField(node(fb, 0), fNodeDataType), 255) }, format.ErrMalformed, "nodes[0]"},
		{"unknown ConstantData tag 9", func(_ []byte, fb hostile.FB) {
			fb.PutU8(fb.MustField(constant(fb, 2), fConstDataTag), 9)
		}, format.ErrMalformed, "nodes[2]"},
		{"unknown constant dtype", func(_ []byte, fb hostile.FB) {
			fb.PutU16(fb.MustField(constant(fb, 1), fConstDType), 200)
		}, format.ErrMalformed, "dtype"},
		{"data_offset 2^64-1", func(_ []byte, fb hostile.FB) {
			fb.PutU64(fb.MustField(constant(fb, 1), fConstDataOff), 1<<64-1)
		}, format.ErrTruncated, "data_offset"},
		{"data_offset 2^31+4 (int on 32-bit)", func(_ []byte, fb hostile.FB) {
			fb.PutU64(fb.MustField(constant(fb, 1), fConstDataOff), 1<<31+4)
		}, format.ErrTruncated, "data_offset"},
		{"numel × element size overflows", func(_ []byte, fb hostile.FB) {
			p, n := fb.Vector(constant(fb, 1), fConstShape)
			for i := 0; i < n; i++ {
				fb.PutU32(p+4+4*i, 1<<32-1)
			}
		}, format.ErrMalformed, "shape"},
		{"graph input 2^32-1", func(_ []byte, fb hostile.FB) {
			p, _ := fb.Vector(fb.Table(fb.Root(), fModelGraph), fGraphInputs)
			fb.PutU32(p+4, 1<<32-1)
		}, format.ErrMalformed, "inputs[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(base)
			c.patch(b, hostile.FB{B: b[32:]})
			checkRejected(t, b, c.want, c.field)
		})
	}
}

// wrapTo stores at q an offset 4 GiB past target, which 32-bit arithmetic
// wraps to target (a position before q).
func wrapTo(fb hostile.FB, q, target int) {
	if target >= q {
		panic("wrapTo: target not before the offset")
	}
	fb.PutU32(q, uint32(int64(target)+1<<32-int64(q)))
}

// A subgraph offset (IfAttrs.then_branch) 4 GiB past the graph it wraps to
// in 32-bit arithmetic is refused like any offset past the buffer.
func TestSubgraphOffsetWrap(t *testing.T) {
	seeds := fuzzSeeds(t)
	b := bytes.Clone(seeds[len(seeds)-1].Data) // if-attrs-on-add.rten
	fb := hostile.FB{B: b[32:]}
	graph := fb.Table(fb.Root(), fModelGraph)
	op := fb.Table(fb.Path([2]int{fModelGraph, -1}, [2]int{fGraphNodes, 6}), fNodeData)
	wrapTo(fb, fb.MustField(fb.Table(op, 2), 0), graph)
	checkRejected(t, b, format.ErrMalformed, "nodes[6].data.attrs.then_branch")
}

// nestedIf builds a V1 model whose graph holds an If operator whose
// then_branch holds an If operator ... depth levels deep, with the
// FlatBuffers builder directly (the writer refuses such nesting).
func nestedIf(depth int) []byte {
	b := flatbuffers.NewBuilder(64 * depth)
	graph := func(inner flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		var data flatbuffers.UOffsetT
		kind := rtenfb.NodeKindValueNode
		if inner != 0 {
			rtenfb.IfAttrsStart(b)
			rtenfb.IfAttrsAddThenBranch(b, inner)
			attrs := rtenfb.IfAttrsEnd(b)
			rtenfb.OperatorNodeStart(b)
			rtenfb.OperatorNodeAddType(b, rtenfb.OperatorType(opType("If")))
			rtenfb.OperatorNodeAddAttrsType(b, rtenfb.OperatorAttrsIfAttrs)
			rtenfb.OperatorNodeAddAttrs(b, attrs)
			data, kind = rtenfb.OperatorNodeEnd(b), rtenfb.NodeKindOperatorNode
		} else {
			rtenfb.ValueNodeStart(b)
			data = rtenfb.ValueNodeEnd(b)
		}
		rtenfb.NodeStart(b)
		rtenfb.NodeAddDataType(b, kind)
		rtenfb.NodeAddData(b, data)
		node := rtenfb.NodeEnd(b)
		rtenfb.GraphStartNodesVector(b, 1)
		b.PrependUOffsetT(node)
		nodes := b.EndVector(1)
		rtenfb.GraphStart(b)
		rtenfb.GraphAddNodes(b, nodes)
		return rtenfb.GraphEnd(b)
	}
	g := graph(0)
	for i := 0; i < depth; i++ {
		g = graph(g)
	}
	rtenfb.ModelStart(b)
	rtenfb.ModelAddSchemaVersion(b, 1)
	rtenfb.ModelAddGraph(b, g)
	b.Finish(rtenfb.ModelEnd(b))
	return b.FinishedBytes()
}

// TestAdversarialNesting nests If subgraphs 10,000 deep: Open must refuse
// it at the depth limit (no stack overflow, no quadratic work), and a
// nesting at the limit still opens.
func TestAdversarialNesting(t *testing.T) {
	b := nestedIf(10000)
	t.Logf("10,000 nested subgraphs: %d bytes", len(b))
	checkRejected(t, b, format.ErrMalformed, "nested")
	if err := hostile.Case(t, rtenTarget, "at the limit", nestedIf(rten.DefaultMaxSubgraphDepth)); err != nil {
		t.Errorf("nesting at the limit (%d): %v", rten.DefaultMaxSubgraphDepth, err)
	}
	if err := hostile.Case(t, rtenTarget, "past the limit", nestedIf(rten.DefaultMaxSubgraphDepth+1)); err == nil {
		t.Errorf("nesting past the limit (%d) opened", rten.DefaultMaxSubgraphDepth+1)
	}
}

// TestAdversarialSharedVectors makes many nodes share one table (with a
// long shape vector and a long name) through their offsets, as a
// FlatBuffer allows: a file of some kilobytes that would make a loader
// copying per reference allocate hundreds of megabytes (before the fix,
// 48 MB for this 49 KB file). Open must reject it, within
// hostile.AllocFactor × its size.
func TestAdversarialSharedVectors(t *testing.T) {
	const rank, nodes = 2000, 2000
	shape := make([]uint32, rank)
	for i := range shape {
		shape[i] = 1
	}
	g := writer.RTenGraph{Nodes: []writer.RTenNode{{
		Name:     strings.Repeat("n", 1000),
		Constant: &writer.RTenConstant{DType: format.Float32, Shape: shape, Inline: true, Data: hostile.F32(1)},
	}}}
	for i := 1; i < nodes; i++ {
		g.Nodes = append(g.Nodes, writer.RTenNode{Value: &writer.RTenValue{}})
	}
	b := bytesOf(t, &writer.RTen{V1: true, Graph: g})
	fb := hostile.FB{B: b}
	vec, n := fb.Vector(fb.Table(fb.Root(), fModelGraph), fGraphNodes)
	target := fb.Deref(vec + 4)
	for i := 1; i < n; i++ {
		slot := vec + 4 + 4*i
		if target <= slot {
			t.Fatalf("node 0 at %#x is not after slot %d at %#x", target, i, slot)
		}
		fb.PutU32(slot, uint32(target-slot))
	}
	t.Logf("%d nodes sharing one constant node (shape of %d dims, 1000-byte name): %d-byte file", n, rank, len(b))
	checkRejected(t, b, format.ErrMalformed, "share")
}
