package rten

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/fbread"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// loader builds a Model's graphs and constants from a verified FlatBuffer.
// It reads only what fbverify checked (see schema.go).
type loader struct {
	buf      []byte // the model FlatBuffer
	base     int64  // file offset of buf[0]
	size     int64  // file size
	hdr      Header
	maxDepth int
	mf       *mmapfile.File // the file constants' Data views point into

	consts []Constant
	owners []*Node             // owners[i] is the node of consts[i]
	names  arena.Strings       // node names and made-up constant names
	shapes arena.Slices[int64] // constant shapes
	name   []byte              // scratch: a made-up name
	// budget bounds what Open copies out of the FlatBuffer (vector
	// elements, string bytes, nodes), in units of about 8 bytes: a
	// FlatBuffer may point many tables at one vector, string or table, and
	// without a bound a file of kilobytes could make Open allocate
	// gigabytes (see spend).
	budget   int64
	graphs   map[flatbuffers.UOffsetT]*built
	warnings []string
	// The field offsets of the Node and ConstantNode tables read last:
	// the nodes of a graph share a few vtables.
	nodeF, constF fbread.Fields
}

// built is a graph table already turned into a Graph (or being built).
type built struct {
	g    *Graph
	done bool
}

// pos returns the file offset of FlatBuffer position p.
func (l *loader) pos(p flatbuffers.UOffsetT) int64 { return l.base + int64(p) }

func (l *loader) warnf(msg string, args ...any) {
	// bounded: at most a few warnings per node, and nodes by the budget,
	// which the warning's length is charged to (the next charge fails)
	w := fmt.Sprintf(msg, args...)
	l.budget -= int64(len(w))/8 + 4
	l.warnings = append(l.warnings, w)
}

// budgetPerByte and budgetSlack size the work budget: budgetPerByte units
// per FlatBuffer byte plus budgetSlack. A file whose tables are not shared
// spends at most about one unit per byte.
const (
	budgetPerByte = 4
	budgetSlack   = 1 << 16
)

// spend spends n units of the work budget before Open copies n elements
// (or 8n bytes) out of the FlatBuffer; it reports false when the file's
// tables copy out more than its size can hold without sharing, for the
// caller to return l.overBudget.
func (l *loader) spend(n int) bool {
	l.budget -= int64(n)
	return l.budget >= 0
}

func (l *loader) overBudget(field string, p flatbuffers.UOffsetT) error {
	return format.Errorf(fmtName, field, l.pos(p),
		"the graph copies out more than %d elements, more than a %d-byte model can hold unless many tables share the same vectors, strings or nodes (want at most %d elements per FlatBuffer byte)",
		budgetPerByte*int64(len(l.buf))+budgetSlack, len(l.buf), budgetPerByte)
}

// where locates a node's data for error messages and warnings. Its strings
// are built only when one is needed: a graph of thousands of nodes builds
// none while it loads.
type where struct {
	graph string // the graph's field path, "Model.graph"
	node  int
	name  string // the node's name, for desc
}

// field returns the path of the node's data field sub, as in
// "Model.graph.nodes[3].data.shape".
func (w where) field(sub string) string {
	return w.graph + ".nodes[" + strconv.Itoa(w.node) + "].data" + sub
}

// desc names the node: `node 12 ("conv1")`.
func (w where) desc() string {
	if w.name == "" {
		return "node " + strconv.Itoa(w.node)
	}
	return "node " + strconv.Itoa(w.node) + " (" + strconv.Quote(w.name) + ")"
}

// fieldPos returns the position of field id of a table, or 0 if absent.
func fieldPos(t *flatbuffers.Table, id int) flatbuffers.UOffsetT {
	o := t.Offset(flatbuffers.VOffsetT(4 + 2*id))
	if o == 0 {
		return 0
	}
	return t.Pos + flatbuffers.UOffsetT(o)
}

