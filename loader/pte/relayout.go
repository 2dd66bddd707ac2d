package pte

import (
	"encoding/binary"
	"fmt"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/internal/fbcopy"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/relay"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/segment"
)

// relayoutHeader is the extended header Relayout writes: the 32-byte
// "eh00" header with segment_data_size.
const relayoutHeader = 32

// Field ids of the tables Relayout edits, by their names in the schema.
var (
	idProgramConstantBuffer = fieldID(ptefb.ProgramDesc, "constant_buffer")
	idProgramSegments       = fieldID(ptefb.ProgramDesc, "segments")
	idSubsegmentOffsets     = fieldID(ptefb.SubsegmentOffsetsDesc, "offsets")
	idPlanValues            = fieldID(ptefb.ExecutionPlanDesc, "values")
	idEValueVal             = fieldID(ptefb.EValueDesc, "val")
	idTensorDataBufferIdx   = fieldID(ptefb.TensorDesc, "data_buffer_idx")
	idTensorExtraInfo       = fieldID(ptefb.TensorDesc, "extra_tensor_info")
	idExtraLocation         = fieldID(ptefb.ExtraTensorInfoDesc, "location")
	idExtraFQN              = fieldID(ptefb.ExtraTensorInfoDesc, "fully_qualified_name")
)

func fieldID(d *fbverify.TableDesc, name string) int {
	for _, f := range d.Fields {
		if f.Name == name {
			return f.ID
		}
	}
	panic("pte: the schema has no field " + d.Name + "." + name)
}

// ExtraTensorInfo.location of an external tensor.
const locationExternal = 1

// Relayout lays the program out anew (format.Relayouter): every segment
// on o.Align; with o.TensorAlign, every constant and mutable tensor's data
// on that boundary inside its segment, unless the segment is also a
// delegate's blob or named data. With o.DataFile, every constant moves to
// a new .ptd and becomes an EXTERNAL tensor under ExternalName's name.
// The FlatBuffer is copied table by table (package fbcopy), refusing a
// field the schema does not declare, behind a 32-byte "eh00" header.
func (p *Program) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	p.methodList() // the methods and delegates read below are built on first use
	root := ptefb.GetRootAsProgram(p.fb, 0)
	nseg := len(p.segments)
	if root.SegmentsLength() != nseg {
		return nil, fmt.Errorf("pte: internal error: %d segment views for %d segments", nseg, root.SegmentsLength())
	}
	// The sub-buffer tables of each segment (constant and mutable data
	// segments), by position, with their offsets.
	type subs struct {
		pos  int64
		offs []uint64
	}
	bySeg := map[int][]subs{}
	mutable := map[int]bool{}
	add := func(s *ptefb.SubsegmentOffsets, mut bool) {
		si := int(s.SegmentIndex())
		if si >= nseg {
			return
		}
		offs := make([]uint64, s.OffsetsLength())
		for j := range offs {
			offs[j] = s.Offsets(j)
		}
		bySeg[si] = append(bySeg[si], subs{int64(s.Table().Pos), offs})
		mutable[si] = mutable[si] || mut
	}
	var constPos int64 = -1
	if cs := root.ConstantSegment(nil); cs != nil {
		add(cs, false)
		constPos = int64(cs.Table().Pos)
	}
	var ms ptefb.SubsegmentOffsets
	for i := range root.MutableDataSegmentsLength() {
		root.MutableDataSegments(&ms, i)
		add(&ms, true)
	}
	// Segments read whole: delegate blobs and named data.
	blobs := map[int]bool{}
	for _, d := range p.delegates {
		if d.SegmentIndex >= 0 {
			blobs[d.SegmentIndex] = true
		}
	}
	for _, nd := range p.named {
		blobs[nd.Segment] = true
	}

	var ext *externals
	emptied := -1
	if o.DataFile != "" {
		var err error
		if ext, err = p.externals(); err != nil {
			return nil, err
		}
		if cs := root.ConstantSegment(nil); cs != nil {
			if si := int(cs.SegmentIndex()); si < nseg && len(bySeg[si]) == 1 && !blobs[si] && !mutable[si] {
				emptied = si
			}
		}
	}

	var spans []relay.Span
	if o.TensorAlign > 0 && nseg > 0 {
		spans = relay.TensorSpans(p, p.segments[0].File())
	}
	segs := make([]relay.Seg, nseg)
	remaps := map[int64]map[uint64]uint64{}
	for i, s := range p.segments {
		switch {
		case i == emptied:
			// every constant moved to the .ptd
		case o.TensorAlign > 0 && len(bySeg[i]) > 0 && !blobs[i]:
			var offs []uint64
			for _, t := range bySeg[i] {
				offs = append(offs, t.offs...)
			}
			seg, remap, err := relay.Subs(s, offs, relay.Within(spans, s), o.TensorAlign)
			if err != nil {
				return nil, err
			}
			segs[i] = seg
			for _, t := range bySeg[i] {
				remaps[t.pos] = remap
			}
		default:
			segs[i] = relay.Whole(s)
		}
	}
	dataSize := relay.Place(segs, o.Align)

	plans := map[int64]int{} // ExecutionPlan position -> method index
	for k := range p.methods {
		plans[int64(p.methods[k].pos)] = k
	}
	c := fbcopy.New(p.fb, fbverify.Options{Format: formatName})
	c.Edit = func(t *fbcopy.Table) error {
		switch t.Desc {
		case ptefb.ProgramDesc:
			t.SetRef(idProgramSegments, dataSegments(c.B, segs))
			if ext != nil {
				t.Drop(idProgramConstantBuffer)
			}
		case ptefb.SubsegmentOffsetsDesc:
			return subOffsets(t, remaps[t.Pos], ext != nil && t.Pos == constPos)
		case ptefb.ExecutionPlanDesc:
			if k, ok := plans[t.Pos]; ok && ext != nil {
				return ext.values(t, k)
			}
		}
		return nil
	}
	fb, err := c.Copy(ptefb.ProgramDesc, Identifier)
	if err != nil {
		return nil, err
	}
	if len(fb) < 8 {
		return nil, fmt.Errorf("pte: internal error: program FlatBuffer of %d bytes", len(fb))
	}
	head := executorch.HeaderRoom(fb, relayoutHeader)
	size := int64(len(head))
	var base int64
	if nseg > 0 {
		base = format.AlignUp(size, o.Align)
		size = base + dataSize
	}
	Header{Length: relayoutHeader, ProgramSize: int64(len(head)), SegmentBase: base, SegmentDataSize: dataSize}.Put(head)
	l := &format.Layout{Head: head, Pieces: relay.Pieces(segs, base), Size: size}
	if ext != nil {
		dl, err := ptd.NewLayout(ext.segs, ext.entries, o.Align)
		if err != nil {
			return nil, err
		}
		l.Files = []format.LayoutFile{{Name: o.DataFile, Link: true, Layout: dl}}
	}
	return l, nil
}

