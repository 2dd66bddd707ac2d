package writer

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
)

// RTen describes an RTen model file (.rten) to write: a V2 file (32-byte
// "RTEN" header, Model FlatBuffer, tensor data section) or, with V1, a
// headerless file whose constants are all inline.
//
// The zero value of every knob gives what rten-convert writes: version 2,
// model data at offset 32, schema_version 1, tensor data section and every
// tensor aligned to 64. The knobs that make a file invalid (another header
// version, a schema version other than 1, a data_offset past the data,
// node references out of range, inline data of the wrong length) are there
// so that tests can produce exactly the broken file they need; the writer
// checks only what it must to lay the file out.
type RTen struct {
	// V1 writes a headerless V1 file: the FlatBuffer alone, every constant
	// inline whatever its Inline flag says.
	V1 bool
	// Graph is the main graph.
	Graph RTenGraph
	// Metadata, when non-nil, writes a Metadata table.
	Metadata *RTenMetadata
	// SchemaVersion is Model.schema_version; 0 means 1.
	SchemaVersion int32
	// Align is the alignment of the tensor data section and of every
	// external tensor, as absolute file offsets: 0 means 64 (the
	// converter's choice); RTenAlignElement aligns each tensor to its
	// element size only (as other writers do) and the section not at all;
	// 1 packs tensors with no alignment at all (misaligned views).
	Align int64
	// HeaderVersion is the header's version field; 0 means 2.
	HeaderVersion uint32
	// ModelOffset is where the FlatBuffer starts (V2); 0 means 32. It must
	// be a multiple of 8 and at least 32.
	ModelOffset int64
}

// RTenAlignElement, as RTen.Align, aligns each tensor to its element size.
const RTenAlignElement = -1

// RTenGraph is a graph: nodes in order, and inputs, outputs and captures as
// node indices (written as given, unchecked).
type RTenGraph struct {
	Nodes    []RTenNode
	Inputs   []uint32
	Outputs  []uint32
	Captures []uint32
}

// RTenNode is a graph node: set exactly one of Operator, Constant and Value
// (none writes a node without data, which readers reject).
type RTenNode struct {
	Name     string
	Operator *RTenOperator
	Constant *RTenConstant
	Value    *RTenValue
}

// RTenOperator is an operator node. Then/Else write IfAttrs, Body writes
// LoopAttrs; otherwise a non-zero AttrsType writes an empty attributes
// table with that OperatorAttrs tag.
type RTenOperator struct {
	Type      uint8 // the OperatorType wire value (any, known or not)
	AttrsType uint8
	Inputs    []int32 // negative: absent optional input
	Outputs   []int32
	Then      *RTenGraph
	Else      *RTenGraph
	Body      *RTenGraph
}

// RTenValue is a value node. A nil Shape is not written; DType Invalid is
// not written (ValueNode.dtype is optional).
type RTenValue struct {
	Shape []RTenDim
	DType format.DType
}

// RTenDim is a dimension: a fixed Value, or a symbolic one when Name is set.
type RTenDim struct {
	Value uint32
	Name  string
}

// RTenConstant is a constant node's tensor.
type RTenConstant struct {
	// DType is Float32, Int32, Int8 or Uint8.
	DType format.DType
	Shape []uint32
	// Inline stores the data in the FlatBuffer (FloatData, Int32Data, ...);
	// otherwise it goes to the tensor data section with a data_offset.
	Inline bool
	// Data holds the bytes (numel × element size; for an inline constant
	// any multiple of the element size, to write a mismatch on purpose).
	// When it is nil, Fill writes them; when Fill is nil too, an external
	// tensor's range is left as a sparse hole that reads as zeros and costs
	// no disk space, and an inline one is numel zeros.
	Data []byte
	// Fill, when Data is nil, is called with consecutive chunks of the
	// tensor's bytes: off is the offset of p[0] inside the tensor.
	Fill func(p []byte, off int64)
	// NoDType leaves ConstantNode.dtype out (older files).
	NoDType bool
	// NoData writes neither inline data nor a data_offset.
	NoData bool
	// DataOffset, when non-nil, makes the constant external (even in a V1
	// file) with this data_offset instead of one the writer lays out, and
	// no bytes are written for it.
	DataOffset *uint64
}