// vec returns the position of the first element and the length of the
// vector field id of t; ok is false when the field is absent.
func vec(t *flatbuffers.Table, id int) (start flatbuffers.UOffsetT, n int, ok bool) {
	o := flatbuffers.UOffsetT(t.Offset(flatbuffers.VOffsetT(4 + 2*id)))
	if o == 0 {
		return 0, 0, false
	}
	return t.Vector(o), t.VectorLen(o), true
}

// indices reads a [uint] vector of node indices and checks each against n.
func (l *loader) indices(t *flatbuffers.Table, id int, n int, field, what string) ([]uint32, error) {
	start, cnt, ok := vec(t, id)
	if !ok {
		return nil, nil
	}
	if !l.spend(cnt) {
		return nil, l.overBudget(field, start)
	}
	out := make([]uint32, cnt)
	for j := range out {
		p := start + flatbuffers.UOffsetT(4*j)
		v := t.GetUint32(p)
		if uint64(v) >= uint64(n) {
			return nil, format.Errorf(fmtName, field+"["+strconv.Itoa(j)+"]", l.pos(p),
				"%s %d refers to node %d; the graph has %d nodes (want below %[4]d)", what, j, v, n)
		}
		out[j] = v
	}
	return out, nil
}

// refs reads an operator's [int] input or output vector (field sub of the
// operator at w): negative entries mean absent, others must be node indices
// below n.
func (l *loader) refs(t *flatbuffers.Table, id int, n int, w where, sub, what string) ([]int32, error) {
	start, cnt, ok := vec(t, id)
	if !ok {
		return nil, nil
	}
	if !l.spend(cnt) {
		return nil, l.overBudget(w.field(sub), start)
	}
	out := make([]int32, cnt)
	for j := range out {
		p := start + flatbuffers.UOffsetT(4*j)
		v := t.GetInt32(p)
		if v >= 0 && int64(v) >= int64(n) {
			return nil, format.Errorf(fmtName, w.field(sub+"["+strconv.Itoa(j)+"]"), l.pos(p),
				"%s: %s %d refers to node %d; the graph has %d nodes (want below %[5]d, or negative for none)", w.desc(), what, j, v, n)
		}
		out[j] = v
	}
	return out, nil
}

// graph builds the graph table at g. path names it for made-up constant
// names, field is its path in the file for errors. A graph table reached
// twice (a shared subgraph) is built once.
func (l *loader) graph(g *rtenfb.Graph, path, field string, depth int) (*Graph, error) {
	tab := g.Table()
	if depth > l.maxDepth {
		return nil, format.Errorf(fmtName, field, l.pos(tab.Pos),
			"subgraphs nested more than %d deep (want at most %[1]d levels)", l.maxDepth)
	}
	if b, ok := l.graphs[tab.Pos]; ok {
		if !b.done { // fbverify's depth limit rejects cycles first; be sure
			return nil, format.Errorf(fmtName, field, l.pos(tab.Pos),
				"subgraph refers back to an enclosing graph (%s); a graph must not contain itself", b.g.Path)
		}
		return b.g, nil
	}
	n := g.NodesLength()
	if !l.spend(8*n + len(path)/8 + 8) {
		return nil, l.overBudget(field+".nodes", tab.Pos)
	}
	out := &Graph{Path: path, Nodes: make([]Node, n)}
	b := &built{g: out}
	l.graphs[tab.Pos] = b
	var err error
	if out.Inputs, err = l.indices(&tab, idGraphInputs, n, field+".inputs", "graph input"); err != nil {
		return nil, err
	}
	if out.Outputs, err = l.indices(&tab, idGraphOutputs, n, field+".outputs", "graph output"); err != nil {
		return nil, err
	}
	if out.Captures, err = l.indices(&tab, idGraphCaptures, n, field+".captures", "graph capture"); err != nil {
		return nil, err
	}
	// The nodes, through their decoded vtables (the generated accessors
	// would look every field up again).
	fb := l.buf
	var nodes int64
	if n > 0 {
		start, _, _ := vec(&tab, idGraphNodes)
		nodes = int64(start)
	}
	// room for the graph's constants, so that appending them does not
	// copy the list again and again
	k := 0
	for i := 0; i < n; i++ {
		np := fbread.Deref(fb, nodes+4*int64(i))
		if f := l.nodeF.Of(fb, np)[idNodeData]; f != 0 && rtenfb.NodeKind(fb[np+f]) == rtenfb.NodeKindConstantNode {
			k++
		}
	}
	l.consts, l.owners = slices.Grow(l.consts, k), slices.Grow(l.owners, k)
	for i := 0; i < n; i++ {
		if err := l.node(fbread.Deref(fb, nodes+4*int64(i)), out, i, field, depth); err != nil {
			return nil, err
		}
	}
	if len(out.Outputs) == 0 {
		l.warnf("graph %s has no outputs", path)
	}
	b.done = true
	return out, nil
}