// dataSegments builds the vector of DataSegment tables of segs.
func dataSegments(b *flatbuffers.Builder, segs []relay.Seg) flatbuffers.UOffsetT {
	offs := make([]flatbuffers.UOffsetT, len(segs))
	for i, s := range segs {
		offs[i] = (&ptefb.DataSegmentT{Offset: uint64(s.Off), Size: uint64(s.Size)}).Pack(b)
	}
	return vector(b, offs, 4, b.PrependUOffsetT)
}

// vector writes the vector of xs, of size-byte elements, with prepend.
func vector[T any](b *flatbuffers.Builder, xs []T, size int, prepend func(T)) flatbuffers.UOffsetT {
	b.StartVector(size, len(xs), size)
	for i := len(xs) - 1; i >= 0; i-- {
		prepend(xs[i])
	}
	return b.EndVector(len(xs))
}

// subOffsets writes the offsets of the SubsegmentOffsets table t mapped by
// remap (when its segment was relaid), only the first when trunc (the
// constant segment, emptied: its constants moved to a .ptd).
func subOffsets(t *fbcopy.Table, remap map[uint64]uint64, trunc bool) error {
	if remap == nil && !trunc {
		return nil
	}
	start, n, err := t.Vector(idSubsegmentOffsets, 8)
	if err != nil || start == 0 {
		return err
	}
	offs := make([]uint64, n)
	for i := range offs {
		offs[i] = binary.LittleEndian.Uint64(t.Copier().Input()[start+8*int64(i):])
		if remap != nil {
			offs[i] = remap[offs[i]]
		}
	}
	if trunc && len(offs) > 1 {
		offs = offs[:1]
	}
	b := t.Copier().B
	t.SetRef(idSubsegmentOffsets, vector(b, offs, 8, b.PrependUint64))
	return nil
}

// ExternalName returns the name Relayout's DataFile stores a constant
// under: its fully-qualified name, or "<method>/values/<index>" (the name
// the loader gives a tensor without one) when it has none.
func ExternalName(method string, value int, fqn string) string {
	if fqn != "" {
		return fqn
	}
	return fmt.Sprintf("%s/values/%d", method, value)
}

// externals is the plan of a program's constants moved to a .ptd: each
// distinct buffer a segment, one entry per name, and the name of each
// method's moved values.
type externals struct {
	segs    []segment.Segment
	entries []ptd.Entry
	names   [][]string // by method, by value: "" for a value that stays
}

