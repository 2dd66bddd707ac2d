package hostile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/segment"
)

// Segment reads every byte of s through each path a caller has: the
// zero-copy view, SHA256, Checksum, CopyTo, Touch, Resident, the sub-range
// arithmetic, and checks that they agree and that s lies inside its file.
// what names s in the error.
func Segment(what string, s segment.Segment) error {
	if s.File() == nil {
		if s.Len() != 0 {
			return fmt.Errorf("%s: a segment without a file has length %d", what, s.Len())
		}
		return nil
	}
	if err := segmentBounds(what, s); err != nil {
		return err
	}
	b, _ := s.Bytes()
	sum, err := s.SHA256()
	if err != nil {
		return fmt.Errorf("%s: SHA256: %w", what, err)
	}
	// Comparing with the view's own digest doubles the cost: do it for
	// segments up to 64 KiB; the CRC comparison below covers the read path
	// SHA256 shares (Checksum) for larger ones.
	if len(b) <= 64<<10 && sum != sha256.Sum256(b) {
		return fmt.Errorf("%s: SHA256 disagrees with the view", what)
	}
	h := crc32.NewIEEE()
	if err := s.Checksum(h); err != nil {
		return fmt.Errorf("%s: Checksum: %w", what, err)
	}
	if h.Sum32() != crc32.ChecksumIEEE(b) {
		return fmt.Errorf("%s: Checksum disagrees with the view", what)
	}
	var buf [64]byte
	head := buf[:min(len(b), len(buf))]
	if n, err := s.CopyTo(head); err != nil || n != len(head) || !bytes.Equal(head, b[:n]) {
		return fmt.Errorf("%s: CopyTo = %d, %v", what, n, err)
	}
	if err := s.Touch(); err != nil {
		return fmt.Errorf("%s: Touch: %w", what, err)
	}
	if _, _, err := s.Resident(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%s: Resident: %w", what, err)
	}
	if whole, err := s.Sub(0, s.Len()); err != nil || whole != s {
		return fmt.Errorf("%s: Sub(0, Len) = %v, %v", what, whole, err)
	}
	if _, err := s.Sub(s.Len(), 1); err == nil {
		return fmt.Errorf("%s: Sub past the end succeeded", what)
	}
	_ = s.String()
	return nil
}

// segmentBounds checks that s lies inside its file and that its zero-copy
// view has s.Len() bytes: the part of Segment that differs from one view to
// the next, without the paths (digests, copies, sub-ranges) that read the
// same bytes again.
func segmentBounds(what string, s segment.Segment) error {
	if s.File() == nil {
		if s.Len() != 0 {
			return fmt.Errorf("%s: a segment without a file has length %d", what, s.Len())
		}
		return nil
	}
	size := s.File().Len()
	if s.Offset() < 0 || s.Len() < 0 || s.Offset() > size || s.Len() > size-s.Offset() {
		return fmt.Errorf("%s: segment %v outside its %d-byte file", what, s, size)
	}
	b, err := s.Bytes()
	if err != nil {
		return fmt.Errorf("%s: Bytes: %w", what, err)
	}
	if int64(len(b)) != s.Len() {
		return fmt.Errorf("%s: Bytes returned %d bytes of a %d-byte segment", what, len(b), s.Len())
	}
	return nil
}

// fullViews is how many tensors of a file the exercisers read through
// every path of Segment; the views of the others get segmentBounds. A
// hostile file may hold tens of thousands of tensors sharing one view: the
// exerciser's own digests and messages for each would count against the
// file's allocation bound (hostile.AllocFactor) as if the loader had made
// them.
const fullViews = 256

// tensorWhat names a tensor in an exerciser's error. It is a string
// concatenation rather than fmt.Sprintf, which would allocate its
// arguments for every tensor of a file.
func tensorWhat(name string) string { return "tensor " + strconv.Quote(name) }

// Tensor checks a tensor's description against itself (dtype, shape,
// NBytes, offset, view) and reads its data through Segment and through the
// typed view its dtype calls for. An unresolved tensor must have no data.
func Tensor(t *format.Tensor) error {
	return tensor(t, true)
}

