package writer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptdfb"
)

// PTD describes an ExecuTorch named-data file (.ptd) to write: the current
// FlatTensor layout, or (Legacy) the January-June 2025 layout that carries
// the same "FT01" identifier.
//
// The zero value of every knob gives what upstream writes: a 40-byte FH01
// header, identifier "FT01", version 0 and 16-byte segment alignment. The
// knobs that make a file invalid (a bad identifier, a short header, a
// segment index out of range, a key listed twice) are there so that tests
// can produce exactly the broken file they need; the writer checks only
// what it must to lay the file out.
type PTD struct {
	// Entries are the named-data entries (current layout) or, for a Legacy
	// file, the tensors (entries with a Layout) and named blobs (without).
	Entries []PTDEntry
	// Alignment is the segment alignment (16, 128, 16384, ...); 0 means 16.
	// In a Legacy file it is also the tensor_alignment of the tensors
	// inside their shared segment.
	Alignment int64
	// HeaderLength is the FH01 header length field; 0 means 40. The padded
	// header (8 + HeaderLength rounded up to 16) is what the header's
	// flatbuffer_offset holds. Values below 40 write a corrupt header
	// (only the first HeaderLength bytes of the 40 are kept, the rest are
	// left to the FlatBuffer).
	HeaderLength uint32
	// Identifier overrides the FlatBuffer file identifier ("FT01").
	Identifier string
	// HeaderMagic overrides the header magic ("FH01").
	HeaderMagic string
	// Version is FlatTensor.version.
	Version uint32
	// Legacy writes the 2025 layout: root table (version, tensor_alignment,
	// tensors, segments, named_data). Entries with a Layout become
	// TensorMetadata whose bytes share segment 0 at Alignment-aligned
	// offsets; entries without become legacy named_data with a segment of
	// their own.
	Legacy bool
	// OmitEmptyVectors leaves an empty segments / named_data / tensors list
	// out of the root table instead of writing an empty vector (the
	// FlatBuffers builder then trims the trailing absent slots from the
	// root vtable).
	OmitEmptyVectors bool
	// SegmentDataSize, when non-zero, overrides the header's
	// segment_data_size (to write a header that claims more data than the
	// file holds, for instance).
	SegmentDataSize uint64
	// RootVTablePad adds that many trailing absent slots to the root
	// table's vtable, as a writer that does not trim them would (the Go and
	// Python builders do trim). A reader counting raw vtable slots would
	// then take a current file for a legacy one.
	RootVTablePad int
	// FlatBuffer, when set, replaces the FlatBuffer built from Entries: a
	// finished buffer (root offset and identifier first) that the writer
	// only wraps with the header. Entries still lay out the segment data,
	// which the given FlatBuffer should describe. For hand-made tables.
	FlatBuffer []byte
}

// PTDEntry is one named-data entry (or legacy tensor).
type PTDEntry struct {
	// Key is the entry's key (a legacy tensor's fully_qualified_name).
	Key string
	// Layout makes the entry a tensor; nil writes an opaque blob.
	Layout *PTDLayout
	// Size is the segment size in bytes (a legacy tensor's byte count). 0
	// means len(Data) when Data is set, else the layout's numel × element
	// size, else 0. A Size smaller than the layout needs writes an invalid
	// file on purpose.
	Size int64
	// Data holds the bytes. When it is nil, Fill writes them; when Fill is
	// nil too, the range is left as a sparse hole that reads as zeros and
	// costs no disk space.
	Data []byte
	// Fill, when Data is nil, is called with consecutive chunks of the
	// entry's bytes: off is the offset of p[0] inside the entry. It lets a
	// test write gigabytes of deterministic content without holding them.
	Fill func(p []byte, off int64)
	// SegmentRef, when > 0, writes segment_index SegmentRef-1 and gives the
	// entry no segment of its own (two keys sharing a segment, or an index
	// out of range). Not used for legacy tensors.
	SegmentRef int
	// LegacyOffset, when set, overrides a legacy tensor's offset inside its
	// segment (to write one that points past the segment).
	LegacyOffset *uint64
}

