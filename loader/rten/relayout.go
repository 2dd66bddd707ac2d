package rten

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbcopy"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/relay"
	"github.com/edgeload/edgeload/segment"
)

// V2TensorAlign is the alignment of every tensor in the data section of a
// V2 model Relayout writes from V1: the converter's.
const V2TensorAlign = 64

// Relayout lays the model out anew (format.Relayouter). A V2 model keeps
// its FlatBuffer (but for moved data_offsets) and puts the tensor data
// section on o.Align, each tensor on o.TensorAlign when set. A V1 model
// with o.Upgrade becomes V2, every inline constant moved to the data
// section on max(V2TensorAlign, o.TensorAlign); without it, it is copied
// as it is.
func (m *Model) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	if o.DataFile != "" {
		return nil, fmt.Errorf("rten: an RTen model links no data files to move its constants to")
	}
	h, mf := m.hdr, m.f
	if h.Version != 2 && !o.Upgrade {
		whole, err := segment.New(mf, 0, mf.Len())
		if err != nil {
			return nil, err
		}
		return &format.Layout{Pieces: []format.Piece{{Data: whole}}, Size: whole.Len()}, nil
	}
	region, err := segment.New(mf, h.ModelOffset, h.ModelLen)
	if err != nil {
		return nil, err
	}
	fb, err := region.Bytes()
	if err != nil {
		return nil, err
	}
	var data relay.Seg
	if h.Version != 2 {
		if fb, data, err = upgrade(region, fb, max(V2TensorAlign, o.TensorAlign)); err != nil {
			return nil, err
		}
	} else {
		section, err := segment.New(mf, h.TensorDataOffset, mf.Len()-h.TensorDataOffset)
		if err != nil {
			return nil, err
		}
		data = relay.Whole(section)
		if o.TensorAlign > 0 {
			var offs []uint64
			for _, c := range m.consts {
				if c.External() {
					offs = append(offs, uint64(c.DataOffset))
				}
			}
			var remap map[uint64]uint64
			if data, remap, err = relay.Subs(section, offs, relay.Within(relay.TensorSpans(m, mf), section), o.TensorAlign); err != nil {
				return nil, err
			}
			fb = append([]byte(nil), fb...)
			if err := patchDataOffsets(fb, remap); err != nil {
				return nil, err
			}
		}
	}
	dataOff := format.AlignUp(HeaderSize+int64(len(fb)), o.Align)
	head := Header{Version: 2, ModelOffset: HeaderSize, ModelLen: int64(len(fb)), TensorDataOffset: dataOff}.Append(nil)
	head = append(head, fb...)
	return &format.Layout{Head: head, Pieces: relay.Pieces([]relay.Seg{data}, dataOff), Size: dataOff + data.Size}, nil
}

// upgrade rewrites the V1 Model FlatBuffer fb (the bytes of region) with
// every inline constant moved to a data section whose tensors start on
// talign boundaries. It returns the new FlatBuffer and the data section.
func upgrade(region segment.Segment, fb []byte, talign int64) ([]byte, relay.Seg, error) {
	var data relay.Seg
	c := fbcopy.New(fb, fbverify.Options{Format: fmtName, Base: region.Offset()})
	c.Edit = func(t *fbcopy.Table) error {
		if t.Desc != rtenfb.ConstantNodeDesc {
			return nil
		}
		if t.Has(idConstDataOffset) {
			return fmt.Errorf("rten: V1 constant at %d has a data_offset, but V1 has no tensor data section", t.Pos)
		}
		tag, err := t.Uint(idConstData)
		if err != nil || tag == 0 {
			return err // no inline data: kept as it is
		}
		dtype, ok := inlineType(rtenfb.ConstantData(tag))
		if !ok {
			return fmt.Errorf("rten: constant at %d: unknown data type %d", t.Pos, tag)
		}
		q, err := t.Ref(idConstData + 1)
		if err != nil {
			return err
		}
		// The ConstantData member: its only field is the vector.
		dt, err := c.Read(rtenfb.FloatDataDesc, q)
		if err != nil {
			return err
		}
		elem := int64(dtypeOf(uint16(dtype)).Size())
		start, n, err := dt.Vector(idDataData, elem)
		if err != nil {
			return err
		}
		if start == 0 {
			return fmt.Errorf("rten: constant at %d: inline data without its vector", t.Pos)
		}
		src, err := region.Sub(start, n*elem)
		if err != nil {
			return err
		}
		off := format.AlignUp(data.Size, talign)
		data.Pieces = append(data.Pieces, relay.Piece{Src: src, Dst: off})
		data.Size = off + src.Len()
		t.Drop(idConstData)
		t.SetUint(idConstDType, uint64(dtype))
		t.SetUint(idConstDataOffset, uint64(off))
		return nil
	}
	out, err := c.Copy(rtenfb.ModelDesc, "")
	return out, data, err
}

// patchDataOffsets rewrites, in the verified Model FlatBuffer fb, every
// constant's data_offset o to remap[o], in place: the field is present, so
// its size does not change. Subgraphs (If, Loop) are walked too; a constant
// table reached twice is patched once.
func patchDataOffsets(fb []byte, remap map[uint64]uint64) error {
	done := map[flatbuffers.UOffsetT]bool{}
	var walk func(g *rtenfb.Graph, depth int) error
	walk = func(g *rtenfb.Graph, depth int) error {
		if depth > DefaultMaxSubgraphDepth {
			return fmt.Errorf("rten: subgraphs nested deeper than %d", DefaultMaxSubgraphDepth)
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
					c.MutateDataOffset(remap[*o])
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
	g := rtenfb.GetRootAsModel(fb, 0).Graph(nil)
	if g == nil {
		return nil
	}
	return walk(g, 0)
}
