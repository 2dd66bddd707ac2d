// Package rtencheck exercises every accessor and view of an opened RTen
// model and makes the generated models the tests of loader/rten sweep and
// fuzz. It imports loader/rten and the layers below it.
package rtencheck

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
)

// Model exercises every accessor and view of an opened RTen model: header,
// metadata, warnings, segments, every graph and node (subgraphs included),
// constants (by name, typed views).
func Model(m *rten.Model) error {
	size := m.File().Len()
	h := m.Header()
	switch h.Version {
	case 1:
		if h.ModelOffset != 0 || h.ModelLen != size || len(m.Segments()) != 0 {
			return fmt.Errorf("rten: V1 header %+v, %d segments, file %d", h, len(m.Segments()), size)
		}
	case 2:
		if h.ModelOffset < rten.HeaderSize || h.ModelLen > size-h.ModelOffset ||
			h.TensorDataOffset < h.ModelOffset+h.ModelLen || h.TensorDataOffset > size {
			return fmt.Errorf("rten: V2 header %+v outside a %d-byte file", h, size)
		}
		if s := m.Segments(); len(s) != 1 || s[0].Offset() != h.TensorDataOffset || s[0].Offset()+s[0].Len() != size {
			return fmt.Errorf("rten: segments %v for header %+v, file %d", s, h, size)
		}
	default:
		return fmt.Errorf("rten: version %d", h.Version)
	}
	for i, s := range m.Segments() {
		if err := hostile.Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return fmt.Errorf("rten: %w", err)
		}
	}
	_ = m.Metadata()
	_ = m.Warnings()
	consts := m.Constants()
	var bad error
	graphs := 0
	m.Graph().Walk(func(g *rten.Graph) bool {
		graphs++
		if graphs > 1<<20 {
			bad = errors.New("rten: Walk visits more than 2^20 graphs")
			return false
		}
		n := len(g.Nodes)
		for _, list := range [][]uint32{g.Inputs, g.Outputs, g.Captures} {
			for _, v := range list {
				if int64(v) >= int64(n) {
					bad = fmt.Errorf("rten: graph %s refers to node %d of %d", g.Path, v, n)
					return false
				}
			}
		}
		for i := range g.Nodes {
			nd := &g.Nodes[i]
			_ = nd.Kind.String()
			switch nd.Kind {
			case rten.KindOperator:
				if nd.Op == nil || nd.Constant != nil || nd.Value != nil {
					bad = fmt.Errorf("rten: operator node %s/%d has wrong content", g.Path, i)
					return false
				}
				_ = nd.Op.Type.String()
				_ = nd.Op.Type.Known()
				for _, list := range [][]int32{nd.Op.Inputs, nd.Op.Outputs} {
					for _, v := range list {
						if v >= 0 && int64(v) >= int64(n) {
							bad = fmt.Errorf("rten: operator %s/%d refers to node %d of %d", g.Path, i, v, n)
							return false
						}
					}
				}
				for _, s := range nd.Op.Subgraphs {
					if s.Graph == nil || s.Attr == "" {
						bad = fmt.Errorf("rten: operator %s/%d has an empty subgraph", g.Path, i)
						return false
					}
				}
			case rten.KindConstant:
				c := nd.Constant
				if c == nil || c.Node != i || len(consts) == 0 {
					bad = fmt.Errorf("rten: constant node %s/%d has no constant", g.Path, i)
					return false
				}
				if k, ok := m.Constant(c.Name); !ok || k.Name != c.Name {
					bad = fmt.Errorf("rten: Constant(%q) not found", c.Name)
					return false
				}
			case rten.KindValue:
				if nd.Value == nil {
					bad = fmt.Errorf("rten: value node %s/%d without a value", g.Path, i)
					return false
				}
				for _, d := range nd.Value.Shape {
					_ = d.String()
				}
				_ = nd.Value.DType.String()
			default:
				bad = fmt.Errorf("rten: node %s/%d of kind %v", g.Path, i, nd.Kind)
				return false
			}
		}
		return true
	})
	if bad != nil {
		return bad
	}
	if len(m.Tensors()) != len(consts) {
		return fmt.Errorf("rten: %d tensors, %d constants", len(m.Tensors()), len(consts))
	}
	for i := range consts {
		c := &consts[i]
		if got, ok := m.Constant(c.Name); !ok || got.Name != c.Name {
			return fmt.Errorf("rten: Constant(%q) not found", c.Name)
		}
		t := &m.Tensors()[i]
		if t.Name != c.Name || t.Offset != c.Offset || t.NBytes != c.NBytes {
			return fmt.Errorf("rten: tensor %d differs from its constant", i)
		}
		switch c.Location {
		case format.LocNone:
			if c.Offset != -1 || c.Data.Len() != 0 {
				return fmt.Errorf("rten: constant %q without data has offset %d", c.Name, c.Offset)
			}
			continue
		case format.LocSegment:
			if !c.External() || c.Offset != h.TensorDataOffset+c.DataOffset {
				return fmt.Errorf("rten: external constant %q at %d, data_offset %d", c.Name, c.Offset, c.DataOffset)
			}
		case format.LocInline:
			if c.External() || c.Offset < h.ModelOffset || c.Offset+c.NBytes > h.ModelOffset+h.ModelLen {
				return fmt.Errorf("rten: inline constant %q at %d+%d outside the model data", c.Name, c.Offset, c.NBytes)
			}
		default:
			return fmt.Errorf("rten: constant %q location %v", c.Name, c.Location)
		}
		if err := hostile.Tensor(&c.Tensor); err != nil {
			return fmt.Errorf("rten: %w", err)
		}
	}
	return nil
}
