package repack

import (
	"fmt"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/segment"
)

// ptdHeaderLen is the FH01 header length written; with the 8-byte prefix,
// padded to 16, the FlatBuffer body starts at ptdBody.
const (
	ptdHeaderLen = 40
	ptdBody      = 48
)

// ptdOut is a .ptd to write: its root table (segment offsets filled in by
// writePTD) and the source of each segment's bytes.
type ptdOut struct {
	root   func(b *flatbuffers.Builder) flatbuffers.UOffsetT
	segs   []*ptdfb.DataSegmentT
	plans  []segPlan
	ident  string
	tensor int
}

// externalize moves every constant of prog to a .ptd: each tensor value
// with data_buffer_idx > 0 and no allocation_info (a constant in the
// constant segment or the legacy constant_buffer) becomes EXTERNAL under
// Name(method, value, fully_qualified_name), and each distinct buffer is
// stored once, as one segment as long as the longest constant reading it,
// with one named-data entry per name.
func (r *run) externalize(p *pte.Program, prog *ptefb.ProgramT) (*ptdOut, error) {
	type entry struct {
		seg    int
		layout *ptdfb.TensorLayoutT
	}
	entries := map[string]entry{}
	bufSeg := map[uint32]int{}
	out := &ptdOut{ident: ptd.Identifier}
	named := []*ptdfb.NamedDataT{} // an empty vector, not none: ExecuTorch refuses a .ptd without one
	methods := map[string]bool{}
	for _, plan := range prog.ExecutionPlan {
		if plan == nil {
			continue
		}
		if methods[plan.Name] {
			return nil, fmt.Errorf("repack: externalize: two methods named %q", plan.Name)
		}
		methods[plan.Name] = true
		for i, ev := range plan.Values {
			if ev == nil || ev.Val == nil || ev.Val.Type != ptefb.KernelTypesTensor {
				continue
			}
			t, ok := ev.Val.Value.(*ptefb.TensorT)
			if !ok || t == nil || t.DataBufferIdx == 0 || t.AllocationInfo != nil {
				continue
			}
			if t.ExtraTensorInfo != nil && t.ExtraTensorInfo.Location == locExternal {
				continue
			}
			lt, ok := p.ValueTensor(plan.Name, i)
			if !ok || lt.DataBufferIndex != t.DataBufferIdx || !lt.Resolved() {
				return nil, fmt.Errorf("repack: externalize: %s value %d: no constant data", plan.Name, i)
			}
			fqn := ""
			if t.ExtraTensorInfo != nil {
				fqn = t.ExtraTensorInfo.FullyQualifiedName
			}
			name := Name(plan.Name, i, fqn)
			layout := &ptdfb.TensorLayoutT{ScalarType: t.ScalarType, Sizes: slices.Clone(t.Sizes), DimOrder: slices.Clone(t.DimOrder)}
			seg, ok := bufSeg[t.DataBufferIdx]
			if !ok {
				seg = len(out.plans)
				bufSeg[t.DataBufferIdx] = seg
				out.plans = append(out.plans, segPlan{})
				out.tensor++
			}
			// Constants sharing a buffer may read different lengths of it:
			// the segment holds the longest.
			if lt.NBytes > out.plans[seg].size {
				out.plans[seg] = segPlan{pieces: []piece{{src: lt.Data}}, size: lt.NBytes}
			}
			if e, dup := entries[name]; dup {
				if e.seg != seg || !sameLayout(e.layout, layout) {
					return nil, fmt.Errorf("repack: externalize: the name %q is used by two different constants", name)
				}
			} else {
				entries[name] = entry{seg, layout}
				named = append(named, &ptdfb.NamedDataT{Key: name, SegmentIndex: uint32(seg), TensorLayout: layout})
			}
			if t.ExtraTensorInfo == nil {
				t.ExtraTensorInfo = &ptefb.ExtraTensorInfoT{}
			}
			t.ExtraTensorInfo.Location = locExternal
			t.ExtraTensorInfo.FullyQualifiedName = name
			t.DataBufferIdx = 0
		}
	}
	if len(prog.ConstantBuffer) > 0 {
		prog.ConstantBuffer = nil
	}
	if cs := prog.ConstantSegment; cs != nil && len(cs.Offsets) > 1 {
		cs.Offsets = cs.Offsets[:1]
	}
	out.segs = make([]*ptdfb.DataSegmentT, len(out.plans))
	for i := range out.segs {
		out.segs[i] = &ptdfb.DataSegmentT{}
	}
	ft := &ptdfb.FlatTensorT{Segments: out.segs, NamedData: named}
	out.root = ft.Pack
	return out, nil
}

func sameLayout(a, b *ptdfb.TensorLayoutT) bool {
	return a.ScalarType == b.ScalarType && slices.Equal(a.Sizes, b.Sizes) && slices.Equal(a.DimOrder, b.DimOrder)
}

