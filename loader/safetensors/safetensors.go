// Package safetensors reads safetensors files (an 8-byte header length, a
// JSON header, then one data buffer of tensors) and sharded checkpoints (a
// model.safetensors.index.json naming the shards beside it), and writes
// safetensors files (see [Write]).
//
// [NewFile] parses the header once, applying every rule of the reference
// reader (the Rust crate) and refusing duplicate keys; after that a tensor
// is a dtype, a shape and a zero-copy view of its bytes, listed in file
// order, which is also its use order. Nothing aligns a tensor: the typed
// views of package segment copy one that is not aligned for its type.
package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// formatName is the Format of every *format.FormatError this package returns.
const formatName = "safetensors"

// MaxHeaderSize is the largest header length accepted, as in the
// reference reader.
const MaxHeaderSize = 100_000_000

// metadataKey is the header key of the string-to-string metadata.
const metadataKey = "__metadata__"

// Meta is one entry of the header's __metadata__.
type Meta struct {
	Key, Value string
}

// File is an open safetensors file. Its methods are safe for concurrent
// use; the views it hands out stay valid until the mapping is closed.
type File struct {
	mf      *mmapfile.File
	hsize   uint64 // N, the JSON header's length
	tensors []format.Tensor
	meta    []Meta
	index   nameindex.Index // of tensors, by name
	metaIdx nameindex.Index // of meta, by key
	segs    []segment.Segment

	orderOnce sync.Once
	order     []int
}

// NewFile parses the safetensors file mf. Its views point into mf, which
// the caller closes after the File and its views are no longer used.
func NewFile(mf *mmapfile.File) (*File, error) {
	if mf == nil {
		return nil, os.ErrInvalid
	}
	return newFile(mf, nil)
}

// newFile is NewFile given the file's first bytes when a sniffer read them.
func newFile(mf *mmapfile.File, known []byte) (*File, error) {
	size := mf.Len()
	if size < 8 { // R1
		return nil, format.Wrapf(format.ErrTruncated, formatName, "header_size", 0,
			"file of %d bytes is too short for the 8-byte header length", size)
	}
	head, hbuf, err := region.Head(mf, known)
	if err != nil {
		return nil, fmt.Errorf("safetensors: reading the header: %w", err)
	}
	n := binary.LittleEndian.Uint64(head)
	if n > MaxHeaderSize { // R2
		region.Put(hbuf)
		return nil, format.Errorf(formatName, "header_size", 0,
			"header length %d is more than the %d bytes a header may have", n, MaxHeaderSize)
	}
	if 8+int64(n) > size { // R3
		region.Put(hbuf)
		return nil, format.Wrapf(format.ErrTruncated, formatName, "header_size", 0,
			"header length %d runs past the end of the %d-byte file", n, size)
	}
	js, buf, err := region.Range(mf, head, hbuf, 8, int64(n))
	if err != nil {
		return nil, fmt.Errorf("safetensors: reading the header: %w", err)
	}
	h, err := parseHeader(js, 8)
	region.Put(buf)
	if err != nil {
		return nil, err
	}
	return build(mf, n, h)
}