// PTDLayout is a TensorLayout (current) or the layout part of a legacy
// TensorMetadata.
type PTDLayout struct {
	// ScalarType is the raw ExecuTorch ScalarType code (6 = float32), so
	// that tests can write reserved or unknown codes.
	ScalarType int8
	Sizes      []int32
	// DimOrder is written as given; nil writes 0..n-1, and NoDimOrder
	// leaves the field out.
	DimOrder   []uint8
	NoDimOrder bool
}

// PTDScalarFloat32 and friends are the ExecuTorch ScalarType codes tests use most.
const (
	PTDScalarUint8   int8 = 0
	PTDScalarInt8    int8 = 1
	PTDScalarInt32   int8 = 3
	PTDScalarInt64   int8 = 4
	PTDScalarFloat16 int8 = 5
	PTDScalarFloat32 int8 = 6
	PTDScalarFloat64 int8 = 7
)

// NBytes returns numel × element size of the layout (0 when the scalar
// type is unknown to the writer or a size is negative).
func (l *PTDLayout) NBytes() int64 {
	n := etElemSize(l.ScalarType)
	for _, s := range l.Sizes {
		if s < 0 {
			return 0
		}
		n *= int64(s)
	}
	return n
}

func (e *PTDEntry) size() int64 {
	switch {
	case e.Size > 0:
		return e.Size
	case e.Data != nil:
		return int64(len(e.Data))
	case e.Layout != nil:
		return e.Layout.NBytes()
	}
	return 0
}

// PTDPlaced says where an entry's bytes ended up in the written file.
type PTDPlaced struct {
	Key     string
	Segment int   // segment index (-1 when the entry has no segment of its own)
	Offset  int64 // absolute file offset of the entry's first byte
	Size    int64
}

// PTDLayoutInfo describes the file the writer laid out.
type PTDLayoutInfo struct {
	FlatBufferOffset  uint64 // the padded header length
	FlatBufferSize    uint64
	SegmentBaseOffset uint64
	SegmentDataSize   uint64
	FileSize          int64
	Entries           []PTDPlaced // parallel to PTD.Entries
	Segments          [][2]int64  // absolute offset and size of each segment
}

// ptdPlan is a laid-out file: the header+FlatBuffer bytes and where each
// entry's bytes go.
type ptdPlan struct {
	head []byte // bytes [0, len(head)): header and FlatBuffer
	info PTDLayoutInfo
}

func ptdAlignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// Plan lays the file out without writing it.
func (p *PTD) Plan() (PTDLayoutInfo, error) {
	pl, err := p.plan()
	if err != nil {
		return PTDLayoutInfo{}, err
	}
	return pl.info, nil
}

