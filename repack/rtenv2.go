package repack

import (
	"encoding/binary"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/rtenattr"
	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/segment"
)

// An RTen V1 model is rewritten as V2 by copying its Model FlatBuffer,
// field by field, into a new one, following a description of the schema
// (fspec, tspec): every field keeps its presence and its bytes, an object
// that several tables share is written once (so the output is never larger
// than the input plus a few bytes per object, whatever the sharing), and
// every ConstantNode with inline data becomes one with a data_offset into
// the tensor data section. A table with a field the description does not
// have (written by a newer converter) is refused rather than dropped.

// fkind is the wire shape of a described field.
type fkind uint8

const (
	fScalar    fkind = iota + 1 // size bytes inline
	fVector                     // vector of 4-byte scalars (every vector described here)
	fString                     // string
	fTable                      // table described by table
	fTableVec                   // vector of tables described by table
	fUnion                      // u8 tag at id, value at id+1; union[tag] describes it
	fConstData                  // ConstantNode.data: handled by the rebuild
)

type fspec struct {
	id    int
	kind  fkind
	size  int // fScalar's
	table *tspec
	union []*tspec
}

type tspec struct {
	name   string
	fields []fspec
	slots  int // field ids in use: max id + 1 (+1 for a union's value)
}

func (t *tspec) set(fs ...fspec) {
	t.fields = fs
	for _, f := range fs {
		n := f.id + 1
		if f.kind == fUnion || f.kind == fConstData {
			n++
		}
		t.slots = max(t.slots, n)
	}
}

var (
	sModel    = &tspec{name: "Model"}
	sGraph    = &tspec{name: "Graph"}
	sNode     = &tspec{name: "Node"}
	sOperator = &tspec{name: "OperatorNode"}
	sConstant = &tspec{name: "ConstantNode"}
	sValue    = &tspec{name: "ValueNode"}
	sDim      = &tspec{name: "Dim"}
	sMetadata = &tspec{name: "Metadata"}
)

func init() {
	scalar := []*tspec{
		rtenfb.ScalarIntScalar:   {name: "IntScalar"},
		rtenfb.ScalarFloatScalar: {name: "FloatScalar"},
	}
	for _, s := range scalar[1:] {
		s.set(fspec{id: 0, kind: fScalar, size: 4})
	}
	attrs := make([]*tspec, len(rtenfb.EnumNamesOperatorAttrs))
	for tag, name := range rtenfb.EnumNamesOperatorAttrs {
		if tag == rtenfb.OperatorAttrsNONE || int(tag) >= len(attrs) {
			continue
		}
		t := &tspec{name: name}
		var fs []fspec
		id := 0
		for _, k := range rtenattr.Fields[tag] {
			f := fspec{id: id}
			switch k {
			case "1", "4":
				f.kind, f.size = fScalar, int(k[0]-'0')
			case "[4]":
				f.kind = fVector
			case "s":
				f.kind = fString
			case "u":
				f.kind, f.union = fUnion, scalar
				id++
			case "g":
				f.kind, f.table = fTable, sGraph
			}
			fs = append(fs, f)
			id++
		}
		t.set(fs...)
		attrs[tag] = t
	}
	sModel.set(
		fspec{id: 0, kind: fScalar, size: 4},
		fspec{id: 1, kind: fTable, table: sGraph},
		fspec{id: 2, kind: fTable, table: sMetadata},
	)
	sGraph.set(
		fspec{id: 0, kind: fTableVec, table: sNode},
		fspec{id: 1, kind: fVector},
		fspec{id: 2, kind: fVector},
		fspec{id: 3, kind: fVector},
	)
	kinds := make([]*tspec, int(rtenfb.NodeKindValueNode)+1)
	kinds[rtenfb.NodeKindOperatorNode] = sOperator
	kinds[rtenfb.NodeKindConstantNode] = sConstant
	kinds[rtenfb.NodeKindValueNode] = sValue
	sNode.set(
		fspec{id: 0, kind: fString},
		fspec{id: 1, kind: fUnion, union: kinds},
	)
	sOperator.set(
		fspec{id: 0, kind: fScalar, size: 1},
		fspec{id: 1, kind: fUnion, union: attrs},
		fspec{id: 3, kind: fVector},
		fspec{id: 4, kind: fVector},
	)
	sConstant.set(
		fspec{id: 0, kind: fVector},
		fspec{id: 1, kind: fConstData},
		fspec{id: 3, kind: fScalar, size: 2},
		fspec{id: 4, kind: fScalar, size: 8},
	)
	sValue.set(
		fspec{id: 0, kind: fTableVec, table: sDim},
		fspec{id: 1, kind: fScalar, size: 1},
	)
	sDim.set(
		fspec{id: 0, kind: fScalar, size: 4},
		fspec{id: 1, kind: fString},
	)
	meta := make([]fspec, 8)
	for i := range meta {
		meta[i] = fspec{id: i, kind: fString}
	}
	sMetadata.set(meta...)
}

