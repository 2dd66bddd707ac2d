package tflite

import (
	"cmp"
	"io"
	"math"
	"slices"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// Relayout lays the model out anew with the bytes of every buffer a tensor
// reads on an align-byte boundary (format.Relayouter): every such buffer
// becomes an offset/size buffer (the large-model layout) placed after the
// FlatBuffer. Buffers only metadata names stay where they are, inline, as
// the converter writes them and metadata readers expect them; offset
// buffers no tensor reads are placed like the others, on the boundary.
//
// The FlatBuffer is patched, not rebuilt, so that the tables and fields
// this package's schema leaves out pass through unchanged: the new head is
// the old FlatBuffer with the Model.buffers entries of inline buffers
// pointing at new offset/size Buffer tables appended after it (the
// inline bytes are zeroed where they were), the offset fields of offset
// buffers and of operators' large custom options rewritten in place. The
// zip archive of associated files TFLite Support appends, if any, follows
// the last buffer, unchanged; its offsets count from the old file's start,
// which readers that locate an archive by its end record (Go's
// archive/zip, Python's zipfile) allow for.
//
// Buffers that share bytes (several entries at one offset) still share
// them. The FlatBuffer is taken to end where the first byte it points to
// outside itself (an offset buffer, large custom options, the zip) starts.
func (m *Model) Relayout(align int64) (*format.Layout, error) {
	if align <= 0 || align&(align-1) != 0 || align > 1<<30 {
		return nil, format.Errorf(formatName, "", -1, "alignment %d is not a power of two in [1, 2^30]", align)
	}
	// The operators, read below, are verified at their first use.
	if err := m.Check(); err != nil {
		return nil, err
	}
	r := m.fb
	root := r.root()
	size := m.mf.Len()

	// External byte ranges: offset buffers, large custom options, the zip.
	fbEnd := size
	for _, b := range m.buffers {
		if b.Kind == BufferOffset {
			fbEnd = min(fbEnd, b.Data.Offset())
		}
	}
	type customOpts struct {
		field int64 // position of large_custom_options_offset
		data  segment.Segment
	}
	var customs []customOpts
	sgs, nsg := r.vector(root, 2)
	for i := range nsg {
		sg := r.elem(sgs, i)
		ops, nops := r.vector(sg, 3)
		for j := range nops {
			op := r.elem(ops, j)
			off, n := r.fieldU64(op, 9), r.fieldU64(op, 10)
			if off <= 1 || n == 0 {
				continue
			}
			at := op + r.slot(op, 9)
			if err := fileRange("large_custom_options_offset", at, off, n, size); err != nil {
				return nil, err
			}
			d, err := segment.New(m.mf, int64(off), int64(n))
			if err != nil {
				return nil, format.Wrapf(format.ErrTruncated, formatName, "large_custom_options_offset", at, "%v", err)
			}
			customs = append(customs, customOpts{at, d})
			fbEnd = min(fbEnd, int64(off))
		}
	}
	zipStart, err := m.zipStart()
	if err != nil {
		return nil, err
	}
	if zipStart >= 0 {
		fbEnd = min(fbEnd, zipStart)
	}
	if fbEnd > int64(len(r)) {
		fbEnd = int64(len(r)) // the verified region holds every table
	}

	inHead := func(field string, pos, n int64) error {
		if pos < 0 || n > fbEnd || pos > fbEnd-n {
			return format.Errorf(formatName, field, pos, "[%d, +%d) lies past %d, where the FlatBuffer's first outside bytes start: not relaid", pos, n, fbEnd)
		}
		return nil
	}
	for _, c := range customs {
		if err := inHead("large_custom_options_offset", c.field, 8); err != nil {
			return nil, err
		}
	}
	tensorBuf := make([]bool, len(m.buffers))
	for _, t := range m.tensors {
		tensorBuf[t.Buffer] = true
	}
	// kept holds the inline bytes that stay (those of buffers no tensor
	// reads), which must not be zeroed where a moved buffer shares them.
	kept := map[int64]bool{}
	for i, b := range m.buffers {
		if b.Kind == BufferInline && !tensorBuf[i] {
			kept[b.Data.Offset()] = true
		}
	}

	// The new head: the old FlatBuffer, then one vtable and a Buffer table
	// per inline buffer table.
	head := make([]byte, fbEnd, fbEnd+64)
	if _, err := m.mf.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the FlatBuffer: %v", err)
	}
	bstart, nbuf := r.vector(root, 4)
	// newTable maps an inline Buffer table's position to its replacement.
	newTable := map[int64]int64{}
	// patches lists where each range's new offset goes.
	type patch struct {
		at   int64 // position of the u64 offset field in head
		data segment.Segment
	}
	var patches []patch
	vtable := int64(-1)
	for i := range nbuf {
		b := m.buffers[i]
		if b.Kind == BufferEmpty || b.Kind == BufferInline && !tensorBuf[i] {
			continue
		}
		e := bstart + 4*i
		t := r.deref(e)
		if b.Kind == BufferOffset {
			if err := inHead("Model.buffers.offset", t+r.slot(t, 1), 8); err != nil {
				return nil, err
			}
			patches = append(patches, patch{t + r.slot(t, 1), b.Data})
			continue
		}
		nt, ok := newTable[t]
		if !ok {
			ds, dn := r.vector(t, 0)
			if err := inHead("Model.buffers", e, 4); err != nil {
				return nil, err
			}
			if err := inHead("Model.buffers.data", ds, dn); err != nil {
				return nil, err
			}
			if !kept[ds] {
				clear(head[ds : ds+dn])
			}
			if vtable < 0 {
				// vtable: size 10, table size 24, data absent, offset at
				// 8, size at 16.
				vtable = alignUp(int64(len(head)), 8)
				head = append(head, make([]byte, vtable-int64(len(head)))...)
				head = le.AppendUint16(head, 10)
				head = le.AppendUint16(head, 24)
				head = le.AppendUint16(head, 0)
				head = le.AppendUint16(head, 8)
				head = le.AppendUint16(head, 16)
			}
			nt = alignUp(int64(len(head)), 8)
			head = append(head, make([]byte, nt-int64(len(head)))...)
			head = le.AppendUint32(head, uint32(nt-vtable)) // soffset to the vtable
			head = le.AppendUint32(head, 0)
			head = le.AppendUint64(head, 0)                    // offset, set below
			head = le.AppendUint64(head, uint64(b.Data.Len())) // size
			newTable[t] = nt
			patches = append(patches, patch{nt + 8, b.Data})
		}
		le.PutUint32(head[e:], uint32(nt-e))
	}
	for _, c := range customs {
		patches = append(patches, patch{c.field, c.data})
	}
	if int64(len(head)) > fbverify.MaxSize {
		return nil, format.Errorf(formatName, "", -1, "the relaid FlatBuffer would take %d bytes (want at most %d)", len(head), fbverify.MaxSize)
	}

	// Place the bytes: one copy per distinct source range, buffers on the
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
	if zipStart >= 0 {
		z, err := segment.New(m.mf, zipStart, size-zipStart)
		if err != nil {
			return nil, format.Wrapf(format.ErrTruncated, formatName, "", zipStart, "%v", err)
		}
		at := alignUp(end, 16)
		l.Pieces = append(l.Pieces, format.Piece{Offset: at, Data: z})
		end = at + z.Len()
	}
	// What the schema knows of the new head must verify as the old one did.
	w := fbverify.NewWalk(head, fbverify.Options{Format: formatName, MaxObjects: len(head)/6 + 1024})
	if err := w.Verify("Model", tflitefb.VerifyModel); err != nil {
		return nil, format.Errorf(formatName, "", -1, "the relaid FlatBuffer does not verify (tables past %d, where the first outside byte starts?): %v", fbEnd, err)
	}
	l.Head, l.Size = head, end
	return l, nil
}

