package rtencheck

import (
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// RegionEnd returns the end of the header and FlatBuffer region of a
// valid RTen model (the part a sweep mutates): a V2 model's model_offset +
// model_len, the whole of a V1 model.
func RegionEnd(b []byte) (int64, error) {
	m, err := rten.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return 0, err
	}
	defer m.Close()
	h := m.Header()
	return h.ModelOffset + h.ModelLen, nil
}

// Generated returns writer-made RTen models: V1 and V2, If and Loop
// subgraphs (nested), metadata, symbolic dims, every constant dtype inline
// and external, unaligned tensors, an unknown operator type.
func Generated() ([]hostile.Seed, error) {
	opType := func(name string) uint8 {
		t, ok := rten.ParseOperatorType(name)
		if !ok {
			panic("unknown operator " + name)
		}
		return uint8(t)
	}
	val := func(name string, dims ...uint32) writer.RTenNode {
		v := &writer.RTenValue{DType: format.Float32}
		for _, d := range dims {
			v.Shape = append(v.Shape, writer.RTenDim{Value: d})
		}
		return writer.RTenNode{Name: name, Value: v}
	}
	cst := func(name string, dt format.DType, inline bool, data []byte, shape ...uint32) writer.RTenNode {
		return writer.RTenNode{Name: name, Constant: &writer.RTenConstant{DType: dt, Shape: shape, Inline: inline, Data: data}}
	}
	simple := func() *writer.RTen {
		return &writer.RTen{Graph: writer.RTenGraph{
			Nodes: []writer.RTenNode{
				val("x", 1, 2),
				cst("w", format.Float32, false, hostile.F32(1, 2, 3, 4), 2, 2),
				cst("b", format.Float32, true, hostile.F32(0.5, -0.5), 2),
				val("xw", 1, 2),
				{Name: "matmul", Operator: &writer.RTenOperator{Type: opType("MatMul"), Inputs: []int32{0, 1}, Outputs: []int32{3}}},
				val("y", 1, 2),
				{Name: "add", Operator: &writer.RTenOperator{Type: opType("Add"), Inputs: []int32{3, 2, -1}, Outputs: []int32{5}}},
			},
			Inputs:  []uint32{0},
			Outputs: []uint32{5},
		}}
	}
	sub := simple()
	sub.Graph.Nodes = append(sub.Graph.Nodes, writer.RTenNode{Name: "if", Operator: &writer.RTenOperator{
		Type: opType("If"), Inputs: []int32{0}, Outputs: []int32{5},
		Then: &writer.RTenGraph{Nodes: []writer.RTenNode{cst("t", format.Int8, false, []byte{1, 2}, 2), val("o")}, Outputs: []uint32{1}},
		Else: &writer.RTenGraph{
			Nodes: []writer.RTenNode{
				cst("", format.Uint8, true, []byte{3}, 1),
				{Name: "loop", Operator: &writer.RTenOperator{Type: opType("Loop"), Inputs: []int32{0, -1}, Body: &writer.RTenGraph{
					Nodes:   []writer.RTenNode{cst("k", format.Int32, false, []byte{5, 0, 0, 0}, 1), val("v", 1)},
					Outputs: []uint32{1}, Captures: []uint32{0},
				}}},
			},
			Outputs: []uint32{0},
		},
	}})
	v1 := simple()
	v1.V1 = true
	v1sub := *sub
	v1sub.V1 = true
	meta := simple()
	meta.Metadata = &writer.RTenMetadata{ONNXHash: "abc", Description: "d", License: "MIT", Commit: "c", CodeRepository: "r", ModelRepository: "m", RunID: "1", RunURL: "u"}
	meta.Graph.Nodes[0].Value.Shape[0] = writer.RTenDim{Name: "batch"}
	meta.Graph.Nodes[4].Operator.Type = 200
	meta.Graph.Nodes[4].Operator.AttrsType = 7
	unaligned := simple()
	unaligned.Align = 1
	unaligned.Graph.Nodes = append(unaligned.Graph.Nodes,
		cst("u8", format.Uint8, false, []byte{1, 2, 3}, 3), cst("f", format.Float32, false, hostile.F32(9), 1),
		cst("i8", format.Int8, true, []byte{0xff}, 1), cst("i32", format.Int32, true, []byte{1, 0, 0, 0}, 1))
	elem := simple()
	elem.Align = writer.RTenAlignElement
	elem.Graph.Nodes[2].Constant.NoDType = true
	var out []hostile.Seed
	for _, w := range []struct {
		name string
		w    *writer.RTen
	}{
		{"simple-v2.rten", simple()}, {"subgraphs-v2.rten", sub}, {"simple-v1.rten", v1}, {"subgraphs-v1.rten", &v1sub},
		{"metadata.rten", meta}, {"unaligned.rten", unaligned}, {"elem-aligned.rten", elem},
		{"tiny-v2.rten", writer.TinyRTen(false)}, {"tiny-v1.rten", writer.TinyRTen(true)},
	} {
		b, _, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, hostile.Seed{Name: w.name, Data: b})
	}
	return out, nil
}
