// Package ptecheck exercises every accessor and view of an opened
// ExecuTorch program and makes the generated programs the tests of
// loader/pte sweep and fuzz. It imports loader/pte and the layers below
// it, never package loader.
package ptecheck

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/segment"
)

// Program exercises every accessor and view of an opened program: header,
// program data, segments, methods (by name, and every value through
// TensorAt), tensors (by name, typed views), named data (by key) and
// delegates.
func Program(p *pte.Program) error {
	size := p.FileSize()
	h := p.Header()
	if h.ProgramSize <= 0 || h.ProgramSize > size || h.SegmentBase < 0 || h.SegmentBase > size {
		return fmt.Errorf("pte: header %+v for a %d-byte file", h, size)
	}
	_, _, _ = p.Name(), p.Version(), p.Legacy()
	if p.MappedFile() == nil || p.MappedFile().Len() != size {
		return errors.New("pte: MappedFile")
	}
	// The views from the records, before anything else can build the
	// tensor list; checked against the list below.
	data := make([]segment.Segment, p.NumTensors())
	for i := range data {
		data[i] = p.TensorData(i)
		// read through every path below, in the tensor list
		if err := hostile.SegmentBounds("tensor data", data[i]); err != nil {
			return err
		}
	}
	if err := hostile.Segment("program data", p.ProgramData()); err != nil {
		return err
	}
	if p.ProgramData().Len() != h.ProgramSize {
		return fmt.Errorf("pte: program data of %d bytes, header says %d", p.ProgramData().Len(), h.ProgramSize)
	}
	for i, s := range p.Segments() {
		if err := hostile.Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return err
		}
		if s.Len() > 0 && s.Offset() < h.SegmentBase {
			return fmt.Errorf("pte: segment %d %v before the segment base %d", i, s, h.SegmentBase)
		}
	}
	for mi := range p.Methods() {
		m := &p.Methods()[mi]
		if mm, ok := p.Method(m.Name); !ok || mm.Name != m.Name {
			return fmt.Errorf("pte: Method(%q) not found", m.Name)
		}
		nv := m.NumValues()
		for _, x := range m.Inputs {
			if x < 0 || int(x) >= nv {
				return fmt.Errorf("pte: method %q input %d of %d values", m.Name, x, nv)
			}
		}
		for _, x := range m.Outputs {
			if x < 0 || int(x) >= nv {
				return fmt.Errorf("pte: method %q output %d of %d values", m.Name, x, nv)
			}
		}
		if _, err := m.Value(nv); err == nil {
			return fmt.Errorf("pte: method %q: Value(%d) of %d values did not fail", m.Name, nv, nv)
		}
		for v := 0; v < nv; v++ {
			val, err := m.Value(v)
			if err != nil {
				// The checks of values Open leaves fail at first use, and
				// must fail the method's check too.
				var fe *format.FormatError
				if !errors.As(err, &fe) || p.VerifyMethods() == nil {
					return fmt.Errorf("pte: method %q value %d: %w", m.Name, v, err)
				}
				break
			}
			_ = val.Kind.String()
			if val.Tensor != nil {
				if _, _, ok := format.Numel(val.Tensor.Sizes, val.Tensor.DType, 1<<62); !ok && val.Tensor.Location != format.LocExternal && val.Tensor.Location != format.LocNone {
					return fmt.Errorf("pte: method %q value %d: sizes %v", m.Name, v, val.Tensor.Sizes)
				}
			}
			for _, it := range val.Items {
				if it < -1 || int(it) >= nv {
					return fmt.Errorf("pte: method %q value %d list item %d out of range", m.Name, v, it)
				}
			}
			tt, ok := p.ValueTensor(m.Name, v)
			want := val.Tensor != nil && val.Tensor.Tensor >= 0
			if ok != want {
				return fmt.Errorf("pte: TensorAt(%q, %d) = %v, value %+v", m.Name, v, ok, val)
			}
			if (val.Kind == pte.KindTensor) != (val.Tensor != nil) {
				return fmt.Errorf("pte: method %q value %d: kind %v, tensor %v", m.Name, v, val.Kind, val.Tensor)
			}
			if ok {
				if tt.Method != m.Name || tt.Value != v || &p.Tensors()[val.Tensor.Tensor] != tt {
					return fmt.Errorf("pte: TensorAt(%q, %d) returned %s/%d", m.Name, v, tt.Method, tt.Value)
				}
				if tt.DType != val.Tensor.DType || tt.ScalarType != val.Tensor.ScalarType {
					return fmt.Errorf("pte: tensor %q disagrees with its value", tt.Name)
				}
			}
		}
		if _, ok := p.ValueTensor(m.Name, nv); ok {
			return fmt.Errorf("pte: TensorAt past the values of %q", m.Name)
		}
		for _, d := range m.Delegates {
			if d < 0 || d >= len(p.Delegates()) || p.Delegates()[d].Method != m.Name {
				return fmt.Errorf("pte: method %q delegate index %d", m.Name, d)
			}
		}
	}
	if len(p.Tensors()) != len(data) {
		return fmt.Errorf("pte: %d tensors, NumTensors %d", len(p.Tensors()), len(data))
	}
	for i := range p.Tensors() {
		tt := &p.Tensors()[i]
		if g, ok := p.Tensor(tt.Name); !ok || g.Name != tt.Name {
			return fmt.Errorf("pte: Tensor(%q) not found", tt.Name)
		}
		if d := p.TensorData(i); !hostile.SameView(d, tt.Data) || !hostile.SameView(data[i], tt.Data) && tt.Location != format.LocExternal {
			return fmt.Errorf("pte: tensor %q: TensorData [%d, +%d), before the list [%d, +%d), Data [%d, +%d)",
				tt.Name, d.Offset(), d.Len(), data[i].Offset(), data[i].Len(), tt.Data.Offset(), tt.Data.Len())
		}
		if mm, ok := p.Method(tt.Method); !ok || tt.Value < 0 || tt.Value >= mm.NumValues() {
			return fmt.Errorf("pte: tensor %q of method %q value %d", tt.Name, tt.Method, tt.Value)
		}
		if tt.Segment >= len(p.Segments()) {
			return fmt.Errorf("pte: tensor %q segment %d of %d", tt.Name, tt.Segment, len(p.Segments()))
		}
		if err := hostile.FileTensor(&tt.Tensor, i); err != nil {
			return fmt.Errorf("pte: %w", err)
		}
		if tt.Location != format.LocExternal && tt.Location != format.LocNone && (tt.Data.File() != p.MappedFile() && tt.NBytes > 0) {
			return fmt.Errorf("pte: tensor %q views another file", tt.Name)
		}
	}
	for _, nd := range p.NamedData() {
		e, ok := p.NamedDataByKey(nd.Key)
		if !ok || e.Key != nd.Key {
			return fmt.Errorf("pte: NamedDataByKey(%q) = %v", nd.Key, ok)
		}
		if err := hostile.NamedData(nd, len(p.Segments())); err != nil {
			return fmt.Errorf("pte: %w", err)
		}
	}
	for i, d := range p.Delegates() {
		_ = d.Location.String()
		if d.Location == pte.DelegateSegment && (d.SegmentIndex < 0 || d.SegmentIndex >= len(p.Segments())) {
			return fmt.Errorf("pte: delegate %d (%s): segment %d of %d", i, d.ID, d.SegmentIndex, len(p.Segments()))
		}
		if err := hostile.Segment(fmt.Sprintf("delegate %d (%s)", i, d.ID), d.Data); err != nil {
			return err
		}
	}
	total, unresolved := p.External()
	if unresolved < 0 || unresolved > total {
		return fmt.Errorf("pte: External() = %d, %d", total, unresolved)
	}
	return nil
}
