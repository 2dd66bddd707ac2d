// Package ziptest writes zip archives for tests of models stored in zip
// and APK entries: each model twice, stored and deflated, after a padding
// entry that puts the stored data at an odd offset.
package ziptest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
)

// Entry is one file of an archive.
type Entry struct {
	Name    string
	Data    []byte
	Deflate bool // compress it (else it is stored)
}

// Bytes returns a zip archive holding the entries, in order.
func Bytes(entries ...Entry) ([]byte, error) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	// Huffman-only deflate: a compressed entry all the same, at a fraction
	// of the default level's time on multi-megabyte models.
	w.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.HuffmanOnly)
	})
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Store}
		if e.Deflate {
			h.Method = zip.Deflate
		}
		fw, err := w.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := fw.Write(e.Data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Stored and Deflated are the entry names Model gives the two copies.
const (
	Stored   = "assets/model.bin"
	Deflated = "assets/deflated.bin"
)

// Model returns an archive holding model twice, as the entries Stored and
// Deflated, after a padding entry chosen so that the stored copy's data
// starts at an odd offset; off is that offset.
func Model(model []byte) (archive []byte, off int64, err error) {
	for pad := 1; pad < 4; pad++ {
		archive, err = Bytes(
			Entry{Name: "pad", Data: bytes.Repeat([]byte{'x'}, pad)},
			Entry{Name: Stored, Data: model},
			Entry{Name: Deflated, Data: model, Deflate: true},
		)
		if err != nil {
			return nil, 0, err
		}
		off, err = DataOffset(archive, Stored)
		if err != nil {
			return nil, 0, err
		}
		if off%2 == 1 {
			return archive, off, nil
		}
	}
	return nil, 0, fmt.Errorf("ziptest: no padding gives an odd offset")
}

// DataOffset returns the offset of the named entry's data in archive.
func DataOffset(archive []byte, name string) (int64, error) {
	r, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return 0, err
	}
	for _, f := range r.File {
		if f.Name == name {
			return f.DataOffset()
		}
	}
	return 0, fmt.Errorf("ziptest: no entry %q", name)
}
