package writer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
)

// PTE describes an ExecuTorch program (.pte) to write, with the layout
// FORMATS.md §1 gives: the FlatBuffer (with an "eh00" extended header
// inserted after its 8-byte prefix), then the segments in the order
// constant, mutable, delegate, named data.
//
// The zero value of every knob gives what current upstream writes: a
// 32-byte extended header, identifier "ET12", version 0, segments aligned
// to 128 and constant tensors to 16 inside the constant segment, and a
// constant segment (segment 0) even when it is empty. Knobs that make a file
// invalid (identifier, version, out-of-range references, a short data
// size) let tests produce exactly the broken file they need; the writer
// checks only what it must to lay the file out.
type PTE struct {
	Methods   []PTEMethod
	NamedData []PTEBlob
	// HeaderLength is the extended header's length field: 24 (files
	// before Sept 2025, no segment_data_size), 32 (0 means 32) or more
	// (later fields zero).
	HeaderLength uint32
	// NoHeader writes no extended header (program_size is then the file
	// size). Only possible when the segments hold no bytes.
	NoHeader bool
	// SegmentAlignment aligns segment_base_offset and every segment
	// (0 means 128; 4096 and 16384 occur).
	SegmentAlignment int64
	// TensorAlignment aligns each constant (and mutable) tensor inside its
	// segment (0 means 16).
	TensorAlignment int64
	// Legacy keeps constants inline in Program.constant_buffer (the 2023-2024
	// layout) instead of a constant segment.
	Legacy bool
	// Version is Program.version.
	Version uint32
	// Identifier overrides the file identifier ("ET12"), e.g. "ET13" or
	// "BP08".
	Identifier string
	// SegmentDataSize, when non-zero, overrides the header's
	// segment_data_size.
	SegmentDataSize uint64
}

// PTEMethod is an execution plan. Its values are Tensors (value i =
// Tensors[i]) followed by Values.
type PTEMethod struct {
	Name    string
	Tensors []PTETensor
	Values  []PTEValue
	// Inputs and Outputs are value indices, written as given.
	Inputs, Outputs []int32
	// Operators are operator names (overload "default").
	Operators []string
	Delegates []PTEDelegate
	// Instructions form the plan's single chain. nil writes one
	// DelegateCall per delegate and one KernelCall per operator, each with
	// the plan's inputs and outputs as arguments.
	Instructions []PTEInstruction
	// MoreChains are chains written after the first (Instructions), each
	// with the plan's inputs and outputs.
	MoreChains [][]PTEInstruction
	// NonConstBufferSizes is written as given.
	NonConstBufferSizes []int64
	// EncodedInputs and EncodedOutputs, when set, are written as the
	// container metadata.
	EncodedInputs, EncodedOutputs string
}

// PTETensorKind says where a tensor's data lives.
type PTETensorKind uint8

// The kinds of tensors.
const (
	// PTEConstant: data in the constant segment (or, Legacy, inline).
	PTEConstant PTETensorKind = iota
	// PTEMutable: initial data in mutable_data_segments[0], memory planned.
	PTEMutable
	// PTEExternal: data in a .ptd, found by Name.
	PTEExternal
	// PTEPlanned: a memory-planned tensor without data (an activation).
	PTEPlanned
)

// PTETensor is a tensor value.
type PTETensor struct {
	Kind PTETensorKind
	// ScalarType is the raw ExecuTorch ScalarType code (PTEFloat32 = 6),
	// so that tests can write reserved or unknown codes.
	ScalarType int8
	Sizes      []int32
	// DimOrder is written as given; nil writes 0..n-1, and NoDimOrder
	// leaves the field out.
	DimOrder   []uint8
	NoDimOrder bool
	// Name is the fully-qualified name (extra_tensor_info); required for
	// PTEExternal.
	Name         string
	RequiresGrad bool
	// Size is the byte count reserved for the data (0 means len(Data) when
	// Data is set, else numel × element size).
	Size int64
	// Data holds the bytes. When it is nil, Fill writes them; when Fill is
	// nil too, the range is a sparse hole that reads as zeros.
	Data []byte
	// Fill, when Data is nil, is called with consecutive chunks of the
	// tensor's bytes (off is the offset of p[0] inside the tensor).
	Fill func(p []byte, off int64)
	// BufferRef, when > 0, writes data_buffer_idx BufferRef and gives the
	// tensor no data of its own (sharing another tensor's, or out of
	// range).
	BufferRef uint32
}

// PTEValue is a non-tensor value. Kind is the KernelTypes tag (PTEInt,
// PTEIntList, ...); only the fields of that kind are written.
type PTEValue struct {
	Kind    uint8
	Int     int64
	Bool    bool
	Double  float64
	String  string
	Ints    []int64
	Doubles []float64
	Bools   []bool
	Items   []int32 // TensorList and OptionalTensorList
}

