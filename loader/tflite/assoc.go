package tflite

import (
	"archive/zip"
	"errors"
	"io"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// MetadataTFLiteSupport is the metadata name of TFLite Support's model
// metadata (an "M001" FlatBuffer); a model that has it may carry a zip
// archive of associated files after its last byte.
const MetadataTFLiteSupport = "TFLITE_METADATA"

// assocFiles lists the zip archive appended after a model with
// TFLITE_METADATA. An archive that does not parse is not listed: the
// model does not depend on it.
func (m *Model) assocFiles() {
	has := false
	for _, md := range m.Metadata() {
		has = has || md.Name == MetadataTFLiteSupport
	}
	if !has {
		return
	}
	size := m.mf.Len()
	zr, err := zip.NewReader(io.NewSectionReader(m.mf, 0, size), size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return
	}
	for _, f := range zr.File {
		off, err := f.DataOffset()
		n := f.CompressedSize64
		if err != nil || f.Mode().IsDir() || fileRange("", 0, uint64(off), n, size) != nil {
			continue
		}
		data, err := segment.New(m.mf, off, int64(n))
		if err != nil {
			continue
		}
		a := AssociatedFile{Name: f.Name, Method: f.Method, Size: int64(min(f.UncompressedSize64, 1<<62)), Data: data}
		m.assoc = append(m.assoc, a)
		if f.Method == zip.Store {
			m.named = append(m.named, format.NamedData{Key: f.Name, Segment: -1, Data: data})
		}
	}
}
