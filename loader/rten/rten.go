// Package rten reads RTen model files (.rten) without copying their weights.
//
// A file is V2 (a 32-byte "RTEN" header, the Model FlatBuffer, then a tensor
// data section) or V1 (no header: the whole file is the FlatBuffer, each
// constant inline). [NewFile] checks the header, the FlatBuffer and the
// graph as the reference runtime does, touching no page of the tensor data
// section; every constant is a [Constant] whose Data is a zero-copy view of
// the file, and once NewFile succeeds no accessor can panic.
package rten

import (
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// SchemaVersion is the only Model.schema_version this loader reads.
const SchemaVersion = 1

// DefaultMaxSubgraphDepth bounds how deeply If/Loop subgraphs may nest.
const DefaultMaxSubgraphDepth = 32

// Metadata is the model's Metadata table; every string may be empty.
type Metadata struct {
	ONNXHash        string // SHA-256 of the ONNX model the file was converted from
	Description     string
	License         string // an SPDX identifier for openly licensed models
	Commit          string // commit of the code that produced the model
	CodeRepository  string
	ModelRepository string
	RunID           string // training run identifier
	RunURL          string
}

// Option tunes NewFile.
type Option func(*config)

type config struct {
	maxDepth int
	head     []byte // WithHead
}

// WithHead gives NewFile the file's first bytes when the caller has already
// read them (as a format sniffer has), saving a read. They must be the
// file's own first bytes; NewFile copies what it uses.
func WithHead(head []byte) Option { return func(c *config) { c.head = head } }

// WithMaxSubgraphDepth sets how deeply If/Loop subgraphs may nest before the
// file is rejected (DefaultMaxSubgraphDepth when n <= 0).
func WithMaxSubgraphDepth(n int) Option { return func(c *config) { c.maxDepth = n } }

// Model is an opened RTen file. Its accessors return the values read at Open
// and may be called concurrently; the slices they return are shared and must
// not be modified. Data views are valid until Close.
type Model struct {
	f        *mmapfile.File
	hdr      Header
	meta     Metadata
	graph    *Graph
	consts   []Constant
	byName   nameindex.Index // of consts (and tensors: the same names)
	tensors  []format.Tensor
	segs     []segment.Segment
	warnings []string
}

// NewFile reads an RTen model from f: a mapped file or section, bytes in
// memory (mmapfile.NewBytes) or an io.ReaderAt (mmapfile.NewReaderAt: the
// FlatBuffer is read into memory and every Data view is a copy read on
// demand). The Model does not own f: its Close leaves f open, and f must
// stay open while the Model and its views are in use.
func NewFile(f *mmapfile.File, opts ...Option) (*Model, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.maxDepth <= 0 {
		c.maxDepth = DefaultMaxSubgraphDepth
	}
	// Under mmapfile.Guard a file truncated under the mapping gives an
	// error, not a SIGBUS.
	var m *Model
	var err error
	gerr := mmapfile.Guard(func() { m, err = parse(f, c) })
	if gerr != nil {
		return nil, format.Wrapf(format.ErrTruncated, fmtName, "", -1, "reading the model: %v (the file must keep its size while it is open)", gerr)
	}
	return m, err
}

func parse(f *mmapfile.File, c config) (*Model, error) {
	size := f.Len()
	// The first bytes, then the model the header in them describes, in a
	// pooled buffer when small (package region): what the Model keeps is
	// copied out of it, so it goes back when parse returns.
	head, hbuf, err := region.Head(f, c.head)
	if err != nil {
		return nil, err
	}
	hdr, err := parseHeader(head[:min(int64(len(head)), HeaderSize)], size)
	if err != nil {
		region.Put(hbuf)
		return nil, err
	}
	buf, rbuf, err := region.Range(f, head, hbuf, hdr.ModelOffset, hdr.ModelLen)
	if err != nil {
		return nil, err
	}
	defer region.Put(rbuf)
	// Table nesting per subgraph level: Graph > Node > OperatorNode >
	// IfAttrs; plus Model, and Node > ValueNode > Dim below the deepest.
	vopt := fbverify.Options{Format: fmtName, Base: hdr.ModelOffset, MaxDepth: 4*(c.maxDepth+1) + 8}
	if err := fbverify.NewWalk(buf, vopt).Verify("Model", rtenfb.VerifyModel); err != nil {
		if fe, ok := err.(*format.FormatError); ok && hdr.Version == 1 {
			fe.Msg += " (the file has no " + Magic + " header and was read as a V1 model)"
		}
		return nil, err
	}
	root := rtenfb.GetRootAsModel(buf, 0)
	rt := root.Table()
	if v := root.SchemaVersion(); v != SchemaVersion {
		off := int64(-1)
		if p := fieldPos(&rt, idModelSchemaVersion); p != 0 {
			off = hdr.ModelOffset + int64(p)
		}
		return nil, format.Wrapf(format.ErrUnsupportedVersion, fmtName, "Model.schema_version", off,
			"schema version %d; want %d, the schema version this loader reads", v, SchemaVersion)
	}
	l := &loader{
		buf: buf, base: hdr.ModelOffset, size: size, hdr: hdr, maxDepth: c.maxDepth,
		mf:     f,
		graphs: make(map[flatbuffers.UOffsetT]*built),
		budget: budgetPerByte*int64(len(buf)) + budgetSlack,
	}
	m := &Model{f: f, hdr: hdr, meta: l.metadata(root)}
	if m.graph, err = l.graph(root.Graph(nil), "graph", "Model.graph", 0); err != nil {
		return nil, err
	}
	m.consts = l.consts
	for i, n := range l.owners {
		n.Constant = &m.consts[i]
	}
	m.byName = nameindex.New(len(m.consts), func(i int) string { return m.consts[i].Name })
	m.tensors = make([]format.Tensor, len(m.consts))
	for i := range m.consts {
		m.tensors[i] = m.consts[i].Tensor
	}
	if hdr.Version >= 2 {
		s, err := segment.New(f, hdr.TensorDataOffset, size-hdr.TensorDataOffset)
		if err != nil {
			return nil, err
		}
		m.segs = []segment.Segment{s}
	}
	m.warnings = l.warnings
	return m, nil
}

// Close leaves the file open: it is the caller's, and the Model holds
// nothing else to release. Views stay readable until the caller closes the
// file.
func (m *Model) Close() error { return nil }

// File returns the mapped file the Model reads.
func (m *Model) File() *mmapfile.File { return m.f }

// Header returns the file's header (Version 1 for a headerless file).
func (m *Model) Header() Header { return m.hdr }

// Metadata returns the model's metadata strings.
func (m *Model) Metadata() Metadata { return m.meta }

// Graph returns the main graph.
func (m *Model) Graph() *Graph { return m.graph }

// Constants returns every constant of every graph: depth first in node
// order, a subgraph's constants right after the operator that holds it. A
// subgraph shared by several operators is listed once.
func (m *Model) Constants() []Constant { return m.consts }

// Constant returns the first constant named name (a node name, or for an
// unnamed node its made-up path such as "graph/nodes/3"). It allocates
// nothing.
func (m *Model) Constant(name string) (*Constant, bool) {
	i, ok := m.byName.Lookup(name)
	if !ok {
		return nil, false
	}
	return &m.consts[i], true
}

// Tensor returns the first constant named name as a format-neutral tensor
// (the element of Tensors that Constant(name).Tensor equals). It allocates
// nothing.
func (m *Model) Tensor(name string) (*format.Tensor, bool) {
	i, ok := m.byName.Lookup(name)
	if !ok {
		return nil, false
	}
	return &m.tensors[i], true
}

// Tensors returns the constants as format-neutral tensors, in the order of
// Constants.
func (m *Model) Tensors() []format.Tensor { return m.tensors }

// Segments returns the file's segments: for V2 one, index 0, the tensor
// data section [TensorDataOffset, end of file); for V1 none.
func (m *Model) Segments() []segment.Segment { return m.segs }

// Warnings returns sanity problems that do not stop the model from loading:
// a graph without outputs, a constant without data, an If or Loop without
// its subgraphs, a constant whose dtype disagrees with its inline data.
func (m *Model) Warnings() []string { return m.warnings }