func (p *PTD) plan() (*ptdPlan, error) {
	align := p.Alignment
	if align == 0 {
		align = 16
	}
	if align < 1 {
		return nil, fmt.Errorf("writer: ptd alignment %d", align)
	}
	hlen := p.HeaderLength
	if hlen == 0 {
		hlen = 40
	}
	ident := "FT01"
	if p.Identifier != "" {
		ident = p.Identifier
	}
	magic := "FH01"
	if p.HeaderMagic != "" {
		magic = p.HeaderMagic
	}
	if len(ident) != 4 || len(magic) != 4 {
		return nil, errors.New("writer: ptd identifier and header magic must be 4 bytes")
	}

	// Segments, relative to the segment base.
	type seg struct{ off, size int64 }
	var segs []seg
	placed := make([]PTDPlaced, len(p.Entries))
	segIndex := make([]uint32, len(p.Entries)) // index written for each entry
	relOff := make([]int64, len(p.Entries))    // offset inside the segment data region
	var end int64
	newSeg := func(size int64) int {
		off := ptdAlignUp(end, align)
		segs = append(segs, seg{off, size})
		end = off + size
		return len(segs) - 1
	}
	if p.Legacy {
		// Tensors share segment 0, each at an aligned offset inside it.
		var tsize int64
		tensorOff := make([]int64, len(p.Entries))
		haveTensors := false
		for i := range p.Entries {
			e := &p.Entries[i]
			if e.Layout == nil {
				continue
			}
			haveTensors = true
			tsize = ptdAlignUp(tsize, align)
			tensorOff[i] = tsize
			tsize += e.size()
		}
		if haveTensors {
			s := newSeg(tsize)
			for i := range p.Entries {
				if p.Entries[i].Layout == nil {
					continue
				}
				segIndex[i] = uint32(s)
				relOff[i] = segs[s].off + tensorOff[i]
				placed[i] = PTDPlaced{Key: p.Entries[i].Key, Segment: s, Size: p.Entries[i].size()}
			}
		}
		for i := range p.Entries {
			e := &p.Entries[i]
			if e.Layout != nil {
				continue
			}
			s := newSeg(e.size())
			segIndex[i] = uint32(s)
			relOff[i] = segs[s].off
			placed[i] = PTDPlaced{Key: e.Key, Segment: s, Size: e.size()}
		}
	} else {
		for i := range p.Entries {
			e := &p.Entries[i]
			if e.SegmentRef > 0 {
				segIndex[i] = uint32(e.SegmentRef - 1)
				placed[i] = PTDPlaced{Key: e.Key, Segment: -1, Offset: -1, Size: e.size()}
				relOff[i] = -1
				continue
			}
			s := newSeg(e.size())
			segIndex[i] = uint32(s)
			relOff[i] = segs[s].off
			placed[i] = PTDPlaced{Key: e.Key, Segment: s, Size: e.size()}
		}
	}
	for i := range p.Entries {
		if d := p.Entries[i].Data; d != nil && int64(len(d)) > placed[i].Size {
			return nil, fmt.Errorf("writer: ptd entry %q: %d data bytes for a %d-byte entry", p.Entries[i].Key, len(d), placed[i].Size)
		}
	}

	// The FlatBuffer.
	b := flatbuffers.NewBuilder(1024)
	var segVec flatbuffers.UOffsetT
	if len(segs) > 0 || !p.OmitEmptyVectors {
		offs := make([]flatbuffers.UOffsetT, len(segs))
		for i, s := range segs {
			ptdfb.DataSegmentStart(b)
			ptdfb.DataSegmentAddOffset(b, uint64(s.off))
			ptdfb.DataSegmentAddSize(b, uint64(s.size))
			offs[i] = ptdfb.DataSegmentEnd(b)
		}
		segVec = ptdVector(b, offs)
	}
	layout := func(l *PTDLayout) (sizes, dims flatbuffers.UOffsetT) {
		b.StartVector(4, len(l.Sizes), 4)
		for i := len(l.Sizes) - 1; i >= 0; i-- {
			b.PrependInt32(l.Sizes[i])
		}
		sizes = b.EndVector(len(l.Sizes))
		if !l.NoDimOrder {
			d := l.DimOrder
			if d == nil {
				d = make([]uint8, len(l.Sizes))
				for i := range d {
					d[i] = uint8(i)
				}
			}
			dims = b.CreateByteVector(d)
		}
		return sizes, dims
	}
	var root flatbuffers.UOffsetT
	if p.Legacy {
		var tensors, named []flatbuffers.UOffsetT
		for i := range p.Entries {
			e := &p.Entries[i]
			key := b.CreateString(e.Key)
			if e.Layout != nil {
				sizes, dims := layout(e.Layout)
				ptdfb.LegacyTensorMetadataStart(b)
				ptdfb.LegacyTensorMetadataAddFullyQualifiedName(b, key)
				ptdfb.LegacyTensorMetadataAddScalarType(b, e.Layout.ScalarType)
				ptdfb.LegacyTensorMetadataAddSizes(b, sizes)
				if dims != 0 {
					ptdfb.LegacyTensorMetadataAddDimOrder(b, dims)
				}
				ptdfb.LegacyTensorMetadataAddSegmentIndex(b, segIndex[i])
				off := uint64(relOff[i] - segs[segIndex[i]].off)
				if e.LegacyOffset != nil {
					off = *e.LegacyOffset
				}
				ptdfb.LegacyTensorMetadataAddOffset(b, off)
				tensors = append(tensors, ptdfb.LegacyTensorMetadataEnd(b))
				continue
			}
			ptdfb.LegacyNamedDataStart(b)
			ptdfb.LegacyNamedDataAddKey(b, key)
			ptdfb.LegacyNamedDataAddSegmentIndex(b, segIndex[i])
			named = append(named, ptdfb.LegacyNamedDataEnd(b))
		}
		var tv, nv flatbuffers.UOffsetT
		if len(tensors) > 0 || !p.OmitEmptyVectors {
			tv = ptdVector(b, tensors)
		}
		if len(named) > 0 || !p.OmitEmptyVectors {
			nv = ptdVector(b, named)
		}
		ptdStartRoot(b, 5, p.RootVTablePad)
		ptdfb.LegacyFlatTensorAddVersion(b, p.Version)
		ptdfb.LegacyFlatTensorAddTensorAlignment(b, uint32(align))
		if tv != 0 {
			ptdfb.LegacyFlatTensorAddTensors(b, tv)
		}
		if segVec != 0 {
			ptdfb.LegacyFlatTensorAddSegments(b, segVec)
		}
		if nv != 0 {
			ptdfb.LegacyFlatTensorAddNamedData(b, nv)
		}
		root = ptdEndRoot(b, 5, p.RootVTablePad)
	} else {
		named := make([]flatbuffers.UOffsetT, len(p.Entries))
		for i := range p.Entries {
			e := &p.Entries[i]
			key := b.CreateString(e.Key)
			var lt flatbuffers.UOffsetT
			if e.Layout != nil {
				sizes, dims := layout(e.Layout)
				ptdfb.TensorLayoutStart(b)
				ptdfb.TensorLayoutAddScalarType(b, e.Layout.ScalarType)
				ptdfb.TensorLayoutAddSizes(b, sizes)
				if dims != 0 {
					ptdfb.TensorLayoutAddDimOrder(b, dims)
				}
				lt = ptdfb.TensorLayoutEnd(b)
			}
			ptdfb.NamedDataStart(b)
			ptdfb.NamedDataAddKey(b, key)
			ptdfb.NamedDataAddSegmentIndex(b, segIndex[i])
			if lt != 0 {
				ptdfb.NamedDataAddTensorLayout(b, lt)
			}
			named[i] = ptdfb.NamedDataEnd(b)
		}
		var nv flatbuffers.UOffsetT
		if len(named) > 0 || !p.OmitEmptyVectors {
			nv = ptdVector(b, named)
		}
		ptdStartRoot(b, 3, p.RootVTablePad)
		ptdfb.FlatTensorAddVersion(b, p.Version)
		if segVec != 0 {
			ptdfb.FlatTensorAddSegments(b, segVec)
		}
		if nv != 0 {
			ptdfb.FlatTensorAddNamedData(b, nv)
		}
		root = ptdEndRoot(b, 3, p.RootVTablePad)
	}
	b.FinishWithFileIdentifier(root, []byte(ident))
	fb := b.FinishedBytes()
	if p.RootVTablePad > 0 {
		// Turn the placeholder field's slot into an absent one.
		le := binary.LittleEndian
		pos := int64(le.Uint32(fb))
		vt := pos - int64(int32(le.Uint32(fb[pos:])))
		nf := 3
		if p.Legacy {
			nf = 5
		}
		le.PutUint16(fb[vt+4+2*int64(nf+p.RootVTablePad-1):], 0)
	}

	if p.FlatBuffer != nil {
		if len(p.FlatBuffer) < 8 {
			return nil, errors.New("writer: ptd FlatBuffer shorter than its 8-byte prefix")
		}
		fb = p.FlatBuffer
	}

	// Insert the FH01 header after the 8-byte prefix, padded so that the
	// FlatBuffer body keeps its 8-byte alignment: the padded header length
	// (the header's "flatbuffer_offset") is 8 + HeaderLength rounded up to 16.
	padded := ptdAlignUp(8+int64(hlen), 16)
	if 8+int64(hlen) < 48 {
		padded = 48 // room for the fixed fields, even when the length lies
	}
	ins := padded - 8
	head := make([]byte, int64(len(fb))+ins)
	copy(head[:8], fb[:8])
	copy(head[padded:], fb[8:])
	binary.LittleEndian.PutUint32(head[0:], binary.LittleEndian.Uint32(fb[0:])+uint32(ins))
	fbSize := uint64(len(fb) - 8)
	base := ptdAlignUp(int64(len(head)), align)
	dataSize := uint64(end)
	if p.SegmentDataSize != 0 {
		dataSize = p.SegmentDataSize
	}
	copy(head[8:12], magic)
	binary.LittleEndian.PutUint32(head[12:], hlen)
	binary.LittleEndian.PutUint64(head[16:], uint64(padded))
	binary.LittleEndian.PutUint64(head[24:], fbSize)
	binary.LittleEndian.PutUint64(head[32:], uint64(base))
	binary.LittleEndian.PutUint64(head[40:], dataSize)

	pl := &ptdPlan{head: head}
	pl.info = PTDLayoutInfo{
		FlatBufferOffset:  uint64(padded),
		FlatBufferSize:    fbSize,
		SegmentBaseOffset: uint64(base),
		SegmentDataSize:   dataSize,
		FileSize:          base + end,
		Entries:           placed,
	}
	for _, s := range segs {
		pl.info.Segments = append(pl.info.Segments, [2]int64{base + s.off, s.size})
	}
	for i := range placed {
		if relOff[i] >= 0 {
			placed[i].Offset = base + relOff[i]
		}
	}
	return pl, nil
}

