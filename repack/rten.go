package repack

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/segment"
)

// rtenTensorAlign is the alignment of every tensor in the data section of a
// V2 model written from V1: the converter's.
const rtenTensorAlign = 64

// rten rewrites an RTen model. V2: the header, the Model FlatBuffer (with
// every data_offset changed when tensors move) and the tensor data section
// on r.align, each tensor on r.talign when set. V1 with RTenV2: the same
// layout, the FlatBuffer rebuilt with every inline constant moved to the
// data section, each on max(64, r.talign). V1 otherwise has no section to
// align and is copied as it is.
func (r *run) rten(outs *outputs, out string, res *Result) error {
	m := r.m.RTen()
	h := m.Header()
	mf := m.File()
	res.Tensors = len(m.Constants())
	if h.Version != 2 && !r.opts.RTenV2 {
		whole, err := segment.New(mf, 0, r.m.Size())
		if err != nil {
			return err
		}
		r.total = whole.Len()
		w, err := outs.create(out, "")
		if err != nil {
			return err
		}
		if err := w.copySeg(r, whole); err != nil {
			return err
		}
		res.Size = w.pos
		return nil
	}

	region, err := segment.New(mf, h.ModelOffset, h.ModelLen)
	if err != nil {
		return err
	}
	if h.Version != 2 {
		fb, pieces, size, err := rebuildV1(region, max(rtenTensorAlign, r.talign))
		if err != nil {
			return err
		}
		return r.writeRTenV2(outs, out, res, fb, pieces, size)
	}
	fb, err := region.Bytes()
	if err != nil {
		return err
	}
	section, err := segment.New(mf, h.TensorDataOffset, r.m.Size()-h.TensorDataOffset)
	if err != nil {
		return err
	}
	pieces := []piece{{src: section}}
	size := section.Len()
	if r.talign > 0 {
		var offs []uint64
		for _, c := range m.Constants() {
			if c.External() {
				offs = append(offs, uint64(c.DataOffset))
			}
		}
		var remap map[uint64]uint64
		pieces, size, remap, err = relayout(section, offs, within(tensorSpans(r.m, mf), section), r.talign)
		if err != nil {
			return err
		}
		fb = append([]byte(nil), fb...)
		if err := patchDataOffsets(fb, remap); err != nil {
			return err
		}
	}
	return r.writeRTenV2(outs, out, res, fb, pieces, size)
}

// writeRTenV2 writes a V2 model: the header, the Model FlatBuffer fb and,
// on r.align, the tensor data section of size bytes made of pieces.
func (r *run) writeRTenV2(outs *outputs, out string, res *Result, fb []byte, pieces []piece, size int64) error {
	for _, pc := range pieces {
		r.total += pc.src.Len()
	}
	modelOff := int64(rten.HeaderSize)
	dataOff := alignUp(modelOff+int64(len(fb)), r.align)
	head := rten.Header{Version: 2, ModelOffset: modelOff, ModelLen: int64(len(fb)), TensorDataOffset: dataOff}.Append(nil)

	w, err := outs.create(out, "")
	if err != nil {
		return err
	}
	if err := w.write(head); err != nil {
		return err
	}
	if err := w.write(fb); err != nil {
		return err
	}
	for _, pc := range pieces {
		if err := w.padTo(dataOff + pc.dst); err != nil {
			return err
		}
		if err := w.copySeg(r, pc.src); err != nil {
			return err
		}
	}
	if err := w.padTo(dataOff + size); err != nil {
		return err
	}
	res.Size = w.pos
	res.Segments = 1
	return nil
}

// patchDataOffsets rewrites, in the verified Model FlatBuffer fb, every
// constant's data_offset o to remap[o], in place: the field is present, so
// its size does not change. Subgraphs (If, Loop) are walked too; a constant
// table reached twice is patched once.
func patchDataOffsets(fb []byte, remap map[uint64]uint64) (err error) {
	done := map[flatbuffers.UOffsetT]bool{}
	var walk func(g *rtenfb.Graph, depth int) error
	walk = func(g *rtenfb.Graph, depth int) error {
		if depth > rten.DefaultMaxSubgraphDepth {
			return fmt.Errorf("repack: RTen subgraphs nested deeper than %d", rten.DefaultMaxSubgraphDepth)
		}
		var n rtenfb.Node
		var t flatbuffers.Table
		for i := range g.NodesLength() {
			if !g.Nodes(&n, i) || !n.Data(&t) {
				continue
			}
			switch n.DataType() {
			case rtenfb.NodeKindConstantNode:
				var c rtenfb.ConstantNode
				c.Init(t.Bytes, t.Pos)
				if done[t.Pos] {
					continue
				}
				done[t.Pos] = true
				if o := c.DataOffset(); o != nil {
					if !c.MutateDataOffset(remap[*o]) {
						return fmt.Errorf("%w: data_offset not mutable", errInternal)
					}
				}
			case rtenfb.NodeKindOperatorNode:
				var op rtenfb.OperatorNode
				op.Init(t.Bytes, t.Pos)
				var at flatbuffers.Table
				if !op.Attrs(&at) {
					continue
				}
				var subs []*rtenfb.Graph
				switch op.AttrsType() {
				case rtenfb.OperatorAttrsIfAttrs:
					var a rtenfb.IfAttrs
					a.Init(at.Bytes, at.Pos)
					subs = append(subs, a.ThenBranch(nil), a.ElseBranch(nil))
				case rtenfb.OperatorAttrsLoopAttrs:
					var a rtenfb.LoopAttrs
					a.Init(at.Bytes, at.Pos)
					subs = append(subs, a.Body(nil))
				}
				for _, sg := range subs {
					if sg != nil {
						if err := walk(sg, depth+1); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	}
	return unpackSafeErr("Model", func() error {
		model := rtenfb.GetRootAsModel(fb, 0)
		g := model.Graph(nil)
		if g == nil {
			return nil
		}
		return walk(g, 0)
	})
}

// unpackSafeErr is unpackSafe for a function that can fail.
func unpackSafeErr(what string, fn func() error) error {
	var ferr error
	if err := unpackSafe(what, func() { ferr = fn() }); err != nil {
		return err
	}
	return ferr
}
