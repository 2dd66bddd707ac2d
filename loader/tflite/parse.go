package tflite

import (
	"strconv"
	"sync"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// The fields the walk's visitor reads (field ids of internal/schema/
// tflite.fbs).
const (
	bufferData, bufferOffset, bufferSize  = 0, 1, 2
	tensorShape, tensorType, tensorBuffer = 0, 1, 2
	tensorSparsity, tensorExternalBuffer  = 6, 10
	subgraphInputs, subgraphOutputs       = 1, 2
)

// collected is what the verifier's walk tells its visitor (the tables
// tflite.fbs marks (visit)), in the order it verifies them: every buffer,
// every tensor that names a buffer, and every subgraph. NewFile checks them
// once the walk is done (the buffers are verified after the subgraphs).
type collected struct {
	w         *fbverify.Walk
	visitFn   func(kind int, t fbverify.T) // visit, made once for the pooled value
	buffers   []fbverify.T
	tensors   []tensorRef
	subgraphs []fbverify.T
	next      int32 // index of the next tensor of the subgraph being verified
}

// tensorRef is a tensor that names a buffer: tensor Index of subgraph
// Subgraph (counted as the walk goes), and its table.
type tensorRef struct {
	subgraph, index int32
	buffer          uint32
	t               fbverify.T
}

// collectedPool keeps the slices of a walk's collection from Open to Open
// (parse copies what it keeps out of them).
var collectedPool = sync.Pool{New: func() any {
	c := new(collected)
	c.visitFn = c.visit
	return c
}}

func newCollected() *collected {
	c := collectedPool.Get().(*collected)
	c.buffers, c.tensors, c.subgraphs, c.next = c.buffers[:0], c.tensors[:0], c.subgraphs[:0], 0
	return c
}

// release hands c back to the pool.
func (c *collected) release() {
	c.w = nil
	collectedPool.Put(c)
}

func (c *collected) visit(kind int, t fbverify.T) {
	switch kind {
	case tflitefb.VisitBuffer:
		c.buffers = append(c.buffers, t)
	case tflitefb.VisitTensor:
		if b := c.w.Uint32(&t, tensorBuffer, 0); b != 0 {
			c.tensors = append(c.tensors, tensorRef{int32(len(c.subgraphs)), c.next, b, t})
		}
		c.next++
	case tflitefb.VisitSubGraph:
		c.subgraphs = append(c.subgraphs, t)
		c.next = 0
	}
}

// parse verifies the FlatBuffer of mf and checks what NewFile hands out:
// the buffers, the constants' types, shapes and sizes, and the indices of
// subgraph inputs and outputs, metadata, signatures and external buffers.
// It builds the buffers and the list of constants, from what the walk
// collected; the rest is built from the verified FlatBuffer on first use
// (listing.go, info.go).
//
// head, if not empty, is the file's first bytes, already read.
func parse(mf *mmapfile.File, head []byte) (_ *Model, err error) {
	m := &Model{mf: mf}
	defer func() {
		if err != nil && m.region != nil {
			m.putRegion() // nothing refers to it
		}
	}()
	c, copies, err := m.verify(head)
	if c != nil {
		defer c.release()
	}
	if err != nil {
		return nil, err
	}
	fb := m.fb
	// What the first uses copy out of the FlatBuffer (names, shapes,
	// index lists) is bounded by what the verifier visited; shared strings
	// and vectors could make that out of proportion to the file.
	if budget := 4*int64(len(fb)) + 1<<20; copies > budget {
		return nil, format.Errorf(formatName, "", -1, "the FlatBuffer's tables reach %d bytes of strings and vectors, shared (want at most %d: 4 times the FlatBuffer region)", copies, budget)
	}
	root := flatbuffers.GetUOffsetT(fb)
	m.root.Init(fb, root)
	m.version = m.root.Version()
	if m.version > MaxVersion {
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "Model.version", int64(root),
			"schema version %d (want at most %d)", m.version, MaxVersion)
	}
	if err := m.buffersOf(c); err != nil {
		return nil, err
	}
	m.nsub = len(c.subgraphs)
	if m.nsub == 0 {
		return nil, format.Errorf(formatName, "Model.subgraphs", int64(root), "model has no subgraph (want at least the main graph)")
	}
	if err := m.subgraphIO(c); err != nil {
		return nil, err
	}
	if err := m.constants(c); err != nil {
		return nil, err
	}
	if err := m.indices(); err != nil {
		return nil, err
	}
	return m, nil
}

