// Package tflitegen writes .tflite models with the FlatBuffers builder and
// the code generated from internal/schema/tflite.fbs: small ones for the
// tests of loader/tflite and loader/litertlm, model-sized ones for the
// benchmarks' generated files (package bench).
package tflitegen

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
)

// Tensor is a tensor to write.
type Tensor struct {
	Name      string // "" writes no name
	Type      tflitefb.TensorType
	Shape     []int32 // nil writes no shape
	Buffer    uint32
	Variable  bool
	Scale     []float32 // per-tensor or per-axis quantization scales
	Blockwise *[3]int32 // BlockwiseQuantization scales, zero_points, block_size
	Sparse    bool      // writes sparsity parameters (a CSR second dimension)
	External  uint32    // Tensor.external_buffer
}

// Op is an operator to write. Calls names subgraphs through the options:
// Kind "while" (cond, body), "if" (then, else), "call" (the subgraph),
// "call_once" (init), "composite" (decomposition); "" writes none.
type Op struct {
	Opcode  uint32
	Inputs  []int32
	Outputs []int32
	Kind    string
	Calls   []int32
}

// Subgraph is a subgraph to write.
type Subgraph struct {
	Name    string
	Tensors []Tensor
	Inputs  []int32
	Outputs []int32
	Ops     []Op
}

// Buffer is a buffer to write: Data inline, or after the FlatBuffer when
// the model is External (or Offset is set: then Offset/Size as given).
type Buffer struct {
	Data []byte
	// Offset and Size, when Offset != 0, are written as they are (a
	// placeholder offset 1, or a hostile value), and Data is not written.
	Offset, Size uint64
	// Both writes Data inline and an offset as well.
	Both bool
}

// Metadata is a Model.metadata entry.
type Metadata struct {
	Name   string
	Buffer uint32
}

// Signature is a SignatureDef.
type Signature struct {
	Key      string
	Subgraph uint32
	Inputs   map[string]uint32
	Outputs  map[string]uint32
}

// Model is a model to write. Buffers[0] should be empty (the sentinel).
type Model struct {
	Version     uint32
	Description string
	Subgraphs   []Subgraph
	Buffers     []Buffer
	Metadata    []Metadata
	Signatures  []Signature
	// MetadataBuffer is the deprecated Model.metadata_buffer list (buffer
	// indices), written when not nil.
	MetadataBuffer []int32
	// External writes every non-empty buffer after the FlatBuffer (the
	// large-model layout), each at a multiple of Align (16 when 0), in
	// reverse buffer order.
	External bool
	Align    int
	// Trailer is appended after everything (a zip archive, say).
	Trailer []byte
}

// Bytes writes the model.
func (m *Model) Bytes() []byte {
	align := max(m.Align, 16)
	offsets := make([]uint64, len(m.Buffers))
	if m.External {
		for i := range offsets {
			if len(m.Buffers[i].Data) > 0 && m.Buffers[i].Offset == 0 {
				offsets[i] = 1 // placeholder: the length of the FlatBuffer does not depend on it
			}
		}
	}
	fb := m.flatBuffer(offsets)
	if !m.External {
		return append(fb, m.Trailer...)
	}
	// Lay the buffers out after the FlatBuffer, last buffer first, and
	// write the FlatBuffer again with their offsets.
	end := pad(len(fb), align)
	for i := len(m.Buffers) - 1; i >= 0; i-- {
		if offsets[i] == 1 {
			offsets[i] = uint64(end)
			end = pad(end+len(m.Buffers[i].Data), align)
		}
	}
	out := make([]byte, end)
	copy(out, m.flatBuffer(offsets))
	for i, off := range offsets {
		if off > 1 && m.Buffers[i].Offset == 0 {
			copy(out[off:], m.Buffers[i].Data)
		}
	}
	return append(out, m.Trailer...)
}

func pad(n, a int) int { return (n + a - 1) / a * a }

