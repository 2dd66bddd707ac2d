package tflite

import "math"

// Quantization is a tensor's QuantizationParameters.
type Quantization struct {
	Min, Max, Scale []float32
	ZeroPoint       []int64
	// Dimension is quantized_dimension: the axis Scale and ZeroPoint run
	// along when they have more than one element.
	Dimension int32
	// Details is the details union tag: 0 none, 1 CustomQuantization,
	// 2 BlockwiseQuantization, others unknown to this package.
	Details uint8
	// Blockwise holds BlockwiseQuantization (Details 2), nil otherwise.
	Blockwise *Blockwise
	// Custom holds CustomQuantization.custom (Details 1).
	Custom []byte
}

// Blockwise is BlockwiseQuantization: the scales (and zero points) are
// tensors of the same subgraph.
type Blockwise struct {
	// Scales and ZeroPoints are tensor indices; ZeroPoints -1: zero.
	Scales, ZeroPoints int32
	BlockSize          int32
}

// Sparsity is a tensor's SparsityParameters.
type Sparsity struct {
	TraversalOrder, BlockMap []int32
	Dims                     []DimensionMetadata
}

// DimensionMetadata describes one dimension of a sparse tensor in
// traversal order.
type DimensionMetadata struct {
	// Sparse is true for SPARSE_CSR, false for DENSE.
	Sparse bool
	// DenseSize is the size of a dense dimension.
	DenseSize int32
	// Segments and Indices are the CSR arrays of a sparse dimension,
	// widened to int32.
	Segments, Indices []int32
}

// Quantization decodes the quantization parameters of t (a tensor of m),
// nil when it has none. Each call decodes afresh.
func (m *Model) Quantization(t *Tensor) *Quantization {
	q := t.quant
	if q == 0 {
		return nil
	}
	r := m.fb
	out := &Quantization{
		Min:       r.f32s(q, 0),
		Max:       r.f32s(q, 1),
		Scale:     r.f32s(q, 2),
		Dimension: r.fieldI32(q, 6, 0),
	}
	if start, n := r.vector(q, 3); start != 0 {
		out.ZeroPoint = make([]int64, n)
		for i := range out.ZeroPoint {
			out.ZeroPoint[i] = int64(r.u64(start + 8*int64(i)))
		}
	}
	tag, v := r.union(q, 4)
	out.Details = tag
	switch tag {
	case tagBlockwiseQuantization:
		out.Blockwise = &Blockwise{Scales: r.fieldI32(v, 0, 0), ZeroPoints: r.fieldI32(v, 1, 0), BlockSize: r.fieldI32(v, 2, 0)}
	case tagCustomQuantization:
		out.Custom = append([]byte(nil), r.bytes(v, 0)...)
	}
	return out
}

// Sparsity decodes the sparsity parameters of t (a tensor of m), nil when
// it is dense. Each call decodes afresh.
func (m *Model) Sparsity(t *Tensor) *Sparsity {
	s := t.sparsity
	if s == 0 {
		return nil
	}
	r := m.fb
	out := &Sparsity{TraversalOrder: r.i32s(s, 0), BlockMap: r.i32s(s, 1)}
	start, n := r.vector(s, 2)
	out.Dims = make([]DimensionMetadata, n)
	for i := range out.Dims {
		d := r.elem(start, int64(i))
		out.Dims[i] = DimensionMetadata{
			Sparse:    r.fieldU8(d, 0, 0) == 1,
			DenseSize: r.fieldI32(d, 1, 0),
			Segments:  r.indexVector(d, 2),
			Indices:   r.indexVector(d, 4),
		}
	}
	return out
}

// indexVector decodes the SparseIndexVector union at ids id, id+1.
func (r reader) indexVector(t int64, id int) []int32 {
	tag, v := r.union(t, id)
	if tag < tagInt32Vector || tag > tagUint8Vector {
		return nil // none, or an index type this package does not know
	}
	start, n := r.vector(v, 0)
	if start == 0 {
		return []int32{}
	}
	out := make([]int32, n)
	for i := range out {
		switch tag {
		case tagInt32Vector:
			out[i] = int32(r.u32(start + 4*int64(i)))
		case tagUint16Vector:
			out[i] = int32(le.Uint16(r[start+2*int64(i):]))
		default:
			out[i] = int32(r[start+int64(i)])
		}
	}
	return out
}

// f32s decodes float vector field id.
func (r reader) f32s(t int64, id int) []float32 {
	start, n := r.vector(t, id)
	if start == 0 {
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(r.u32(start + 4*int64(i)))
	}
	return out
}
