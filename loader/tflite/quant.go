package tflite

import (
	"fmt"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
)

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
// nil when it has none. Each call decodes afresh. The first call of
// Quantization or Sparsity verifies every tensor's quantization and
// sparsity tables (NewFile leaves them: Check verifies them too), and
// returns the error of a bad one, as every later call does.
func (m *Model) Quantization(t *Tensor) (*Quantization, error) {
	if err := m.verifyParams(); err != nil || !t.Quantized {
		return nil, err
	}
	defer m.unpin()
	if !m.pin() {
		return nil, fmt.Errorf("tflite: quantization: %w", format.ErrClosed)
	}
	var tt tflitefb.Tensor
	tt.Init(m.fb, t.table)
	var q tflitefb.QuantizationParameters
	tt.Quantization(&q)
	out := &Quantization{
		Min:       vec[float32](q.MinLength(), q.Min),
		Max:       vec[float32](q.MaxLength(), q.Max),
		Scale:     vec[float32](q.ScaleLength(), q.Scale),
		ZeroPoint: vec[int64](q.ZeroPointLength(), q.ZeroPoint),
		Dimension: q.QuantizedDimension(),
	}
	var d flatbuffers.Table
	if !q.Details(&d) {
		return out, nil // none, or a tag without a value
	}
	out.Details = uint8(q.DetailsType())
	switch q.DetailsType() {
	case tflitefb.QuantizationDetailsBlockwiseQuantization:
		var b tflitefb.BlockwiseQuantization
		b.Init(d.Bytes, d.Pos)
		out.Blockwise = &Blockwise{Scales: b.Scales(), ZeroPoints: b.ZeroPoints(), BlockSize: b.BlockSize()}
	case tflitefb.QuantizationDetailsCustomQuantization:
		var c tflitefb.CustomQuantization
		c.Init(d.Bytes, d.Pos)
		out.Custom = append([]byte(nil), c.CustomBytes()...)
	}
	return out, nil
}

// Sparsity decodes the sparsity parameters of t (a tensor of m), nil when
// it is dense. Each call decodes afresh; the first verifies the tables as
// Quantization's does.
func (m *Model) Sparsity(t *Tensor) (*Sparsity, error) {
	if err := m.verifyParams(); err != nil || !t.Sparse {
		return nil, err
	}
	defer m.unpin()
	if !m.pin() {
		return nil, fmt.Errorf("tflite: sparsity: %w", format.ErrClosed)
	}
	var tt tflitefb.Tensor
	tt.Init(m.fb, t.table)
	var s tflitefb.SparsityParameters
	tt.Sparsity(&s)
	out := &Sparsity{
		TraversalOrder: vec[int32](s.TraversalOrderLength(), s.TraversalOrder),
		BlockMap:       vec[int32](s.BlockMapLength(), s.BlockMap),
		Dims:           make([]DimensionMetadata, s.DimMetadataLength()),
	}
	var d tflitefb.DimensionMetadata
	for i := range out.Dims {
		s.DimMetadata(&d, i)
		var seg, idx flatbuffers.Table
		out.Dims[i] = DimensionMetadata{
			Sparse:    d.Format() == tflitefb.DimensionTypeSPARSE_CSR,
			DenseSize: d.DenseSize(),
		}
		if d.ArraySegments(&seg) {
			out.Dims[i].Segments = indexVector(d.ArraySegmentsType(), &seg)
		}
		if d.ArrayIndices(&idx) {
			out.Dims[i].Indices = indexVector(d.ArrayIndicesType(), &idx)
		}
	}
	return out, nil
}

// paramsDepth is the nesting depth of a tensor's quantization and sparsity
// tables: Model, SubGraph, Tensor, then they.
const paramsDepth = 4

// verifyParams verifies, once, the quantization and sparsity tables of
// every tensor of every subgraph, which NewFile's walk left (lazy): with
// the same walk, as the walk that is not lazy would at their place.
func (m *Model) verifyParams() error {
	m.paramsOnce.Do(func() {
		defer m.unpin()
		if !m.pin() {
			m.paramsErr = fmt.Errorf("tflite: quantization and sparsity: %w", format.ErrClosed)
			return
		}
		m.walkMu.Lock()
		defer m.walkMu.Unlock()
		var sg tflitefb.SubGraph
		for i := range m.nsub {
			m.root.Subgraphs(&sg, i)
			tab := sg.Table()
			start, n := elems(&tab, vtSubGraphTensors)
			for j := range n {
				e := start + flatbuffers.UOffsetT(4*j)
				t := flatbuffers.Table{Bytes: m.fb, Pos: tab.Indirect(e)}
				for _, f := range [2]struct {
					vt     flatbuffers.VOffsetT
					name   string
					verify func(*fbverify.Walk, int64) error
				}{{vtTensorQuantization, "quantization", tflitefb.VerifyQuantizationParameters}, {vtTensorSparsity, "sparsity", tflitefb.VerifySparsityParameters}} {
					if o := t.Offset(f.vt); o != 0 {
						name := tensorField(i, j) + "." + f.name
						if _, err := m.walk.Elem(int64(t.Pos)+int64(o), 0, name, f.verify, paramsDepth); err != nil {
							m.paramsErr = err
							return
						}
					}
				}
			}
		}
	})
	return m.paramsErr
}

// elems returns the position of the first element of vector field vt
// (a vtable offset) of table t, and its length; 0, 0 when absent.
func elems(t *flatbuffers.Table, vt flatbuffers.VOffsetT) (start flatbuffers.UOffsetT, n int) {
	if o := flatbuffers.UOffsetT(t.Offset(vt)); o != 0 {
		return t.Vector(o), t.VectorLen(o)
	}
	return 0, 0
}

// indexVector decodes a SparseIndexVector union value of the given tag,
// widened to int32; nil for a tag this package does not know.
func indexVector(tag tflitefb.SparseIndexVector, t *flatbuffers.Table) []int32 {
	switch tag {
	case tflitefb.SparseIndexVectorInt32Vector:
		var v tflitefb.Int32Vector
		v.Init(t.Bytes, t.Pos)
		return widen[int32](v.ValuesLength(), v.Values)
	case tflitefb.SparseIndexVectorUint16Vector:
		var v tflitefb.Uint16Vector
		v.Init(t.Bytes, t.Pos)
		return widen[int32](v.ValuesLength(), v.Values)
	case tflitefb.SparseIndexVectorUint8Vector:
		var v tflitefb.Uint8Vector
		v.Init(t.Bytes, t.Pos)
		return widen[int32](v.ValuesLength(), v.Values)
	}
	return nil
}

type number interface {
	int32 | int64 | uint16 | uint8 | float32
}

// widen copies the n elements get reads, as T.
func widen[T, E number](n int, get func(int) E) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = T(get(i))
	}
	return out
}

// vec is widen, but nil when n is 0.
func vec[T, E number](n int, get func(int) E) []T {
	if n == 0 {
		return nil
	}
	return widen[T](n, get)
}