// build checks the parsed header h against itself and the file and makes
// the File.
func build(mf *mmapfile.File, n uint64, h *header) (*File, error) {
	size := uint64(mf.Len())
	es := h.entries // in data order, by (begin, end), header order breaking ties:
	if !slices.IsSortedFunc(es, cmpEntry) {
		slices.SortStableFunc(es, cmpEntry)
	}
	dataOff := 8 + n
	f := &File{mf: mf, hsize: n, meta: h.meta}
	f.tensors = make([]format.Tensor, len(es))
	for i := range es {
		e := &es[i]
		f.tensors[i] = format.Tensor{
			Name: e.name, NameExplicit: true, DType: e.dt, Shape: e.shape,
			Location: format.LocSegment, NBytes: int64(e.nbytes),
		}
	}
	f.index = nameindex.Make(len(es), func(i int) string { return f.tensors[i].Name })
	for i := range es {
		if k, rep := f.index.Insert(i); rep {
			// name the occurrence the header has second
			pos := max(es[i].pos, es[k].pos)
			return nil, format.Errorf(formatName, "header", pos, "tensor name %q appears twice", es[i].name)
		}
	}
	f.metaIdx = nameindex.Make(len(f.meta), func(i int) string { return f.meta[i].Key })
	for i := range f.meta {
		if _, rep := f.metaIdx.Insert(i); rep {
			return nil, format.Errorf(formatName, "header", 8, "__metadata__ key %q appears twice", f.meta[i].Key)
		}
	}
	total, err := checkTiling(es)
	if err != nil {
		return nil, err
	}
	if end := dataOff + total; end != size { // R14
		if end > size || end < dataOff {
			return nil, format.Wrapf(format.ErrTruncated, formatName, "header", 8,
				"the tensors end at %d (data buffer at %d + %d bytes) but the file has %d bytes", end, dataOff, total, size)
		}
		return nil, format.Errorf(formatName, "data", int64(end),
			"%d bytes after the last tensor, which ends at %d: a safetensors file ends with its last tensor", size-end, end)
	}
	for i := range es {
		t := &f.tensors[i]
		t.Offset = int64(dataOff + es[i].begin)
		if t.Data, err = segment.New(mf, t.Offset, t.NBytes); err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
	}
	seg, err := segment.New(mf, int64(dataOff), int64(total))
	if err != nil {
		return nil, fmt.Errorf("safetensors: data buffer: %w", err)
	}
	f.segs = []segment.Segment{seg}
	return f, nil
}

// HeaderSize returns N, the length of the JSON header (padding included).
func (f *File) HeaderSize() int64 { return int64(f.hsize) }

// DataOffset returns the file offset of the data buffer, 8 + HeaderSize.
func (f *File) DataOffset() int64 { return 8 + int64(f.hsize) }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return f.mf.Len() }

// MappedFile returns the mapping the views point into.
func (f *File) MappedFile() *mmapfile.File { return f.mf }

// Metadata returns the header's __metadata__ entries in header order (nil
// when the header has none or null). The slice is shared: do not modify it.
func (f *File) Metadata() []Meta { return f.meta[:len(f.meta):len(f.meta)] }

// HasMetadata reports whether the header has a __metadata__ object (empty
// or not).
func (f *File) HasMetadata() bool { return f.meta != nil }

// MetadataValue returns the __metadata__ value of key.
func (f *File) MetadataValue(key string) (string, bool) {
	i, ok := f.metaIdx.Lookup(key)
	if !ok {
		return "", false
	}
	return f.meta[i].Value, true
}

// Tensors returns the tensors in file order (by data offset). The slice
// is shared: do not modify it.
func (f *File) Tensors() []format.Tensor { return f.tensors[:len(f.tensors):len(f.tensors)] }

// NumTensors returns the number of tensors.
func (f *File) NumTensors() int { return len(f.tensors) }

// TensorAt returns tensor i in file order.
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i] }

// TensorData returns the bytes of tensor i.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns the index of the tensor named name. It allocates nothing.
func (f *File) Lookup(name string) (int, bool) { return f.index.Lookup(name) }

// Tensor returns the tensor named name.
func (f *File) Tensor(name string) (*format.Tensor, bool) {
	i, ok := f.index.Lookup(name)
	if !ok {
		return nil, false
	}
	return &f.tensors[i], true
}

// Segments returns one segment, the data buffer [DataOffset, Size).
func (f *File) Segments() []segment.Segment { return f.segs[:1:1] }

// NamedData returns nil: a safetensors file holds only tensors.
func (f *File) NamedData() []format.NamedData { return nil }

// Groups returns nil: the file has one use order.
func (f *File) Groups() []string { return nil }

// FileOrder reports true: the format records no order of use, so
// UseOrder is file order.
func (f *File) FileOrder() bool { return true }

// UseOrder returns the tensors' indices in file order, the order of their
// data offsets, for group "" (the only one).
func (f *File) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, noGroup(group)
	}
	f.orderOnce.Do(func() { f.order = identity(len(f.tensors)) })
	return f.order, nil
}

func noGroup(group string) error {
	return format.Wrapf(format.ErrNotFound, formatName, "", -1,
		"no group %q: a safetensors model has one use order, group \"\"", group)
}

func identity(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = i
	}
	return o
}

// Check does nothing: NewFile checked everything.
func (f *File) Check() error { return nil }

// Close does nothing: the mapping is the caller's.
func (f *File) Close() error { return nil }

var _ format.Model = (*File)(nil)