// Field ids of ConstantNode.
const (
	idConstShape      = 0
	idConstDataType   = 1
	idConstData       = 2
	idConstDType      = 3
	idConstDataOffset = 4
)

// inlineKinds maps a ConstantData tag to its element size and the
// ConstantDataType a V2 constant declares.
var inlineKinds = map[rtenfb.ConstantData]struct {
	elem  int64
	dtype rtenfb.ConstantDataType
}{
	rtenfb.ConstantDataFloatData: {4, rtenfb.ConstantDataTypeFloat32},
	rtenfb.ConstantDataInt32Data: {4, rtenfb.ConstantDataTypeInt32},
	rtenfb.ConstantDataInt8Data:  {1, rtenfb.ConstantDataTypeInt8},
	rtenfb.ConstantDataUInt8Data: {1, rtenfb.ConstantDataTypeUInt8},
}

// memoKey names an object of the input already written: its kind, its
// table description (tables and vectors of tables) and its position.
type memoKey struct {
	kind fkind
	spec *tspec
	pos  int64
}

// v2build rebuilds a verified V1 Model FlatBuffer.
type v2build struct {
	b      *flatbuffers.Builder
	fb     []byte
	region segment.Segment // the FlatBuffer in the file, for the inline data
	talign int64           // tensor alignment in the data section
	size   int64           // data section size so far
	pieces []piece
	memo   map[memoKey]flatbuffers.UOffsetT
}

// rebuildV1 rewrites the verified V1 Model FlatBuffer at region in the file
// with every inline constant moved to a data section whose tensors start on
// talign boundaries. It returns the new FlatBuffer, the pieces of the data
// section (relative to its start) and its size.
func rebuildV1(region segment.Segment, talign int64) (out []byte, pieces []piece, size int64, err error) {
	fb, err := region.Bytes()
	if err != nil {
		return nil, nil, 0, err
	}
	w := &v2build{
		b:      flatbuffers.NewBuilder(min(len(fb), 1<<20)),
		fb:     fb,
		region: region,
		talign: talign,
		memo:   map[memoKey]flatbuffers.UOffsetT{},
	}
	err = unpackSafeErr("Model", func() error {
		if len(fb) < 4 {
			return fmt.Errorf("repack: RTen Model FlatBuffer of %d bytes", len(fb))
		}
		root := int64(binary.LittleEndian.Uint32(fb))
		off, err := w.table(sModel, root)
		if err != nil {
			return err
		}
		w.b.Finish(off)
		return nil
	})
	if err != nil {
		return nil, nil, 0, err
	}
	return w.b.FinishedBytes(), w.pieces, w.size, nil
}

