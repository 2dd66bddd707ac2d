// Package ptd reads ExecuTorch named-data files (.ptd, the "FlatTensor"
// format): a FlatBuffer of keys, tensor layouts and segment offsets behind
// an FH01 header, followed by the segments that hold the bytes.
//
// [NewFile] reads only the header and the FlatBuffer; every NamedData,
// Tensor and Segment it hands out is a zero-copy view of the file. It reads
// both layouts that carry the "FT01" identifier: the current one and the
// January-June 2025 one (see [File.Legacy]).
package ptd

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// formatName is the Format of every *format.FormatError this package returns.
const formatName = "ptd"

// MaxVersion is the highest FlatTensor.version this package reads. Every
// known file, current or legacy, has version 0.
const MaxVersion = 0

// Identifier is the FlatBuffer file identifier of a .ptd file.
const Identifier = "FT01"

// HeaderMagic is the magic of the header that follows the identifier.
const HeaderMagic = "FH01"

// MinHeaderLength is the smallest valid header length field: the magic,
// the length itself and four u64 fields.
const MinHeaderLength = 40

// Header is the FH01 header at offset 8 of a .ptd file.
type Header struct {
	// Length is the header length field (>= 40; bytes past the known
	// fields are ignored).
	Length uint32
	// FlatBufferOffset is the padded header length (8 + Length, rounded up
	// to 16 by the writer): NOT where the FlatBuffer starts, which is byte
	// 0. The FlatBuffer is FlatBufferOffset + FlatBufferSize bytes long.
	FlatBufferOffset uint64
	// FlatBufferSize is the FlatBuffer's length past FlatBufferOffset.
	FlatBufferSize uint64
	// SegmentBaseOffset is the file offset segment offsets count from.
	SegmentBaseOffset uint64
	// SegmentDataSize is the length of the segment data region; the file
	// is at least SegmentBaseOffset + SegmentDataSize bytes.
	SegmentDataSize uint64
}

// Put writes h's FH01 header into b, the first bytes of a .ptd that has
// room for it after its 8-byte prefix (executorch.HeaderRoom with
// FlatBufferOffset - 8 bytes).
func (h Header) Put(b []byte) {
	le := binary.LittleEndian
	copy(b[8:], HeaderMagic)
	le.PutUint32(b[12:], h.Length)
	le.PutUint64(b[16:], h.FlatBufferOffset)
	le.PutUint64(b[24:], h.FlatBufferSize)
	le.PutUint64(b[32:], h.SegmentBaseOffset)
	le.PutUint64(b[40:], h.SegmentDataSize)
}

// FlatBufferLen returns the length of the FlatBuffer region [0, n) of the
// file (FlatBufferOffset + FlatBufferSize; Open checked it does not overflow).
func (h Header) FlatBufferLen() int64 { return int64(h.FlatBufferOffset + h.FlatBufferSize) }

// Layout is the tensor layout of a named-data entry.
type Layout struct {
	DType format.DType
	// Sizes are the dimensions (non-negative).
	Sizes []int64
	// DimOrder is the order of the dimensions in memory, outer to inner: a
	// permutation of 0..len(Sizes)-1, or nil when the file gives none.
	DimOrder []uint8
}

// NBytes returns numel × element size (Open checked it fits the entry).
func (l *Layout) NBytes() int64 {
	_, n, _ := format.Numel(l.Sizes, l.DType, 1<<62)
	return n
}

// NamedData is a key-addressed entry of a .ptd file. Data is a zero-copy
// view of its bytes: the whole segment for a named_data entry, the
// tensor's sub-range for a legacy tensor. Layout is nil for an opaque blob.
//
// The Layout and its slices are shared by every copy of the entry: treat
// them as read-only.
type NamedData struct {
	format.NamedData
	Layout *Layout
}

