package ptd

import (
	"io"

	"github.com/edgeload/edgeload/loader/format"
)

// The optional interfaces of package format a .ptd file implements for
// the command's report.
var (
	_ format.Reporter      = (*File)(nil)
	_ format.SegmentKinder = (*File)(nil)
)

// headerFields returns the header as the report shows it, in order; a
// legacy file adds its tensor alignment.
func (f *File) headerFields() format.Fields {
	h := f.Header()
	fs := format.Fields{
		{Key: "identifier", Value: "FT01"},
		{Key: "header_length", Value: h.Length},
		{Key: "flatbuffer_offset", Value: h.FlatBufferOffset},
		{Key: "flatbuffer_size", Value: h.FlatBufferSize},
		{Key: "segment_base_offset", Value: h.SegmentBaseOffset},
		{Key: "segment_data_size", Value: h.SegmentDataSize},
		{Key: "version", Value: f.Version()},
		{Key: "legacy_layout", Value: f.Legacy()},
	}
	if f.Legacy() {
		fs = append(fs, format.Field{Key: "tensor_alignment", Value: f.TensorAlignment()})
	}
	return fs
}

// ReportFields returns the file's members of the command's JSON report:
// "legacy" (true) for a file in the 2025 layout, and "header".
func (f *File) ReportFields() []format.Field {
	var fs []format.Field
	if f.Legacy() {
		fs = append(fs, format.Field{Key: "legacy", Value: true})
	}
	return append(fs, format.Field{Key: "header", Value: f.headerFields()})
}

// ReportText writes the header under the title "ExecuTorch named data
// (FlatTensor)", which names the legacy 2025 layout when the file uses it.
func (f *File) ReportText(w io.Writer) error {
	title := "ExecuTorch named data (FlatTensor)"
	if f.Legacy() {
		title += ", legacy 2025 layout"
	}
	return f.headerFields().WriteText(w, title)
}

// SegmentKinds says what each segment holds: "named_data" for one a named
// data entry points into; in a legacy file, "tensors" for the others (the
// segment the tensors share).
func (f *File) SegmentKinds() []string {
	kinds := make([]string, len(f.Segments()))
	for _, nd := range f.NamedData() {
		if nd.Segment >= 0 && nd.Segment < len(kinds) {
			kinds[nd.Segment] = "named_data"
		}
	}
	if f.Legacy() {
		for i := range kinds {
			if kinds[i] == "" {
				kinds[i] = "tensors"
			}
		}
	}
	return kinds
}