// table copies the table at tab described by s.
func (w *v2build) table(s *tspec, tab int64) (flatbuffers.UOffsetT, error) {
	key := memoKey{fTable, s, tab}
	if off, ok := w.memo[key]; ok {
		return off, nil
	}
	if id := fbMaxField(w.fb, tab); id >= s.slots {
		return 0, fmt.Errorf("repack: RTen %s at %d has field %d, which this rewrite does not know and would drop", s.name, tab, id)
	}
	// Children first: a FlatBuffer is built bottom-up.
	type slot struct {
		f   fspec
		pos int64
		off flatbuffers.UOffsetT
		tag byte
	}
	var slots []slot
	// A ConstantNode's moved data; s.fields are in id order, so it is set
	// before the dtype (idConstDType) is reached.
	var cnode *constNode
	for _, f := range s.fields {
		pos := fbField(w.fb, tab, f.id)
		if f.kind == fConstData {
			c, err := w.constData(tab)
			if err != nil {
				return 0, err
			}
			cnode = c
			continue
		}
		if f.kind == fUnion {
			vpos := fbField(w.fb, tab, f.id+1)
			if pos == 0 || vpos == 0 {
				continue
			}
			tag := w.fb[pos]
			if tag == 0 {
				continue
			}
			v, err := fbRef(w.fb, vpos)
			if err != nil {
				return 0, err
			}
			var off flatbuffers.UOffsetT
			if int(tag) < len(f.union) && f.union[tag] != nil {
				off, err = w.table(f.union[tag], v)
			} else {
				off, err = w.table(&tspec{name: fmt.Sprintf("%s union member %d", s.name, tag)}, v)
			}
			if err != nil {
				return 0, err
			}
			slots = append(slots, slot{f: f, pos: vpos, off: off, tag: tag})
			continue
		}
		if pos == 0 {
			continue
		}
		var off flatbuffers.UOffsetT
		var err error
		switch f.kind {
		case fScalar:
			if pos+int64(f.size) > int64(len(w.fb)) {
				return 0, fmt.Errorf("repack: RTen %s: field %d outside the buffer", s.name, f.id)
			}
			if cnode != nil && f.id == idConstDType {
				continue // the inline data's dtype is written below instead
			}
		case fVector:
			off, err = w.vector(pos)
		case fString:
			off, err = w.str(pos)
		case fTable:
			var t int64
			if t, err = fbRef(w.fb, pos); err == nil {
				off, err = w.table(f.table, t)
			}
		case fTableVec:
			off, err = w.tableVec(f.table, pos)
		}
		if err != nil {
			return 0, err
		}
		slots = append(slots, slot{f: f, pos: pos, off: off})
	}

	b := w.b
	b.StartObject(s.slots)
	le := binary.LittleEndian
	for _, sl := range slots {
		f := sl.f
		switch f.kind {
		case fScalar:
			switch f.size {
			case 1:
				b.PrependByte(w.fb[sl.pos])
			case 2:
				b.PrependUint16(le.Uint16(w.fb[sl.pos:]))
			case 4:
				b.PrependUint32(le.Uint32(w.fb[sl.pos:]))
			case 8:
				b.PrependUint64(le.Uint64(w.fb[sl.pos:]))
			}
			b.Slot(f.id)
		case fUnion:
			b.PrependUOffsetT(sl.off)
			b.Slot(f.id + 1)
			b.PrependByte(sl.tag)
			b.Slot(f.id)
		default:
			b.PrependUOffsetT(sl.off)
			b.Slot(f.id)
		}
	}
	if cnode != nil {
		b.PrependUint64(uint64(cnode.dataOffset))
		b.Slot(idConstDataOffset)
		b.PrependUint16(uint16(cnode.dtype))
		b.Slot(idConstDType)
	}
	off := b.EndObject()
	w.memo[key] = off
	return off, nil
}

// constNode is what the rebuild writes for a ConstantNode whose inline data
// moved, beside its copied fields.
type constNode struct {
	dataOffset int64
	dtype      rtenfb.ConstantDataType
}