// tensor is Tensor; with full false, its data gets only the bounds and
// view checks of segmentBounds (see fullViews).
func tensor(t *format.Tensor, full bool) error {
	what := tensorWhat(t.Name)
	_ = t.DType.String()
	_ = t.Location.String()
	if t.Location == format.LocNone {
		// declared without data (an RTen constant with neither inline data
		// nor a data_offset): its dtype may be unknown too
		if t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("%s: no location but view %v at offset %d", what, t.Data, t.Offset)
		}
		return nil
	}
	if !t.DType.Valid() {
		return fmt.Errorf("%s: invalid dtype %v", what, t.DType)
	}
	if t.Shape == nil {
		return fmt.Errorf("%s: nil shape", what)
	}
	if t.DimOrder != nil {
		if len(t.DimOrder) != len(t.Shape) {
			return fmt.Errorf("%s: dim order %v for %d dims", what, t.DimOrder, len(t.Shape))
		}
		seen := make([]bool, len(t.DimOrder))
		for _, d := range t.DimOrder {
			if int(d) >= len(seen) || seen[d] {
				return fmt.Errorf("%s: dim order %v is not a permutation", what, t.DimOrder)
			}
			seen[d] = true
		}
	}
	numel, nbytes, ok := numelOf(t)
	if !ok || nbytes != t.NBytes {
		return fmt.Errorf("%s: shape %v of %v is %d bytes (ok %v), NBytes says %d", what, t.Shape, t.DType, nbytes, ok, t.NBytes)
	}
	if !t.Resolved() {
		if t.Location != format.LocExternal || t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("%s: unresolved %v tensor with view %v", what, t.Location, t.Data)
		}
		return nil
	}
	if t.Data.File() == nil && t.NBytes > 0 {
		return fmt.Errorf("%s: resolved, %d bytes, but no view", what, t.NBytes)
	}
	if t.Data.Len() != t.NBytes || (t.Data.File() != nil && t.Data.Offset() != t.Offset) {
		return fmt.Errorf("%s: view %v, want [%d, +%d)", what, t.Data, t.Offset, t.NBytes)
	}
	check := Segment
	if !full {
		check = segmentBounds
	}
	if err := check(what, t.Data); err != nil {
		return err
	}
	n, err := typedView(t)
	if err != nil {
		return fmt.Errorf("%s: typed view: %w", what, err)
	}
	if n != numel {
		return fmt.Errorf("%s: typed view has %d elements, want %d", what, n, numel)
	}
	return nil
}

// numelOf is format.Numel with no bound but int64.
func numelOf(t *format.Tensor) (numel, nbytes int64, ok bool) {
	return format.Numel(t.Shape, t.DType, math.MaxInt64)
}

// typedView reads t's data as the Go type its dtype maps to and returns the
// number of elements. A bool tensor whose bytes are not all 0 or 1 gives an
// error from the view that is accepted here (the file is valid; its data is
// not a bool array) unless it is a fault.
func typedView(t *format.Tensor) (int64, error) {
	s := t.Data
	var n int
	var err error
	switch t.DType {
	case format.Float32:
		var v []float32
		v, _, err = s.Float32()
		n = len(v)
	case format.Float64:
		var v []float64
		v, _, err = s.Float64()
		n = len(v)
	case format.Float16, format.BFloat16, format.Uint16, format.Bits16:
		var v []uint16
		v, _, err = s.Uint16()
		n = len(v)
	case format.Int8, format.QInt8:
		var v []int8
		v, _, err = s.Int8()
		n = len(v)
	case format.Int16:
		var v []int16
		v, _, err = s.Int16()
		n = len(v)
	case format.Int32, format.QInt32:
		var v []int32
		v, _, err = s.Int32()
		n = len(v)
	case format.Int64:
		var v []int64
		v, _, err = s.Int64()
		n = len(v)
	case format.Uint32:
		var v []uint32
		v, _, err = s.Uint32()
		n = len(v)
	case format.Uint64:
		var v []uint64
		v, _, err = s.Uint64()
		n = len(v)
	case format.Bool:
		var v []bool
		v, _, err = s.Bool()
		n = len(v)
		if err != nil && !errors.Is(err, format.ErrTruncated) {
			return t.NBytes, nil // not a fault: the bytes are not 0/1
		}
	default: // uint8, quint8, quint4x2, quint2x4, float8 variants
		var v []uint8
		v, _, err = s.Uint8()
		n = len(v)
	}
	if err != nil {
		return 0, err
	}
	if s.Len() == 0 {
		// a zero-length view yields nil; numel may still be 0 only
		return 0, nil
	}
	return int64(n), nil
}

