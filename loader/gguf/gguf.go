// Package gguf reads llama.cpp's GGUF files (versions 2 and 3, little
// endian): the metadata key-value pairs, the tensor infos and the tensors'
// bytes, as zero-copy views of a mapped file.
//
// NewFile checks every count, length, offset and size of the header region
// against the file and touches no tensor page; metadata arrays are decoded
// only when read. Tensor.Shape is outermost first (numpy order, the
// reverse of GGUF's ne); a quantized tensor's Data is its raw blocks.
//
// # Use order
//
// GGUF has no graph; UseOrder("") gives the order in which llama.cpp's
// graphs use the tensors, by name:
//
//  1. the input tensors: token_embd, token_types, position_embd,
//     token_embd_norm, rope_freqs, rope_factors_long, rope_factors_short;
//  2. the blocks blk.N.* for N ascending, and inside a block its tensors by
//     the base name after "blk.N.", in the order a layer computes with
//     them (llama.cpp computes V before K): attn_norm, attn_norm_2,
//     attn_qkv, attn_q, attn_q_norm, attn_v, attn_k, attn_k_norm,
//     attn_output, attn_out_norm, attn_post_norm,
//     ffn_norm, ffn_gate_inp, ffn_gate, ffn_gate_exps, ffn_up,
//     ffn_up_exps, ffn_down, ffn_down_exps, ffn_gate_inp_shexp,
//     ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp, ffn_post_norm,
//     layer_output_norm; base names it does not know follow, in file order;
//  3. output_norm, then output;
//  4. every other tensor, in file order.
//
// Among tensors of one base name, ".weight" comes before ".bias", and any
// other suffix follows in file order.
package gguf

import (
	"sync"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// formatName is the Format of every *format.FormatError this package returns.
const formatName = "gguf"

// Magic is the first four bytes of a GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the alignment of a file without general.alignment.
const DefaultAlignment = 32

// MaxArrayDepth is how deeply metadata arrays may nest (an array of
// arrays is depth 2).
const MaxArrayDepth = 16

var (
	_ format.Model    = (*File)(nil)
	_ format.Reporter = (*File)(nil)
)

// Format registers GGUF with package format at init.
var Format = format.Registration{
	Name:  formatName,
	Files: "llama.cpp and Ollama models (.gguf v2, v3)",
	Order: "llama.cpp's layer order: token_embd, blk.N.* for N ascending, output_norm, output",
	Magic: `"GGUF" at offset 0`,
	Sniff: Sniff,
	Open: func(mf *mmapfile.File, _ *format.Config) (format.Model, error) {
		f, err := NewFile(mf)
		if err != nil {
			return nil, err
		}
		return f, nil
	},
}

func init() { format.Register(Format) }

// Sniff reports whether head, a file's first bytes, begins like a GGUF
// file: the magic "GGUF", or "FUGG" (its byte-swapped form, which some
// big-endian writers use and NewFile refuses with an error saying so).
func Sniff(head []byte) bool {
	return len(head) >= 4 && (string(head[:4]) == Magic || string(head[:4]) == "FUGG")
}

// TensorInfo is a tensor of a GGUF file: the format-neutral description
// (Shape outermost first, absolute Offset, NBytes, Data) and the tensor
// info as the file gives it.
type TensorInfo struct {
	format.Tensor
	// Type is the ggml type id.
	Type Type
	// NDims is the number of dimensions (0 to 4).
	NDims int
	// NE is the shape in GGUF's order, innermost first; the entries past
	// NDims are 1.
	NE [4]int64
	// RelOffset is the offset the file gives, relative to the data section.
	RelOffset int64
	// InfoOffset is the absolute file offset of the tensor info.
	InfoOffset int64
}

// Block returns how the tensor's type packs elements: elems elements in
// bytes bytes (1 and the element size for f32, f16, ...; 32 and 18 for
// q4_0). Data holds NumBlocks such blocks.
func (t *TensorInfo) Block() (elems, bytes int) { return t.DType.Block() }

// NumBlocks returns the number of blocks of the tensor's bytes.
func (t *TensorInfo) NumBlocks() int64 {
	_, b := t.DType.Block()
	return t.NBytes / int64(b)
}

// File is an open GGUF file. Its methods are safe for concurrent use;
// views stay valid until the mapping is closed.
type File struct {
	mf      *mmapfile.File
	closed  atomic.Bool
	size    int64
	version uint32
	align   int64
	// headEnd is the end of the tensor infos; dataStart the start of the
	// data section (headEnd aligned up, or the file size for a file
	// without tensors that ends first).
	headEnd, dataStart int64
	head               []byte // the file's bytes [0, headEnd)

	kvs      []KV
	keyIndex nameindex.Index
	tensors  []TensorInfo
	index    nameindex.Index
	segs     []segment.Segment

	orderOnce sync.Once
	order     []int
}

// Version returns the GGUF version (2 or 3).
func (f *File) Version() uint32 { return f.version }

// Alignment returns the file's alignment: general.alignment, or 32.
func (f *File) Alignment() int64 { return f.align }

// DataOffset returns the absolute offset of the data section, which tensor
// offsets are relative to.
func (f *File) DataOffset() int64 { return f.dataStart }

// HeaderEnd returns the absolute offset where the tensor infos end (the
// data section starts at the next multiple of the alignment).
func (f *File) HeaderEnd() int64 { return f.headEnd }

// Size returns the file's size in bytes.
func (f *File) Size() int64 { return f.size }

// MappedFile returns the mapping the views point into.
func (f *File) MappedFile() *mmapfile.File { return f.mf }

// Tensors returns every tensor in file order. The slice is shared: do not
// modify it.
func (f *File) Tensors() []TensorInfo { return f.tensors[:len(f.tensors):len(f.tensors)] }

// TensorInfo returns tensor i, 0 <= i < NumTensors.
func (f *File) TensorInfo(i int) *TensorInfo { return &f.tensors[i] }

// NumTensors returns the number of tensors.
func (f *File) NumTensors() int { return len(f.tensors) }

// TensorAt returns tensor i, 0 <= i < NumTensors.
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i].Tensor }

// TensorData returns the bytes of tensor i.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns the index of the tensor named name. It allocates nothing.
func (f *File) Lookup(name string) (int, bool) { return f.index.Lookup(name) }

// Tensor returns the tensor named name. It allocates nothing.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.index.Lookup(name)
	if !ok {
		return nil, false
	}
	return &f.tensors[i], true
}

// Segments returns the file's one segment, the data section
// [DataOffset, Size).
func (f *File) Segments() []segment.Segment { return f.segs[:1:1] }

// NamedData returns nil: a GGUF file has none.
func (f *File) NamedData() []format.NamedData { return nil }

// Groups returns nil: a GGUF file has one use order.
func (f *File) Groups() []string { return nil }

// UseOrder returns the tensors' indices in use order (see the package
// documentation) for group "", the only one. The slice is computed once
// and shared: do not modify it.
func (f *File) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, format.Wrapf(format.ErrNotFound, formatName, "", -1, "no group %q: a GGUF file has one use order, group \"\"", group)
	}
	f.orderOnce.Do(func() { f.order = useOrder(f.tensors) })
	return f.order, nil
}

// Check returns nil: NewFile made every check that needs no tensor bytes.
func (f *File) Check() error {
	if f.closed.Load() {
		return format.ErrClosed
	}
	return nil
}

// Close marks the File closed; the mapping is its owner's to close.
func (f *File) Close() error {
	f.closed.Store(true)
	return nil
}