// KernelTypes tags for PTEValue.Kind.
const (
	PTENull               uint8 = 1
	PTEInt                uint8 = 2
	PTEBool               uint8 = 3
	PTEDouble             uint8 = 4
	PTEString             uint8 = 6
	PTEIntList            uint8 = 7
	PTEDoubleList         uint8 = 8
	PTEBoolList           uint8 = 9
	PTETensorList         uint8 = 10
	PTEOptionalTensorList uint8 = 11
)

// PTEInstruction is an instruction. Kind is the InstructionArguments tag;
// A and B are its two integer fields (op_index/delegate_index and unused;
// move_from and move_to; cond_value_index and destination_instruction;
// value_index and unused).
type PTEInstruction struct {
	Kind uint8
	A, B int32
	Args []int32
}

// InstructionArguments tags for PTEInstruction.Kind.
const (
	PTEKernelCall    uint8 = 1
	PTEDelegateCall  uint8 = 2
	PTEMoveCall      uint8 = 3
	PTEJumpFalseCall uint8 = 4
	PTEFreeCall      uint8 = 5
)

// PTEDelegate is a backend delegate.
type PTEDelegate struct {
	ID           string
	CompileSpecs []PTECompileSpec
	// Inline puts the processed blob in backend_delegate_data instead of a
	// segment.
	Inline bool
	// Blob is the processed data.
	Blob PTEBlob
}

// PTECompileSpec is a compile spec.
type PTECompileSpec struct {
	Key   string
	Value []byte
}

// PTEBlob is a byte blob: a named-data entry (Key) or a delegate's
// processed data.
type PTEBlob struct {
	Key string // named data only
	// Size is the blob's size (0 means len(Data)).
	Size int64
	// Data, Fill and holes as for PTETensor.
	Data []byte
	Fill func(p []byte, off int64)
	// Ref, when > 0, writes index Ref-1 (segment index, or inline data
	// index for an inline delegate) and gives the blob no storage of its
	// own (two delegates sharing a segment, or an index out of range).
	Ref int
}

// ExecuTorch ScalarType codes for PTETensor.ScalarType.
const (
	PTEUint8   int8 = 0
	PTEInt8    int8 = 1
	PTEInt16   int8 = 2
	PTEInt32   int8 = 3
	PTEInt64   int8 = 4
	PTEFloat16 int8 = 5
	PTEFloat32 int8 = 6
	PTEFloat64 int8 = 7
	PTEBool8   int8 = 11
	PTEBF16    int8 = 15
)

// NBytes returns the bytes reserved for the tensor's data.
func (t *PTETensor) NBytes() int64 {
	switch {
	case t.Size > 0:
		return t.Size
	case t.Data != nil:
		return int64(len(t.Data))
	}
	n := etElemSize(t.ScalarType)
	for _, s := range t.Sizes {
		if s < 0 {
			return 0
		}
		n *= int64(s)
	}
	return n
}

func (b *PTEBlob) size() int64 {
	if b.Size > 0 || b.Data == nil {
		return b.Size
	}
	return int64(len(b.Data))
}

// PTEPlaced says where a piece of data ended up.
type PTEPlaced struct {
	Offset int64 // absolute file offset; -1 when the piece has no bytes in the file
	Size   int64
}

// PTELayoutInfo describes the file the writer laid out.
type PTELayoutInfo struct {
	HeaderLength    uint32 // 0 without an extended header
	ProgramSize     int64
	SegmentBase     int64
	SegmentDataSize int64
	FileSize        int64
	// Segments are the absolute offset and size of each segment.
	Segments [][2]int64
	// Tensors[m][i] is where method m's tensor i went.
	Tensors [][]PTEPlaced
	// Delegates[m][i] is where method m's delegate i went.
	Delegates [][]PTEPlaced
	// NamedData[i] is where named data entry i went.
	NamedData []PTEPlaced
}

// ptePiece is a run of bytes to write at an absolute offset.
type ptePiece struct {
	off, size int64
	data      []byte
	fill      func(p []byte, off int64)
}

type ptePlan struct {
	head   []byte
	pieces []ptePiece
	info   PTELayoutInfo
}

func pteAlignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// Plan lays the file out without writing it.
func (p *PTE) Plan() (PTELayoutInfo, error) {
	pl, err := p.plan()
	if err != nil {
		return PTELayoutInfo{}, err
	}
	return pl.info, nil
}

// pteSeg is a segment relative to the segment base, and what fills it.
type pteSeg struct {
	off, size int64
	pieces    []ptePiece // offsets relative to the segment
}

