package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/edgeload/edgeload/loader/format"
)

// Relayout lays the file out with general.alignment = align and every
// tensor on that boundary, contiguous in tensor order, each padded to the
// boundary (the layout ggml's own reader requires); a file without tensors
// ends with its tensor infos. Every metadata pair keeps its key, type and bytes
// except general.alignment, which takes the new value (and is appended
// when the file has none and align is not 32); tensor infos keep
// everything but their offsets. align must be a power of two from 8 to
// 2^31.
func (f *File) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	align := o.Align
	if align < 8 || align > math.MaxUint32 || align&(align-1) != 0 {
		return nil, fmt.Errorf("gguf: alignment %d: want a power of two from 8 to 2^31", align)
	}
	_, hasAlign := f.Metadata("general.alignment")
	addAlign := !hasAlign && align != DefaultAlignment
	kc := uint64(len(f.kvs))
	if addAlign {
		kc++
	}
	h := make([]byte, 0, f.headEnd+64)
	h = append(h, Magic...)
	h = binary.LittleEndian.AppendUint32(h, f.version)
	h = binary.LittleEndian.AppendUint64(h, uint64(len(f.tensors)))
	h = binary.LittleEndian.AppendUint64(h, kc)
	for _, kv := range f.kvs {
		if kv.Key == "general.alignment" {
			h = append(h, f.head[kv.Offset:kv.Value.off]...) // key and type
			h = binary.LittleEndian.AppendUint32(h, uint32(align))
			continue
		}
		h = append(h, f.head[kv.Offset:kv.Value.off+int64(len(kv.Value.b))]...)
	}
	if addAlign {
		const key = "general.alignment"
		h = binary.LittleEndian.AppendUint64(h, uint64(len(key)))
		h = append(h, key...)
		h = binary.LittleEndian.AppendUint32(h, uint32(TypeUint32))
		h = binary.LittleEndian.AppendUint32(h, uint32(align))
	}
	rel := make([]int64, len(f.tensors))
	var pos int64
	for i := range f.tensors {
		t := &f.tensors[i]
		rel[i] = pos
		pos = format.AlignUp(pos+t.NBytes, align)
		end := t.InfoOffset + 8 + int64(len(t.Name)) + 4 + 8*int64(t.NDims) + 4
		h = append(h, f.head[t.InfoOffset:end]...)
		h = binary.LittleEndian.AppendUint64(h, uint64(rel[i]))
	}
	// The data section starts on the boundary; a file without tensors has
	// none, and no padding.
	data := int64(len(h))
	if len(f.tensors) > 0 {
		data = format.AlignUp(data, align)
		h = append(h, make([]byte, data-int64(len(h)))...)
	}
	pieces := make([]format.Piece, len(rel))
	for i := range rel {
		pieces[i] = format.Piece{Offset: data + rel[i], Data: f.tensors[i].Data}
	}
	return &format.Layout{Head: h, Pieces: pieces, Size: data + pos}, nil
}

// copyChunk is the buffer WriteAligned copies tensor bytes through.
const copyChunk = 1 << 20

// WriteAligned writes the file laid out by Relayout with align to w and
// returns the bytes written. Tensor bytes are read through the mapping's
// ReadAt (pread for a file) a MiB at a time, so the heap holds the header
// and one buffer whatever the file's size.
func (f *File) WriteAligned(w io.Writer, align int64) (int64, error) {
	l, err := f.Relayout(format.RelayoutOptions{Align: align})
	if err != nil {
		return 0, err
	}
	var n int64
	write := func(b []byte) error {
		k, err := w.Write(b)
		n += int64(k)
		return err
	}
	if err := write(l.Head); err != nil {
		return n, err
	}
	// The buffer holds a chunk of the largest tensor or padding.
	chunk := align
	for i := range f.tensors {
		chunk = max(chunk, f.tensors[i].NBytes)
	}
	buf := make([]byte, min(chunk, copyChunk))
	pad := func(to int64) error {
		clear(buf[:min(max(to-n, 0), int64(len(buf)))])
		for n < to {
			if err := write(buf[:min(to-n, int64(len(buf)))]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range f.tensors {
		t := &f.tensors[i]
		if err := pad(l.Pieces[i].Offset); err != nil {
			return n, err
		}
		for off := int64(0); off < t.NBytes; {
			c := buf[:min(t.NBytes-off, int64(len(buf)))]
			if _, err := f.mf.ReadAt(c, t.Offset+off); err != nil {
				return n, fmt.Errorf("gguf: reading tensor %q: %w", t.Name, err)
			}
			if err := write(c); err != nil {
				return n, err
			}
			off += int64(len(c))
		}
	}
	return n, pad(l.Size)
}