// pos returns the position of t's table, as errors report it.
func pos(t interface{ Table() flatbuffers.Table }) int64 { return int64(t.Table().Pos) }

// buffersOf checks Model.buffers and makes a view of each buffer's bytes.
func (m *Model) buffersOf(c *collected) error {
	m.buffers = make([]Buffer, len(c.buffers))
	size := m.mf.Len()
	w := c.w
	for i := range c.buffers {
		t := &c.buffers[i]
		ds, dn, _ := w.Vec(t, bufferData)
		off, n := w.Uint64(t, bufferOffset, 0), w.Uint64(t, bufferSize, 0)
		kind := BufferInline
		switch {
		case dn > 0 && off > 1:
			return format.Errorf(formatName, "Model.buffers["+strconv.Itoa(i)+"]", t.Pos(), "buffer has both %d bytes of data and offset %d (want one or the other: runtimes disagree on which wins)", dn, off)
		case dn > 0:
		case off <= 1 || n == 0:
			continue
		case outOfFile(off, n, size):
			return fileRange("Model.buffers["+strconv.Itoa(i)+"].offset", t.Pos(), off, n, size)
		default:
			ds, dn, kind = int64(off), int64(n), BufferOffset
		}
		d, err := segment.New(m.mf, ds, dn)
		if err != nil {
			return format.Wrapf(format.ErrTruncated, formatName, "Model.buffers["+strconv.Itoa(i)+"]", t.Pos(), "%v", err)
		}
		m.buffers[i] = Buffer{Kind: kind, Data: d}
	}
	return nil
}

// subgraphIO checks that each subgraph's inputs and outputs are tensors of
// it.
func (m *Model) subgraphIO(c *collected) error {
	var sg tflitefb.SubGraph
	for i := range c.subgraphs {
		t := &c.subgraphs[i]
		sg.Init(m.fb, flatbuffers.UOffsetT(t.Pos()))
		nt := int64(sg.TensorsLength())
		for j, id := range [2]int{subgraphInputs, subgraphOutputs} {
			start, n, _ := c.w.Vec(t, id)
			for k := range n {
				if x := int64(int32(flatbuffers.GetUint32(m.fb[start+4*k:]))); outOf(x, nt) {
					return rangeErr("Model.subgraphs["+strconv.Itoa(i)+"]."+[2]string{"inputs", "outputs"}[j], start+4*k, x, nt, "tensor")
				}
			}
		}
	}
	return nil
}

// constants checks the tensors that name a buffer and lists those whose
// buffer holds bytes.
func (m *Model) constants(c *collected) error {
	m.tensors = make([]constant, 0, len(c.tensors))
	nb := int64(len(m.buffers))
	for k := range c.tensors {
		r := &c.tensors[k]
		i, j := int(r.subgraph), int(r.index)
		if outOf(int64(r.buffer), nb) {
			return rangeErr(tensorField(i, j)+".buffer", r.t.Pos(), int64(r.buffer), nb, "buffer")
		}
		b := &m.buffers[r.buffer]
		if b.Kind == BufferEmpty {
			continue
		}
		if err := m.checkConstant(c.w, r, b.Data.Len()); err != nil {
			return err
		}
		m.tensors = append(m.tensors, constant{Subgraph: r.subgraph, Index: r.index, Buffer: int(r.buffer)})
	}
	return nil
}

func tensorField(i, j int) string {
	return "Model.subgraphs[" + strconv.Itoa(i) + "].tensors[" + strconv.Itoa(j) + "]"
}