func (p *PTE) plan() (*ptePlan, error) {
	salign, talign := p.SegmentAlignment, p.TensorAlignment
	if salign == 0 {
		salign = 128
	}
	if talign == 0 {
		talign = 16
	}
	if salign < 1 || talign < 1 {
		return nil, fmt.Errorf("writer: pte alignments %d/%d", salign, talign)
	}
	hlen := p.HeaderLength
	if hlen == 0 {
		hlen = 32
	}
	if !p.NoHeader && hlen < 24 {
		return nil, fmt.Errorf("writer: pte extended header length %d < 24", hlen)
	}
	ident := "ET12"
	if p.Identifier != "" {
		ident = p.Identifier
	}
	if len(ident) != 4 {
		return nil, errors.New("writer: pte identifier must be 4 bytes")
	}

	info := PTELayoutInfo{
		Tensors:   make([][]PTEPlaced, len(p.Methods)),
		Delegates: make([][]PTEPlaced, len(p.Methods)),
		NamedData: make([]PTEPlaced, len(p.NamedData)),
	}
	var segs []pteSeg
	var end int64
	newSeg := func(size int64, pieces []ptePiece) int {
		off := pteAlignUp(end, salign)
		segs = append(segs, pteSeg{off: off, size: size, pieces: pieces})
		end = off + size
		return len(segs) - 1
	}

	// Constant and mutable tensors: data_buffer_idx and their offsets in
	// their segment (or inline storage).
	type tref struct {
		idx uint32
		off int64 // offset inside the segment, or -1
	}
	trefs := make([][]tref, len(p.Methods))
	constOffsets := []uint64{0}
	mutOffsets := []uint64{0}
	var constPieces, mutPieces []ptePiece
	var legacy [][]byte // constant_buffer storage, [0] = placeholder
	if p.Legacy {
		legacy = [][]byte{nil}
	}
	var cend, mend int64
	for m := range p.Methods {
		pm := &p.Methods[m]
		trefs[m] = make([]tref, len(pm.Tensors))
		info.Tensors[m] = make([]PTEPlaced, len(pm.Tensors))
		for i := range pm.Tensors {
			t := &pm.Tensors[i]
			n := t.NBytes()
			if t.Data != nil && int64(len(t.Data)) > n {
				return nil, fmt.Errorf("writer: pte tensor %s/%d: %d data bytes for %d", pm.Name, i, len(t.Data), n)
			}
			info.Tensors[m][i] = PTEPlaced{Offset: -1, Size: n}
			trefs[m][i] = tref{off: -1}
			if t.BufferRef > 0 {
				trefs[m][i].idx = t.BufferRef
				continue
			}
			switch t.Kind {
			case PTEConstant:
				if p.Legacy {
					buf := make([]byte, n)
					switch {
					case t.Data != nil:
						copy(buf, t.Data)
					case t.Fill != nil:
						t.Fill(buf, 0)
					}
					trefs[m][i].idx = uint32(len(legacy))
					legacy = append(legacy, buf)
					continue
				}
				cend = pteAlignUp(cend, talign)
				trefs[m][i] = tref{idx: uint32(len(constOffsets)), off: cend}
				constOffsets = append(constOffsets, uint64(cend))
				constPieces = append(constPieces, ptePiece{off: cend, size: n, data: t.Data, fill: t.Fill})
				cend += n
			case PTEMutable:
				mend = pteAlignUp(mend, talign)
				trefs[m][i] = tref{idx: uint32(len(mutOffsets)), off: mend}
				mutOffsets = append(mutOffsets, uint64(mend))
				mutPieces = append(mutPieces, ptePiece{off: mend, size: n, data: t.Data, fill: t.Fill})
				mend += n
			}
		}
	}
	constSeg, mutSeg := -1, -1
	if !p.Legacy {
		constSeg = newSeg(cend, constPieces)
	}
	if len(mutOffsets) > 1 {
		mutSeg = newSeg(mend, mutPieces)
	}
	// Delegates.
	type dref struct {
		inline bool
		index  uint32
	}
	drefs := make([][]dref, len(p.Methods))
	var inlineData [][]byte
	for m := range p.Methods {
		pm := &p.Methods[m]
		drefs[m] = make([]dref, len(pm.Delegates))
		info.Delegates[m] = make([]PTEPlaced, len(pm.Delegates))
		for i := range pm.Delegates {
			d := &pm.Delegates[i]
			n := d.Blob.size()
			info.Delegates[m][i] = PTEPlaced{Offset: -1, Size: n}
			drefs[m][i].inline = d.Inline
			if d.Blob.Ref > 0 {
				drefs[m][i].index = uint32(d.Blob.Ref - 1)
				continue
			}
			if d.Inline {
				buf := make([]byte, n)
				switch {
				case d.Blob.Data != nil:
					copy(buf, d.Blob.Data)
				case d.Blob.Fill != nil:
					d.Blob.Fill(buf, 0)
				}
				drefs[m][i].index = uint32(len(inlineData))
				inlineData = append(inlineData, buf)
				continue
			}
			s := newSeg(n, []ptePiece{{size: n, data: d.Blob.Data, fill: d.Blob.Fill}})
			drefs[m][i].index = uint32(s)
		}
	}
	// Named data.
	ndIndex := make([]uint32, len(p.NamedData))
	for i := range p.NamedData {
		e := &p.NamedData[i]
		n := e.size()
		info.NamedData[i] = PTEPlaced{Offset: -1, Size: n}
		if e.Ref > 0 {
			ndIndex[i] = uint32(e.Ref - 1)
			continue
		}
		ndIndex[i] = uint32(newSeg(n, []ptePiece{{size: n, data: e.Data, fill: e.Fill}}))
	}
	if p.NoHeader && end > 0 {
		return nil, errors.New("writer: pte NoHeader needs segments without bytes")
	}

	// The FlatBuffer.
	b := flatbuffers.NewBuilder(4096)
	i32vec := func(v []int32) flatbuffers.UOffsetT {
		b.StartVector(4, len(v), 4)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependInt32(v[i])
		}
		return b.EndVector(len(v))
	}
	i64vec := func(v []int64) flatbuffers.UOffsetT {
		b.StartVector(8, len(v), 8)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependInt64(v[i])
		}
		return b.EndVector(len(v))
	}
	u64vec := func(v []uint64) flatbuffers.UOffsetT {
		b.StartVector(8, len(v), 8)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependUint64(v[i])
		}
		return b.EndVector(len(v))
	}
	// bytevec writes a byte vector whose data starts 16-aligned, and
	// returns its offset.
	bytevec := func(v []byte) flatbuffers.UOffsetT {
		b.StartVector(1, len(v), 16)
		for i := len(v) - 1; i >= 0; i-- {
			b.PrependByte(v[i])
		}
		return b.EndVector(len(v))
	}
	tables := func(offs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		return b.EndVector(len(offs))
	}

	plans := make([]flatbuffers.UOffsetT, len(p.Methods))
	for m := range p.Methods {
		pm := &p.Methods[m]
		name := b.CreateString(pm.Name)
		var cmeta flatbuffers.UOffsetT
		if pm.EncodedInputs != "" || pm.EncodedOutputs != "" {
			in, out := b.CreateString(pm.EncodedInputs), b.CreateString(pm.EncodedOutputs)
			ptefb.ContainerMetadataStart(b)
			ptefb.ContainerMetadataAddEncodedInpStr(b, in)
			ptefb.ContainerMetadataAddEncodedOutStr(b, out)
			cmeta = ptefb.ContainerMetadataEnd(b)
		}
		values := make([]flatbuffers.UOffsetT, 0, len(pm.Tensors)+len(pm.Values))
		for i := range pm.Tensors {
			t := &pm.Tensors[i]
			sizes := i32vec(t.Sizes)
			var dims flatbuffers.UOffsetT
			if !t.NoDimOrder {
				d := t.DimOrder
				if d == nil {
					d = make([]uint8, len(t.Sizes))
					for k := range d {
						d[k] = uint8(k)
					}
				}
				dims = b.CreateByteVector(d)
			}
			var eti flatbuffers.UOffsetT
			if t.Name != "" || t.Kind == PTEExternal {
				fqn := b.CreateString(t.Name)
				ptefb.ExtraTensorInfoStart(b)
				ptefb.ExtraTensorInfoAddFullyQualifiedName(b, fqn)
				if t.Kind == PTEExternal {
					ptefb.ExtraTensorInfoAddLocation(b, 1)
				}
				eti = ptefb.ExtraTensorInfoEnd(b)
			}
			var alloc flatbuffers.UOffsetT
			if t.Kind == PTEMutable || t.Kind == PTEPlanned {
				ptefb.AllocationDetailsStart(b)
				ptefb.AllocationDetailsAddMemoryId(b, 1)
				ptefb.AllocationDetailsAddMemoryOffsetLow(b, uint32(i*64))
				alloc = ptefb.AllocationDetailsEnd(b)
			}
			ptefb.TensorStart(b)
			ptefb.TensorAddScalarType(b, t.ScalarType)
			ptefb.TensorAddSizes(b, sizes)
			if dims != 0 {
				ptefb.TensorAddDimOrder(b, dims)
			}
			ptefb.TensorAddRequiresGrad(b, t.RequiresGrad)
			ptefb.TensorAddDataBufferIdx(b, trefs[m][i].idx)
			if alloc != 0 {
				ptefb.TensorAddAllocationInfo(b, alloc)
			}
			if eti != 0 {
				ptefb.TensorAddExtraTensorInfo(b, eti)
			}
			tv := ptefb.TensorEnd(b)
			ptefb.EValueStart(b)
			ptefb.EValueAddValType(b, ptefb.KernelTypesTensor)
			ptefb.EValueAddVal(b, tv)
			values = append(values, ptefb.EValueEnd(b))
		}
		for i := range pm.Values {
			values = append(values, pteValue(b, &pm.Values[i], i32vec, i64vec))
		}
		vals := tables(values)
		inputs, outputs := i32vec(pm.Inputs), i32vec(pm.Outputs)

		ops := make([]flatbuffers.UOffsetT, len(pm.Operators))
		for i, o := range pm.Operators {
			nm, ov := b.CreateString(o), b.CreateString("default")
			ptefb.OperatorStart(b)
			ptefb.OperatorAddName(b, nm)
			ptefb.OperatorAddOverload(b, ov)
			ops[i] = ptefb.OperatorEnd(b)
		}
		opsVec := tables(ops)

		dels := make([]flatbuffers.UOffsetT, len(pm.Delegates))
		for i := range pm.Delegates {
			d := &pm.Delegates[i]
			id := b.CreateString(d.ID)
			specs := make([]flatbuffers.UOffsetT, len(d.CompileSpecs))
			for k, cs := range d.CompileSpecs {
				key, val := b.CreateString(cs.Key), b.CreateByteVector(cs.Value)
				ptefb.CompileSpecStart(b)
				ptefb.CompileSpecAddKey(b, key)
				ptefb.CompileSpecAddValue(b, val)
				specs[k] = ptefb.CompileSpecEnd(b)
			}
			specVec := tables(specs)
			ptefb.BackendDelegateDataReferenceStart(b)
			if !drefs[m][i].inline {
				ptefb.BackendDelegateDataReferenceAddLocation(b, 1)
			}
			ptefb.BackendDelegateDataReferenceAddIndex(b, drefs[m][i].index)
			ref := ptefb.BackendDelegateDataReferenceEnd(b)
			ptefb.BackendDelegateStart(b)
			ptefb.BackendDelegateAddId(b, id)
			ptefb.BackendDelegateAddProcessed(b, ref)
			ptefb.BackendDelegateAddCompileSpecs(b, specVec)
			dels[i] = ptefb.BackendDelegateEnd(b)
		}
		delVec := tables(dels)

		instrs := pm.Instructions
		if instrs == nil {
			args := append(append([]int32(nil), pm.Inputs...), pm.Outputs...)
			for i := range pm.Delegates {
				instrs = append(instrs, PTEInstruction{Kind: PTEDelegateCall, A: int32(i), Args: args})
			}
			for i := range pm.Operators {
				instrs = append(instrs, PTEInstruction{Kind: PTEKernelCall, A: int32(i), Args: args})
			}
		}
		chainTabs := make([]flatbuffers.UOffsetT, 0, 1+len(pm.MoreChains))
		for _, instrs := range append([][]PTEInstruction{instrs}, pm.MoreChains...) {
			ins := make([]flatbuffers.UOffsetT, len(instrs))
			for i := range instrs {
				ins[i] = pteInstruction(b, &instrs[i], i32vec)
			}
			insVec := tables(ins)
			cin, cout := i32vec(pm.Inputs), i32vec(pm.Outputs)
			ptefb.ChainStart(b)
			ptefb.ChainAddInputs(b, cin)
			ptefb.ChainAddOutputs(b, cout)
			ptefb.ChainAddInstructions(b, insVec)
			chainTabs = append(chainTabs, ptefb.ChainEnd(b))
		}
		chains := tables(chainTabs)
		ncb := i64vec(pm.NonConstBufferSizes)

		ptefb.ExecutionPlanStart(b)
		ptefb.ExecutionPlanAddName(b, name)
		if cmeta != 0 {
			ptefb.ExecutionPlanAddContainerMetaType(b, cmeta)
		}
		ptefb.ExecutionPlanAddValues(b, vals)
		ptefb.ExecutionPlanAddInputs(b, inputs)
		ptefb.ExecutionPlanAddOutputs(b, outputs)
		ptefb.ExecutionPlanAddChains(b, chains)
		ptefb.ExecutionPlanAddOperators(b, opsVec)
		ptefb.ExecutionPlanAddDelegates(b, delVec)
		ptefb.ExecutionPlanAddNonConstBufferSizes(b, ncb)
		plans[m] = ptefb.ExecutionPlanEnd(b)
	}
	planVec := tables(plans)

	// Legacy constant_buffer: remember each storage vector's offset to
	// report where its bytes went.
	var cbVec flatbuffers.UOffsetT
	legacyVec := make([]flatbuffers.UOffsetT, len(legacy))
	if p.Legacy {
		bufs := make([]flatbuffers.UOffsetT, len(legacy))
		for i, d := range legacy {
			legacyVec[i] = bytevec(d)
			ptefb.BufferStart(b)
			ptefb.BufferAddStorage(b, legacyVec[i])
			bufs[i] = ptefb.BufferEnd(b)
		}
		cbVec = tables(bufs)
	}
	inlineVec := make([]flatbuffers.UOffsetT, len(inlineData))
	var bddVec flatbuffers.UOffsetT
	{
		ents := make([]flatbuffers.UOffsetT, len(inlineData))
		for i, d := range inlineData {
			inlineVec[i] = bytevec(d)
			ptefb.BackendDelegateInlineDataStart(b)
			ptefb.BackendDelegateInlineDataAddData(b, inlineVec[i])
			ents[i] = ptefb.BackendDelegateInlineDataEnd(b)
		}
		bddVec = tables(ents)
	}
	segOffs := make([]flatbuffers.UOffsetT, len(segs))
	for i, s := range segs {
		ptefb.DataSegmentStart(b)
		ptefb.DataSegmentAddOffset(b, uint64(s.off))
		ptefb.DataSegmentAddSize(b, uint64(s.size))
		segOffs[i] = ptefb.DataSegmentEnd(b)
	}
	segVec := tables(segOffs)
	var constSub flatbuffers.UOffsetT
	if constSeg >= 0 {
		ov := u64vec(constOffsets)
		ptefb.SubsegmentOffsetsStart(b)
		ptefb.SubsegmentOffsetsAddSegmentIndex(b, uint32(constSeg))
		ptefb.SubsegmentOffsetsAddOffsets(b, ov)
		constSub = ptefb.SubsegmentOffsetsEnd(b)
	}
	var mutVec flatbuffers.UOffsetT
	if mutSeg >= 0 {
		ov := u64vec(mutOffsets)
		ptefb.SubsegmentOffsetsStart(b)
		ptefb.SubsegmentOffsetsAddSegmentIndex(b, uint32(mutSeg))
		ptefb.SubsegmentOffsetsAddOffsets(b, ov)
		mutVec = tables([]flatbuffers.UOffsetT{ptefb.SubsegmentOffsetsEnd(b)})
	}
	nds := make([]flatbuffers.UOffsetT, len(p.NamedData))
	for i := range p.NamedData {
		key := b.CreateString(p.NamedData[i].Key)
		ptefb.NamedDataStart(b)
		ptefb.NamedDataAddKey(b, key)
		ptefb.NamedDataAddSegmentIndex(b, ndIndex[i])
		nds[i] = ptefb.NamedDataEnd(b)
	}
	ndVec := tables(nds)

	ptefb.ProgramStart(b)
	ptefb.ProgramAddVersion(b, p.Version)
	ptefb.ProgramAddExecutionPlan(b, planVec)
	if cbVec != 0 {
		ptefb.ProgramAddConstantBuffer(b, cbVec)
	}
	ptefb.ProgramAddBackendDelegateData(b, bddVec)
	ptefb.ProgramAddSegments(b, segVec)
	if constSub != 0 {
		ptefb.ProgramAddConstantSegment(b, constSub)
	}
	if mutVec != 0 {
		ptefb.ProgramAddMutableDataSegments(b, mutVec)
	}
	ptefb.ProgramAddNamedData(b, ndVec)
	root := ptefb.ProgramEnd(b)
	b.FinishWithFileIdentifier(root, []byte(ident))
	fb := b.FinishedBytes()
	// vecData returns the final file position of a byte vector's data.
	vecData := func(o flatbuffers.UOffsetT, ins int64) int64 {
		return int64(len(fb)) - int64(o) + 4 + ins
	}

	// Insert the extended header after the 8-byte prefix, padded to 16 so
	// that the FlatBuffer keeps its alignment.
	var head []byte
	var ins int64
	if p.NoHeader {
		head = fb
		info.ProgramSize = int64(len(fb))
	} else {
		ins = pteAlignUp(int64(hlen), 16)
		head = make([]byte, int64(len(fb))+ins)
		copy(head[:8], fb[:8])
		copy(head[8+ins:], fb[8:])
		binary.LittleEndian.PutUint32(head[0:], binary.LittleEndian.Uint32(fb[0:])+uint32(ins))
		info.HeaderLength = hlen
		info.ProgramSize = int64(len(head))
		copy(head[8:12], "eh00")
		binary.LittleEndian.PutUint32(head[12:], hlen)
		binary.LittleEndian.PutUint64(head[16:], uint64(info.ProgramSize))
	}
	if len(segs) > 0 && !p.NoHeader {
		info.SegmentBase = pteAlignUp(info.ProgramSize, salign)
	}
	info.SegmentDataSize = end
	if !p.NoHeader {
		binary.LittleEndian.PutUint64(head[24:], uint64(info.SegmentBase))
		if hlen >= 32 {
			ds := uint64(end)
			if p.SegmentDataSize != 0 {
				ds = p.SegmentDataSize
			}
			binary.LittleEndian.PutUint64(head[32:], ds)
		}
	}
	info.FileSize = max(info.ProgramSize, info.SegmentBase+end)

	pl := &ptePlan{head: head}
	for _, s := range segs {
		abs := info.SegmentBase + s.off
		info.Segments = append(info.Segments, [2]int64{abs, s.size})
		for _, pc := range s.pieces {
			pc.off += abs
			pl.pieces = append(pl.pieces, pc)
		}
	}
	for m := range p.Methods {
		for i := range p.Methods[m].Tensors {
			t, r := &p.Methods[m].Tensors[i], trefs[m][i]
			switch {
			case t.BufferRef > 0 || t.Kind == PTEExternal || t.Kind == PTEPlanned:
			case t.Kind == PTEConstant && p.Legacy:
				info.Tensors[m][i].Offset = vecData(legacyVec[r.idx], ins)
			case t.Kind == PTEConstant:
				info.Tensors[m][i].Offset = info.Segments[constSeg][0] + r.off
			case t.Kind == PTEMutable:
				info.Tensors[m][i].Offset = info.Segments[mutSeg][0] + r.off
			}
		}
		for i := range p.Methods[m].Delegates {
			d, r := &p.Methods[m].Delegates[i], drefs[m][i]
			switch {
			case d.Blob.Ref > 0:
			case d.Inline:
				info.Delegates[m][i].Offset = vecData(inlineVec[r.index], ins)
			default:
				info.Delegates[m][i].Offset = info.Segments[r.index][0]
			}
		}
	}
	for i := range p.NamedData {
		if p.NamedData[i].Ref == 0 {
			info.NamedData[i].Offset = info.Segments[ndIndex[i]][0]
		}
	}
	pl.info = info
	return pl, nil
}

