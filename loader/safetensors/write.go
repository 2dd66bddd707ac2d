package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path/filepath"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// DefaultAlign is the alignment of the data buffer Write uses when given 0:
// the largest element size, as the Rust writer pads.
const DefaultAlign = 8

// Source is a tensor for Write: its name, element type, shape, and a
// reader of exactly its bytes (numel × element bits / 8, little-endian,
// row-major).
type Source struct {
	Name  string
	DType format.DType
	Shape []int64
	Data  io.Reader
}

// Plan is the layout Write gives a list of sources.
type Plan struct {
	// Header is the file's first bytes: the 8-byte length and the JSON
	// header, padded with spaces to end on the alignment.
	Header []byte
	// Order lists the sources' indices in data order.
	Order []int
	// Offsets and NBytes give each source's absolute file offset and
	// length, by source index.
	Offsets, NBytes []int64
	// Size is the file's size.
	Size int64
}

// NewPlan lays out srcs and metadata as Write writes them (reading no
// source). The data buffer starts at a multiple of align (a power of two;
// 0 means DefaultAlign, and less than 8 is raised to 8) and the tensors are
// ordered by element size, largest first, keeping the order of srcs
// otherwise, so that each starts at a multiple of its element size: the
// format allows no gap between tensors. The sub-byte types come last.
func NewPlan(srcs []Source, metadata []Meta, align int64) (*Plan, error) {
	if align == 0 {
		align = DefaultAlign
	}
	if align < 0 || align&(align-1) != 0 {
		return nil, fmt.Errorf("safetensors: alignment %d is not a power of two", align)
	}
	align = max(align, 8)
	p := &Plan{Order: make([]int, len(srcs)), Offsets: make([]int64, len(srcs)), NBytes: make([]int64, len(srcs))}
	for i := range srcs {
		p.Order[i] = i
		nb, err := sourceBytes(&srcs[i])
		if err != nil {
			return nil, err
		}
		p.NBytes[i] = nb
	}
	slices.SortStableFunc(p.Order, func(a, b int) int {
		return elemAlign(srcs[b].DType) - elemAlign(srcs[a].DType)
	})
	seen := make(map[string]bool, len(srcs)+len(metadata))
	js := []byte{'{'}
	if metadata != nil {
		js = append(js, `"__metadata__":{`...)
		for i, kv := range metadata {
			if seen[kv.Key] {
				return nil, fmt.Errorf("safetensors: metadata key %q given twice", kv.Key)
			}
			seen[kv.Key] = true
			if i > 0 {
				js = append(js, ',')
			}
			var err error
			if js, err = appendString(js, kv.Key); err != nil {
				return nil, err
			}
			js = append(js, ':')
			if js, err = appendString(js, kv.Value); err != nil {
				return nil, err
			}
		}
		js = append(js, '}')
	}
	clear(seen)
	var off uint64
	for k, i := range p.Order {
		s := &srcs[i]
		if s.Name == metadataKey {
			return nil, fmt.Errorf("safetensors: a tensor may not be named %q", metadataKey)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("safetensors: tensor %q given twice", s.Name)
		}
		seen[s.Name] = true
		if k > 0 || metadata != nil {
			js = append(js, ',')
		}
		var err error
		if js, err = appendString(js, s.Name); err != nil {
			return nil, err
		}
		js = append(js, `:{"dtype":"`...)
		js = append(js, Code(s.DType)...)
		js = append(js, `","shape":[`...)
		for d, x := range s.Shape {
			if d > 0 {
				js = append(js, ',')
			}
			js = strconv.AppendInt(js, x, 10)
		}
		end := off + uint64(p.NBytes[i])
		js = append(js, `],"data_offsets":[`...)
		js = strconv.AppendUint(js, off, 10)
		js = append(js, ',')
		js = strconv.AppendUint(js, end, 10)
		js = append(js, "]}"...)
		p.Offsets[i] = int64(off) // made absolute below
		if end < off || end > 1<<62 {
			return nil, errors.New("safetensors: the tensors add up to more than 2^62 bytes")
		}
		off = end
	}
	js = append(js, '}')
	n := int64(len(js))
	n += (align - (8+n)%align) % align
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: the header needs %d bytes, more than the %d a reader accepts", n, MaxHeaderSize)
	}
	p.Header = make([]byte, 8+n)
	binary.LittleEndian.PutUint64(p.Header, uint64(n))
	copy(p.Header[8:], js)
	for i := 8 + len(js); i < len(p.Header); i++ {
		p.Header[i] = ' '
	}
	for i := range p.Offsets {
		p.Offsets[i] += 8 + n
	}
	p.Size = 8 + n + int64(off)
	return p, nil
}