// externals plans the .ptd of the program's constants: every tensor value
// with constant data (in the constant segment or the legacy
// constant_buffer; not mutable, not external) under ExternalName, each
// distinct data_buffer_idx stored once, as long as the longest constant
// reading it. Two different buffers or layouts under one name are
// refused.
func (p *Program) externals() (*externals, error) {
	e := &externals{names: make([][]string, len(p.methods)), entries: []ptd.Entry{}}
	bufSeg := map[uint32]int{}
	byName := map[string]int{} // entry index
	methods := map[string]bool{}
	for k := range p.methods {
		m := &p.methods[k]
		if methods[m.Name] {
			return nil, fmt.Errorf("pte: externalize: two methods named %q", m.Name)
		}
		methods[m.Name] = true
		e.names[k] = make([]string, m.NumValues())
		for i := range m.NumValues() {
			lt, ok := p.ValueTensor(m.Name, i)
			if !ok || lt.Location != format.LocSegment && lt.Location != format.LocInline {
				continue
			}
			if !lt.Resolved() || lt.DataBufferIndex == 0 {
				return nil, fmt.Errorf("pte: externalize: %s value %d: no constant data", m.Name, i)
			}
			fqn := ""
			if lt.NameExplicit {
				fqn = lt.Name
			}
			name := ExternalName(m.Name, i, fqn)
			seg, ok := bufSeg[lt.DataBufferIndex]
			if !ok {
				seg = len(e.segs)
				bufSeg[lt.DataBufferIndex] = seg
				e.segs = append(e.segs, segment.Segment{})
			}
			// Constants sharing a buffer may read different lengths of it:
			// the segment holds the longest.
			if lt.Data.Len() > e.segs[seg].Len() {
				e.segs[seg] = lt.Data
			}
			sizes := make([]int32, len(lt.Shape))
			for d, x := range lt.Shape {
				sizes[d] = int32(x)
			}
			entry := ptd.Entry{Key: name, Segment: seg, ScalarType: lt.ScalarType, Sizes: sizes, DimOrder: lt.DimOrder}
			if j, dup := byName[name]; dup {
				if x := e.entries[j]; x.Segment != seg || x.ScalarType != entry.ScalarType || !slices.Equal(x.Sizes, sizes) || !slices.Equal(x.DimOrder, entry.DimOrder) {
					return nil, fmt.Errorf("pte: externalize: the name %q is used by two different constants", name)
				}
			} else {
				byName[name] = len(e.entries)
				e.entries = append(e.entries, entry)
			}
			e.names[k][i] = name
		}
	}
	return e, nil
}

// values writes the values of method k's ExecutionPlan t with each moved
// constant made external: data_buffer_idx cleared, extra_tensor_info's
// location EXTERNAL and fully_qualified_name its name. Each such value is
// copied on its own, so that two values sharing a table get a name each.
func (e *externals) values(t *fbcopy.Table, k int) error {
	c := t.Copier()
	start, n, err := t.Vector(idPlanValues, 4)
	if err != nil || start == 0 {
		return err
	}
	offs := make([]flatbuffers.UOffsetT, n)
	for i := range offs {
		pos, err := c.Deref(start + 4*int64(i))
		if err != nil {
			return err
		}
		var edit func(*fbcopy.Table) error
		if i < len(e.names[k]) && e.names[k][i] != "" {
			name := e.names[k][i]
			edit = func(ev *fbcopy.Table) error {
				return ev.CopyTable(idEValueVal, func(tt *fbcopy.Table) error { return external(tt, name) })
			}
		}
		if offs[i], err = c.CopyTable(ptefb.EValueDesc, pos, edit); err != nil {
			return err
		}
	}
	t.SetRef(idPlanValues, vector(c.B, offs, 4, c.B.PrependUOffsetT))
	return nil
}

// external makes the Tensor table tt an external tensor named name.
func external(tt *fbcopy.Table, name string) error {
	if tt.Desc != ptefb.TensorDesc {
		return fmt.Errorf("pte: internal error: externalizing a %s", tt.Desc.Name)
	}
	tt.Drop(idTensorDataBufferIdx)
	b := tt.Copier().B
	if tt.Has(idTensorExtraInfo) {
		return tt.CopyTable(idTensorExtraInfo, func(x *fbcopy.Table) error {
			x.SetUint(idExtraLocation, locationExternal)
			x.SetRef(idExtraFQN, b.CreateString(name))
			return nil
		})
	}
	tt.SetRef(idTensorExtraInfo, (&ptefb.ExtraTensorInfoT{FullyQualifiedName: name, Location: locationExternal}).Pack(b))
	return nil
}
