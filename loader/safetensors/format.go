package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// Format registers safetensors with package format at init. It sniffs and
// opens both a safetensors file and a sharded checkpoint's index, with the
// shards beside it (Config.Name is the index's path).
var Format = format.Registration{
	Name:    formatName,
	Files:   "Hugging Face and MLX weights (.safetensors, a sharded checkpoint's model.safetensors.index.json)",
	Order:   "file order",
	Magic:   "a little-endian header length, then a JSON header; or a model.safetensors.index.json",
	Sniff:   Sniff,
	Open:    open,
	Convert: Convert,
}

func init() { format.Register(Format) }

// Sniff reports whether head, a file's first bytes, is the start of a
// safetensors file (a header length of at most MaxHeaderSize followed by
// optional JSON whitespace and '{') or of a sharded checkpoint's index (a
// JSON object whose first key is "metadata" or "weight_map").
func Sniff(head []byte) bool { return sniffFile(head) || sniffIndex(head) }

// sniffFile reports whether head starts a safetensors file.
func sniffFile(head []byte) bool {
	if len(head) < 9 {
		return false
	}
	n := binary.LittleEndian.Uint64(head)
	if n < 2 || n > MaxHeaderSize {
		return false
	}
	end := 8 + min(uint64(len(head)-8), n)
	for _, c := range head[8:end] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// sniffIndex reports whether head starts a sharded checkpoint's index.
func sniffIndex(head []byte) bool {
	s := scanner{b: head}
	s.ws()
	if s.peek() != '{' {
		return false
	}
	s.pos++
	s.ws()
	return s.literal(`"metadata"`) || s.literal(`"weight_map"`)
}

// open is Format.Open.
func open(mf *mmapfile.File, c *format.Config) (format.Model, error) {
	head := c.Head
	if len(head) < 9 {
		var b [16]byte
		n, err := mf.ReadAt(b[:], 0)
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("safetensors: reading the header: %w", err)
		}
		head = b[:n]
	}
	if sniffIndex(head) {
		return openIndex(mf, c.Name, c.Mmap)
	}
	return newFile(mf, c.Head)
}

// ReportFields returns the JSON report's "header_size" and "metadata" (an
// object, empty when the header has none).
func (f *File) ReportFields() []format.Field {
	return []format.Field{
		{Key: "header_size", Value: f.HeaderSize()},
		{Key: "metadata", Value: metaMap(f.meta)},
	}
}

func metaMap(meta []Meta) map[string]string {
	m := make(map[string]string, len(meta))
	for _, kv := range meta {
		m[kv.Key] = kv.Value
	}
	return m
}

// ReportText writes the header size, where the data buffer starts and
// how its tensors are aligned, and the metadata.
func (f *File) ReportText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "header: %d bytes; data buffer at %d (%d bytes), %s\n",
		f.hsize, f.DataOffset(), f.segs[0].Len(), alignmentText(f.tensors))
	if f.meta != nil {
		fmt.Fprintf(&b, "metadata: %d entries\n", len(f.meta))
		for _, kv := range f.meta {
			fmt.Fprintf(&b, "  %s = %s\n", strconv.Quote(kv.Key), strconv.Quote(kv.Value))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// alignmentText says how many tensors do not start at a multiple of their
// element size in the file.
func alignmentText(ts []format.Tensor) string {
	bad := 0
	for i := range ts {
		if sz := int64(ts[i].DType.Size()); sz > 1 && ts[i].Offset%sz != 0 {
			bad++
		}
	}
	if bad == 0 {
		return "every tensor aligned to its element size"
	}
	return strconv.Itoa(bad) + " of " + strconv.Itoa(len(ts)) + " tensors not aligned to their element size (typed views copy them)"
}

var _ format.Reporter = (*File)(nil)
