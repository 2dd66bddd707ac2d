// Package ziptest writes zip archives for tests of models stored in zip
// and APK entries: each model twice, stored and deflated, after a padding
// entry that puts the stored data at an odd offset; and MediaPipe's task
// bundles.
package ziptest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
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

// TaskBundle returns a zip archive of the entries, all stored, laid out as
// MediaPipe's model asset bundles (.task files) are: before each entry's
// local header, 1 to 4 zero bytes put its data on a 4-byte boundary of the
// file (mediapipe/tasks/python/metadata/metadata_writers/
// model_asset_bundle_utils.py pads this way, the first entry too, so the
// file does not start with a zip signature).
func TaskBundle(entries ...Entry) []byte {
	le := binary.LittleEndian
	var out, dir []byte
	for _, e := range entries {
		pad := 4 - (len(out)+30+len(e.Name))%4 // never 0, as MediaPipe's
		out = append(out, make([]byte, pad)...)
		at := len(out)
		sum := crc32.ChecksumIEEE(e.Data)
		h := make([]byte, 30)
		le.PutUint32(h[0:], 0x04034b50)
		le.PutUint16(h[4:], 20)
		le.PutUint16(h[12:], 0x21) // 1980-01-01
		le.PutUint32(h[14:], sum)
		le.PutUint32(h[18:], uint32(len(e.Data)))
		le.PutUint32(h[22:], uint32(len(e.Data)))
		le.PutUint16(h[26:], uint16(len(e.Name)))
		out = append(append(append(out, h...), e.Name...), e.Data...)
		c := make([]byte, 46)
		le.PutUint32(c[0:], 0x02014b50)
		le.PutUint16(c[4:], 20)
		le.PutUint16(c[6:], 20)
		le.PutUint16(c[14:], 0x21)
		le.PutUint32(c[16:], sum)
		le.PutUint32(c[20:], uint32(len(e.Data)))
		le.PutUint32(c[24:], uint32(len(e.Data)))
		le.PutUint16(c[28:], uint16(len(e.Name)))
		le.PutUint32(c[42:], uint32(at))
		dir = append(append(dir, c...), e.Name...)
	}
	end := make([]byte, 22)
	le.PutUint32(end[0:], 0x06054b50)
	le.PutUint16(end[8:], uint16(len(entries)))
	le.PutUint16(end[10:], uint16(len(entries)))
	le.PutUint32(end[12:], uint32(len(dir)))
	le.PutUint32(end[16:], uint32(len(out)))
	return append(append(out, dir...), end...)
}