// NamedData checks a named-data entry's view.
func NamedData(nd format.NamedData, nseg int) error {
	what := fmt.Sprintf("named data %q", nd.Key)
	if nd.Segment < 0 || nd.Segment >= nseg {
		return fmt.Errorf("%s: segment %d of %d", what, nd.Segment, nseg)
	}
	return Segment(what, nd.Data)
}

// PTE exercises every accessor and view of an opened program: header,
// program data, segments, methods (by name, and every value through
// TensorAt), tensors (by name, typed views), named data (by key) and
// delegates.
func PTE(p *pte.Program) error {
	size := p.FileSize()
	h := p.Header()
	if h.ProgramSize <= 0 || h.ProgramSize > size || h.SegmentBase < 0 || h.SegmentBase > size {
		return fmt.Errorf("pte: header %+v for a %d-byte file", h, size)
	}
	_, _, _ = p.Name(), p.Version(), p.Legacy()
	if p.MappedFile() == nil || p.MappedFile().Len() != size {
		return errors.New("pte: MappedFile")
	}
	// The views from the records, before anything else can build the
	// tensor list; checked against the list below.
	data := make([]segment.Segment, p.NumTensors())
	for i := range data {
		data[i] = p.TensorData(i)
		// read through every path below, in the tensor list
		if err := segmentBounds("tensor data", data[i]); err != nil {
			return err
		}
	}
	if err := Segment("program data", p.ProgramData()); err != nil {
		return err
	}
	if p.ProgramData().Len() != h.ProgramSize {
		return fmt.Errorf("pte: program data of %d bytes, header says %d", p.ProgramData().Len(), h.ProgramSize)
	}
	for i, s := range p.Segments() {
		if err := Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return err
		}
		if s.Len() > 0 && s.Offset() < h.SegmentBase {
			return fmt.Errorf("pte: segment %d %v before the segment base %d", i, s, h.SegmentBase)
		}
	}
	for mi := range p.Methods() {
		m := &p.Methods()[mi]
		if mm, ok := p.Method(m.Name); !ok || mm.Name != m.Name {
			return fmt.Errorf("pte: Method(%q) not found", m.Name)
		}
		nv := m.NumValues()
		for _, x := range m.Inputs {
			if x < 0 || int(x) >= nv {
				return fmt.Errorf("pte: method %q input %d of %d values", m.Name, x, nv)
			}
		}
		for _, x := range m.Outputs {
			if x < 0 || int(x) >= nv {
				return fmt.Errorf("pte: method %q output %d of %d values", m.Name, x, nv)
			}
		}
		if _, err := m.Value(nv); err == nil {
			return fmt.Errorf("pte: method %q: Value(%d) of %d values did not fail", m.Name, nv, nv)
		}
		for v := 0; v < nv; v++ {
			val, err := m.Value(v)
			if err != nil {
				return fmt.Errorf("pte: method %q value %d: %w", m.Name, v, err)
			}
			_ = val.Kind.String()
			if val.Tensor != nil {
				if _, _, ok := format.Numel(val.Tensor.Sizes, val.Tensor.DType, 1<<62); !ok && val.Tensor.Location != format.LocExternal && val.Tensor.Location != format.LocNone {
					return fmt.Errorf("pte: method %q value %d: sizes %v", m.Name, v, val.Tensor.Sizes)
				}
			}
			for _, it := range val.Items {
				if it < -1 || int(it) >= nv {
					return fmt.Errorf("pte: method %q value %d list item %d out of range", m.Name, v, it)
				}
			}
			tt, ok := p.TensorAt(m.Name, v)
			want := val.Tensor != nil && val.Tensor.Tensor >= 0
			if ok != want {
				return fmt.Errorf("pte: TensorAt(%q, %d) = %v, value %+v", m.Name, v, ok, val)
			}
			if (val.Kind == pte.KindTensor) != (val.Tensor != nil) {
				return fmt.Errorf("pte: method %q value %d: kind %v, tensor %v", m.Name, v, val.Kind, val.Tensor)
			}
			if ok {
				if tt.Method != m.Name || tt.Value != v || &p.Tensors()[val.Tensor.Tensor] != tt {
					return fmt.Errorf("pte: TensorAt(%q, %d) returned %s/%d", m.Name, v, tt.Method, tt.Value)
				}
				if tt.DType != val.Tensor.DType || tt.ScalarType != val.Tensor.ScalarType {
					return fmt.Errorf("pte: tensor %q disagrees with its value", tt.Name)
				}
			}
		}
		if _, ok := p.TensorAt(m.Name, nv); ok {
			return fmt.Errorf("pte: TensorAt past the values of %q", m.Name)
		}
		for _, d := range m.Delegates {
			if d < 0 || d >= len(p.Delegates()) || p.Delegates()[d].Method != m.Name {
				return fmt.Errorf("pte: method %q delegate index %d", m.Name, d)
			}
		}
	}
	if len(p.Tensors()) != len(data) {
		return fmt.Errorf("pte: %d tensors, NumTensors %d", len(p.Tensors()), len(data))
	}
	for i := range p.Tensors() {
		tt := &p.Tensors()[i]
		if g, ok := p.Tensor(tt.Name); !ok || g.Name != tt.Name {
			return fmt.Errorf("pte: Tensor(%q) not found", tt.Name)
		}
		if d := p.TensorData(i); !sameView(d, tt.Data) || !sameView(data[i], tt.Data) && tt.Location != format.LocExternal {
			return fmt.Errorf("pte: tensor %q: TensorData [%d, +%d), before the list [%d, +%d), Data [%d, +%d)",
				tt.Name, d.Offset(), d.Len(), data[i].Offset(), data[i].Len(), tt.Data.Offset(), tt.Data.Len())
		}
		if mm, ok := p.Method(tt.Method); !ok || tt.Value < 0 || tt.Value >= mm.NumValues() {
			return fmt.Errorf("pte: tensor %q of method %q value %d", tt.Name, tt.Method, tt.Value)
		}
		if tt.Segment >= len(p.Segments()) {
			return fmt.Errorf("pte: tensor %q segment %d of %d", tt.Name, tt.Segment, len(p.Segments()))
		}
		if err := tensor(&tt.Tensor, i < fullViews); err != nil {
			return fmt.Errorf("pte: %w", err)
		}
		if tt.Location != format.LocExternal && tt.Location != format.LocNone && (tt.Data.File() != p.MappedFile() && tt.NBytes > 0) {
			return fmt.Errorf("pte: tensor %q views another file", tt.Name)
		}
	}
	for _, nd := range p.NamedData() {
		e, ok := p.NamedDataByKey(nd.Key)
		if !ok || e.Key != nd.Key {
			return fmt.Errorf("pte: NamedDataByKey(%q) = %v", nd.Key, ok)
		}
		if err := NamedData(nd, len(p.Segments())); err != nil {
			return fmt.Errorf("pte: %w", err)
		}
	}
	for i, d := range p.Delegates() {
		_ = d.Location.String()
		if d.Location == pte.DelegateSegment && (d.SegmentIndex < 0 || d.SegmentIndex >= len(p.Segments())) {
			return fmt.Errorf("pte: delegate %d (%s): segment %d of %d", i, d.ID, d.SegmentIndex, len(p.Segments()))
		}
		if err := Segment(fmt.Sprintf("delegate %d (%s)", i, d.ID), d.Data); err != nil {
			return err
		}
	}
	total, unresolved := p.External()
	if unresolved < 0 || unresolved > total {
		return fmt.Errorf("pte: External() = %d, %d", total, unresolved)
	}
	return nil
}