// node reads the Node table at np, node i of g.
func (l *loader) node(np int64, g *Graph, i int, gfield string, depth int) error {
	node := &g.Nodes[i]
	fb := l.buf
	ndt := flatbuffers.Table{Bytes: fb, Pos: flatbuffers.UOffsetT(np)}
	// What the node's fields say, read before a subgraph's nodes replace
	// l.nodeF's offsets.
	fo := l.nodeF.Of(fb, np)
	name := fbread.FieldBytes(fb, np, fo[idNodeName], 1)
	var kind rtenfb.NodeKind
	if f := fo[idNodeData]; f != 0 {
		kind = rtenfb.NodeKind(fb[np+f])
	}
	var u flatbuffers.Table // the data table: verified (present) with any tag but NONE
	if f := fo[idNodeData+1]; f != 0 && kind != rtenfb.NodeKindNONE {
		u = flatbuffers.Table{Bytes: fb, Pos: flatbuffers.UOffsetT(fbread.Deref(fb, np+f))}
	}
	if !l.spend(len(name)/8 + 1) {
		return l.overBudget(gfield+".nodes["+strconv.Itoa(i)+"].name", ndt.Pos)
	}
	node.Name = l.names.Copy(name)
	w := where{graph: gfield, node: i, name: node.Name}
	var err error
	switch kind {
	case rtenfb.NodeKindOperatorNode:
		var op rtenfb.OperatorNode
		op.Init(u.Bytes, u.Pos)
		node.Kind = KindOperator
		node.Op, err = l.operator(&op, g, w, depth)
	case rtenfb.NodeKindConstantNode:
		node.Kind = KindConstant
		err = l.constant(int64(u.Pos), g, node, w)
	case rtenfb.NodeKindValueNode:
		var v rtenfb.ValueNode
		v.Init(u.Bytes, u.Pos)
		node.Kind = KindValue
		node.Value, err = l.value(&v, w)
	default: // NONE: fbverify rejects unknown tags
		return format.Errorf(fmtName, w.field(""), l.pos(ndt.Pos),
			"%s has no data (NodeKind NONE); want an operator, constant or value", w.desc())
	}
	return err
}

