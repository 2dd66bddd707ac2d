package ptd

import (
	"fmt"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/internal/fbcopy"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/relay"
	"github.com/edgeload/edgeload/segment"
)

// The FH01 header written: 40 bytes, which with the 8-byte prefix, padded
// to 16, put the FlatBuffer's body at headerBody.
const (
	headerLen  = 40
	headerBody = 48
)

// Relayout lays the file out anew (format.Relayouter) with every segment
// on o.Align. A file of the 2025 layout keeps it; with o.TensorAlign, its
// tensors (several to a segment) are placed on that boundary inside their
// segments too, and tensor_alignment records it, unless the segment is
// also named data, which is read whole. The FlatBuffer is copied table by
// table (package fbcopy) with the new segment offsets; the header is
// written anew.
func (f *File) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	if o.DataFile != "" {
		return nil, fmt.Errorf("ptd: a .ptd has no constants to move to another data file")
	}
	region, err := segment.New(f.mf, 0, f.hdr.FlatBufferLen())
	if err != nil {
		return nil, err
	}
	fb, err := region.Bytes()
	if err != nil {
		return nil, err
	}
	segs := make([]relay.Seg, len(f.segs))
	for i, s := range f.segs {
		segs[i] = relay.Whole(s)
	}
	// remap: each relaid segment's tensor offsets, old to new.
	remap := make([]map[uint64]uint64, len(f.segs))
	if f.legacy && o.TensorAlign > 0 {
		root := ptdfb.GetRootAsLegacyFlatTensor(fb, 0)
		offs := make([][]uint64, len(f.segs))
		var tm ptdfb.LegacyTensorMetadata
		for i := range root.TensorsLength() {
			root.Tensors(&tm, i)
			if si := int(tm.SegmentIndex()); si < len(offs) {
				offs[si] = append(offs[si], tm.Offset())
			}
		}
		// A segment that is also named data is read whole: copied as it is.
		var nd ptdfb.LegacyNamedData
		for i := range root.NamedDataLength() {
			root.NamedData(&nd, i)
			if si := int(nd.SegmentIndex()); si < len(offs) {
				offs[si] = nil
			}
		}
		spans := relay.TensorSpans(f, f.mf)
		for i, s := range f.segs {
			if len(offs[i]) == 0 {
				continue
			}
			if segs[i], remap[i], err = relay.Subs(s, offs[i], relay.Within(spans, s), o.TensorAlign); err != nil {
				return nil, err
			}
		}
	}
	dataSize := relay.Place(segs, o.Align)

	c := fbcopy.New(fb, fbverify.Options{Format: formatName})
	c.Edit = func(t *fbcopy.Table) error {
		switch t.Desc {
		case ptdfb.FlatTensorDesc:
			t.SetRef(1, dataSegments(c.B, segs))
		case ptdfb.LegacyFlatTensorDesc:
			t.SetRef(3, dataSegments(c.B, segs))
			if f.legacy && o.TensorAlign > 0 {
				t.SetUint(1, uint64(o.TensorAlign))
			}
		case ptdfb.LegacyTensorMetadataDesc:
			si, err := t.Uint(4)
			if err != nil || si >= uint64(len(remap)) || remap[si] == nil {
				return err
			}
			off, err := t.Uint(5)
			if err != nil {
				return err
			}
			t.SetUint(5, remap[si][off])
		}
		return nil
	}
	root := ptdfb.FlatTensorDesc
	if f.legacy {
		root = ptdfb.LegacyFlatTensorDesc
	}
	out, err := c.Copy(root, Identifier)
	if err != nil {
		return nil, err
	}
	return layout(out, segs, dataSize, o.Align)
}

