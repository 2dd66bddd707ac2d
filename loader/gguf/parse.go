package gguf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// The smallest encodings, which bound a count by the bytes left: a
// metadata pair (key length, a one-byte key, value type, a one-byte value)
// and a tensor info (name length, n_dims, type, offset).
const (
	minKV         = 8 + 1 + 4 + 1
	minTensorInfo = 8 + 4 + 4 + 8
	headerSize    = 24
	// minView is the first length of the header view; it doubles as
	// parsing reaches its end.
	minView = 64 << 10
)

// reader reads the header region of a file through a view of its first
// bytes, which grows as parsing reaches its end.
type reader struct {
	mf   *mmapfile.File
	size int64
	b    []byte // the file's bytes [0, len(b))
	off  int64  // the next byte to read
	err  error  // why the view could not grow
}

// left returns the bytes from the cursor to the end of the file.
func (r *reader) left() int64 { return r.size - r.off }

// need makes [off, off+n) readable; it reports false when that range
// passes the end of the file (or the view fails, in r.err).
func (r *reader) need(n uint64) bool {
	if n > uint64(r.left()) {
		return false
	}
	end := r.off + int64(n)
	if end <= int64(len(r.b)) {
		return true
	}
	l := min(max(end, 2*int64(len(r.b)), minView), r.size)
	b, err := r.mf.View(0, l)
	if err != nil {
		r.err = err
		return false
	}
	r.b = b
	return true
}

func (r *reader) u32() (uint32, bool) {
	if !r.need(4) {
		return 0, false
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v, true
}

func (r *reader) u64() (uint64, bool) {
	if !r.need(8) {
		return 0, false
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v, true
}

// bytes reads a string's length and makes its bytes readable, returning
// their offset and length.
func (r *reader) bytes() (off, n int64, ok bool) {
	l, ok := r.u64()
	if !ok || !r.need(l) {
		return 0, 0, false
	}
	off = r.off
	r.off += int64(l)
	return off, int64(l), true
}

// short returns the error for a read of what at offset at that the file
// (or its view) could not give.
func (r *reader) short(field string, at int64, what string) error {
	if r.err != nil {
		sentinel := format.ErrMalformed
		for _, s := range []error{format.ErrClosed, format.ErrTruncated} {
			if errors.Is(r.err, s) {
				sentinel = s
			}
		}
		return format.Wrapf(sentinel, formatName, field, at, "reading %s: %v", what, r.err)
	}
	return format.Wrapf(format.ErrTruncated, formatName, field, at, "%s runs past the end of the %d-byte file", what, r.size)
}

func malformed(field string, off int64, msg string, args ...any) error {
	return format.Errorf(formatName, field, off, msg, args...)
}

// NewFile reads and checks the GGUF file in mf. The File does not own mf:
// the caller closes it after the File and every view from it are no
// longer used.
func NewFile(mf *mmapfile.File) (*File, error) {
	if mf == nil {
		return nil, format.Errorf(formatName, "", -1, "no file")
	}
	f := &File{mf: mf, size: mf.Len()}
	r := &reader{mf: mf, size: f.size}
	if !r.need(8) {
		return nil, r.short("header.magic", 0, "the magic and version")
	}
	switch magic := string(r.b[:4]); magic {
	case Magic:
	case "FUGG":
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "header.magic", 0, "magic \"FUGG\" marks a big-endian GGUF file, which this reader does not support")
	default:
		return nil, format.Wrapf(format.ErrUnknownFormat, formatName, "header.magic", 0, "magic %q, want %q", magic, Magic)
	}
	r.off = 4
	v, _ := r.u32()
	switch {
	case v == 2 || v == 3:
	case v&0xFFFF == 0 && v != 0:
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "header.version", 4, "version reads %#x: a big-endian GGUF file (version %d), which this reader does not support", v, bits.ReverseBytes32(v))
	case v == 1:
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "header.version", 4, "GGUF version 1 is not supported (v1 uses 32-bit counts and lengths; v2 and v3 use 64-bit)")
	default:
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "header.version", 4, "version %d, want 2 or 3", v)
	}
	f.version = v
	tc, ok := r.u64()
	if !ok {
		return nil, r.short("header.tensor_count", 8, "the tensor count")
	}
	kc, ok := r.u64()
	if !ok {
		return nil, r.short("header.metadata_kv_count", 16, "the metadata count")
	}
	// Every pair and info takes some bytes: a count the rest of the file
	// cannot hold is refused before anything is allocated for it.
	rest := uint64(r.left())
	if kc > rest/minKV {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "header.metadata_kv_count", 16, "%d metadata pairs need at least %d bytes each; the file has %d after the header", kc, minKV, rest)
	}
	if tc > rest/minTensorInfo || tc*minTensorInfo > rest-kc*minKV {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "header.tensor_count", 8, "%d tensor infos (at least %d bytes each) and %d metadata pairs do not fit the %d bytes after the header", tc, minTensorInfo, kc, rest)
	}

	if err := f.readKVs(r, int(kc)); err != nil {
		return nil, err
	}
	if err := f.readAlignment(); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(r, int(tc)); err != nil {
		return nil, err
	}
	seg, err := segment.New(mf, f.dataStart, f.size-f.dataStart)
	if err != nil {
		return nil, format.Wrapf(format.ErrMalformed, formatName, "data", f.dataStart, "data section: %v", err)
	}
	f.segs = []segment.Segment{seg}
	f.head = r.b[:f.headEnd:f.headEnd]
	// The values were read through views that grew; point them all into
	// the last one, which covers the whole header region.
	for i := range f.kvs {
		v := &f.kvs[i].Value
		v.b = r.b[v.off : v.off+int64(len(v.b)) : v.off+int64(len(v.b))]
	}
	return f, nil
}