// sourceBytes checks a source's dtype and shape and returns its length.
func sourceBytes(s *Source) (int64, error) {
	b := bitsOf(s.DType)
	if b == 0 {
		return 0, fmt.Errorf("safetensors: tensor %q: dtype %v has no safetensors code", s.Name, s.DType)
	}
	numel := uint64(1)
	for _, d := range s.Shape {
		if d < 0 {
			return 0, fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", s.Name, s.Shape)
		}
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 {
			return 0, fmt.Errorf("safetensors: tensor %q: shape %v overflows", s.Name, s.Shape)
		}
		numel = lo
	}
	hi, nb := bits.Mul64(numel, b)
	if hi != 0 || nb/8 > 1<<62 {
		return 0, fmt.Errorf("safetensors: tensor %q: shape %v of %v is too large", s.Name, s.Shape, s.DType)
	}
	if nb%8 != 0 {
		return 0, fmt.Errorf("safetensors: tensor %q: %d elements of %v are not a whole number of bytes", s.Name, numel, s.DType)
	}
	return int64(nb / 8), nil
}

// elemAlign is the alignment a tensor of d needs: its element size, 1 for
// the sub-byte types.
func elemAlign(d format.DType) int { return max(d.Size(), 1) }

// appendString appends s as a JSON string; s must be valid UTF-8.
func appendString(js []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("safetensors: %q is not valid UTF-8", s)
	}
	const hexd = "0123456789abcdef"
	js = append(js, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			js = append(js, '\\', c)
		case c < 0x20:
			js = append(js, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
		default:
			js = append(js, c)
		}
	}
	return append(js, '"'), nil
}

// Write writes a safetensors file of srcs and metadata (nil: no
// __metadata__) to w as NewPlan lays it out, streaming each source's bytes
// from its reader, and returns the plan.
func Write(w io.Writer, srcs []Source, metadata []Meta, align int64) (*Plan, error) {
	p, err := NewPlan(srcs, metadata, align)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(p.Header); err != nil {
		return nil, err
	}
	for _, i := range p.Order {
		s := &srcs[i]
		n := p.NBytes[i]
		if n == 0 {
			continue
		}
		if s.Data == nil {
			return nil, fmt.Errorf("safetensors: tensor %q: no data reader for %d bytes", s.Name, n)
		}
		got, err := io.CopyN(w, s.Data, n)
		if err == io.EOF {
			return nil, fmt.Errorf("safetensors: tensor %q: the reader gave %d of %d bytes", s.Name, got, n)
		}
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", s.Name, err)
		}
	}
	return p, nil
}

// Relayout lays the file out again with its data buffer on an align
// boundary and each tensor at a multiple of its element size, as Write
// does (format.Relayouter): the metadata and every tensor's bytes are
// unchanged; only the order of the data may change. The format has no gaps
// between tensors, so no tensor but the first can be page-aligned.
func (f *File) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	align := o.Align
	srcs := make([]Source, len(f.tensors))
	for i := range f.tensors {
		t := &f.tensors[i]
		srcs[i] = Source{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	p, err := NewPlan(srcs, f.meta, align)
	if err != nil {
		return nil, err
	}
	return PlanLayout(p, func(i int) segment.Segment { return f.tensors[i].Data }), nil
}

// PlanLayout turns a Plan into a format.Layout whose pieces are the
// sources' bytes, data(i) for source i.
func PlanLayout(p *Plan, data func(i int) segment.Segment) *format.Layout {
	l := &format.Layout{Head: p.Header, Pieces: make([]format.Piece, len(p.Order)), Size: p.Size}
	for k, i := range p.Order {
		l.Pieces[k] = format.Piece{Offset: p.Offsets[i], Data: data(i)}
	}
	return l
}

// Relayout lays the checkpoint out again (format.Relayouter): the index
// byte for byte, and each shard as File.Relayout lays it out, written
// beside the index under the name the index gives it.
func (m *Sharded) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	head := make([]byte, m.index0.Len())
	if _, err := m.index0.ReadAt(head, 0); err != nil && err != io.EOF {
		return nil, fmt.Errorf("safetensors: reading the index: %w", err)
	}
	l := &format.Layout{Head: head, Size: int64(len(head))}
	for _, s := range m.shards {
		if s.Name != filepath.Base(s.Name) {
			return nil, format.Errorf(formatName, "weight_map", -1, "shard %q is not beside the index: a sharded checkpoint is rewritten only with its shards in one directory", s.Name)
		}
		sl, err := s.File.Relayout(o)
		if err != nil {
			return nil, fmt.Errorf("safetensors: shard %s: %w", s.Name, err)
		}
		l.Files = append(l.Files, format.LayoutFile{Name: s.Name, Layout: sl})
	}
	return l, nil
}

// Convert lays out a safetensors file holding the tensors ts
// (format.Registration's Convert), as Write lays it out: the data buffer
// on align; src's metadata when it is a safetensors file.
func Convert(src format.Model, ts []*format.Tensor, align int64) (*format.Layout, error) {
	srcs := make([]Source, len(ts))
	for i, t := range ts {
		if Code(t.DType) == "" {
			return nil, fmt.Errorf("safetensors: tensor %q: safetensors has no dtype for %v", t.Name, t.DType)
		}
		srcs[i] = Source{Name: t.Name, DType: t.DType, Shape: t.Shape}
	}
	var meta []Meta
	if f, ok := src.(*File); ok {
		meta = f.Metadata()
	}
	p, err := NewPlan(srcs, meta, align)
	if err != nil {
		return nil, err
	}
	return PlanLayout(p, func(i int) segment.Segment { return ts[i].Data }), nil
}