// writePTD lays out and writes a .ptd: FH01 header, FlatBuffer, segments
// each on r.align. It returns the file's size.
func (r *run) writePTD(outs *outputs, path string, o *ptdOut) (int64, error) {
	var cur int64
	for i := range o.plans {
		o.plans[i].off = alignUp(cur, r.align)
		cur = o.plans[i].off + o.plans[i].size
		o.segs[i].Offset = uint64(o.plans[i].off)
		o.segs[i].Size = uint64(o.plans[i].size)
		for _, pc := range o.plans[i].pieces {
			r.total += pc.src.Len()
		}
	}
	dataSize := cur
	b := flatbuffers.NewBuilder(4096)
	b.FinishWithFileIdentifier(o.root(b), []byte(o.ident))
	fb := b.FinishedBytes()
	if len(fb) < 8 {
		return 0, fmt.Errorf("%w: FlatTensor of %d bytes", errInternal, len(fb))
	}
	head := format.HeaderRoom(fb, ptdBody-8)
	base := alignUp(int64(len(head)), r.align)
	ptd.Header{Length: ptdHeaderLen, FlatBufferOffset: ptdBody, FlatBufferSize: uint64(len(fb) - 8),
		SegmentBaseOffset: uint64(base), SegmentDataSize: uint64(dataSize)}.Put(head)

	w, err := outs.create(path, "")
	if err != nil {
		return 0, err
	}
	if err := w.write(head); err != nil {
		return 0, err
	}
	for i := range o.plans {
		for _, pc := range o.plans[i].pieces {
			if err := w.padTo(base + o.plans[i].off + pc.dst); err != nil {
				return 0, err
			}
			if err := w.copySeg(r, pc.src); err != nil {
				return 0, err
			}
		}
	}
	if err := w.padTo(base + dataSize); err != nil {
		return 0, err
	}
	return w.pos, nil
}

// ptd rewrites a .ptd with its segments on r.align; with r.talign the
// tensors of a legacy file (several to a segment) are placed on r.talign
// inside their segments too, unless the segment is also named data.
func (r *run) ptd(outs *outputs, out string, res *Result) error {
	df := r.m.DataFile()
	h := df.Header()
	region, err := segment.New(df.MappedFile(), 0, h.FlatBufferLen())
	if err != nil {
		return err
	}
	fb, err := region.Bytes()
	if err != nil {
		return err
	}
	segs := df.Segments()
	o := &ptdOut{ident: ptd.Identifier, tensor: len(df.Tensors())}
	if df.Legacy() {
		var ft *ptdfb.LegacyFlatTensorT
		if err := unpackSafe("FlatTensor", func() { ft = ptdfb.GetRootAsLegacyFlatTensor(fb, 0).UnPack() }); err != nil {
			return err
		}
		if len(segs) != len(ft.Segments) {
			return fmt.Errorf("%w: %d segment views for %d segments", errInternal, len(segs), len(ft.Segments))
		}
		o.segs = ft.Segments
		o.plans = make([]segPlan, len(segs))
		spans := tensorSpans(r.m, df.MappedFile())
		// A segment that is also named data is read whole: copied as it is.
		blobs := make(map[int]bool)
		for _, nd := range ft.NamedData {
			if nd != nil {
				blobs[int(nd.SegmentIndex)] = true
			}
		}
		for i, s := range segs {
			var ts []*ptdfb.LegacyTensorMetadataT
			var offs []uint64
			for _, t := range ft.Tensors {
				if t != nil && int(t.SegmentIndex) == i {
					ts = append(ts, t)
					offs = append(offs, t.Offset)
				}
			}
			if r.talign == 0 || len(ts) == 0 || blobs[i] {
				o.plans[i] = segPlan{pieces: []piece{{src: s}}, size: s.Len()}
				continue
			}
			pieces, size, remap, err := relayout(s, offs, within(spans, s), r.talign)
			if err != nil {
				return err
			}
			o.plans[i] = segPlan{pieces: pieces, size: size}
			for _, t := range ts {
				t.Offset = remap[t.Offset]
			}
		}
		if r.talign > 0 {
			ft.TensorAlignment = uint32(r.talign)
		}
		o.root = ft.Pack
	} else {
		var ft *ptdfb.FlatTensorT
		if err := unpackSafe("FlatTensor", func() { ft = ptdfb.GetRootAsFlatTensor(fb, 0).UnPack() }); err != nil {
			return err
		}
		if len(segs) != len(ft.Segments) {
			return fmt.Errorf("%w: %d segment views for %d segments", errInternal, len(segs), len(ft.Segments))
		}
		o.segs = ft.Segments
		o.plans = make([]segPlan, len(segs))
		for i, s := range segs {
			o.plans[i] = segPlan{pieces: []piece{{src: s}}, size: s.Len()}
		}
		o.root = ft.Pack
	}
	n, err := r.writePTD(outs, out, o)
	if err != nil {
		return err
	}
	res.Size = n
	res.Segments = len(o.plans)
	res.Tensors = o.tensor
	return nil
}