var alignUp = format.AlignUp

// zipStart returns the offset of the first local header of the zip archive
// appended after a model with TFLITE_METADATA, -1 when there is none.
func (m *Model) zipStart() (int64, error) {
	if len(m.AssociatedFiles()) == 0 {
		return -1, nil
	}
	size := m.mf.Len()
	// The end of central directory record: 22 bytes and a comment of at
	// most 65535.
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := m.mf.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return -1, format.Wrapf(format.ErrTruncated, formatName, "", size-tail, "reading the zip archive's end: %v", err)
	}
	eocd := int64(-1)
	for i := len(buf) - 22; i >= 0; i-- {
		if le.Uint32(buf[i:]) == 0x06054b50 {
			eocd = int64(i)
			break
		}
	}
	if eocd < 0 {
		return -1, format.Errorf(formatName, "", -1, "associated files listed but no zip end record")
	}
	cdSize, cdOff := int64(le.Uint32(buf[eocd+12:])), int64(le.Uint32(buf[eocd+16:]))
	entries := int64(le.Uint16(buf[eocd+10:]))
	at := size - tail + eocd
	if cdSize == 0xFFFFFFFF || cdOff == 0xFFFFFFFF || entries == 0xFFFF {
		return -1, format.Errorf(formatName, "", at, "zip64 archives of associated files are not relaid")
	}
	// base: where the archive's offset 0 is (0 when its offsets count from
	// the file's start, as TFLite Support writes them).
	base := at - cdSize - cdOff
	if base < 0 || cdSize > at {
		return -1, format.Errorf(formatName, "", at, "zip central directory [%d, +%d) does not end at the end record", cdOff, cdSize)
	}
	cd := make([]byte, cdSize)
	if _, err := m.mf.ReadAt(cd, at-cdSize); err != nil {
		return -1, format.Wrapf(format.ErrTruncated, formatName, "", at-cdSize, "reading the zip central directory: %v", err)
	}
	first := at - cdSize
	for p, k := int64(0), int64(0); k < entries; k++ {
		if p+46 > cdSize || le.Uint32(cd[p:]) != 0x02014b50 {
			return -1, format.Errorf(formatName, "", at-cdSize+p, "bad zip central directory entry %d", k)
		}
		off := int64(le.Uint32(cd[p+42:]))
		if off == 0xFFFFFFFF {
			return -1, format.Errorf(formatName, "", at-cdSize+p, "zip64 archives of associated files are not relaid")
		}
		first = min(first, base+off)
		p += 46 + int64(le.Uint16(cd[p+28:])) + int64(le.Uint16(cd[p+30:])) + int64(le.Uint16(cd[p+32:]))
	}
	return first, nil
}