// RTenMetadata is the Metadata table (empty strings are not written).
type RTenMetadata struct {
	ONNXHash, Description, License, Commit         string
	CodeRepository, ModelRepository, RunID, RunURL string
}

// RTenPlaced says where a constant's bytes ended up.
type RTenPlaced struct {
	Name   string
	Inline bool
	// Offset is the absolute file offset of the first byte (-1 for NoData).
	Offset int64
	// DataOffset is the written data_offset (external), -1 otherwise.
	DataOffset int64
	NBytes     int64
}

// RTenLayoutInfo describes the file the writer laid out.
type RTenLayoutInfo struct {
	FileSize         int64
	ModelOffset      int64
	ModelLen         int64
	TensorDataOffset int64 // 0 for V1
	// Constants, in the order a reader lists them: depth first in node
	// order, a subgraph's constants after the operator that holds it.
	Constants []RTenPlaced
}

// rtenExt is an external constant to write.
type rtenExt struct {
	c      *RTenConstant
	off    int64 // absolute
	n      int64
	placed int // index in info.Constants
}

type rtenPlan struct {
	head []byte // bytes [0, len(head)): header and FlatBuffer
	info RTenLayoutInfo
	ext  []rtenExt
}

// rtenElem returns the element size of the four RTen constant types.
func rtenElem(d format.DType) (int64, error) {
	switch d {
	case format.Float32, format.Int32:
		return 4, nil
	case format.Int8, format.Uint8:
		return 1, nil
	}
	return 0, fmt.Errorf("writer: rten constants are float32, int32, int8 or uint8, not %v", d)
}

func (c *RTenConstant) nbytes() (int64, error) {
	es, err := rtenElem(c.DType)
	if err != nil {
		return 0, err
	}
	n := es
	for _, d := range c.Shape {
		if d != 0 && n > math.MaxInt64/int64(d) {
			return 0, fmt.Errorf("writer: rten constant shape %v overflows", c.Shape)
		}
		n *= int64(d)
	}
	return n, nil
}

func rtenAlignUp(x, a int64) int64 {
	if a <= 1 {
		return x
	}
	return (x + a - 1) / a * a
}