// checkConstant checks the tensor r, whose buffer holds n bytes: a type
// with a layout, no external buffer besides, a shape without negative
// dimensions that (dense, not a string) needs exactly n bytes.
func (m *Model) checkConstant(w *fbverify.Walk, r *tensorRef, n int64) error {
	i, j, t := int(r.subgraph), int(r.index), &r.t
	typ := TensorType(int8(w.Uint8(t, tensorType, 0)))
	dt := typ.DType()
	switch {
	case dt == format.Invalid:
		return format.Errorf(formatName, tensorField(i, j)+".type", t.Pos(), "constant of type %v (want a type with a fixed layout: not resource or variant)", typ)
	case w.Uint32(t, tensorExternalBuffer, 0) != 0:
		return format.Errorf(formatName, tensorField(i, j)+".external_buffer", t.Pos(), "tensor has both buffer %d and external buffer %d (want one)", r.buffer, w.Uint32(t, tensorExternalBuffer, 0))
	}
	start, nd, ok := w.Vec(t, tensorShape)
	if !ok {
		return nil // no shape: nothing to check the size against
	}
	var small [8]int64
	dims := small[:0]
	if nd > int64(len(small)) {
		dims = make([]int64, 0, nd)
	}
	for k := range nd {
		d := int64(int32(flatbuffers.GetUint32(m.fb[start+4*k:])))
		if d < 0 {
			return format.Errorf(formatName, tensorField(i, j)+".shape", t.Pos(), "constant has shape %v (want no negative dimension)", m.shape(start, nd))
		}
		dims = append(dims, d)
	}
	if dt == format.String || w.Has(t, tensorSparsity) {
		return nil // strings have a layout of their own; sparse tensors store fewer values
	}
	// (Bounded by 4 × the file: int2 packs four elements a byte.)
	if _, nb, ok := format.Numel(dims, dt, 4*m.mf.Len()); !ok || nb != n {
		return format.Errorf(formatName, tensorField(i, j), t.Pos(), "%v %v needs %d bytes, buffer %d holds %d", dt, m.shape(start, nd), nb, r.buffer, n)
	}
	return nil
}

// shape decodes the nd dimensions of the shape vector whose first element
// is at start.
func (m *Model) shape(start, nd int64) []int64 {
	out := make([]int64, nd)
	for k := range out {
		out[k] = int64(int32(flatbuffers.GetUint32(m.fb[start+4*int64(k):])))
	}
	return out
}

// indices checks the indices metadata, signatures and external buffers
// hold: buffers, subgraphs, tensors, buffer groups.
func (m *Model) indices() error {
	r := &m.root
	var md tflitefb.Metadata
	for i := range r.MetadataLength() {
		r.Metadata(&md, i)
		if b := md.Buffer(); outOf(int64(b), int64(len(m.buffers))) {
			return rangeErr("Model.metadata["+strconv.Itoa(i)+"].buffer", pos(&md), int64(b), int64(len(m.buffers)), "buffer")
		}
	}
	var sd tflitefb.SignatureDef
	var sg tflitefb.SubGraph
	var tm tflitefb.TensorMap
	for i := range r.SignatureDefsLength() {
		r.SignatureDefs(&sd, i)
		field := func() string { return "Model.signature_defs[" + strconv.Itoa(i) + "]" }
		s := sd.SubgraphIndex()
		if outOf(int64(s), int64(m.nsub)) {
			return rangeErr(field()+".subgraph_index", pos(&sd), int64(s), int64(m.nsub), "subgraph")
		}
		r.Subgraphs(&sg, int(s))
		nt := int64(sg.TensorsLength())
		for _, outputs := range [2]bool{false, true} {
			n := sd.InputsLength()
			if outputs {
				n = sd.OutputsLength()
			}
			for k := range n {
				if outputs {
					sd.Outputs(&tm, k)
				} else {
					sd.Inputs(&tm, k)
				}
				if x := tm.TensorIndex(); outOf(int64(x), nt) {
					return rangeErr(field()+".inputs.tensor_index", pos(&tm), int64(x), nt, "tensor")
				}
			}
		}
	}
	groups := int64(r.ExternalBufferGroupsLength())
	var eb tflitefb.ExternalBuffer
	for i := range r.ExternalBuffersLength() {
		r.ExternalBuffers(&eb, i)
		if g := eb.Group(); outOf(int64(g), groups) {
			return rangeErr("Model.external_buffers["+strconv.Itoa(i)+"].group", pos(&eb), int64(g), groups, "external buffer group")
		}
	}
	return nil
}
