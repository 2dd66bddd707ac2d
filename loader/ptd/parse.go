package ptd

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptdfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/fbread"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Header field offsets (absolute, in the file).
const (
	offIdentifier = 4
	offMagic      = 8
	offLength     = 12
	offFBOffset   = 16
	offFBSize     = 24
	offSegBase    = 32
	offSegSize    = 40
	headerEnd     = 48 // 8 + MinHeaderLength
)

// currentRootFields is the number of fields of the current FlatTensor.
const currentRootFields = 3

func errorf(field string, off int64, msg string, args ...any) error {
	return format.Errorf(formatName, field, off, msg, args...)
}

func wrapf(sentinel error, field string, off int64, msg string, args ...any) error {
	return format.Wrapf(sentinel, formatName, field, off, msg, args...)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseHeader checks the FH01 header in head, the first bytes of a file of
// size bytes (at least min(size, headerEnd) of them), against the file
// size.
func parseHeader(head []byte, size int64) (Header, error) {
	var h Header
	var buf [headerEnd]byte
	n := int64(copy(buf[:], head))
	if n < 8 {
		return h, wrapf(format.ErrUnknownFormat, "identifier", 0,
			"file of %d bytes is too short for a FlatBuffer identifier", size)
	}
	if id := buf[4:8]; string(id) != Identifier {
		if id[0] == 'F' && id[1] == 'T' && isDigit(id[2]) && isDigit(id[3]) {
			return h, wrapf(format.ErrUnsupportedVersion, "identifier", offIdentifier,
				"file identifier %q (% x) is a FlatTensor version this loader cannot read; want %q", id, id, Identifier)
		}
		return h, wrapf(format.ErrUnknownFormat, "identifier", offIdentifier,
			"file identifier %q (% x) is not %q: not a .ptd file", id, id, Identifier)
	}
	if n < offLength {
		return h, wrapf(format.ErrTruncated, "header", offMagic,
			"file of %d bytes ends inside the FH01 header (needs %d)", size, headerEnd)
	}
	if m := buf[8:12]; string(m) != HeaderMagic {
		if m[0] == 'F' && m[1] == 'H' && isDigit(m[2]) && isDigit(m[3]) {
			return h, wrapf(format.ErrUnsupportedVersion, "header.magic", offMagic,
				"header magic %q is a header version this loader cannot read; want %q", m, HeaderMagic)
		}
		return h, errorf("header.magic", offMagic, "header magic %q (% x), want %q", m, m, HeaderMagic)
	}
	if n < headerEnd {
		return h, wrapf(format.ErrTruncated, "header", offMagic,
			"file of %d bytes ends inside the FH01 header (needs %d)", size, headerEnd)
	}
	le := binary.LittleEndian
	h.Length = le.Uint32(buf[offLength:])
	h.FlatBufferOffset = le.Uint64(buf[offFBOffset:])
	h.FlatBufferSize = le.Uint64(buf[offFBSize:])
	h.SegmentBaseOffset = le.Uint64(buf[offSegBase:])
	h.SegmentDataSize = le.Uint64(buf[offSegSize:])

	if h.Length < MinHeaderLength {
		return h, errorf("header.length", offLength, "header length %d, want at least %d", h.Length, MinHeaderLength)
	}
	// flatbuffer_offset is the padded header length, so the header lies
	// inside [8, flatbuffer_offset).
	if h.FlatBufferOffset < 8+uint64(h.Length) {
		return h, errorf("header.flatbuffer_offset", offFBOffset,
			"flatbuffer_offset %d is less than the header's end (8 + length %d)", h.FlatBufferOffset, h.Length)
	}
	fbEnd := h.FlatBufferOffset + h.FlatBufferSize
	if fbEnd < h.FlatBufferOffset || fbEnd > fbverify.MaxSize {
		return h, errorf("header.flatbuffer_size", offFBSize,
			"flatbuffer_offset %d + flatbuffer_size %d exceeds the 2 GiB FlatBuffer limit", h.FlatBufferOffset, h.FlatBufferSize)
	}
	if int64(fbEnd) > size {
		return h, wrapf(format.ErrTruncated, "header.flatbuffer_size", offFBSize,
			"FlatBuffer ends at %d (flatbuffer_offset %d + flatbuffer_size %d) but the file has %d bytes",
			fbEnd, h.FlatBufferOffset, h.FlatBufferSize, size)
	}
	segEnd := h.SegmentBaseOffset + h.SegmentDataSize
	if segEnd < h.SegmentBaseOffset || segEnd > math.MaxInt64 {
		return h, errorf("header.segment_data_size", offSegSize,
			"segment_base_offset %d + segment_data_size %d overflows", h.SegmentBaseOffset, h.SegmentDataSize)
	}
	if int64(segEnd) > size {
		return h, wrapf(format.ErrTruncated, "header.segment_data_size", offSegSize,
			"file of %d bytes is too small: segment data ends at %d (segment_base_offset %d + segment_data_size %d); want at least %[2]d bytes",
			size, segEnd, h.SegmentBaseOffset, h.SegmentDataSize)
	}
	if h.SegmentDataSize > 0 && h.SegmentBaseOffset < fbEnd {
		return h, errorf("header.segment_base_offset", offSegBase,
			"segment data at %d overlaps the FlatBuffer, which ends at %d", h.SegmentBaseOffset, fbEnd)
	}
	return h, nil
}

// effectiveRootSlots returns the number of field slots of the root
// table's vtable up to the last present one. RootFieldSlots has checked
// that the vtable lies inside fb.
func effectiveRootSlots(fb []byte) (int, error) {
	n, err := fbverify.RootFieldSlots(fb, fbverify.Options{Format: formatName})
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	pos := int64(le.Uint32(fb))
	if pos < 0 || pos+4 > int64(len(fb)) {
		return 0, errorf("FlatTensor", 0, "root offset %d outside the FlatBuffer", pos)
	}
	vt := pos - int64(int32(le.Uint32(fb[pos:])))
	for ; n > 0; n-- {
		e := vt + 4 + 2*int64(n-1)
		if e < 0 || e+2 > int64(len(fb)) {
			return 0, errorf("FlatTensor", vt, "root vtable outside the FlatBuffer")
		}
		if le.Uint16(fb[e:]) != 0 {
			break
		}
	}
	return n, nil
}

// fieldPos returns the absolute position of field id of a verified table
// (the table's own position when the field is absent).
func fieldPos(t flatbuffers.Table, id int) int64 {
	o := t.Offset(flatbuffers.VOffsetT(4 + 2*id))
	return int64(t.Pos) + int64(o)
}

// NewFile parses the .ptd in mf: a mapped file or section (one mapping may
// be shared with other readers), bytes in memory (mmapfile.NewBytes) or an
// io.ReaderAt (mmapfile.NewReaderAt, every view a copy). The File does not
// own mf: Close leaves it open, and the caller closes it after the File
// and every view from it are no longer used.
func NewFile(mf *mmapfile.File, opts ...Option) (*File, error) {
	if mf == nil {
		return nil, os.ErrInvalid
	}
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.name == "" {
		c.name = mf.Name()
	}
	size := mf.Len()
	// The first bytes, then the FlatBuffer the header in them describes,
	// in a pooled buffer when small (package region): what Open keeps is
	// copied out of it, so it goes back when Open returns.
	head, hbuf, err := region.Head(mf, c.head)
	if err != nil {
		return nil, fmt.Errorf("ptd: reading header: %w", err)
	}
	h, err := parseHeader(head, size)
	if err != nil {
		region.Put(hbuf)
		return nil, err
	}
	fb, buf, err := region.Range(mf, head, hbuf, 0, h.FlatBufferLen())
	if err != nil {
		return nil, fmt.Errorf("ptd: reading the FlatBuffer: %w", err)
	}
	defer region.Put(buf)
	slots, err := effectiveRootSlots(fb)
	if err != nil {
		return nil, err
	}
	f := &File{mf: mf, name: c.name, size: size, hdr: h, legacy: slots > currentRootFields}
	w := fbverify.NewWalk(fb, fbverify.Options{Format: formatName})
	if f.legacy {
		if err := w.Verify("FlatTensor", ptdfb.VerifyLegacyFlatTensor); err != nil {
			return nil, err
		}
		err = f.readLegacy(fb)
	} else {
		if err := w.Verify("FlatTensor", ptdfb.VerifyFlatTensor); err != nil {
			return nil, err
		}
		err = f.readCurrent(fb)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// rawLayout locates a verified layout: a TensorLayout or legacy
// TensorMetadata table at pos, and the table offsets of its scalar_type,
// sizes and dim_order fields (0 when absent).
type rawLayout struct {
	pos int64
	fo  [3]int64
}

// fieldPos returns the file position errors name for field k of l.
func (l *rawLayout) fieldPos(k int) int64 { return l.pos + l.fo[k] }

// at locates an entry for error messages: element i of a root list. The
// path string is built only when an error needs it.
type at struct {
	list string // "named_data" or "tensors"
	i    int
	sub  string // ".tensor_layout" for a current layout
}

func (a at) field(name string) string {
	return "FlatTensor." + a.list + "[" + strconv.Itoa(a.i) + "]" + name
}

// store hands out the Layouts, their dimension slices and the keys of one
// file from a few allocations.
//
// budget bounds the dimensions read over all layouts: a file whose layouts
// all have their own sizes vectors spends at least 4 bytes of FlatBuffer on
// each dimension, so more dimensions than len(FlatBuffer)/4 means shared
// vectors, which could otherwise make a small file allocate without bound.
type store struct {
	budget  int
	layouts []Layout
	dims    arena.Slices[int64]
	orders  arena.Slices[uint8]
	keys    arena.Strings
}

func (a *store) layout() *Layout {
	if len(a.layouts) == cap(a.layouts) {
		a.layouts = make([]Layout, 0, 16)
	}
	a.layouts = a.layouts[:len(a.layouts)+1]
	return &a.layouts[len(a.layouts)-1]
}

// readLayout reads the verified layout src of FlatBuffer fb. The data has
// room bytes: all of segment si (off < 0), or what follows offset off in it.
func (f *File) readLayout(fb []byte, src rawLayout, loc at, key string, si int, off int64, ar *store) (*Layout, int64, error) {
	var st int8
	if p := src.fo[0]; p != 0 {
		st = int8(fb[src.pos+p])
	}
	dt, msg := executorch.ScalarTypeDType(st)
	if msg != "" {
		return nil, 0, errorf(loc.field(loc.sub+".scalar_type"), src.fieldPos(0),
			"key %q: scalar type %d is reserved or unknown (want a known ExecuTorch ScalarType: 0-7, 11-17, 22-29)", key, st)
	}
	sizes := fbread.FieldBytes(fb, src.pos, src.fo[1], 4)
	n := len(sizes) / 4
	if ar.budget -= n; ar.budget < 0 {
		return nil, 0, errorf(loc.field(loc.sub+".sizes"), src.fieldPos(1),
			"key %q: the layouts hold more dimensions than the FlatBuffer has room for (shared sizes vectors)", key)
	}
	l := ar.layout()
	*l = Layout{DType: dt, Sizes: ar.dims.Make(n)} // a scalar: empty, never nil
	for i := range n {
		s := int32(binary.LittleEndian.Uint32(sizes[4*i:]))
		if s < 0 {
			return nil, 0, errorf(loc.field(loc.sub+".sizes"), src.fieldPos(1),
				"key %q: dimension %d has negative size %d", key, i, s)
		}
		l.Sizes[i] = int64(s)
	}
	if d := fbread.FieldBytes(fb, src.pos, src.fo[2], 1); len(d) > 0 {
		if len(d) != n {
			return nil, 0, errorf(loc.field(loc.sub+".dim_order"), src.fieldPos(2),
				"key %q: dim_order has %d entries for %d dimensions", key, len(d), n)
		}
		var seen [4]uint64 // a bit per dimension
		for _, x := range d {
			if int(x) >= n || seen[x>>6]&(1<<(x&63)) != 0 {
				return nil, 0, errorf(loc.field(loc.sub+".dim_order"), src.fieldPos(2),
					"key %q: dim_order %v is not a permutation of 0..%d", key, d, n-1)
			}
			seen[x>>6] |= 1 << (x & 63)
		}
		l.DimOrder = ar.orders.Copy(d)
	}
	seg := f.segs[si]
	room := seg.Len() - max(off, 0)
	_, nbytes, ok := format.Numel(l.Sizes, dt, math.MaxInt64)
	if !ok || nbytes > room {
		need := "more than 2^63"
		if ok {
			need = strconv.FormatInt(nbytes, 10)
		}
		has := fmt.Sprintf("segment %d holds %d", si, seg.Len())
		if off >= 0 {
			has = fmt.Sprintf("segment %d (%d bytes) holds %d past offset %d", si, seg.Len(), room, off)
		}
		return nil, 0, errorf(loc.field(loc.sub+".sizes"), src.fieldPos(1),
			"key %q: layout %s%v needs %s bytes, but %s; want at least %[4]s", key, dt, l.Sizes, need, has)
	}
	return l, nbytes, nil
}

// addEntry indexes e by key; a key listed twice is an error at loc. The
// entries before index nn come from named_data, the others from tensors
// (a legacy file's), in order: that locates the entry that listed the key
// first.
func (f *File) addEntry(e NamedData, loc at, keyField string, pos int64, nn int) error {
	f.entries = append(f.entries, e)
	if j, dup := f.index.Insert(len(f.entries) - 1); dup {
		first := at{list: "named_data", i: j}
		if j >= nn {
			first = at{list: "tensors", i: j - nn}
		}
		return errorf(loc.field(keyField), pos, "key %q listed twice (first in %s); keys must be unique", e.Key, first.field(""))
	}
	return nil
}

func tensorOf(nd *NamedData) format.Tensor {
	return format.Tensor{
		Name:         nd.Key,
		NameExplicit: true,
		DType:        nd.Layout.DType,
		Shape:        nd.Layout.Sizes,
		DimOrder:     nd.Layout.DimOrder,
		Location:     format.LocSegment,
		Offset:       nd.Data.Offset(),
		NBytes:       nd.Data.Len(),
		Data:         nd.Data,
	}
}

// readRoot checks the root table's version (at vpos) and reads its nseg
// segments, each inside the segment data region.
func (f *File) readRoot(version uint32, vpos int64, nseg int, get func(*ptdfb.DataSegment, int) bool) error {
	f.version = version
	if version > MaxVersion {
		return wrapf(format.ErrUnsupportedVersion, "FlatTensor.version", vpos,
			"FlatTensor version %d; want at most %d, the latest this loader reads", version, MaxVersion)
	}
	f.segs = make([]segment.Segment, nseg)
	base, dataEnd := f.hdr.SegmentBaseOffset, f.hdr.SegmentBaseOffset+f.hdr.SegmentDataSize
	var ds ptdfb.DataSegment
	for i := range nseg {
		get(&ds, i)
		off, sz := ds.Offset(), ds.Size()
		field := func() string { return "FlatTensor.segments[" + strconv.Itoa(i) + "]" } // for errors only
		abs := base + off
		if abs < base || abs > dataEnd {
			// abs may have wrapped: say "base + offset", not a wrapped sum
			return errorf(field()+".offset", fieldPos(ds.Table(), 0),
				"segment offset %d (from segment_base_offset %d) lies outside the segment data [%d, %d): want at most %d",
				off, base, base, dataEnd, dataEnd-base)
		}
		if sz > dataEnd-abs {
			return errorf(field()+".size", fieldPos(ds.Table(), 1),
				"segment [%d, +%d) runs past the end of the segment data at %d (file %d bytes)", abs, sz, dataEnd, f.size)
		}
		var err error
		if f.segs[i], err = segment.New(f.mf, int64(abs), int64(sz)); err != nil {
			return fmt.Errorf("ptd: %s: %w", field(), err)
		}
	}
	return nil
}

func (f *File) segmentIndex(idx uint32, loc at, pos int64, key string) (int, error) {
	if uint64(idx) >= uint64(len(f.segs)) {
		return 0, errorf(loc.field(".segment_index"), pos, "key %q: segment_index %d out of range (%d segments): want below %[3]d", key, idx, len(f.segs))
	}
	return int(idx), nil
}

func (f *File) readCurrent(fb []byte) error {
	ft := ptdfb.GetRootAsFlatTensor(fb, 0)
	if err := f.readRoot(ft.Version(), fieldPos(ft.Table(), 0), ft.SegmentsLength(), ft.Segments); err != nil {
		return err
	}
	n := ft.NamedDataLength()
	// named_data is the whole lookup list: f.named shares f.entries
	f.entries = make([]NamedData, 0, n)
	f.index = nameindex.Make(n, f.entryKey)
	ar := store{budget: len(fb) / 4}
	// The entries are read through their decoded vtables (NamedData: key,
	// segment_index, tensor_layout; TensorLayout: scalar_type, sizes,
	// dim_order), which they share: the generated accessors would look
	// every field up in its vtable again.
	var list int64 // the named_data vector's first element
	if n > 0 {
		list, _ = fbread.Vector(fb, fieldPos(ft.Table(), 2)) // named_data: id 2
	}
	var ndf, tlf fbread.Fields
	for i := range n {
		nd := fbread.Deref(fb, list+4*int64(i))
		fo := ndf.Of(fb, nd)
		loc := at{list: "named_data", i: i, sub: ".tensor_layout"}
		key := ar.keys.Copy(fbread.FieldBytes(fb, nd, fo[0], 1))
		var sidx uint32
		if fo[1] != 0 {
			sidx = binary.LittleEndian.Uint32(fb[nd+fo[1] : nd+fo[1]+4])
		}
		si, err := f.segmentIndex(sidx, loc, nd+fo[1], key)
		if err != nil {
			return err
		}
		e := NamedData{NamedData: format.NamedData{Key: key, Segment: si, Data: f.segs[si]}}
		if fo[2] != 0 {
			if ar.layouts == nil {
				ar.layouts = make([]Layout, 0, n)
			}
			tl := fbread.Deref(fb, nd+fo[2])
			raw := rawLayout{tl, [3]int64(tlf.Of(fb, tl)[0:3])} // ids 0-2
			l, nbytes, err := f.readLayout(fb, raw, loc, key, si, -1, &ar)
			if err != nil {
				return err
			}
			e.Layout = l
			if f.tensors == nil {
				f.tensors = make([]format.Tensor, 0, n)
			}
			te := e
			if te.Data, err = f.segs[si].Sub(0, nbytes); err != nil {
				return fmt.Errorf("ptd: %s: %w", loc.field(""), err) // unreachable: readLayout checked the size
			}
			f.tensors = append(f.tensors, tensorOf(&te))
		}
		if err := f.addEntry(e, loc, ".key", nd+fo[0], n); err != nil {
			return err
		}
	}
	f.named = f.entries
	return nil
}

func (f *File) readLegacy(fb []byte) error {
	ft := ptdfb.GetRootAsLegacyFlatTensor(fb, 0)
	f.talign = ft.TensorAlignment()
	if err := f.readRoot(ft.Version(), fieldPos(ft.Table(), 0), ft.SegmentsLength(), ft.Segments); err != nil {
		return err
	}
	nt, nn := ft.TensorsLength(), ft.NamedDataLength()
	f.named = make([]NamedData, 0, nn)
	f.tensors = make([]format.Tensor, 0, nt)
	f.entries = make([]NamedData, 0, nt+nn)
	f.index = nameindex.Make(nt+nn, f.entryKey)
	ar := store{budget: len(fb) / 4}

	var nd ptdfb.LegacyNamedData
	for i := range nn {
		ft.NamedData(&nd, i)
		loc := at{list: "named_data", i: i}
		key := ar.keys.Copy(nd.Key())
		si, err := f.segmentIndex(nd.SegmentIndex(), loc, fieldPos(nd.Table(), 1), key)
		if err != nil {
			return err
		}
		e := NamedData{NamedData: format.NamedData{Key: key, Segment: si, Data: f.segs[si]}}
		if err := f.addEntry(e, loc, ".key", fieldPos(nd.Table(), 0), nn); err != nil {
			return err
		}
		f.named = append(f.named, e)
	}

	ar.layouts = make([]Layout, 0, nt)
	var tm ptdfb.LegacyTensorMetadata
	var tmf fbread.Fields
	for i := range nt {
		ft.Tensors(&tm, i)
		loc := at{list: "tensors", i: i}
		key := ar.keys.Copy(tm.FullyQualifiedName())
		t := tm.Table()
		si, err := f.segmentIndex(tm.SegmentIndex(), loc, fieldPos(t, 4), key)
		if err != nil {
			return err
		}
		seg := f.segs[si]
		off := tm.Offset()
		if off > uint64(seg.Len()) {
			return errorf(loc.field(".offset"), fieldPos(t, 5),
				"key %q: offset %d lies past the end of segment %d (%d bytes)", key, off, si, seg.Len())
		}
		raw := rawLayout{int64(t.Pos), [3]int64(tmf.Of(fb, int64(t.Pos))[1:4])} // ids 1-3
		l, nbytes, err := f.readLayout(fb, raw, loc, key, si, int64(off), &ar)
		if err != nil {
			return err
		}
		data, err := seg.Sub(int64(off), nbytes)
		if err != nil {
			return fmt.Errorf("ptd: %s: %w", loc.field(""), err) // unreachable: readLayout checked the size
		}
		e := NamedData{NamedData: format.NamedData{Key: key, Segment: si, Data: data}, Layout: l}
		if err := f.addEntry(e, loc, ".fully_qualified_name", fieldPos(t, 0), nn); err != nil {
			return err
		}
		f.tensors = append(f.tensors, tensorOf(&e))
	}
	return nil
}