// File is an open .ptd file. Its methods are safe for concurrent use.
// Views (NamedData.Data, Tensor.Data, segments) stay valid until Close.
type File struct {
	mf      *mmapfile.File
	closed  atomic.Bool
	name    string
	size    int64
	hdr     Header
	legacy  bool
	version uint32
	talign  uint32 // legacy tensor_alignment

	segs  []segment.Segment
	named []NamedData // FlatTensor.named_data, in file order
	// plain (named without the layouts) and byName (of tensors, by name)
	// are built by the first NamedData and Lookup calls.
	plainOnce  sync.Once
	plain      []format.NamedData
	byNameOnce sync.Once
	byName     nameindex.Index
	tensors    []format.Tensor
	entries    []NamedData     // every lookup target: named data, then legacy tensors
	index      nameindex.Index // of entries, by key
}

// entryKey is the key of entry i (the name index's names).
func (f *File) entryKey(i int) string { return f.entries[i].Key }

// Option configures NewFile.
type Option func(*config)

type config struct {
	name string
	head []byte // WithHead
}

// WithHead gives NewFile the file's first bytes when the caller has already
// read them (as a format sniffer has), saving a read. They must be the
// file's own first bytes; NewFile copies what it uses.
func WithHead(head []byte) Option { return func(c *config) { c.head = head } }

// WithName sets the name File.Name reports (and errors may mention); by
// default it is the file's, mmapfile.File.Name.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// Entry returns the entry with the given key: a named_data entry or, in a
// legacy file, a tensor by fully-qualified name. It allocates nothing.
func (f *File) Entry(key string) (NamedData, bool) {
	i, ok := f.index.Lookup(key)
	if !ok {
		return NamedData{}, false
	}
	return f.entries[i], true
}

// Entries returns the file's named_data entries in file order, opaque
// blobs and tensors alike, with their layouts; NamedData gives the same
// entries without them. A legacy file's tensors are not in it (they are
// in Tensors, and Entry finds them); its own named_data list is.
// The slice is shared: do not modify it.
func (f *File) Entries() []NamedData { return f.named[:len(f.named):len(f.named)] }

// NamedData returns Entries without their layouts: the "named_data" list
// of `edgeload inspect --json`. The slice is shared: do not modify it.
func (f *File) NamedData() []format.NamedData {
	f.plainOnce.Do(func() {
		f.plain = make([]format.NamedData, len(f.named))
		for i := range f.named {
			f.plain[i] = f.named[i].NamedData
		}
	})
	return f.plain[:len(f.plain):len(f.plain)]
}

// Tensors returns every entry that has a tensor layout, in file order:
// named data with a layout (current layout) or the tensors list (legacy).
// Each has Name = key, Location segment, an absolute Offset, NBytes =
// numel × element size and a zero-copy Data view of exactly those bytes.
// The slice is shared: do not modify it.
func (f *File) Tensors() []format.Tensor { return f.tensors[:len(f.tensors):len(f.tensors)] }

// Segments returns the file's segments; Offset() of each is absolute
// (segment_base_offset + DataSegment.offset). Open checked that each lies
// inside the segment data region [SegmentBaseOffset, +SegmentDataSize),
// which itself lies inside the file. The slice is shared: do not modify it.
func (f *File) Segments() []segment.Segment { return f.segs[:len(f.segs):len(f.segs)] }

// Header returns the FH01 header.
func (f *File) Header() Header { return f.hdr }

// Legacy reports whether the file uses the January-June 2025 layout: its
// root table's vtable has more than the current FlatTensor's three field
// slots, counting up to the last present one (the legacy writer always
// wrote the fourth, segments).
func (f *File) Legacy() bool { return f.legacy }

// Version returns FlatTensor.version.
func (f *File) Version() uint32 { return f.version }

// TensorAlignment returns a legacy file's tensor_alignment (0 for the
// current layout, which has none).
func (f *File) TensorAlignment() uint32 { return f.talign }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return f.size }

// Name returns the file's name (mmapfile.File.Name), or the WithName
// option's value.
func (f *File) Name() string { return f.name }

// MappedFile returns the file the views point into, the one given to
// NewFile (the caller's).
func (f *File) MappedFile() *mmapfile.File { return f.mf }

// Close marks the File closed (Check then reports ErrClosed) and leaves
// its file open: that is the caller's, and views read until it is closed.
// Close is idempotent.
func (f *File) Close() error {
	f.closed.Store(true)
	return nil
}