// rtenWalk visits the constants in reader order.
func rtenWalk(g *RTenGraph, fn func(name string, c *RTenConstant) error) error {
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Constant != nil {
			if err := fn(n.Name, n.Constant); err != nil {
				return err
			}
		}
		if op := n.Operator; op != nil {
			for _, s := range []*RTenGraph{op.Then, op.Else, op.Body} {
				if s != nil {
					if err := rtenWalk(s, fn); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Plan lays the file out without writing it.
func (r *RTen) Plan() (RTenLayoutInfo, error) {
	pl, err := r.plan()
	if err != nil {
		return RTenLayoutInfo{}, err
	}
	return pl.info, nil
}

func (r *RTen) plan() (*rtenPlan, error) {
	mo := r.ModelOffset
	if mo == 0 {
		mo = 32
	}
	if !r.V1 && (mo < 32 || mo%8 != 0) {
		return nil, fmt.Errorf("writer: rten model offset %d (want a multiple of 8, >= 32)", mo)
	}
	if r.V1 {
		mo = 0
	}
	align := r.Align
	if align == 0 {
		align = 64
	}
	if align < RTenAlignElement || align == 0 {
		return nil, fmt.Errorf("writer: rten alignment %d", align)
	}
	pl := &rtenPlan{}
	pl.info.ModelOffset = mo

	// Lay out the external tensors relative to the section (its start,
	// aligned the same way, is only known once the FlatBuffer is built;
	// relative and absolute alignment agree because the section start is
	// a multiple of every alignment used, or alignment is not wanted).
	offsets := map[*RTenConstant]uint64{}
	var rel int64
	err := rtenWalk(&r.Graph, func(name string, c *RTenConstant) error {
		nb, err := c.nbytes()
		if err != nil && !c.NoData && c.DataOffset == nil {
			return fmt.Errorf("%w (constant %q)", err, name)
		}
		p := RTenPlaced{Name: name, Offset: -1, DataOffset: -1, NBytes: nb}
		switch {
		case c.NoData:
		case c.DataOffset == nil && (c.Inline || r.V1):
			p.Inline = true
		default:
			a := align
			if a == RTenAlignElement {
				a, _ = rtenElem(c.DType)
			}
			if prev, seen := offsets[c]; seen { // the same constant twice
				p.DataOffset = int64(prev)
			} else if c.DataOffset != nil {
				offsets[c] = *c.DataOffset
				p.DataOffset = int64(*c.DataOffset)
			} else {
				rel = rtenAlignUp(rel, a)
				offsets[c] = uint64(rel)
				p.DataOffset = rel
				pl.ext = append(pl.ext, rtenExt{c: c, off: rel, n: nb, placed: len(pl.info.Constants)})
				rel += nb
			}
		}
		pl.info.Constants = append(pl.info.Constants, p)
		return nil
	})
	if err != nil {
		return nil, err
	}

	b := flatbuffers.NewBuilder(1024)
	bw := &rtenBuild{b: b, r: r, offsets: offsets, inline: map[*RTenConstant]flatbuffers.UOffsetT{}}
	graph, err := bw.graph(&r.Graph)
	if err != nil {
		return nil, err
	}
	var meta flatbuffers.UOffsetT
	if m := r.Metadata; m != nil {
		meta = bw.metadata(m)
	}
	sv := r.SchemaVersion
	if sv == 0 {
		sv = 1
	}
	rtenfb.ModelStart(b)
	rtenfb.ModelAddSchemaVersion(b, sv)
	rtenfb.ModelAddGraph(b, graph)
	if meta != 0 {
		rtenfb.ModelAddMetadata(b, meta)
	}
	b.Finish(rtenfb.ModelEnd(b))
	fb := b.FinishedBytes()
	flen := int64(len(fb))
	pl.info.ModelLen = flen

	// inline data positions: a vector at builder offset v starts at
	// len(fb)-v in the finished buffer; its data 4 bytes later
	idx := 0
	_ = rtenWalk(&r.Graph, func(name string, c *RTenConstant) error {
		p := &pl.info.Constants[idx]
		idx++
		if v, ok := bw.inline[c]; ok && p.Inline {
			p.Offset = mo + flen - int64(v) + 4
		}
		return nil
	})

	if r.V1 {
		pl.head = fb
		pl.info.FileSize = flen
		return pl, nil
	}
	td := mo + flen
	if align > 1 {
		td = rtenAlignUp(td, align)
	}
	pl.info.TensorDataOffset = td
	pl.info.FileSize = td + rel
	for _, e := range pl.ext {
		pl.info.Constants[e.placed].Offset = td + e.off
	}
	for i := range pl.ext {
		pl.ext[i].off += td
	}
	hv := r.HeaderVersion
	if hv == 0 {
		hv = 2
	}
	head := make([]byte, mo+flen)
	copy(head, rten.Header{Version: int(hv), ModelOffset: mo, ModelLen: flen, TensorDataOffset: td}.Append(nil))
	copy(head[mo:], fb)
	pl.head = head
	return pl, nil
}

// rtenBuild builds the FlatBuffer bottom-up.
type rtenBuild struct {
	b       *flatbuffers.Builder
	r       *RTen
	offsets map[*RTenConstant]uint64
	inline  map[*RTenConstant]flatbuffers.UOffsetT // inline data vector offsets
	depth   int
}

func (w *rtenBuild) u32s(v []uint32) flatbuffers.UOffsetT {
	w.b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		w.b.PrependUint32(v[i])
	}
	return w.b.EndVector(len(v))
}

func (w *rtenBuild) i32s(v []int32) flatbuffers.UOffsetT {
	w.b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		w.b.PrependInt32(v[i])
	}
	return w.b.EndVector(len(v))
}

func (w *rtenBuild) offs(v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	w.b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		w.b.PrependUOffsetT(v[i])
	}
	return w.b.EndVector(len(v))
}

func (w *rtenBuild) graph(g *RTenGraph) (flatbuffers.UOffsetT, error) {
	w.depth++
	defer func() { w.depth-- }()
	if w.depth > 200 {
		return 0, fmt.Errorf("writer: rten subgraphs nested too deep (a graph contains itself?)")
	}
	b := w.b
	nodes := make([]flatbuffers.UOffsetT, len(g.Nodes))
	for i := range g.Nodes {
		n, err := w.node(&g.Nodes[i])
		if err != nil {
			return 0, err
		}
		nodes[i] = n
	}
	nv := w.offs(nodes)
	var in, out, capt flatbuffers.UOffsetT
	if g.Inputs != nil {
		in = w.u32s(g.Inputs)
	}
	if g.Outputs != nil {
		out = w.u32s(g.Outputs)
	}
	if g.Captures != nil {
		capt = w.u32s(g.Captures)
	}
	rtenfb.GraphStart(b)
	rtenfb.GraphAddNodes(b, nv)
	if in != 0 {
		rtenfb.GraphAddInputs(b, in)
	}
	if out != 0 {
		rtenfb.GraphAddOutputs(b, out)
	}
	if capt != 0 {
		rtenfb.GraphAddCaptures(b, capt)
	}
	return rtenfb.GraphEnd(b), nil
}

func (w *rtenBuild) node(n *RTenNode) (flatbuffers.UOffsetT, error) {
	b := w.b
	var kind rtenfb.NodeKind
	var data flatbuffers.UOffsetT
	var err error
	switch {
	case n.Operator != nil:
		kind = rtenfb.NodeKindOperatorNode
		data, err = w.operator(n.Operator)
	case n.Constant != nil:
		kind = rtenfb.NodeKindConstantNode
		data, err = w.constant(n.Constant)
	case n.Value != nil:
		kind = rtenfb.NodeKindValueNode
		data = w.value(n.Value)
	}
	if err != nil {
		return 0, fmt.Errorf("%w (node %q)", err, n.Name)
	}
	var name flatbuffers.UOffsetT
	if n.Name != "" {
		name = b.CreateString(n.Name)
	}
	rtenfb.NodeStart(b)
	if name != 0 {
		rtenfb.NodeAddName(b, name)
	}
	if kind != rtenfb.NodeKindNONE {
		rtenfb.NodeAddDataType(b, kind)
		rtenfb.NodeAddData(b, data)
	}
	return rtenfb.NodeEnd(b), nil
}

func (w *rtenBuild) operator(op *RTenOperator) (flatbuffers.UOffsetT, error) {
	b := w.b
	attrsType := rtenfb.OperatorAttrs(op.AttrsType)
	var attrs flatbuffers.UOffsetT
	switch {
	case op.Then != nil || op.Else != nil:
		var th, el flatbuffers.UOffsetT
		var err error
		if op.Then != nil {
			if th, err = w.graph(op.Then); err != nil {
				return 0, err
			}
		}
		if op.Else != nil {
			if el, err = w.graph(op.Else); err != nil {
				return 0, err
			}
		}
		rtenfb.IfAttrsStart(b)
		if th != 0 {
			rtenfb.IfAttrsAddThenBranch(b, th)
		}
		if el != 0 {
			rtenfb.IfAttrsAddElseBranch(b, el)
		}
		attrs, attrsType = rtenfb.IfAttrsEnd(b), rtenfb.OperatorAttrsIfAttrs
	case op.Body != nil:
		body, err := w.graph(op.Body)
		if err != nil {
			return 0, err
		}
		rtenfb.LoopAttrsStart(b)
		rtenfb.LoopAttrsAddBody(b, body)
		attrs, attrsType = rtenfb.LoopAttrsEnd(b), rtenfb.OperatorAttrsLoopAttrs
	case attrsType != rtenfb.OperatorAttrsNONE:
		b.StartObject(0)
		attrs = b.EndObject()
	}
	var in, out flatbuffers.UOffsetT
	if op.Inputs != nil {
		in = w.i32s(op.Inputs)
	}
	if op.Outputs != nil {
		out = w.i32s(op.Outputs)
	}
	rtenfb.OperatorNodeStart(b)
	rtenfb.OperatorNodeAddType(b, rtenfb.OperatorType(op.Type))
	if attrs != 0 {
		rtenfb.OperatorNodeAddAttrsType(b, attrsType)
		rtenfb.OperatorNodeAddAttrs(b, attrs)
	}
	if in != 0 {
		rtenfb.OperatorNodeAddInputs(b, in)
	}
	if out != 0 {
		rtenfb.OperatorNodeAddOutputs(b, out)
	}
	return rtenfb.OperatorNodeEnd(b), nil
}

func (w *rtenBuild) constant(c *RTenConstant) (flatbuffers.UOffsetT, error) {
	b := w.b
	es, err := rtenElem(c.DType)
	if err != nil {
		return 0, err
	}
	shape := w.u32s(c.Shape)
	var data flatbuffers.UOffsetT
	var tag rtenfb.ConstantData
	_, external := w.offsets[c]
	if !c.NoData && !external {
		nb, err := c.nbytes()
		if err != nil {
			return 0, err
		}
		raw := c.Data
		if raw == nil {
			raw = make([]byte, nb)
			if c.Fill != nil {
				c.Fill(raw, 0)
			}
		}
		if int64(len(raw))%es != 0 {
			return 0, fmt.Errorf("writer: rten inline data of %d bytes is not a whole number of %v", len(raw), c.DType)
		}
		n := len(raw) / int(es)
		b.StartVector(int(es), n, int(es))
		le := binary.LittleEndian
		for i := n - 1; i >= 0; i-- {
			if es == 4 {
				b.PrependUint32(le.Uint32(raw[4*i:]))
			} else {
				b.PrependByte(raw[i])
			}
		}
		vec := b.EndVector(n)
		w.inline[c] = vec
		switch c.DType {
		case format.Float32:
			tag = rtenfb.ConstantDataFloatData
			rtenfb.FloatDataStart(b)
			rtenfb.FloatDataAddData(b, vec)
			data = rtenfb.FloatDataEnd(b)
		case format.Int32:
			tag = rtenfb.ConstantDataInt32Data
			rtenfb.Int32DataStart(b)
			rtenfb.Int32DataAddData(b, vec)
			data = rtenfb.Int32DataEnd(b)
		case format.Int8:
			tag = rtenfb.ConstantDataInt8Data
			rtenfb.Int8DataStart(b)
			rtenfb.Int8DataAddData(b, vec)
			data = rtenfb.Int8DataEnd(b)
		default:
			tag = rtenfb.ConstantDataUInt8Data
			rtenfb.UInt8DataStart(b)
			rtenfb.UInt8DataAddData(b, vec)
			data = rtenfb.UInt8DataEnd(b)
		}
	}
	rtenfb.ConstantNodeStart(b)
	rtenfb.ConstantNodeAddShape(b, shape)
	if data != 0 {
		rtenfb.ConstantNodeAddDataType(b, tag)
		rtenfb.ConstantNodeAddData(b, data)
	}
	if !c.NoDType {
		var dt rtenfb.ConstantDataType
		switch c.DType {
		case format.Float32:
			dt = rtenfb.ConstantDataTypeFloat32
		case format.Int32:
			dt = rtenfb.ConstantDataTypeInt32
		case format.Int8:
			dt = rtenfb.ConstantDataTypeInt8
		default:
			dt = rtenfb.ConstantDataTypeUInt8
		}
		rtenfb.ConstantNodeAddDtype(b, dt)
	}
	if off, ok := w.offsets[c]; ok && !c.NoData {
		rtenfb.ConstantNodeAddDataOffset(b, off)
	}
	return rtenfb.ConstantNodeEnd(b), nil
}

func (w *rtenBuild) value(v *RTenValue) flatbuffers.UOffsetT {
	b := w.b
	var shape flatbuffers.UOffsetT
	if v.Shape != nil {
		dims := make([]flatbuffers.UOffsetT, len(v.Shape))
		for i, d := range v.Shape {
			var name flatbuffers.UOffsetT
			if d.Name != "" {
				name = b.CreateString(d.Name)
			}
			rtenfb.DimStart(b)
			rtenfb.DimAddValue(b, d.Value)
			if name != 0 {
				rtenfb.DimAddName(b, name)
			}
			dims[i] = rtenfb.DimEnd(b)
		}
		shape = w.offs(dims)
	}
	rtenfb.ValueNodeStart(b)
	if shape != 0 {
		rtenfb.ValueNodeAddShape(b, shape)
	}
	switch v.DType {
	case format.Int32:
		rtenfb.ValueNodeAddDtype(b, rtenfb.DataTypeInt32)
	case format.Float32:
		rtenfb.ValueNodeAddDtype(b, rtenfb.DataTypeFloat)
	case format.Int8:
		rtenfb.ValueNodeAddDtype(b, rtenfb.DataTypeInt8)
	case format.Uint8:
		rtenfb.ValueNodeAddDtype(b, rtenfb.DataTypeUInt8)
	}
	return rtenfb.ValueNodeEnd(b)
}

func (w *rtenBuild) metadata(m *RTenMetadata) flatbuffers.UOffsetT {
	b := w.b
	vals := []string{m.ONNXHash, m.Description, m.License, m.Commit,
		m.CodeRepository, m.ModelRepository, m.RunID, m.RunURL}
	strs := make([]flatbuffers.UOffsetT, len(vals))
	for i, s := range vals {
		if s != "" {
			strs[i] = b.CreateString(s)
		}
	}
	adders := []func(*flatbuffers.Builder, flatbuffers.UOffsetT){
		rtenfb.MetadataAddOnnxHash, rtenfb.MetadataAddDescription, rtenfb.MetadataAddLicense,
		rtenfb.MetadataAddCommit, rtenfb.MetadataAddCodeRepository, rtenfb.MetadataAddModelRepository,
		rtenfb.MetadataAddRunId, rtenfb.MetadataAddRunUrl,
	}
	rtenfb.MetadataStart(b)
	for i, s := range strs {
		if s != 0 {
			adders[i](b, s)
		}
	}
	return rtenfb.MetadataEnd(b)
}

// Bytes returns the whole file in memory. Holes are zeros; only for small
// files.
func (r *RTen) Bytes() ([]byte, RTenLayoutInfo, error) {
	pl, err := r.plan()
	if err != nil {
		return nil, RTenLayoutInfo{}, err
	}
	out := make([]byte, pl.info.FileSize)
	copy(out, pl.head)
	for _, e := range pl.ext {
		dst := out[e.off : e.off+e.n]
		switch {
		case e.c.Data != nil:
			copy(dst, e.c.Data)
		case e.c.Fill != nil:
			e.c.Fill(dst, 0)
		}
	}
	return out, pl.info, nil
}

// WriteFile writes the file to path, streaming each external tensor's bytes
// and leaving tensors with neither Data nor Fill as sparse holes, so a
// multi-GiB file costs only the bytes actually given. It returns the layout.
func (r *RTen) WriteFile(path string) (RTenLayoutInfo, error) {
	pl, err := r.plan()
	if err != nil {
		return RTenLayoutInfo{}, err
	}
	f, err := os.Create(path)
	if err != nil {
		return RTenLayoutInfo{}, err
	}
	if err := rtenWriteTo(f, pl); err != nil {
		f.Close()
		return RTenLayoutInfo{}, err
	}
	return pl.info, f.Close()
}

func rtenWriteTo(f *os.File, pl *rtenPlan) error {
	if _, err := f.WriteAt(pl.head, 0); err != nil {
		return err
	}
	var chunk []byte
	for _, e := range pl.ext {
		switch {
		case e.c.Data != nil:
			if _, err := f.WriteAt(e.c.Data[:min(int64(len(e.c.Data)), e.n)], e.off); err != nil {
				return err
			}
		case e.c.Fill != nil:
			if chunk == nil {
				chunk = make([]byte, 1<<20)
			}
			for off := int64(0); off < e.n; off += int64(len(chunk)) {
				n := min(int64(len(chunk)), e.n-off)
				c := chunk[:n]
				clear(c)
				e.c.Fill(c, off)
				if _, err := f.WriteAt(c, e.off+off); err != nil {
					return err
				}
			}
		}
	}
	return f.Truncate(pl.info.FileSize)
}

// WriteTo writes the file to w (holes as zeros, since a plain io.Writer
// cannot seek). It implements io.WriterTo.
func (r *RTen) WriteTo(w io.Writer) (int64, error) {
	b, _, err := r.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}