// PTD exercises every accessor and view of an opened .ptd file: header,
// segments, named data (by key), tensors (by key, typed views).
func PTD(f *ptd.File) error {
	size := f.Size()
	h := f.Header()
	if h.FlatBufferLen() > size || h.Length < ptd.MinHeaderLength {
		return fmt.Errorf("ptd: header %+v accepted for a %d-byte file", h, size)
	}
	_, _, _, _ = f.Legacy(), f.Name(), f.Version(), f.TensorAlignment()
	if f.MappedFile() == nil || f.MappedFile().Len() != size {
		return errors.New("ptd: MappedFile/Size")
	}
	for i, s := range f.Segments() {
		if err := Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		if s.Offset() < int64(h.SegmentBaseOffset) {
			return fmt.Errorf("ptd: segment %d %v before the segment base %d", i, s, h.SegmentBaseOffset)
		}
	}
	check := func(e ptd.NamedData) error {
		if err := NamedData(e.NamedData, len(f.Segments())); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		if e.Layout != nil && (e.Layout.NBytes() > e.Data.Len() || !e.Layout.DType.Valid()) {
			return fmt.Errorf("ptd: %q: layout of %d bytes over %d", e.Key, e.Layout.NBytes(), e.Data.Len())
		}
		g, ok := f.Lookup(e.Key)
		if !ok || g.Key != e.Key {
			return fmt.Errorf("ptd: Lookup(%q) = %q, %v", e.Key, g.Key, ok)
		}
		return nil
	}
	for _, e := range f.NamedData() {
		if err := check(e); err != nil {
			return err
		}
	}
	for i := range f.Tensors() {
		tt := &f.Tensors()[i]
		if tt.Location != format.LocSegment {
			return fmt.Errorf("ptd: tensor %q location %v", tt.Name, tt.Location)
		}
		if err := Tensor(tt); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		e, ok := f.Lookup(tt.Name)
		if !ok || e.Layout == nil {
			return fmt.Errorf("ptd: tensor %q not found by Lookup", tt.Name)
		}
		if err := check(e); err != nil {
			return err
		}
	}
	return nil
}