func pteValue(b *flatbuffers.Builder, v *PTEValue, i32vec func([]int32) flatbuffers.UOffsetT, i64vec func([]int64) flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	var x flatbuffers.UOffsetT
	switch v.Kind {
	case PTENull:
		ptefb.NullStart(b)
		x = ptefb.NullEnd(b)
	case PTEInt:
		ptefb.IntStart(b)
		ptefb.IntAddIntVal(b, v.Int)
		x = ptefb.IntEnd(b)
	case PTEBool:
		ptefb.BoolStart(b)
		ptefb.BoolAddBoolVal(b, v.Bool)
		x = ptefb.BoolEnd(b)
	case PTEDouble:
		ptefb.DoubleStart(b)
		ptefb.DoubleAddDoubleVal(b, v.Double)
		x = ptefb.DoubleEnd(b)
	case PTEString:
		s := b.CreateString(v.String)
		ptefb.StringStart(b)
		ptefb.StringAddStringVal(b, s)
		x = ptefb.StringEnd(b)
	case PTEIntList:
		items := i64vec(v.Ints)
		ptefb.IntListStart(b)
		ptefb.IntListAddItems(b, items)
		x = ptefb.IntListEnd(b)
	case PTEDoubleList:
		b.StartVector(8, len(v.Doubles), 8)
		for i := len(v.Doubles) - 1; i >= 0; i-- {
			b.PrependFloat64(v.Doubles[i])
		}
		items := b.EndVector(len(v.Doubles))
		ptefb.DoubleListStart(b)
		ptefb.DoubleListAddItems(b, items)
		x = ptefb.DoubleListEnd(b)
	case PTEBoolList:
		b.StartVector(1, len(v.Bools), 1)
		for i := len(v.Bools) - 1; i >= 0; i-- {
			b.PrependBool(v.Bools[i])
		}
		items := b.EndVector(len(v.Bools))
		ptefb.BoolListStart(b)
		ptefb.BoolListAddItems(b, items)
		x = ptefb.BoolListEnd(b)
	case PTETensorList:
		items := i32vec(v.Items)
		ptefb.TensorListStart(b)
		ptefb.TensorListAddItems(b, items)
		x = ptefb.TensorListEnd(b)
	case PTEOptionalTensorList:
		items := i32vec(v.Items)
		ptefb.OptionalTensorListStart(b)
		ptefb.OptionalTensorListAddItems(b, items)
		x = ptefb.OptionalTensorListEnd(b)
	}
	ptefb.EValueStart(b)
	if x != 0 {
		ptefb.EValueAddValType(b, ptefb.KernelTypes(v.Kind))
		ptefb.EValueAddVal(b, x)
	}
	return ptefb.EValueEnd(b)
}