// ptdStartRoot starts the root table with nf fields plus pad placeholder
// slots.
func ptdStartRoot(b *flatbuffers.Builder, nf, pad int) {
	b.StartObject(nf + max(pad, 0))
}

// ptdEndRoot ends the root table; with pad > 0 it first writes a
// placeholder byte in the last slot, so that the builder keeps the slots in
// the vtable (plan zeroes that slot afterwards).
func ptdEndRoot(b *flatbuffers.Builder, nf, pad int) flatbuffers.UOffsetT {
	if pad > 0 {
		b.PrependByteSlot(nf+pad-1, 1, 0)
	}
	return b.EndObject()
}

func ptdVector(b *flatbuffers.Builder, offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(offs[i])
	}
	return b.EndVector(len(offs))
}

// Bytes returns the whole file in memory. Holes are zeros; only for small
// files.
func (p *PTD) Bytes() ([]byte, error) {
	pl, err := p.plan()
	if err != nil {
		return nil, err
	}
	out := make([]byte, pl.info.FileSize)
	copy(out, pl.head)
	for i := range p.Entries {
		pe := pl.info.Entries[i]
		if pe.Offset < 0 {
			continue
		}
		e := &p.Entries[i]
		dst := out[pe.Offset : pe.Offset+pe.Size]
		switch {
		case e.Data != nil:
			copy(dst, e.Data)
		case e.Fill != nil:
			e.Fill(dst, 0)
		}
	}
	return out, nil
}

