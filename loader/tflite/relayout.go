package tflite

import (
	"cmp"
	"io"
	"math"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbcopy"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Relayout lays the model out anew with the bytes of every buffer a tensor
// reads on an o.Align boundary (format.Relayouter): every such buffer
// becomes an offset/size buffer (the large-model layout) placed after the
// FlatBuffer. Buffers only metadata names stay inline, as the converter
// writes them and metadata readers expect them; offset buffers no tensor
// reads are placed like the others, on the boundary.
//
// The FlatBuffer is copied table by table (package fbcopy, as the
// project's schema, which has every table and field of upstream's,
// describes it), without the bytes of the buffers that move: the new file
// is about as large as the old one. A table with a field the schema does
// not know is refused rather than copied without it. Large custom options
// (Operator fields 9 and 10) move like buffers. The zip archive of
// associated files TFLite Support appends, if any, follows the last
// buffer, its offsets rewritten for its new place.
//
// Buffers that share bytes (several entries at one offset) still share
// them.
func (m *Model) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	align := o.Align
	if align <= 0 || align&(align-1) != 0 || align > 1<<30 {
		return nil, format.Errorf(formatName, "", -1, "alignment %d is not a power of two in [1, 2^30]", align)
	}
	// The operators, read below, are verified at their first use.
	if err := m.Check(); err != nil {
		return nil, err
	}
	head, patches, err := m.copyTables()
	if err != nil {
		return nil, err
	}
	size := m.mf.Len()

	// Place the bytes: one copy per distinct source range, on the
	// boundary, in the order of their old offsets.
	slices.SortStableFunc(patches, func(a, b patch) int {
		return cmp.Or(cmp.Compare(a.data.Offset(), b.data.Offset()), cmp.Compare(a.data.Len(), b.data.Len()))
	})
	l := &format.Layout{}
	end := int64(len(head))
	type key struct{ off, n int64 }
	placed := map[key]int64{}
	var copied int64
	for _, p := range patches {
		k := key{p.data.Offset(), p.data.Len()}
		at, ok := placed[k]
		if !ok {
			// Distinct ranges that overlap are copied apart: bound the
			// copies by the file, so that many overlapping buffers cannot
			// make the copy out of proportion to it.
			if copied += k.n; copied > 2*size {
				return nil, format.Errorf(formatName, "Model.buffers", -1, "buffers overlap so much that their copies would take more than %d bytes (twice the file)", 2*size)
			}
			at = alignUp(end, align)
			if at < end || at > math.MaxInt64-k.n {
				return nil, format.Errorf(formatName, "", -1, "the relaid file would exceed 2^63 bytes")
			}
			l.Pieces = append(l.Pieces, format.Piece{Offset: at, Data: p.data})
			placed[k] = at
			end = at + k.n
		}
		le.PutUint64(head[p.at:], uint64(at))
	}
	if len(m.AssociatedFiles()) > 0 {
		pieces, err := m.zipPieces(alignUp(end, 16))
		if err != nil {
			return nil, err
		}
		l.Pieces = append(l.Pieces, pieces...)
		last := pieces[len(pieces)-1]
		end = last.Offset + last.Data.Len()
	}
	// What the schema knows of the new head must verify as the old one did.
	w := fbverify.NewWalk(head, fbverify.Options{Format: formatName, MaxObjects: len(head)/6 + 1024})
	if err := w.Verify("Model", tflitefb.VerifyModel); err != nil {
		return nil, format.Errorf(formatName, "", -1, "the relaid FlatBuffer does not verify: %v", err)
	}
	l.Head, l.Size = head, end
	return l, nil
}

var alignUp = format.AlignUp