// RTen exercises every accessor and view of an opened RTen model: header,
// metadata, warnings, segments, every graph and node (subgraphs included),
// constants (by name, typed views).
func RTen(m *rten.Model) error {
	size := m.File().Len()
	h := m.Header()
	switch h.Version {
	case 1:
		if h.ModelOffset != 0 || h.ModelLen != size || len(m.Segments()) != 0 {
			return fmt.Errorf("rten: V1 header %+v, %d segments, file %d", h, len(m.Segments()), size)
		}
	case 2:
		if h.ModelOffset < rten.HeaderSize || h.ModelLen > size-h.ModelOffset ||
			h.TensorDataOffset < h.ModelOffset+h.ModelLen || h.TensorDataOffset > size {
			return fmt.Errorf("rten: V2 header %+v outside a %d-byte file", h, size)
		}
		if s := m.Segments(); len(s) != 1 || s[0].Offset() != h.TensorDataOffset || s[0].Offset()+s[0].Len() != size {
			return fmt.Errorf("rten: segments %v for header %+v, file %d", s, h, size)
		}
	default:
		return fmt.Errorf("rten: version %d", h.Version)
	}
	for i, s := range m.Segments() {
		if err := Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return fmt.Errorf("rten: %w", err)
		}
	}
	_ = m.Metadata()
	_ = m.Warnings()
	consts := m.Constants()
	var bad error
	graphs := 0
	m.Graph().Walk(func(g *rten.Graph) bool {
		graphs++
		if graphs > 1<<20 {
			bad = errors.New("rten: Walk visits more than 2^20 graphs")
			return false
		}
		n := len(g.Nodes)
		for _, list := range [][]uint32{g.Inputs, g.Outputs, g.Captures} {
			for _, v := range list {
				if int64(v) >= int64(n) {
					bad = fmt.Errorf("rten: graph %s refers to node %d of %d", g.Path, v, n)
					return false
				}
			}
		}
		for i := range g.Nodes {
			nd := &g.Nodes[i]
			_ = nd.Kind.String()
			switch nd.Kind {
			case rten.KindOperator:
				if nd.Op == nil || nd.Constant != nil || nd.Value != nil {
					bad = fmt.Errorf("rten: operator node %s/%d has wrong content", g.Path, i)
					return false
				}
				_ = nd.Op.Type.String()
				_ = nd.Op.Type.Known()
				for _, list := range [][]int32{nd.Op.Inputs, nd.Op.Outputs} {
					for _, v := range list {
						if v >= 0 && int64(v) >= int64(n) {
							bad = fmt.Errorf("rten: operator %s/%d refers to node %d of %d", g.Path, i, v, n)
							return false
						}
					}
				}
				for _, s := range nd.Op.Subgraphs {
					if s.Graph == nil || s.Attr == "" {
						bad = fmt.Errorf("rten: operator %s/%d has an empty subgraph", g.Path, i)
						return false
					}
				}
			case rten.KindConstant:
				c := nd.Constant
				if c == nil || c.Node != i || len(consts) == 0 {
					bad = fmt.Errorf("rten: constant node %s/%d has no constant", g.Path, i)
					return false
				}
				if k, ok := m.Constant(c.Name); !ok || k.Name != c.Name {
					bad = fmt.Errorf("rten: Constant(%q) not found", c.Name)
					return false
				}
			case rten.KindValue:
				if nd.Value == nil {
					bad = fmt.Errorf("rten: value node %s/%d without a value", g.Path, i)
					return false
				}
				for _, d := range nd.Value.Shape {
					_ = d.String()
				}
				_ = nd.Value.DType.String()
			default:
				bad = fmt.Errorf("rten: node %s/%d of kind %v", g.Path, i, nd.Kind)
				return false
			}
		}
		return true
	})
	if bad != nil {
		return bad
	}
	if len(m.Tensors()) != len(consts) {
		return fmt.Errorf("rten: %d tensors, %d constants", len(m.Tensors()), len(consts))
	}
	for i := range consts {
		c := &consts[i]
		if got, ok := m.Constant(c.Name); !ok || got.Name != c.Name {
			return fmt.Errorf("rten: Constant(%q) not found", c.Name)
		}
		t := &m.Tensors()[i]
		if t.Name != c.Name || t.Offset != c.Offset || t.NBytes != c.NBytes {
			return fmt.Errorf("rten: tensor %d differs from its constant", i)
		}
		switch c.Location {
		case format.LocNone:
			if c.Offset != -1 || c.Data.Len() != 0 {
				return fmt.Errorf("rten: constant %q without data has offset %d", c.Name, c.Offset)
			}
			continue
		case format.LocSegment:
			if !c.External() || c.Offset != h.TensorDataOffset+c.DataOffset {
				return fmt.Errorf("rten: external constant %q at %d, data_offset %d", c.Name, c.Offset, c.DataOffset)
			}
		case format.LocInline:
			if c.External() || c.Offset < h.ModelOffset || c.Offset+c.NBytes > h.ModelOffset+h.ModelLen {
				return fmt.Errorf("rten: inline constant %q at %d+%d outside the model data", c.Name, c.Offset, c.NBytes)
			}
		default:
			return fmt.Errorf("rten: constant %q location %v", c.Name, c.Location)
		}
		if err := Tensor(&c.Tensor); err != nil {
			return fmt.Errorf("rten: %w", err)
		}
	}
	return nil
}

// sameView reports whether a and b are the same range of the same file.
func sameView(a, b segment.Segment) bool {
	return a.File() == b.File() && a.Offset() == b.Offset() && a.Len() == b.Len()
}
