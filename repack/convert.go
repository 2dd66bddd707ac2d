package repack

import (
	"fmt"
	"slices"

	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/segment"
)

// converters write a model's tensors as a file of another format
// (Options.To), by the name of that format.
var converters = map[string]func(r *run, outs *outputs, out string, res *Result) error{
	"safetensors": (*run).toSafetensors,
	"ptd":         (*run).toPTD,
}

// convertible returns the model's tensors, each with its bytes and a
// row-major layout, the form both converters need.
func (r *run) convertible() ([]*format.Tensor, error) {
	ts := make([]*format.Tensor, r.m.NumTensors())
	for i := range ts {
		t := r.m.TensorAt(i)
		switch {
		case !t.Resolved():
			return nil, fmt.Errorf("repack: tensor %q has no data here (an external tensor: give its .ptd with --data)", t.Name)
		case t.DimOrder != nil && !slices.Equal(t.DimOrder, identity(len(t.DimOrder))):
			return nil, fmt.Errorf("repack: tensor %q has dim order %v, which a row-major file cannot hold", t.Name, t.DimOrder)
		case t.Sparse:
			return nil, fmt.Errorf("repack: tensor %q is sparse", t.Name)
		}
		ts[i] = t
	}
	return ts, nil
}

func identity(n int) []uint8 {
	d := make([]uint8, n)
	for i := range d {
		d[i] = uint8(i)
	}
	return d
}

// toSafetensors writes every tensor to a safetensors file, its data
// buffer on r.align (safetensors.Write's layout).
func (r *run) toSafetensors(outs *outputs, out string, res *Result) error {
	ts, err := r.convertible()
	if err != nil {
		return err
	}
	srcs := make([]safetensors.Source, len(ts))
	for i, t := range ts {
		if safetensors.Code(t.DType) == "" {
			return fmt.Errorf("repack: tensor %q: safetensors has no dtype for %v", t.Name, t.DType)
		}
		srcs[i] = safetensors.Source{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	var meta []safetensors.Meta
	if f, ok := r.m.Impl().(*safetensors.File); ok {
		meta = f.Metadata()
	}
	p, err := safetensors.NewPlan(srcs, meta, r.align)
	if err != nil {
		return fmt.Errorf("repack: %w", err)
	}
	return r.writeLayout(outs, out, res, safetensors.PlanLayout(p, func(i int) segment.Segment { return ts[i].Data }))
}

// toPTD writes every tensor to a .ptd: one segment a tensor, on r.align,
// and a named-data entry with its layout under the tensor's name.
func (r *run) toPTD(outs *outputs, out string, res *Result) error {
	ts, err := r.convertible()
	if err != nil {
		return err
	}
	o := &ptdOut{ident: ptd.Identifier, segs: make([]*ptdfb.DataSegmentT, len(ts)), plans: make([]segPlan, len(ts))}
	named := make([]*ptdfb.NamedDataT, len(ts))
	for i, t := range ts {
		st, ok := executorch.DTypeScalarType(t.DType)
		if !ok {
			return fmt.Errorf("repack: tensor %q: a .ptd has no scalar type for %v", t.Name, t.DType)
		}
		sizes := make([]int32, len(t.Shape))
		for k, d := range t.Shape {
			if d > 1<<31-1 {
				return fmt.Errorf("repack: tensor %q: dimension %d does not fit a .ptd's int32 sizes", t.Name, d)
			}
			sizes[k] = int32(d)
		}
		o.segs[i] = &ptdfb.DataSegmentT{}
		o.plans[i] = segPlan{pieces: []piece{{src: t.Data}}, size: t.NBytes}
		named[i] = &ptdfb.NamedDataT{Key: t.Name, SegmentIndex: uint32(i),
			TensorLayout: &ptdfb.TensorLayoutT{ScalarType: st, Sizes: sizes, DimOrder: identity(len(sizes))}}
	}
	o.tensor = len(ts)
	ft := &ptdfb.FlatTensorT{Segments: o.segs, NamedData: named}
	o.root = ft.Pack
	n, err := r.writePTD(outs, out, o)
	if err != nil {
		return err
	}
	res.Size, res.Segments, res.Tensors = n, len(ts), len(ts)
	return nil
}