func (l *loader) operator(op *rtenfb.OperatorNode, g *Graph, w where, depth int) (*Operator, error) {
	tab := op.Table()
	n := len(g.Nodes)
	if !l.spend(16) {
		return nil, l.overBudget(w.field(""), tab.Pos)
	}
	o := &Operator{Type: OperatorType(op.Type()), AttrsType: uint8(op.AttrsType())}
	var err error
	if o.Inputs, err = l.refs(&tab, idOpInputs, n, w, ".inputs", "input"); err != nil {
		return nil, err
	}
	if o.Outputs, err = l.refs(&tab, idOpOutputs, n, w, ".outputs", "output"); err != nil {
		return nil, err
	}
	var u flatbuffers.Table
	sub := func(at *flatbuffers.Table, id int, attr string) error {
		p := fieldPos(at, id)
		if p == 0 {
			if o.Type == OpIf || o.Type == OpLoop {
				l.warnf("%s in graph %s: %s operator without %s", w.desc(), g.Path, o.Type, attr)
			}
			return nil
		}
		var sg rtenfb.Graph
		sg.Init(at.Bytes, at.Indirect(p))
		path := g.Path + "/nodes/" + strconv.Itoa(w.node) + "/" + attr
		gr, err := l.graph(&sg, path, w.field(".attrs."+attr), depth+1)
		if err != nil {
			return err
		}
		o.Subgraphs = append(o.Subgraphs, Subgraph{Attr: attr, Graph: gr})
		return nil
	}
	switch op.AttrsType() {
	case rtenfb.OperatorAttrsIfAttrs:
		op.Attrs(&u)
		if err := sub(&u, idIfThen, "then_branch"); err != nil {
			return nil, err
		}
		if err := sub(&u, idIfElse, "else_branch"); err != nil {
			return nil, err
		}
	case rtenfb.OperatorAttrsLoopAttrs:
		op.Attrs(&u)
		if err := sub(&u, idLoop, "body"); err != nil {
			return nil, err
		}
	default:
		if o.Type == OpIf || o.Type == OpLoop {
			l.warnf("%s in graph %s: %s operator without subgraph attributes", w.desc(), g.Path, o.Type)
		}
	}
	return o, nil
}

// dtypes maps the values of ConstantDataType (ConstantNode.dtype, u16)
// and DataType (ValueNode.dtype, u8), which number the types alike.
var dtypes = [...]format.DType{format.Int32, format.Float32, format.Int8, format.Uint8}

// dtypeOf returns the element type of a ConstantDataType or DataType
// value, Invalid for an unknown one.
func dtypeOf(v uint16) format.DType {
	if int(v) < len(dtypes) {
		return dtypes[v]
	}
	return format.Invalid
}

// inlineType returns the ConstantDataType of the elements of inline data
// of union tag t; ok is false for NONE and unknown tags.
func inlineType(t rtenfb.ConstantData) (rtenfb.ConstantDataType, bool) {
	switch t {
	case rtenfb.ConstantDataFloatData:
		return rtenfb.ConstantDataTypeFloat32, true
	case rtenfb.ConstantDataInt32Data:
		return rtenfb.ConstantDataTypeInt32, true
	case rtenfb.ConstantDataInt8Data:
		return rtenfb.ConstantDataTypeInt8, true
	case rtenfb.ConstantDataUInt8Data:
		return rtenfb.ConstantDataTypeUInt8, true
	}
	return 0, false
}