// constData places a ConstantNode's inline data in the data section. Its
// dtype is the inline data's (FloatData: Float32, ...), which is what a
// reader of the inline constant goes by, whatever the dtype field said. It
// returns nil for a constant without inline data, which is kept as it is.
func (w *v2build) constData(tab int64) (*constNode, error) {
	if fbField(w.fb, tab, idConstDataOffset) != 0 {
		return nil, fmt.Errorf("repack: RTen V1 constant at %d has a data_offset, but V1 has no tensor data section", tab)
	}
	tpos := fbField(w.fb, tab, idConstDataType)
	vpos := fbField(w.fb, tab, idConstData)
	if tpos == 0 || vpos == 0 || w.fb[tpos] == 0 {
		return nil, nil
	}
	kind, ok := inlineKinds[rtenfb.ConstantData(w.fb[tpos])]
	if !ok {
		return nil, fmt.Errorf("repack: RTen constant at %d: unknown data type %d", tab, w.fb[tpos])
	}
	dt, err := fbRef(w.fb, vpos)
	if err != nil {
		return nil, err
	}
	vec := fbField(w.fb, dt, 0)
	if vec == 0 {
		return nil, fmt.Errorf("repack: RTen constant at %d: inline data without its vector", tab)
	}
	start, n, err := fbVector(w.fb, vec, kind.elem)
	if err != nil {
		return nil, fmt.Errorf("repack: RTen constant at %d: %v", tab, err)
	}
	src, err := w.region.Sub(start, n*kind.elem)
	if err != nil {
		return nil, err
	}
	c := &constNode{dataOffset: alignUp(w.size, w.talign), dtype: kind.dtype}
	w.pieces = append(w.pieces, piece{src: src, dst: c.dataOffset})
	w.size = c.dataOffset + src.Len()
	return c, nil
}

// vector copies the vector of 4-byte scalars the offset field at pos points
// to.
func (w *v2build) vector(pos int64) (flatbuffers.UOffsetT, error) {
	start, n, err := fbVector(w.fb, pos, 4)
	if err != nil {
		return 0, err
	}
	key := memoKey{fVector, nil, start}
	if off, ok := w.memo[key]; ok {
		return off, nil
	}
	w.b.StartVector(4, int(n), 4)
	for i := n - 1; i >= 0; i-- {
		w.b.PrependUint32(binary.LittleEndian.Uint32(w.fb[start+4*i:]))
	}
	off := w.b.EndVector(int(n))
	w.memo[key] = off
	return off, nil
}

// str copies the string the offset field at pos points to.
func (w *v2build) str(pos int64) (flatbuffers.UOffsetT, error) {
	start, n, err := fbVector(w.fb, pos, 1)
	if err != nil {
		return 0, err
	}
	key := memoKey{fString, nil, start}
	if off, ok := w.memo[key]; ok {
		return off, nil
	}
	off := w.b.CreateByteString(w.fb[start : start+n])
	w.memo[key] = off
	return off, nil
}

// tableVec copies the vector of s tables the offset field at pos points to.
func (w *v2build) tableVec(s *tspec, pos int64) (flatbuffers.UOffsetT, error) {
	v, err := fbRef(w.fb, pos)
	if err != nil {
		return 0, err
	}
	key := memoKey{fTableVec, s, v}
	if off, ok := w.memo[key]; ok {
		return off, nil
	}
	var offs []flatbuffers.UOffsetT
	err = fbTableVector(w.fb, pos, func(t int64) error {
		off, err := w.table(s, t)
		offs = append(offs, off)
		return err
	})
	if err != nil {
		return 0, err
	}
	w.b.StartVector(4, len(offs), 4)
	for i := len(offs) - 1; i >= 0; i-- {
		w.b.PrependUOffsetT(offs[i])
	}
	off := w.b.EndVector(len(offs))
	w.memo[key] = off
	return off, nil
}