// zipPieces lays out the zip archive of associated files appended after a
// model with TFLITE_METADATA at offset at of the new file: its local
// headers and data as they are, then its central directory and end
// record, with every offset rewritten to count from the new file's start.
func (m *Model) zipPieces(at int64) ([]format.Piece, error) {
	size := m.mf.Len()
	// The end of central directory record: 22 bytes and a comment of at
	// most 65535.
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := m.mf.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", size-tail, "reading the zip archive's end: %v", err)
	}
	eocd := int64(-1)
	for i := len(buf) - 22; i >= 0; i-- {
		if le.Uint32(buf[i:]) == 0x06054b50 {
			eocd = int64(i)
			break
		}
	}
	if eocd < 0 {
		return nil, format.Errorf(formatName, "", -1, "associated files listed but no zip end record")
	}
	end := buf[eocd:]
	cdSize, cdOff := int64(le.Uint32(end[12:])), int64(le.Uint32(end[16:]))
	entries := int64(le.Uint16(end[10:]))
	endAt := size - tail + eocd
	if cdSize == 0xFFFFFFFF || cdOff == 0xFFFFFFFF || entries == 0xFFFF {
		return nil, format.Errorf(formatName, "", endAt, "zip64 archives of associated files are not relaid")
	}
	if le.Uint16(end[4:]) != 0 || le.Uint16(end[6:]) != 0 || int64(le.Uint16(end[8:])) != entries {
		return nil, format.Errorf(formatName, "", endAt, "multi-disk zip archives of associated files are not relaid")
	}
	// base: where the archive's offset 0 is (0 when its offsets count from
	// the file's start, as TFLite Support writes them).
	cdAt := endAt - cdSize
	base := cdAt - cdOff
	if base < 0 || cdSize > endAt {
		return nil, format.Errorf(formatName, "", endAt, "zip central directory [%d, +%d) does not end at the end record", cdOff, cdSize)
	}
	cd := make([]byte, cdSize, cdSize+int64(len(end)))
	if _, err := m.mf.ReadAt(cd, cdAt); err != nil {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", cdAt, "reading the zip central directory: %v", err)
	}
	// The first local header: where the archive starts.
	first := cdAt
	for p, k := int64(0), int64(0); k < entries; k++ {
		if p+46 > cdSize || le.Uint32(cd[p:]) != 0x02014b50 {
			return nil, format.Errorf(formatName, "", cdAt+p, "bad zip central directory entry %d", k)
		}
		off := int64(le.Uint32(cd[p+42:]))
		if off == 0xFFFFFFFF {
			return nil, format.Errorf(formatName, "", cdAt+p, "zip64 archives of associated files are not relaid")
		}
		if base+off >= cdAt {
			return nil, format.Errorf(formatName, "", cdAt+p, "zip entry %d at %d, past the central directory", k, base+off)
		}
		first = min(first, base+off)
		p += 46 + int64(le.Uint16(cd[p+28:])) + int64(le.Uint16(cd[p+30:])) + int64(le.Uint16(cd[p+32:]))
	}
	// Offsets in the new file: the archive's bytes from first move to at.
	shift := at - first
	newCD := at + cdAt - first
	if newCD > math.MaxUint32-cdSize {
		return nil, format.Errorf(formatName, "", cdAt, "the relaid zip archive would need zip64 offsets")
	}
	for p, k := int64(0), int64(0); k < entries; k++ {
		le.PutUint32(cd[p+42:], uint32(base+int64(le.Uint32(cd[p+42:]))+shift))
		p += 46 + int64(le.Uint16(cd[p+28:])) + int64(le.Uint16(cd[p+30:])) + int64(le.Uint16(cd[p+32:]))
	}
	cd = append(cd, end...)
	le.PutUint32(cd[cdSize+16:], uint32(newCD))
	local, err := segment.New(m.mf, first, cdAt-first)
	if err != nil {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", first, "%v", err)
	}
	tailSeg, err := segment.New(mmapfile.NewBytes(cd), 0, int64(len(cd)))
	if err != nil {
		return nil, err
	}
	return []format.Piece{{Offset: at, Data: local}, {Offset: newCD, Data: tailSeg}}, nil
}

// patch is a field of the new FlatBuffer to set to the new offset of
// data.
type patch struct {
	mark fbcopy.Mark
	at   int64 // the field's position in the new FlatBuffer
	data segment.Segment
}

// copyTables copies the model's FlatBuffer for Relayout (the model
// pinned), with the moved
// buffers' and the large custom options' offsets left to patch.
func (m *Model) copyTables() (head []byte, patches []patch, err error) {
	defer m.unpin()
	if !m.pin() {
		return nil, nil, format.ErrClosed
	}
	size := m.mf.Len()
	r := m.fb
	if m.sparse { // fbcopy copies the bytes of vectors the walk left unread
		v, err := m.mf.View(0, int64(len(r)))
		if err != nil {
			return nil, nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "viewing the FlatBuffer: %v", err)
		}
		r = v
	}
	var root tflitefb.Model
	root.Init(r, flatbuffers.GetUOffsetT(r))

	// The Buffer tables that move, by position, with their bytes.
	tensorBuf := make([]bool, len(m.buffers))
	for _, t := range m.tensors {
		tensorBuf[t.Buffer] = true
	}
	moved := map[int64]segment.Segment{}
	var buf tflitefb.Buffer
	for i, b := range m.buffers {
		if b.Kind == BufferOffset || b.Kind == BufferInline && tensorBuf[i] {
			root.Buffers(&buf, i)
			moved[pos(&buf)] = b.Data
		}
	}
	// The operators with large custom options, by position.
	customs := map[int64]segment.Segment{}
	var sg tflitefb.SubGraph
	var op tflitefb.Operator
	for i := range root.SubgraphsLength() {
		root.Subgraphs(&sg, i)
		for j := range sg.OperatorsLength() {
			sg.Operators(&op, j)
			off, n := op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
			if off <= 1 || n == 0 {
				continue
			}
			tab := op.Table()
			at := pos(&op) + int64(tab.Offset(vtOperatorLargeCustomOptionsOffset))
			if err := fileRange("large_custom_options_offset", at, off, n, size); err != nil {
				return nil, nil, err
			}
			d, err := segment.New(m.mf, int64(off), int64(n))
			if err != nil {
				return nil, nil, format.Wrapf(format.ErrTruncated, formatName, "large_custom_options_offset", at, "%v", err)
			}
			customs[pos(&op)] = d
		}
	}

	// The new FlatBuffer: the moved buffers' offsets and the custom
	// options' are set once the FlatBuffer's size is known.
	c := fbcopy.New(r, fbverify.Options{Format: formatName})
	c.Edit = func(t *fbcopy.Table) error {
		switch t.Desc {
		case tflitefb.BufferDesc:
			if d, ok := moved[t.Pos]; ok {
				t.Drop(0)
				t.SetUint(1, 0)
				patches = append(patches, patch{mark: t.Track(1), data: d})
				t.SetUint(2, uint64(d.Len()))
			}
		case tflitefb.OperatorDesc:
			if d, ok := customs[t.Pos]; ok {
				t.SetUint(9, 0)
				patches = append(patches, patch{mark: t.Track(9), data: d})
			}
		}
		return nil
	}
	head, err = c.Copy(tflitefb.ModelDesc, Identifier)
	if err != nil {
		return nil, nil, format.Errorf(formatName, "", -1, "copying the FlatBuffer: %v", err)
	}
	for i := range patches {
		patches[i].at = c.Position(patches[i].mark)
	}
	return head, patches, nil
}