// constant reads the ConstantNode table at cp, the data of node.
func (l *loader) constant(cp int64, g *Graph, node *Node, w where) error {
	fb := l.buf
	tab := flatbuffers.Table{Bytes: fb, Pos: flatbuffers.UOffsetT(cp)}
	fo := l.constF.Of(fb, cp)
	// Optional scalars: presence is the vtable slot, never the value
	// (data_offset 0 is the first tensor of the section).
	var dtypePos, offPos, dataPos flatbuffers.UOffsetT
	var tag rtenfb.ConstantData
	if f := fo[idConstDType]; f != 0 {
		dtypePos = flatbuffers.UOffsetT(cp + f)
	}
	if f := fo[idConstDataOffset]; f != 0 {
		offPos = flatbuffers.UOffsetT(cp + f)
	}
	if f := fo[idConstData]; f != 0 {
		tag = rtenfb.ConstantData(fb[cp+f])
	}
	if f := fo[idConstData+1]; f != 0 && tag != rtenfb.ConstantDataNONE { // verified only then
		dataPos = flatbuffers.UOffsetT(fbread.Deref(fb, cp+f))
	}
	i := w.node
	k := Constant{Graph: g.Path, Node: i, DataOffset: -1}
	k.Offset = -1
	k.Name, k.NameExplicit = node.Name, node.Name != ""
	sp, ns := fbread.Vector(fb, cp+fo[idConstShape]) // required: verified present
	start, rank := flatbuffers.UOffsetT(sp), int(ns)
	// the Constant, its Tensor copy and index entry, a made-up name, the
	// shape
	if !l.spend(64 + len(g.Path)/8 + rank) {
		return l.overBudget(w.field(""), tab.Pos)
	}
	if !k.NameExplicit {
		l.name = strconv.AppendInt(append(append(l.name[:0], g.Path...), "/nodes/"...), int64(i), 10)
		k.Name = l.names.Copy(l.name)
	}
	k.Shape = l.shapes.Make(rank) // a scalar: empty, never nil
	for j := range k.Shape {
		k.Shape[j] = int64(tab.GetUint32(start + flatbuffers.UOffsetT(4*j)))
	}
	var declared format.DType
	if dtypePos != 0 {
		raw := tab.GetUint16(dtypePos)
		if declared = dtypeOf(raw); declared == format.Invalid {
			return format.Errorf(fmtName, w.field(".dtype"), l.pos(dtypePos),
				"%s: unknown constant dtype %d (want Int32 0, Float32 1, Int8 2 or UInt8 3)", w.desc(), raw)
		}
	}
	switch {
	case offPos != 0:
		if tag != rtenfb.ConstantDataNONE {
			l.warnf("%s in graph %s has both inline data and a data_offset; the data_offset is used", w.desc(), g.Path)
		}
		if err := l.external(&k, tab.GetUint64(offPos), declared, dtypePos != 0, w, offPos); err != nil {
			return err
		}
	case tag != rtenfb.ConstantDataNONE:
		if err := l.inline(&k, dataPos, tag, declared, w, g.Path); err != nil {
			return err
		}
	default:
		l.warnf("constant %s has no data", k.Name)
		k.DType = declared
		k.Location = format.LocNone
		if declared != format.Invalid {
			if _, nb, ok := format.Numel(k.Shape, declared, math.MaxInt64); ok {
				k.NBytes = nb
			}
		}
	}
	l.consts = append(l.consts, k)
	l.owners = append(l.owners, node)
	return nil
}

func (l *loader) external(k *Constant, off uint64, dt format.DType, hasDType bool, w where, offPos flatbuffers.UOffsetT) error {
	if l.hdr.Version < 2 {
		return format.Errorf(fmtName, w.field(".data_offset"), l.pos(offPos),
			"%s has a data_offset, but a V1 file has no tensor data section (want inline data)", w.desc())
	}
	if !hasDType {
		return format.Errorf(fmtName, w.field(".dtype"), l.pos(offPos),
			"%s: external constant (data_offset %d) has no dtype; an external constant must have one", w.desc(), off)
	}
	section := l.size - l.hdr.TensorDataOffset
	if off > uint64(section) {
		return format.Wrapf(format.ErrTruncated, fmtName, w.field(".data_offset"), l.pos(offPos),
			"%s: data_offset %d is past the end of the tensor data section (%d bytes at %d): want at most %[3]d",
			w.desc(), off, section, l.hdr.TensorDataOffset)
	}
	_, nb, ok := format.Numel(k.Shape, dt, math.MaxInt64)
	if !ok {
		return format.Errorf(fmtName, w.field(".shape"), l.pos(offPos),
			"%s: shape %v of %s overflows a 64-bit byte count (want numel × element size below 2^63)", w.desc(), k.Shape, dt)
	}
	if nb > section-int64(off) {
		return format.Wrapf(format.ErrTruncated, fmtName, w.field(".data_offset"), l.pos(offPos),
			"%s: %d bytes at data_offset %d run past the end of the tensor data section (%d bytes at %d): want data_offset + size at most %[4]d",
			w.desc(), nb, off, section, l.hdr.TensorDataOffset)
	}
	abs := l.hdr.TensorDataOffset + int64(off)
	k.DType, k.Location, k.Offset, k.NBytes, k.DataOffset = dt, format.LocSegment, abs, nb, int64(off)
	var err error
	k.Data, err = segment.New(l.mf, abs, nb)
	return err
}