// WriteFile writes the file to path, streaming each entry's bytes and
// leaving entries with neither Data nor Fill as sparse holes, so a
// multi-GiB file costs only the bytes actually given. It returns the layout.
func (p *PTD) WriteFile(path string) (PTDLayoutInfo, error) {
	pl, err := p.plan()
	if err != nil {
		return PTDLayoutInfo{}, err
	}
	f, err := os.Create(path)
	if err != nil {
		return PTDLayoutInfo{}, err
	}
	if err := p.writeTo(f, pl); err != nil {
		f.Close()
		return PTDLayoutInfo{}, err
	}
	return pl.info, f.Close()
}

func (p *PTD) writeTo(f *os.File, pl *ptdPlan) error {
	if _, err := f.WriteAt(pl.head, 0); err != nil {
		return err
	}
	var chunk []byte
	for i := range p.Entries {
		pe := pl.info.Entries[i]
		if pe.Offset < 0 {
			continue
		}
		e := &p.Entries[i]
		switch {
		case e.Data != nil:
			if _, err := f.WriteAt(e.Data, pe.Offset); err != nil {
				return err
			}
		case e.Fill != nil:
			if chunk == nil {
				chunk = make([]byte, 1<<20)
			}
			for off := int64(0); off < pe.Size; off += int64(len(chunk)) {
				n := min(int64(len(chunk)), pe.Size-off)
				c := chunk[:n]
				clear(c)
				e.Fill(c, off)
				if _, err := f.WriteAt(c, pe.Offset+off); err != nil {
					return err
				}
			}
		}
	}
	return f.Truncate(pl.info.FileSize)
}

// WriteTo writes the file to w (holes as zeros, since a plain io.Writer
// cannot seek). It implements io.WriterTo.
func (p *PTD) WriteTo(w io.Writer) (int64, error) {
	b, err := p.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}