// readKVs reads n metadata pairs and indexes their keys.
func (f *File) readKVs(r *reader, n int) error {
	f.kvs = make([]KV, n)
	f.keyIndex = nameindex.Make(n, func(i int) string { return f.kvs[i].Key })
	for i := range n {
		at := r.off
		field := func() string { return fmt.Sprintf("metadata[%d].key", i) }
		ko, kl, ok := r.bytes()
		if !ok {
			return r.short(field(), at, "the key")
		}
		key := r.b[ko : ko+kl]
		if kl == 0 {
			return malformed(field(), at, "empty key")
		}
		if !utf8.Valid(key) {
			return malformed(field(), at, "key %q is not valid UTF-8", key)
		}
		kv := &f.kvs[i]
		kv.Key, kv.Offset = string(key), at
		if first, dup := f.keyIndex.Insert(i); dup {
			return malformed(field(), at, "duplicate key %q (first at offset %#x)", kv.Key, f.kvs[first].Offset)
		}
		vfield := func() string { return fmt.Sprintf("metadata[%q]", kv.Key) }
		t, ok := r.u32()
		if !ok {
			return r.short(vfield(), r.off, "the value type")
		}
		if t >= uint32(numValueTypes) {
			return malformed(vfield(), r.off-4, "value type %d, want 0 to %d", t, numValueTypes-1)
		}
		start := r.off
		if err := r.value(ValueType(t), 0, vfield); err != nil {
			return err
		}
		kv.Value = Value{typ: ValueType(t), b: r.b[start:r.off], off: start}
	}
	return nil
}

// value checks the value of type t at the cursor and moves past it; depth
// is the number of arrays it is inside.
func (r *reader) value(t ValueType, depth int, field func() string) error {
	at := r.off
	switch t {
	case TypeString:
		if _, _, ok := r.bytes(); !ok {
			return r.short(field(), at, "a string")
		}
	case TypeArray:
		if depth >= MaxArrayDepth {
			return malformed(field(), at, "arrays nested more than %d deep", MaxArrayDepth)
		}
		et, ok := r.u32()
		if !ok {
			return r.short(field(), at, "the array's element type")
		}
		if et >= uint32(numValueTypes) {
			return malformed(field(), at, "array element type %d, want 0 to %d", et, numValueTypes-1)
		}
		n, ok := r.u64()
		if !ok {
			return r.short(field(), at+4, "the array's length")
		}
		e := ValueType(et)
		if sz := uint64(e.Size()); sz > 0 {
			if n > uint64(r.left())/sz {
				return format.Wrapf(format.ErrTruncated, formatName, field(), at+4, "array of %d %s (%d bytes each) runs past the end of the %d-byte file", n, e, sz, r.size)
			}
			if !r.need(n * sz) {
				return r.short(field(), r.off, "the array's elements")
			}
			if e == TypeBool {
				for i, x := range r.b[r.off : r.off+int64(n)] {
					if x > 1 {
						return malformed(field(), r.off+int64(i), "bool element %d is %d, want 0 or 1", i, x)
					}
				}
			}
			r.off += int64(n * sz)
			return nil
		}
		minSize := uint64(8)
		if e == TypeArray {
			minSize = 12
		}
		if n > uint64(r.left())/minSize {
			return format.Wrapf(format.ErrTruncated, formatName, field(), at+4, "array of %d %s (at least %d bytes each) runs past the end of the %d-byte file", n, e, minSize, r.size)
		}
		for range n {
			if err := r.value(e, depth+1, field); err != nil {
				return err
			}
		}
	default:
		if !r.need(uint64(t.Size())) {
			return r.short(field(), at, "a "+t.String())
		}
		if t == TypeBool && r.b[at] > 1 {
			return malformed(field(), at, "bool is %d, want 0 or 1", r.b[at])
		}
		r.off += int64(t.Size())
	}
	return nil
}