func (m *Model) flatBuffer(offsets []uint64) []byte {
	b := flatbuffers.NewBuilder(1024)
	str := func(s string) flatbuffers.UOffsetT { return b.CreateString(s) }
	i32s := func(v []int32) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependInt32(v[i])
		}
		return b.EndVector(len(v))
	}
	tables := func(v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependUOffsetT(v[i])
		}
		return b.EndVector(len(v))
	}

	bufs := make([]flatbuffers.UOffsetT, len(m.Buffers))
	for i, bf := range m.Buffers {
		var data flatbuffers.UOffsetT
		inline := len(bf.Data) > 0 && (bf.Both || (offsets[i] == 0 && bf.Offset == 0))
		if inline {
			b.Prep(16, len(bf.Data)) // force_align: 16 for the bytes
			data = b.CreateByteVector(bf.Data)
		}
		tflitefb.BufferStart(b)
		if inline {
			tflitefb.BufferAddData(b, data)
		}
		switch {
		case bf.Offset != 0:
			tflitefb.BufferAddOffset(b, bf.Offset)
			tflitefb.BufferAddSize(b, bf.Size)
		case offsets[i] != 0:
			tflitefb.BufferAddOffset(b, offsets[i])
			tflitefb.BufferAddSize(b, uint64(len(bf.Data)))
		case bf.Both:
			tflitefb.BufferAddOffset(b, 64)
			tflitefb.BufferAddSize(b, uint64(len(bf.Data)))
		}
		bufs[i] = tflitefb.BufferEnd(b)
	}

	subs := make([]flatbuffers.UOffsetT, len(m.Subgraphs))
	for si, sg := range m.Subgraphs {
		ts := make([]flatbuffers.UOffsetT, len(sg.Tensors))
		for ti, t := range sg.Tensors {
			var name, shape, quant, sparse flatbuffers.UOffsetT
			if t.Name != "" {
				name = str(t.Name)
			}
			if t.Shape != nil {
				shape = i32s(t.Shape)
			}
			if t.Scale != nil || t.Blockwise != nil {
				var scale, details flatbuffers.UOffsetT
				if t.Scale != nil {
					b.StartVector(4, len(t.Scale), 4)
					for i := len(t.Scale) - 1; i >= 0; i-- {
						b.PrependFloat32(t.Scale[i])
					}
					scale = b.EndVector(len(t.Scale))
				}
				if t.Blockwise != nil {
					tflitefb.BlockwiseQuantizationStart(b)
					tflitefb.BlockwiseQuantizationAddScales(b, t.Blockwise[0])
					tflitefb.BlockwiseQuantizationAddZeroPoints(b, t.Blockwise[1])
					tflitefb.BlockwiseQuantizationAddBlockSize(b, t.Blockwise[2])
					details = tflitefb.BlockwiseQuantizationEnd(b)
				}
				tflitefb.QuantizationParametersStart(b)
				if scale != 0 {
					tflitefb.QuantizationParametersAddScale(b, scale)
					tflitefb.QuantizationParametersAddQuantizedDimension(b, 0)
				}
				if details != 0 {
					tflitefb.QuantizationParametersAddDetailsType(b, tflitefb.QuantizationDetailsBlockwiseQuantization)
					tflitefb.QuantizationParametersAddDetails(b, details)
				}
				quant = tflitefb.QuantizationParametersEnd(b)
			}
			if t.Sparse {
				seg, idx := i32s([]int32{0, 1, 2}), i32s([]int32{0, 1})
				tflitefb.Int32VectorStart(b)
				tflitefb.Int32VectorAddValues(b, seg)
				segT := tflitefb.Int32VectorEnd(b)
				tflitefb.Int32VectorStart(b)
				tflitefb.Int32VectorAddValues(b, idx)
				idxT := tflitefb.Int32VectorEnd(b)
				tflitefb.DimensionMetadataStart(b)
				tflitefb.DimensionMetadataAddFormat(b, tflitefb.DimensionTypeDENSE)
				tflitefb.DimensionMetadataAddDenseSize(b, 2)
				d0 := tflitefb.DimensionMetadataEnd(b)
				tflitefb.DimensionMetadataStart(b)
				tflitefb.DimensionMetadataAddFormat(b, tflitefb.DimensionTypeSPARSE_CSR)
				tflitefb.DimensionMetadataAddArraySegmentsType(b, tflitefb.SparseIndexVectorInt32Vector)
				tflitefb.DimensionMetadataAddArraySegments(b, segT)
				tflitefb.DimensionMetadataAddArrayIndicesType(b, tflitefb.SparseIndexVectorInt32Vector)
				tflitefb.DimensionMetadataAddArrayIndices(b, idxT)
				d1 := tflitefb.DimensionMetadataEnd(b)
				dims := tables([]flatbuffers.UOffsetT{d0, d1})
				order := i32s([]int32{0, 1})
				tflitefb.SparsityParametersStart(b)
				tflitefb.SparsityParametersAddTraversalOrder(b, order)
				tflitefb.SparsityParametersAddDimMetadata(b, dims)
				sparse = tflitefb.SparsityParametersEnd(b)
			}
			tflitefb.TensorStart(b)
			if shape != 0 {
				tflitefb.TensorAddShape(b, shape)
			}
			tflitefb.TensorAddType(b, t.Type)
			tflitefb.TensorAddBuffer(b, t.Buffer)
			if name != 0 {
				tflitefb.TensorAddName(b, name)
			}
			if quant != 0 {
				tflitefb.TensorAddQuantization(b, quant)
			}
			tflitefb.TensorAddIsVariable(b, t.Variable)
			if sparse != 0 {
				tflitefb.TensorAddSparsity(b, sparse)
			}
			tflitefb.TensorAddExternalBuffer(b, t.External)
			ts[ti] = tflitefb.TensorEnd(b)
		}
		ops := make([]flatbuffers.UOffsetT, len(sg.Ops))
		for oi, op := range sg.Ops {
			in, out := i32s(op.Inputs), i32s(op.Outputs)
			var opts flatbuffers.UOffsetT
			var kind byte
			var two bool
			c := func(i int) int32 {
				if i < len(op.Calls) {
					return op.Calls[i]
				}
				return 0
			}
			switch op.Kind {
			case "while":
				tflitefb.WhileOptionsStart(b)
				tflitefb.WhileOptionsAddCondSubgraphIndex(b, c(0))
				tflitefb.WhileOptionsAddBodySubgraphIndex(b, c(1))
				opts, kind = tflitefb.WhileOptionsEnd(b), byte(tflitefb.BuiltinOptionsWhileOptions)
			case "if":
				tflitefb.IfOptionsStart(b)
				tflitefb.IfOptionsAddThenSubgraphIndex(b, c(0))
				tflitefb.IfOptionsAddElseSubgraphIndex(b, c(1))
				opts, kind = tflitefb.IfOptionsEnd(b), byte(tflitefb.BuiltinOptionsIfOptions)
			case "call":
				tflitefb.CallOptionsStart(b)
				tflitefb.CallOptionsAddSubgraph(b, uint32(c(0)))
				opts, kind = tflitefb.CallOptionsEnd(b), byte(tflitefb.BuiltinOptionsCallOptions)
			case "call_once":
				tflitefb.CallOnceOptionsStart(b)
				tflitefb.CallOnceOptionsAddInitSubgraphIndex(b, c(0))
				opts, kind = tflitefb.CallOnceOptionsEnd(b), byte(tflitefb.BuiltinOptionsCallOnceOptions)
			case "composite":
				name := str("odml.test")
				tflitefb.StableHLOCompositeOptionsStart(b)
				tflitefb.StableHLOCompositeOptionsAddName(b, name)
				tflitefb.StableHLOCompositeOptionsAddDecompositionSubgraphIndex(b, c(0))
				opts, kind, two = tflitefb.StableHLOCompositeOptionsEnd(b), byte(tflitefb.BuiltinOptions2StableHLOCompositeOptions), true
			}
			tflitefb.OperatorStart(b)
			tflitefb.OperatorAddOpcodeIndex(b, op.Opcode)
			tflitefb.OperatorAddInputs(b, in)
			tflitefb.OperatorAddOutputs(b, out)
			if opts != 0 && !two {
				tflitefb.OperatorAddBuiltinOptionsType(b, tflitefb.BuiltinOptions(kind))
				tflitefb.OperatorAddBuiltinOptions(b, opts)
			}
			if opts != 0 && two {
				tflitefb.OperatorAddBuiltinOptions2Type(b, tflitefb.BuiltinOptions2(kind))
				tflitefb.OperatorAddBuiltinOptions2(b, opts)
			}
			ops[oi] = tflitefb.OperatorEnd(b)
		}
		tv, ov := tables(ts), tables(ops)
		iv, outv := i32s(sg.Inputs), i32s(sg.Outputs)
		var name flatbuffers.UOffsetT
		if sg.Name != "" {
			name = str(sg.Name)
		}
		tflitefb.SubGraphStart(b)
		tflitefb.SubGraphAddTensors(b, tv)
		tflitefb.SubGraphAddInputs(b, iv)
		tflitefb.SubGraphAddOutputs(b, outv)
		tflitefb.SubGraphAddOperators(b, ov)
		if name != 0 {
			tflitefb.SubGraphAddName(b, name)
		}
		subs[si] = tflitefb.SubGraphEnd(b)
	}

	// Operator codes: ADD (0) and WHILE (119).
	codes := make([]flatbuffers.UOffsetT, 2)
	for i, code := range []int32{0, 119} {
		tflitefb.OperatorCodeStart(b)
		tflitefb.OperatorCodeAddDeprecatedBuiltinCode(b, int8(min(code, 127)))
		tflitefb.OperatorCodeAddBuiltinCode(b, code)
		tflitefb.OperatorCodeAddVersion(b, 1)
		codes[i] = tflitefb.OperatorCodeEnd(b)
	}

	mds := make([]flatbuffers.UOffsetT, len(m.Metadata))
	for i, md := range m.Metadata {
		n := str(md.Name)
		tflitefb.MetadataStart(b)
		tflitefb.MetadataAddName(b, n)
		tflitefb.MetadataAddBuffer(b, md.Buffer)
		mds[i] = tflitefb.MetadataEnd(b)
	}
	sigs := make([]flatbuffers.UOffsetT, len(m.Signatures))
	for i, s := range m.Signatures {
		maps := func(mp map[string]uint32) flatbuffers.UOffsetT {
			var v []flatbuffers.UOffsetT
			for _, k := range sortedKeys(mp) {
				n := str(k)
				tflitefb.TensorMapStart(b)
				tflitefb.TensorMapAddName(b, n)
				tflitefb.TensorMapAddTensorIndex(b, mp[k])
				v = append(v, tflitefb.TensorMapEnd(b))
			}
			return tables(v)
		}
		in, out, key := maps(s.Inputs), maps(s.Outputs), str(s.Key)
		tflitefb.SignatureDefStart(b)
		tflitefb.SignatureDefAddInputs(b, in)
		tflitefb.SignatureDefAddOutputs(b, out)
		tflitefb.SignatureDefAddSignatureKey(b, key)
		tflitefb.SignatureDefAddSubgraphIndex(b, s.Subgraph)
		sigs[i] = tflitefb.SignatureDefEnd(b)
	}

	codesV, subsV, bufsV, mdV, sigV := tables(codes), tables(subs), tables(bufs), tables(mds), tables(sigs)
	var mdBuf flatbuffers.UOffsetT
	if m.MetadataBuffer != nil {
		mdBuf = i32s(m.MetadataBuffer)
	}
	desc := str(m.Description)
	version := m.Version
	if version == 0 {
		version = 3
	}
	tflitefb.ModelStart(b)
	tflitefb.ModelAddVersion(b, version)
	tflitefb.ModelAddOperatorCodes(b, codesV)
	tflitefb.ModelAddSubgraphs(b, subsV)
	tflitefb.ModelAddDescription(b, desc)
	tflitefb.ModelAddBuffers(b, bufsV)
	if mdBuf != 0 {
		tflitefb.ModelAddMetadataBuffer(b, mdBuf)
	}
	tflitefb.ModelAddMetadata(b, mdV)
	tflitefb.ModelAddSignatureDefs(b, sigV)
	b.FinishWithFileIdentifier(tflitefb.ModelEnd(b), []byte("TFL3"))
	return b.FinishedBytes()
}

