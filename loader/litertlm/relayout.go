package litertlm

import (
	"io"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// SectionAlign is the boundary the LiteRT-LM writer places every section
// on, so that a reader can map a section on 4 KiB and 16 KiB pages.
const SectionAlign = 16 << 10

// Relayout lays the container out anew (format.Relayouter): the header and
// the metadata FlatBuffer as they are but for the sections' begin and end
// offsets, then every section in file order on the larger of o.Align and
// SectionAlign, with nothing after the last. A TFLite section is relaid
// out as package tflite lays a model out (its buffers on o.Align, counted
// from the section's start, which is on the boundary too); the others are
// copied.
func (m *Model) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	if o.Align <= 0 || o.Align&(o.Align-1) != 0 || o.Align > 1<<30 {
		return nil, format.Errorf(formatName, "", -1, "alignment %d is not a power of two in [1, 2^30]", o.Align)
	}
	align := max(o.Align, SectionAlign)
	head := make([]byte, m.headerEnd)
	if _, err := m.mf.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "", 0, "reading the header: %v", err)
	}
	l := &format.Layout{Head: head}
	at := int64(len(head))
	for _, i := range m.segSec {
		s := &m.sections[i]
		at = format.AlignUp(at, align)
		begin := at
		if s.Model == nil {
			l.Pieces = append(l.Pieces, format.Piece{Offset: at, Data: s.Data})
			at += s.Data.Len()
		} else {
			sl, err := s.Model.Relayout(o)
			if err != nil {
				return nil, err
			}
			h, err := segment.New(mmapfile.NewBytes(sl.Head), 0, int64(len(sl.Head)))
			if err != nil {
				return nil, err
			}
			l.Pieces = append(l.Pieces, format.Piece{Offset: at, Data: h})
			for _, p := range sl.Pieces {
				l.Pieces = append(l.Pieces, format.Piece{Offset: at + p.Offset, Data: p.Data})
			}
			at += sl.Size
		}
		le.PutUint64(head[s.begin:], uint64(begin))
		le.PutUint64(head[s.end:], uint64(at))
	}
	l.Size = at
	return l, nil
}