// readAlignment sets the alignment from general.alignment: a uint32 power
// of two of at least 8, or 32 without it.
func (f *File) readAlignment() error {
	f.align = DefaultAlignment
	v, ok := f.Metadata("general.alignment")
	if !ok {
		return nil
	}
	field := `metadata["general.alignment"]`
	if v.typ != TypeUint32 {
		return malformed(field, v.off, "type %s, want uint32", v.typ)
	}
	a, _ := v.AsUint()
	if a < 8 || a&(a-1) != 0 {
		return malformed(field, v.off, "alignment %d, want a power of two of at least 8", a)
	}
	f.align = int64(a)
	return nil
}

// readTensorInfos reads n tensor infos, places the data section after
// them and checks every tensor against it.
func (f *File) readTensorInfos(r *reader, n int) error {
	f.tensors = make([]TensorInfo, n)
	var names, dims int64
	for i := range f.tensors {
		t := &f.tensors[i]
		t.InfoOffset = r.off
		field := func(what string) string { return fmt.Sprintf("tensor_infos[%d].%s", i, what) }
		_, nl, ok := r.bytes()
		if !ok {
			return r.short(field("name"), t.InfoOffset, "the name")
		}
		names += nl
		name := func() string { return string(r.b[t.InfoOffset+8 : t.InfoOffset+8+nl]) }
		at := r.off
		nd, ok := r.u32()
		if !ok {
			return r.short(field("n_dimensions"), at, "n_dimensions")
		}
		if nd > 4 {
			return malformed(field("n_dimensions"), at, "tensor %q has %d dimensions, at most 4", name(), nd)
		}
		t.NDims = int(nd)
		dims += int64(nd)
		t.NE = [4]int64{1, 1, 1, 1}
		for j := range t.NDims {
			at := r.off
			x, ok := r.u64()
			if !ok {
				return r.short(field(fmt.Sprintf("ne[%d]", j)), at, "ne")
			}
			if x > math.MaxInt64 {
				return malformed(field(fmt.Sprintf("ne[%d]", j)), at, "tensor %q: ne[%d] = %d, negative as ggml's int64", name(), j, int64(x))
			}
			t.NE[j] = int64(x)
		}
		at = r.off
		ty, ok := r.u32()
		if !ok {
			return r.short(field("type"), at, "the type")
		}
		t.Type = Type(ty)
		switch {
		case t.Type >= TypeCount:
			return malformed(field("type"), at, "tensor %q: unknown ggml type id %d (ggml's types are 0 to %d)", name(), ty, TypeCount-1)
		case t.Type.DType() == format.Invalid:
			return malformed(field("type"), at, "tensor %q: ggml type %s (id %d) was removed from ggml", name(), t.Type, ty)
		}
		t.DType = t.Type.DType()
		at = r.off
		off, ok := r.u64()
		if !ok {
			return r.short(field("offset"), at, "the offset")
		}
		if off > uint64(f.size) {
			return format.Wrapf(format.ErrTruncated, formatName, field("offset"), at, "tensor %q: offset %d past the end of the %d-byte file", name(), off, f.size)
		}
		t.RelOffset = int64(off)
		if err := f.sizeTensor(t, i, name); err != nil {
			return err
		}
	}
	f.headEnd = r.off
	if f.headEnd > math.MaxInt64-f.align {
		return malformed("tensor_infos", f.headEnd, "the tensor infos end too late to align")
	}
	f.dataStart = (f.headEnd + f.align - 1) &^ (f.align - 1)
	if f.dataStart > f.size {
		if n > 0 {
			return format.Wrapf(format.ErrTruncated, formatName, "data", f.headEnd, "the data section starts at %d (the tensor infos end at %d, aligned to %d), past the end of the %d-byte file", f.dataStart, f.headEnd, f.align, f.size)
		}
		f.dataStart = f.size // a file without tensors may end unpadded
	}
	return f.placeTensors(r.b, names, dims)
}