// dataSegments builds the vector of DataSegment tables of segs.
func dataSegments(b *flatbuffers.Builder, segs []relay.Seg) flatbuffers.UOffsetT {
	offs := make([]flatbuffers.UOffsetT, len(segs))
	for i, s := range segs {
		offs[i] = (&ptdfb.DataSegmentT{Offset: uint64(s.Off), Size: uint64(s.Size)}).Pack(b)
	}
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// layout puts the FH01 header in the FlatBuffer fb and lays the file out:
// fb, then the segments (placed by relay.Place) from the first boundary
// after it.
func layout(fb []byte, segs []relay.Seg, dataSize, align int64) (*format.Layout, error) {
	if len(fb) < 8 {
		return nil, fmt.Errorf("ptd: internal error: FlatTensor of %d bytes", len(fb))
	}
	head := executorch.HeaderRoom(fb, headerBody-8)
	base := format.AlignUp(int64(len(head)), align)
	Header{Length: headerLen, FlatBufferOffset: headerBody, FlatBufferSize: uint64(len(fb) - 8),
		SegmentBaseOffset: uint64(base), SegmentDataSize: uint64(dataSize)}.Put(head)
	return &format.Layout{Head: head, Pieces: relay.Pieces(segs, base), Size: base + dataSize}, nil
}

// Entry is a named-data entry of a .ptd NewLayout writes: its key, the
// index of its segment, and the layout of the tensor it holds, the scalar
// type as ExecuTorch codes it.
type Entry struct {
	Key        string
	Segment    int
	ScalarType int8
	Sizes      []int32
	DimOrder   []uint8
}

// NewLayout lays out a new .ptd (the current layout) holding segs, each
// a segment on align, and entries, in order.
func NewLayout(segs []segment.Segment, entries []Entry, align int64) (*format.Layout, error) {
	ss := make([]relay.Seg, len(segs))
	for i, s := range segs {
		ss[i] = relay.Whole(s)
	}
	dataSize := relay.Place(ss, align)
	ft := &ptdfb.FlatTensorT{
		Segments:  make([]*ptdfb.DataSegmentT, len(ss)),
		NamedData: make([]*ptdfb.NamedDataT, len(entries)), // present even when empty: ExecuTorch refuses a .ptd without it
	}
	for i, s := range ss {
		ft.Segments[i] = &ptdfb.DataSegmentT{Offset: uint64(s.Off), Size: uint64(s.Size)}
	}
	for i, e := range entries {
		if e.Segment < 0 || e.Segment >= len(segs) {
			return nil, fmt.Errorf("ptd: entry %q: segment %d of %d", e.Key, e.Segment, len(segs))
		}
		ft.NamedData[i] = &ptdfb.NamedDataT{Key: e.Key, SegmentIndex: uint32(e.Segment),
			TensorLayout: &ptdfb.TensorLayoutT{ScalarType: e.ScalarType, Sizes: slices.Clone(e.Sizes), DimOrder: slices.Clone(e.DimOrder)}}
	}
	b := flatbuffers.NewBuilder(4096)
	b.FinishWithFileIdentifier(ft.Pack(b), []byte(Identifier))
	return layout(b.FinishedBytes(), ss, dataSize, align)
}

// Convert lays out a .ptd holding the tensors ts (format.Registration's
// Convert): one segment a tensor, on align, and a named-data entry with
// its layout under its name.
func Convert(_ format.Model, ts []*format.Tensor, align int64) (*format.Layout, error) {
	segs := make([]segment.Segment, len(ts))
	entries := make([]Entry, len(ts))
	for i, t := range ts {
		st, ok := executorch.DTypeScalarType(t.DType)
		if !ok {
			return nil, fmt.Errorf("ptd: tensor %q: a .ptd has no scalar type for %v", t.Name, t.DType)
		}
		sizes := make([]int32, len(t.Shape))
		order := make([]uint8, len(t.Shape))
		for k, d := range t.Shape {
			if d > 1<<31-1 {
				return nil, fmt.Errorf("ptd: tensor %q: dimension %d does not fit a .ptd's int32 sizes", t.Name, d)
			}
			sizes[k], order[k] = int32(d), uint8(k)
		}
		segs[i] = t.Data
		entries[i] = Entry{Key: t.Name, Segment: i, ScalarType: st, Sizes: sizes, DimOrder: order}
	}
	return NewLayout(segs, entries, align)
}