func sortedKeys(m map[string]uint32) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

// Sample returns a model that exercises what a reader must handle: three
// subgraphs (main calls 1 and 2 through WHILE), an unnamed tensor, a buffer
// shared by tensors of two subgraphs, a name carried by constants of two
// subgraphs, int4, blockwise-quantized and sparse constants, a variable
// tensor, a constant no operator reads, metadata and a signature. With
// external it uses the large-model layout.
func Sample(external bool) *Model {
	f32 := tflitefb.TensorTypeFLOAT32
	return &Model{
		Description: "edgeload sample",
		External:    external,
		Buffers: []Buffer{
			{},                                     // 0: sentinel
			{Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}}, // 1: f32[2] (bit patterns), shared
			{Data: []byte{0x21, 0x43}},             // 2: int4 [2,2]
			{Data: []byte{0, 0x3c, 0, 0x40}},       // 3: f16 [2] scales
			{Data: []byte{7, 9}},                   // 4: sparse int8 [2,2], 2 stored
			{Data: []byte("1.14.0\x00\x00")},       // 5: min_runtime_version
			{},                                     // 6: empty (activation)
			{Data: []byte{5, 5, 5, 5}},             // 7: int32 scalar, in subgraph 2
			{Data: []byte{1, 2, 3, 4}},             // 8: orphan: no tensor names it
		},
		Metadata:   []Metadata{{Name: "min_runtime_version", Buffer: 5}},
		Signatures: []Signature{{Key: "serving_default", Subgraph: 0, Inputs: map[string]uint32{"x": 0}, Outputs: map[string]uint32{"y": 5}}},
		Subgraphs: []Subgraph{
			{
				Name: "main",
				Tensors: []Tensor{
					{Name: "x", Type: f32, Shape: []int32{2}},                                                                   // 0 input
					{Name: "w", Type: f32, Shape: []int32{2}, Buffer: 1},                                                        // 1
					{Name: "q", Type: tflitefb.TensorTypeINT4, Shape: []int32{2, 2}, Buffer: 2, Blockwise: &[3]int32{3, -1, 2}}, // 2
					{Name: "q_scale", Type: tflitefb.TensorTypeFLOAT16, Shape: []int32{2}, Buffer: 3},                           // 3: reached only through quantization
					{Type: tflitefb.TensorTypeINT8, Shape: []int32{2, 2}, Buffer: 4, Sparse: true, Scale: []float32{0.5}},       // 4: unnamed
					{Name: "y", Type: f32, Shape: []int32{2}},                                                                   // 5
					{Name: "state", Type: f32, Shape: []int32{2}, Buffer: 6, Variable: true},                                    // 6
					{Name: "c", Type: tflitefb.TensorTypeINT32, Shape: []int32{}, Buffer: 7},                                    // 7: name also in subgraph 2
				},
				Inputs:  []int32{0},
				Outputs: []int32{5},
				Ops: []Op{
					{Opcode: 0, Inputs: []int32{0, 4, -1, 1}, Outputs: []int32{5}},
					{Opcode: 1, Inputs: []int32{5, 6}, Outputs: []int32{5}, Kind: "while", Calls: []int32{2, 1}},
					{Opcode: 0, Inputs: []int32{2, 7}, Outputs: []int32{5}},
				},
			},
			{
				Name:    "body",
				Tensors: []Tensor{{Name: "b_in", Type: f32, Shape: []int32{2}}, {Name: "w", Type: f32, Shape: []int32{1, 2}, Buffer: 1}},
				Inputs:  []int32{0},
				Outputs: []int32{0},
				Ops:     []Op{{Opcode: 0, Inputs: []int32{0, 1}, Outputs: []int32{0}}},
			},
			{
				Tensors: []Tensor{{Name: "c_in", Type: f32, Shape: []int32{2}}, {Name: "c", Type: tflitefb.TensorTypeINT32, Shape: []int32{}, Buffer: 7}},
				Inputs:  []int32{0},
				Outputs: []int32{0},
				Ops:     []Op{{Opcode: 0, Inputs: []int32{0, 1}, Outputs: []int32{0}}},
			},
		},
	}
}