func pteInstruction(b *flatbuffers.Builder, in *PTEInstruction, i32vec func([]int32) flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	var args flatbuffers.UOffsetT
	if in.Kind == PTEKernelCall || in.Kind == PTEDelegateCall {
		args = i32vec(in.Args)
	}
	var x flatbuffers.UOffsetT
	switch in.Kind {
	case PTEKernelCall:
		ptefb.KernelCallStart(b)
		ptefb.KernelCallAddOpIndex(b, in.A)
		ptefb.KernelCallAddArgs(b, args)
		x = ptefb.KernelCallEnd(b)
	case PTEDelegateCall:
		ptefb.DelegateCallStart(b)
		ptefb.DelegateCallAddDelegateIndex(b, in.A)
		ptefb.DelegateCallAddArgs(b, args)
		x = ptefb.DelegateCallEnd(b)
	case PTEMoveCall:
		ptefb.MoveCallStart(b)
		ptefb.MoveCallAddMoveFrom(b, in.A)
		ptefb.MoveCallAddMoveTo(b, in.B)
		x = ptefb.MoveCallEnd(b)
	case PTEJumpFalseCall:
		ptefb.JumpFalseCallStart(b)
		ptefb.JumpFalseCallAddCondValueIndex(b, in.A)
		ptefb.JumpFalseCallAddDestinationInstruction(b, in.B)
		x = ptefb.JumpFalseCallEnd(b)
	case PTEFreeCall:
		ptefb.FreeCallStart(b)
		ptefb.FreeCallAddValueIndex(b, in.A)
		x = ptefb.FreeCallEnd(b)
	}
	ptefb.InstructionStart(b)
	if x != 0 {
		ptefb.InstructionAddInstrArgsType(b, ptefb.InstructionArguments(in.Kind))
		ptefb.InstructionAddInstrArgs(b, x)
	}
	return ptefb.InstructionEnd(b)
}