// sizeTensor checks the shape of t against its type and sets NBytes:
// ne[0] a multiple of the block size, ne[0]×…×ne[3] and the byte size
// without overflow, the bytes no more than the file's.
func (f *File) sizeTensor(t *TensorInfo, i int, name func() string) error {
	field := func() string { return fmt.Sprintf("tensor_infos[%d].ne", i) }
	elems, bsize := t.DType.Block()
	if t.NE[0]%int64(elems) != 0 {
		return malformed(field(), t.InfoOffset, "tensor %q: ne[0] = %d is not a multiple of %s's block size %d", name(), t.NE[0], t.Type, elems)
	}
	n := uint64(1)
	for _, x := range t.NE {
		hi, lo := bits.Mul64(n, uint64(x))
		if hi != 0 || lo > math.MaxInt64 {
			return malformed(field(), t.InfoOffset, "tensor %q: ne %v has more than 2^63-1 elements", name(), t.NE[:t.NDims])
		}
		n = lo
	}
	if n == 0 {
		t.NBytes = 0
		return nil
	}
	hi, nb := bits.Mul64(uint64(t.NE[0]/int64(elems)), uint64(bsize))
	for _, x := range t.NE[1:] {
		if hi != 0 {
			break
		}
		var h2 uint64
		h2, nb = bits.Mul64(nb, uint64(x))
		hi |= h2
	}
	if hi != 0 || nb > uint64(f.size) {
		return format.Wrapf(format.ErrTruncated, formatName, field(), t.InfoOffset, "tensor %q: %d elements of %s need more bytes than the %d-byte file holds", name(), n, t.Type, f.size)
	}
	t.NBytes = int64(nb)
	return nil
}

// placeTensors completes the tensors once the data section is known: their
// names (one string for all, from the header view head), shapes (outermost
// first), absolute offsets and views; it checks that each is aligned and
// inside the data section, that no two overlap and that names are unique.
func (f *File) placeTensors(head []byte, names, dims int64) error {
	nameBuf := make([]byte, 0, names)
	for i := range f.tensors {
		t := &f.tensors[i]
		nl := int64(binary.LittleEndian.Uint64(head[t.InfoOffset:]))
		nameBuf = append(nameBuf, head[t.InfoOffset+8:t.InfoOffset+8+nl]...)
	}
	all := string(nameBuf)
	shapes := make([]int64, dims)
	f.index = nameindex.Make(len(f.tensors), func(i int) string { return f.tensors[i].Name })
	dataLen := f.size - f.dataStart
	var pos int64
	for i := range f.tensors {
		t := &f.tensors[i]
		nl := int64(binary.LittleEndian.Uint64(head[t.InfoOffset:]))
		t.Name, pos = all[pos:pos+nl], pos+nl
		t.NameExplicit = true
		t.Shape, shapes = shapes[:t.NDims:t.NDims], shapes[t.NDims:]
		for j := range t.NDims {
			t.Shape[j] = t.NE[t.NDims-1-j]
		}
		t.Location = format.LocSegment
		field := func() string { return fmt.Sprintf("tensor_infos[%d].offset", i) }
		offAt := t.InfoOffset + 8 + nl + 4 + 8*int64(t.NDims) + 4
		if first, dup := f.index.Insert(i); dup {
			return malformed(fmt.Sprintf("tensor_infos[%d].name", i), t.InfoOffset, "duplicate tensor name %q (first at tensor_infos[%d])", t.Name, first)
		}
		if t.RelOffset%f.align != 0 {
			return malformed(field(), offAt, "tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.RelOffset, f.align)
		}
		if t.RelOffset > dataLen || t.NBytes > dataLen-t.RelOffset {
			return format.Wrapf(format.ErrTruncated, formatName, field(), offAt, "tensor %q: bytes [%d, %d) of the data section run past its end at %d", t.Name, t.RelOffset, t.RelOffset+t.NBytes, dataLen)
		}
		t.Offset = f.dataStart + t.RelOffset
		s, err := segment.New(f.mf, t.Offset, t.NBytes)
		if err != nil {
			return format.Wrapf(format.ErrMalformed, formatName, field(), offAt, "tensor %q: %v", t.Name, err)
		}
		t.Data = s
	}
	return f.checkOverlap()
}

// checkOverlap checks that no two tensors share a byte.
func (f *File) checkOverlap() error {
	byOff := make([]int, 0, len(f.tensors))
	for i := range f.tensors {
		if f.tensors[i].NBytes > 0 {
			byOff = append(byOff, i)
		}
	}
	slices.SortFunc(byOff, func(a, b int) int { return cmp.Compare(f.tensors[a].Offset, f.tensors[b].Offset) })
	for k := 1; k < len(byOff); k++ {
		p, t := &f.tensors[byOff[k-1]], &f.tensors[byOff[k]]
		if t.Offset < p.Offset+p.NBytes {
			return malformed(fmt.Sprintf("tensor_infos[%d].offset", byOff[k]), t.InfoOffset, "tensor %q at [%d, %d) overlaps tensor %q at [%d, %d)", t.Name, t.Offset, t.Offset+t.NBytes, p.Name, p.Offset, p.Offset+p.NBytes)
		}
	}
	return nil
}