// inline reads the inline data of k, a table at dataPos of the type tag
// names.
func (l *loader) inline(k *Constant, dataPos flatbuffers.UOffsetT, tag rtenfb.ConstantData, declared format.DType, w where, gpath string) error {
	dt := format.Invalid
	if t, ok := inlineType(tag); ok {
		dt = dtypeOf(uint16(t))
	}
	if declared != format.Invalid && declared != dt {
		l.warnf("%s in graph %s: dtype says %s but the inline data is %s; using %s", w.desc(), gpath, declared, dt, dt)
	}
	u := flatbuffers.Table{Bytes: l.buf, Pos: dataPos}
	start, cnt, _ := vec(&u, idDataData) // required: verified present
	numel, _, ok := format.Numel(k.Shape, dt, math.MaxInt64)
	if !ok {
		return format.Errorf(fmtName, w.field(".shape"), l.pos(u.Pos),
			"%s: shape %v of %s overflows a 64-bit byte count (want numel × element size below 2^63)", w.desc(), k.Shape, dt)
	}
	if numel != int64(cnt) {
		return format.Errorf(fmtName, w.field(".data.data"), l.pos(start),
			"%s: inline data has %d elements; shape %v needs %d (want exactly that many)", w.desc(), cnt, k.Shape, numel)
	}
	nb := numel * int64(dt.Size())
	k.DType, k.Location, k.Offset, k.NBytes = dt, format.LocInline, l.pos(start), nb
	var err error
	k.Data, err = segment.New(l.mf, k.Offset, nb)
	return err
}

func (l *loader) value(v *rtenfb.ValueNode, w where) (*Value, error) {
	tab := v.Table()
	if !l.spend(4) {
		return nil, l.overBudget(w.field(""), tab.Pos)
	}
	out := &Value{}
	if n := v.ShapeLength(); fieldPos(&tab, idValueShape) != 0 {
		if !l.spend(4 * n) {
			return nil, l.overBudget(w.field(".shape"), tab.Pos)
		}
		out.HasShape = true
		out.Shape = make([]Dim, n)
		var d rtenfb.Dim
		for j := range out.Shape {
			v.Shape(&d, j)
			dt := d.Table()
			out.Shape[j].Value = d.Value()
			if fieldPos(&dt, idDimName) != 0 {
				name := d.Name()
				if !l.spend(len(name)/8 + 1) {
					return nil, l.overBudget(w.field(".shape["+strconv.Itoa(j)+"].name"), dt.Pos)
				}
				out.Shape[j].Name = l.names.Copy(name)
				out.Shape[j].Symbolic = true
			}
		}
	}
	if p := fieldPos(&tab, idValueDType); p != 0 {
		raw := tab.GetByte(p)
		out.HasDType, out.RawDType = true, raw
		out.DType = dtypeOf(uint16(raw))
	}
	return out, nil
}

// metadata reads the Metadata table (all eight strings optional).
func (l *loader) metadata(m *rtenfb.Model) Metadata {
	md := m.Metadata(nil)
	if md == nil {
		return Metadata{}
	}
	return Metadata{
		ONNXHash:        string(md.OnnxHash()),
		Description:     string(md.Description()),
		License:         string(md.License()),
		Commit:          string(md.Commit()),
		CodeRepository:  string(md.CodeRepository()),
		ModelRepository: string(md.ModelRepository()),
		RunID:           string(md.RunId()),
		RunURL:          string(md.RunUrl()),
	}
}