// Bytes returns the whole file in memory. Holes are zeros; only for small
// files.
func (p *PTE) Bytes() ([]byte, error) {
	pl, err := p.plan()
	if err != nil {
		return nil, err
	}
	out := make([]byte, pl.info.FileSize)
	copy(out, pl.head)
	for _, pc := range pl.pieces {
		dst := out[pc.off : pc.off+pc.size]
		switch {
		case pc.data != nil:
			copy(dst, pc.data)
		case pc.fill != nil:
			pc.fill(dst, 0)
		}
	}
	return out, nil
}

// WriteFile writes the file to path, streaming each piece of data and
// leaving pieces with neither Data nor Fill as sparse holes, so that a
// multi-GiB program costs only the bytes actually given. It returns the
// layout.
func (p *PTE) WriteFile(path string) (PTELayoutInfo, error) {
	pl, err := p.plan()
	if err != nil {
		return PTELayoutInfo{}, err
	}
	f, err := os.Create(path)
	if err != nil {
		return PTELayoutInfo{}, err
	}
	if err := pteWrite(f, pl); err != nil {
		f.Close()
		return PTELayoutInfo{}, err
	}
	return pl.info, f.Close()
}

func pteWrite(f *os.File, pl *ptePlan) error {
	if _, err := f.WriteAt(pl.head, 0); err != nil {
		return err
	}
	var chunk []byte
	for _, pc := range pl.pieces {
		switch {
		case pc.data != nil:
			if _, err := f.WriteAt(pc.data, pc.off); err != nil {
				return err
			}
		case pc.fill != nil:
			if chunk == nil {
				chunk = make([]byte, 1<<20)
			}
			for off := int64(0); off < pc.size; off += int64(len(chunk)) {
				c := chunk[:min(int64(len(chunk)), pc.size-off)]
				clear(c)
				pc.fill(c, off)
				if _, err := f.WriteAt(c, pc.off+off); err != nil {
					return err
				}
			}
		}
	}
	return f.Truncate(pl.info.FileSize)
}

// WriteTo writes the file to w (holes as zeros). It implements
// io.WriterTo.
func (p *PTE) WriteTo(w io.Writer) (int64, error) {
	b, err := p.Bytes()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(b)
	return int64(n), err
}
