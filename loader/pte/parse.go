package pte

import (
	"math"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbverify"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Wire values of enums the parser interprets.
const (
	locSegment  = 0 // TensorDataLocation SEGMENT
	locExternal = 1 // TensorDataLocation EXTERNAL

	// vtFirstField is the vtable offset (4 + 2*id) of field 0: the
	// storage and data vectors of Buffer and BackendDelegateInlineData.
	vtFirstField = 4
)

// newProgram reads the headers and the FlatBuffer region of mf, verifies
// them and builds the program's indexes.
func newProgram(mf *mmapfile.File, owns bool, o options) (*Program, error) {
	size := mf.Len()
	peek := int64(headerPeek)
	if size < peek {
		peek = size
	}
	head, err := mf.View(0, peek)
	if err != nil {
		return nil, err
	}
	hdr, err := parseHeader(head, size)
	if err != nil {
		return nil, err
	}
	fb, err := mf.View(0, hdr.ProgramSize)
	if err != nil {
		return nil, err
	}
	vo := o.verifyOptions()
	// Version gate first, verifying only the field it reads: a newer
	// schema generation is a version problem, not a malformed file.
	if err := fbverify.Verify(fb, descProgramVersion, vo); err != nil {
		return nil, err
	}
	root := ptefb.GetRootAsProgram(fb, 0)
	if v := root.Version(); v != 0 {
		off := int64(-1)
		if t := root.Table(); t.Offset(4) != 0 {
			off = int64(t.Pos) + int64(t.Offset(4))
		}
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "Program.version", off,
			"program schema version %d is newer than this loader reads (want 0)", v)
	}
	if err := fbverify.Verify(fb, descProgram, vo); err != nil {
		return nil, err
	}
	p := &Program{mf: mf, owns: owns, name: o.name, hdr: hdr, version: 0}
	b := &builder{p: p, root: root, fb: fb, size: size, budget: 4*int64(len(fb)) + 1<<16}
	if err := b.build(); err != nil {
		return nil, err
	}
	if len(o.data) > 0 {
		if err := p.Link(o.data...); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// builder turns the verified FlatBuffer into the Program's tables and runs
// the semantic checks. Every accessor it calls reads a field that
// descProgram covers.
type builder struct {
	p    *Program
	root *ptefb.Program
	fb   []byte
	size int64 // file size

	// budget bounds the work (elements copied or checked) done on behalf
	// of the FlatBuffer, so that shared references cannot make the parse
	// quadratic: every element of a tree-shaped buffer is charged once,
	// and no tree of len(fb) bytes has more than len(fb) elements.
	budget int64

	constSeg     int      // segment index of the constant segment; -1 legacy
	constOffsets []uint64 // constant_segment.offsets (nil: legacy)
	mutSeg       int      // segment index of mutable_data_segments[0]; -1 none
	mutOffsets   []uint64
}

func (b *builder) fail(field string, off int64, msg string, args ...any) error {
	return format.Errorf(formatName, field, off, msg, args...)
}

// charge spends n units of the work budget.
func (b *builder) charge(n int, field string) error {
	b.budget -= int64(n)
	if b.budget < 0 {
		return b.fail(field, -1, "the program's references are shared so much that reading it would take work out of proportion to its %d bytes", len(b.fb))
	}
	return nil
}

// vecPos returns the file position of the first element of the vector at
// field vtable offset vt in t, and its length; ok is false when absent.
func vecPos(t flatbuffers.Table, vt flatbuffers.VOffsetT) (pos int64, n int, ok bool) {
	o := flatbuffers.UOffsetT(t.Offset(vt))
	if o == 0 {
		return 0, 0, false
	}
	return int64(t.Vector(o)), t.VectorLen(o), true
}

func idx(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

func (b *builder) build() error {
	p, root := b.p, b.root
	if err := b.segments(); err != nil {
		return err
	}
	if err := b.constants(); err != nil {
		return err
	}
	if err := b.namedData(); err != nil {
		return err
	}
	n := root.ExecutionPlanLength()
	p.methods = make([]Method, n)
	p.valueTensor = make([][]int32, n)
	p.methodIdx = make(map[string]int, n)
	p.tensorIdx = make(map[string]int)
	var plan ptefb.ExecutionPlan
	for i := 0; i < n; i++ {
		root.ExecutionPlan(&plan, i)
		if err := b.method(i, &plan); err != nil {
			return err
		}
	}
	for i := range p.tensors {
		if _, dup := p.tensorIdx[p.tensors[i].Name]; !dup {
			p.tensorIdx[p.tensors[i].Name] = i
		}
	}
	return nil
}

// segments checks every DataSegment against the header and the file and
// makes its view.
func (b *builder) segments() error {
	p, root := b.p, b.root
	n := root.SegmentsLength()
	if err := b.charge(n, "Program.segments"); err != nil {
		return err
	}
	p.segments = make([]segment.Segment, n)
	base := p.hdr.SegmentBase
	var ds ptefb.DataSegment
	for i := 0; i < n; i++ {
		root.Segments(&ds, i)
		field := idx("Program.segments", i)
		pos := int64(ds.Table().Pos)
		off, sz := ds.Offset(), ds.Size()
		if off > math.MaxInt64 || sz > math.MaxInt64 {
			return b.fail(field, pos, "segment offset %d / size %d overflows a 64-bit file offset", off, sz)
		}
		if sz > 0 && base == 0 {
			return b.fail(field, pos, "segment of %d bytes, but the file declares no segment data (no extended header or segment_base_offset 0)", sz)
		}
		abs := base + int64(off)
		if int64(off) > math.MaxInt64-base || int64(sz) > math.MaxInt64-abs {
			return b.fail(field, pos, "segment_base_offset %d + offset %d + size %d overflows", base, off, sz)
		}
		end := abs + int64(sz)
		if p.hdr.SegmentDataSizeKnown && base != 0 && end > base+p.hdr.SegmentDataSize {
			return b.fail(field, pos, "segment [%d, %d) ends past the segment data the header declares (segment_base_offset %d + segment_data_size %d): want it to end by %d",
				abs, end, base, p.hdr.SegmentDataSize, base+p.hdr.SegmentDataSize)
		}
		if end > b.size {
			return format.Wrapf(format.ErrTruncated, formatName, field, pos,
				"segment [%d, %d) ends past the end of the %d-byte file: file truncated", abs, end, b.size)
		}
		s, err := segment.New(p.mf, abs, int64(sz))
		if err != nil {
			return b.fail(field, pos, "segment [%d, %d): %v", abs, end, err)
		}
		p.segments[i] = s
	}
	return nil
}

// constants resolves the constant segment (or the legacy constant_buffer)
// and the first mutable data segment.
func (b *builder) constants() error {
	p, root := b.p, b.root
	b.constSeg, b.mutSeg = -1, -1
	var cs ptefb.SubsegmentOffsets
	if root.ConstantSegment(&cs) != nil && cs.OffsetsLength() > 0 {
		pos := int64(cs.Table().Pos)
		if nb := root.ConstantBufferLength(); nb > 0 {
			return b.fail("Program.constant_buffer", -1,
				"constant_buffer has %d entries and constant_segment has %d offsets: only one may be used", nb, cs.OffsetsLength())
		}
		si := cs.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail("Program.constant_segment.segment_index", pos,
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		b.constSeg = int(si)
		var err error
		if b.constOffsets, err = b.offsets(&cs, "Program.constant_segment.offsets"); err != nil {
			return err
		}
	} else {
		p.legacy = root.ConstantBufferLength() > 0
	}
	var ms ptefb.SubsegmentOffsets
	for i := 0; i < root.MutableDataSegmentsLength(); i++ {
		root.MutableDataSegments(&ms, i)
		field := idx("Program.mutable_data_segments", i)
		si := ms.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail(field+".segment_index", int64(ms.Table().Pos),
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		if i == 0 {
			b.mutSeg = int(si)
			var err error
			if b.mutOffsets, err = b.offsets(&ms, field+".offsets"); err != nil {
				return err
			}
		}
	}
	return nil
}

// offsets copies a SubsegmentOffsets' offsets.
func (b *builder) offsets(s *ptefb.SubsegmentOffsets, field string) ([]uint64, error) {
	n := s.OffsetsLength()
	if err := b.charge(n, field); err != nil {
		return nil, err
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = s.Offsets(i)
	}
	return out, nil
}

// namedData builds the named data table and its index.
func (b *builder) namedData() error {
	p, root := b.p, b.root
	n := root.NamedDataLength()
	if err := b.charge(n, "Program.named_data"); err != nil {
		return err
	}
	p.named = make([]format.NamedData, n)
	p.namedIdx = make(map[string]int, n)
	var nd ptefb.NamedData
	for i := 0; i < n; i++ {
		root.NamedData(&nd, i)
		field := idx("Program.named_data", i)
		key := nd.Key()
		if err := b.charge(len(key), field+".key"); err != nil {
			return err
		}
		si := nd.SegmentIndex()
		if int64(si) >= int64(len(p.segments)) {
			return b.fail(field+".segment_index", int64(nd.Table().Pos),
				"segment_index %d out of range (the program has %d segments: want below %[2]d)", si, len(p.segments))
		}
		k := string(key)
		p.named[i] = format.NamedData{Key: k, Segment: int(si), Data: p.segments[si]}
		if _, dup := p.namedIdx[k]; !dup {
			p.namedIdx[k] = i
		}
	}
	return nil
}

// method reads execution plan i.
func (b *builder) method(i int, plan *ptefb.ExecutionPlan) error {
	p := b.p
	m := &p.methods[i]
	m.Index = i
	planField := idx("Program.execution_plan", i)
	name := plan.Name()
	if err := b.charge(len(name), planField+".name"); err != nil {
		return err
	}
	m.Name = string(name)
	if _, dup := p.methodIdx[m.Name]; dup {
		return b.fail(planField+".name", int64(plan.Table().Pos), "execution plan name %q repeats an earlier plan's", m.Name)
	}
	p.methodIdx[m.Name] = i
	var cm ptefb.ContainerMetadata
	if plan.ContainerMetaType(&cm) != nil {
		in, out := cm.EncodedInpStr(), cm.EncodedOutStr()
		if err := b.charge(len(in)+len(out), planField+".container_meta_type"); err != nil {
			return err
		}
		m.EncodedInputs, m.EncodedOutputs = string(in), string(out)
	}

	nv := plan.ValuesLength()
	if err := b.charge(nv, planField+".values"); err != nil {
		return err
	}
	m.Values = make([]Value, nv)
	vt := make([]int32, nv)
	p.valueTensor[i] = vt
	var ev ptefb.EValue
	for v := 0; v < nv; v++ {
		plan.Values(&ev, v)
		vt[v] = -1
		if err := b.value(m, v, &ev, planField); err != nil {
			return err
		}
		if tv := m.Values[v].Tensor; tv != nil && tv.Tensor >= 0 {
			vt[v] = int32(tv.Tensor)
		}
	}

	var err error
	if m.Inputs, err = b.valueIndices(plan.InputsLength(), plan.Inputs, nv, planField+".inputs", int64(plan.Table().Pos)); err != nil {
		return err
	}
	if m.Outputs, err = b.valueIndices(plan.OutputsLength(), plan.Outputs, nv, planField+".outputs", int64(plan.Table().Pos)); err != nil {
		return err
	}

	no := plan.OperatorsLength()
	if err := b.charge(no, planField+".operators"); err != nil {
		return err
	}
	m.Operators = make([]Operator, no)
	var op ptefb.Operator
	for k := 0; k < no; k++ {
		plan.Operators(&op, k)
		nm, ov := op.Name(), op.Overload()
		if err := b.charge(len(nm)+len(ov), idx(planField+".operators", k)); err != nil {
			return err
		}
		m.Operators[k] = Operator{Name: string(nm), Overload: string(ov)}
	}

	nb := plan.NonConstBufferSizesLength()
	if err := b.charge(nb, planField+".non_const_buffer_sizes"); err != nil {
		return err
	}
	m.NonConstBufferSizes = make([]int64, nb)
	for k := range m.NonConstBufferSizes {
		m.NonConstBufferSizes[k] = plan.NonConstBufferSizes(k)
	}

	nd := plan.DelegatesLength()
	if err := b.delegates(m, plan, planField); err != nil {
		return err
	}

	nc := plan.ChainsLength()
	if err := b.charge(nc, planField+".chains"); err != nil {
		return err
	}
	m.Chains = make([]Chain, nc)
	var ch ptefb.Chain
	for c := 0; c < nc; c++ {
		plan.Chains(&ch, c)
		if err := b.chain(&m.Chains[c], &ch, nv, no, nd, idx(planField+".chains", c)); err != nil {
			return err
		}
	}
	return nil
}

// valueIndices copies a vector of value indices, checking each is in
// [0, nv).
func (b *builder) valueIndices(n int, at func(int) int32, nv int, field string, pos int64) ([]int32, error) {
	if err := b.charge(n, field); err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for k := range out {
		x := at(k)
		if x < 0 || int(x) >= nv {
			return nil, b.fail(idx(field, k), pos, "value index %d out of range (the plan has %d values)", x, nv)
		}
		out[k] = x
	}
	return out, nil
}

// chain checks a chain's inputs, outputs and instructions.
func (b *builder) chain(c *Chain, ch *ptefb.Chain, nv, nops, ndel int, field string) error {
	pos := int64(ch.Table().Pos)
	var err error
	if c.Inputs, err = b.valueIndices(ch.InputsLength(), ch.Inputs, nv, field+".inputs", pos); err != nil {
		return err
	}
	if c.Outputs, err = b.valueIndices(ch.OutputsLength(), ch.Outputs, nv, field+".outputs", pos); err != nil {
		return err
	}
	ni := ch.InstructionsLength()
	if err := b.charge(ni, field+".instructions"); err != nil {
		return err
	}
	c.Instructions = ni
	var in ptefb.Instruction
	var tab flatbuffers.Table
	inRange := func(x int32, n int, what, f string, p int64) error {
		if x < 0 || int(x) >= n {
			return b.fail(f, p, "%s %d out of range (%d)", what, x, n)
		}
		return nil
	}
	for k := 0; k < ni; k++ {
		ch.Instructions(&in, k)
		f := idx(field+".instructions", k) + ".instr_args"
		// The tag first: with tag NONE the value offset was not verified
		// and must not be followed.
		if in.InstrArgsType() == ptefb.InstructionArgumentsNONE || !in.InstrArgs(&tab) {
			continue // NONE: nothing to check
		}
		p := int64(tab.Pos)
		switch in.InstrArgsType() {
		case ptefb.InstructionArgumentsKernelCall:
			var kc ptefb.KernelCall
			kc.Init(tab.Bytes, tab.Pos)
			if err := inRange(kc.OpIndex(), nops, "op_index", f+".op_index", p); err != nil {
				return err
			}
			if _, err := b.valueIndices(kc.ArgsLength(), kc.Args, nv, f+".args", p); err != nil {
				return err
			}
		case ptefb.InstructionArgumentsDelegateCall:
			var dc ptefb.DelegateCall
			dc.Init(tab.Bytes, tab.Pos)
			if err := inRange(dc.DelegateIndex(), ndel, "delegate_index", f+".delegate_index", p); err != nil {
				return err
			}
			if _, err := b.valueIndices(dc.ArgsLength(), dc.Args, nv, f+".args", p); err != nil {
				return err
			}
		case ptefb.InstructionArgumentsMoveCall:
			var mc ptefb.MoveCall
			mc.Init(tab.Bytes, tab.Pos)
			if err := inRange(mc.MoveFrom(), nv, "value index", f+".move_from", p); err != nil {
				return err
			}
			if err := inRange(mc.MoveTo(), nv, "value index", f+".move_to", p); err != nil {
				return err
			}
		case ptefb.InstructionArgumentsJumpFalseCall:
			var jc ptefb.JumpFalseCall
			jc.Init(tab.Bytes, tab.Pos)
			if err := inRange(jc.CondValueIndex(), nv, "value index", f+".cond_value_index", p); err != nil {
				return err
			}
			// Jumping to ni ends the chain.
			if err := inRange(jc.DestinationInstruction(), ni+1, "destination_instruction", f+".destination_instruction", p); err != nil {
				return err
			}
		case ptefb.InstructionArgumentsFreeCall:
			var fc ptefb.FreeCall
			fc.Init(tab.Bytes, tab.Pos)
			if err := inRange(fc.ValueIndex(), nv, "value index", f+".value_index", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// delegates reads a plan's backend delegates.
func (b *builder) delegates(m *Method, plan *ptefb.ExecutionPlan, planField string) error {
	p, root := b.p, b.root
	nd := plan.DelegatesLength()
	if err := b.charge(nd, planField+".delegates"); err != nil {
		return err
	}
	m.Delegates = make([]int, nd)
	var bd ptefb.BackendDelegate
	var ref ptefb.BackendDelegateDataReference
	var cs ptefb.CompileSpec
	var inl ptefb.BackendDelegateInlineData
	for k := 0; k < nd; k++ {
		plan.Delegates(&bd, k)
		field := idx(planField+".delegates", k)
		pos := int64(bd.Table().Pos)
		d := Delegate{Method: m.Name, Index: k, SegmentIndex: -1}
		id := bd.Id()
		if err := b.charge(len(id), field+".id"); err != nil {
			return err
		}
		d.ID = string(id)
		ncs := bd.CompileSpecsLength()
		if err := b.charge(ncs, field+".compile_specs"); err != nil {
			return err
		}
		d.CompileSpecs = make([]CompileSpec, ncs)
		for c := 0; c < ncs; c++ {
			bd.CompileSpecs(&cs, c)
			key, val := cs.Key(), cs.ValueBytes()
			if err := b.charge(len(key)+len(val), idx(field+".compile_specs", c)); err != nil {
				return err
			}
			d.CompileSpecs[c] = CompileSpec{Key: string(key), Value: append([]byte(nil), val...)}
		}
		if bd.Processed(&ref) == nil {
			return b.fail(field+".processed", pos, "delegate %q has no processed data reference", d.ID)
		}
		ri := ref.Index()
		rpos := int64(ref.Table().Pos)
		switch loc := ref.Location(); loc {
		case int8(DelegateInline):
			d.Location = DelegateInline
			nb := root.BackendDelegateDataLength()
			if int64(ri) >= int64(nb) {
				return b.fail(field+".processed.index", rpos,
					"inline delegate data index %d out of range (backend_delegate_data has %d entries)", ri, nb)
			}
			root.BackendDelegateData(&inl, int(ri))
			dpos, dn, _ := vecPos(inl.Table(), vtFirstField)
			s, err := segment.New(p.mf, dpos, int64(dn))
			if err != nil {
				return b.fail(field+".processed", rpos, "inline delegate data: %v", err)
			}
			d.Data = s
		case int8(DelegateSegment):
			d.Location = DelegateSegment
			if int64(ri) >= int64(len(p.segments)) {
				return b.fail(field+".processed.index", rpos,
					"delegate segment index %d out of range (the program has %d segments)", ri, len(p.segments))
			}
			d.SegmentIndex = int(ri)
			d.Data = p.segments[ri]
		default:
			return b.fail(field+".processed.location", rpos,
				"unknown delegate data location %d (want 0 INLINE or 1 SEGMENT)", loc)
		}
		d.DataIndex = int(ri)
		m.Delegates[k] = len(p.delegates)
		p.delegates = append(p.delegates, d)
	}
	return nil
}

// value reads value v of method m.
func (b *builder) value(m *Method, v int, ev *ptefb.EValue, planField string) error {
	val := &m.Values[v]
	var tab flatbuffers.Table
	// The tag first: with tag NONE the value offset was not verified and
	// must not be followed.
	tag := ev.ValType()
	if tag == ptefb.KernelTypesNONE || !ev.Val(&tab) {
		return nil // NONE
	}
	val.Kind = ValueKind(tag)
	field := idx(planField+".values", v) + ".val"
	pos := int64(tab.Pos)
	switch tag {
	case ptefb.KernelTypesNull:
	case ptefb.KernelTypesInt:
		var x ptefb.Int
		x.Init(tab.Bytes, tab.Pos)
		val.Int = x.IntVal()
	case ptefb.KernelTypesBool:
		var x ptefb.Bool
		x.Init(tab.Bytes, tab.Pos)
		val.Bool = x.BoolVal()
	case ptefb.KernelTypesDouble:
		var x ptefb.Double
		x.Init(tab.Bytes, tab.Pos)
		val.Double = x.DoubleVal()
	case ptefb.KernelTypesString:
		var x ptefb.String
		x.Init(tab.Bytes, tab.Pos)
		s := x.StringVal()
		if err := b.charge(len(s), field); err != nil {
			return err
		}
		val.String = string(s)
	case ptefb.KernelTypesIntList:
		var x ptefb.IntList
		x.Init(tab.Bytes, tab.Pos)
		n := x.ItemsLength()
		if err := b.charge(n, field); err != nil {
			return err
		}
		val.Ints = make([]int64, n)
		for k := range val.Ints {
			val.Ints[k] = x.Items(k)
		}
	case ptefb.KernelTypesDoubleList:
		var x ptefb.DoubleList
		x.Init(tab.Bytes, tab.Pos)
		n := x.ItemsLength()
		if err := b.charge(n, field); err != nil {
			return err
		}
		val.Doubles = make([]float64, n)
		for k := range val.Doubles {
			val.Doubles[k] = x.Items(k)
		}
	case ptefb.KernelTypesBoolList:
		var x ptefb.BoolList
		x.Init(tab.Bytes, tab.Pos)
		n := x.ItemsLength()
		if err := b.charge(n, field); err != nil {
			return err
		}
		val.Bools = make([]bool, n)
		for k := range val.Bools {
			val.Bools[k] = x.Items(k)
		}
	case ptefb.KernelTypesTensorList:
		var x ptefb.TensorList
		x.Init(tab.Bytes, tab.Pos)
		items, err := b.valueIndices(x.ItemsLength(), x.Items, len(m.Values), field+".items", pos)
		if err != nil {
			return err
		}
		val.Items = items
	case ptefb.KernelTypesOptionalTensorList:
		var x ptefb.OptionalTensorList
		x.Init(tab.Bytes, tab.Pos)
		n := x.ItemsLength()
		if err := b.charge(n, field); err != nil {
			return err
		}
		val.Items = make([]int32, n)
		for k := range val.Items {
			it := x.Items(k)
			if it < -1 || int(it) >= len(m.Values) {
				return b.fail(idx(field+".items", k), pos, "value index %d out of range (-1 or 0..%d)", it, len(m.Values)-1)
			}
			val.Items[k] = it
		}
	case ptefb.KernelTypesTensor:
		var x ptefb.Tensor
		x.Init(tab.Bytes, tab.Pos)
		return b.tensor(m, v, val, &x, field)
	}
	return nil
}

// tensor reads a tensor value and, when the file holds (or names) its
// data, adds it to Program.tensors.
func (b *builder) tensor(m *Method, v int, val *Value, x *ptefb.Tensor, field string) error {
	p := b.p
	pos := int64(x.Table().Pos)
	tv := &TensorValue{Tensor: -1}
	val.Tensor = tv
	tv.ScalarType = x.ScalarType()
	dt, msg := dtypeOf(tv.ScalarType)
	if msg != "" {
		return b.fail(field+".scalar_type", pos, "%s", msg)
	}
	tv.DType = dt
	ns := x.SizesLength()
	nd := x.DimOrderLength()
	if err := b.charge(ns+nd, field+".sizes"); err != nil {
		return err
	}
	tv.Sizes = make([]int64, ns)
	for k := range tv.Sizes {
		s := x.Sizes(k)
		if s < 0 {
			return b.fail(idx(field+".sizes", k), pos, "negative size %d (want >= 0)", s)
		}
		tv.Sizes[k] = int64(s)
	}
	if nd > 0 {
		if nd != ns {
			return b.fail(field+".dim_order", pos, "dim_order has %d entries for %d sizes", nd, ns)
		}
		tv.DimOrder = make([]uint8, nd)
		var seen [256]bool
		for k := range tv.DimOrder {
			d := x.DimOrder(k)
			if int(d) >= nd || seen[d] {
				return b.fail(idx(field+".dim_order", k), pos, "dim_order entry %d is not a permutation of 0..%d", d, nd-1)
			}
			seen[d] = true
			tv.DimOrder[k] = d
		}
	}
	tv.RequiresGrad = x.RequiresGrad()
	tv.DataBufferIndex = x.DataBufferIdx()
	tv.ShapeDynamism = x.ShapeDynamism()
	var ai ptefb.AllocationDetails
	if x.AllocationInfo(&ai) != nil {
		tv.Planned = true
		tv.MemoryID = ai.MemoryId()
		tv.MemoryOffset = uint64(ai.MemoryOffsetHigh())<<32 | uint64(ai.MemoryOffsetLow())
	}
	external := false
	var eti ptefb.ExtraTensorInfo
	if x.ExtraTensorInfo(&eti) != nil {
		fqn := eti.FullyQualifiedName()
		if err := b.charge(len(fqn), field+".extra_tensor_info.fully_qualified_name"); err != nil {
			return err
		}
		tv.FullyQualifiedName = string(fqn)
		switch loc := eti.Location(); loc {
		case locSegment:
		case locExternal:
			external = true
		default:
			return b.fail(field+".extra_tensor_info.location", int64(eti.Table().Pos),
				"unknown tensor data location %d (want 0 SEGMENT or 1 EXTERNAL)", loc)
		}
	}
	switch {
	case external:
		tv.Location = format.LocExternal
	case tv.DataBufferIndex > 0 && tv.Planned:
		tv.Location = format.LocMutable
	case tv.DataBufferIndex > 0 && b.constOffsets == nil:
		tv.Location = format.LocInline
	case tv.DataBufferIndex > 0:
		tv.Location = format.LocSegment
	default:
		return nil // no data in the file
	}

	t := Tensor{
		Method:          m.Name,
		Value:           v,
		ScalarType:      tv.ScalarType,
		RequiresGrad:    tv.RequiresGrad,
		DataBufferIndex: tv.DataBufferIndex,
		Segment:         -1,
	}
	t.DType, t.Shape, t.DimOrder, t.Location = dt, tv.Sizes, tv.DimOrder, tv.Location
	if tv.FullyQualifiedName != "" {
		t.Name, t.NameExplicit = tv.FullyQualifiedName, true
	} else {
		t.Name = m.Name + "/values/" + strconv.Itoa(v)
	}
	maxBytes := b.size
	if external {
		maxBytes = math.MaxInt64
	}
	_, nbytes, ok := format.Numel(tv.Sizes, dt, maxBytes)
	if !ok {
		return b.fail(field+".sizes", pos, "tensor %q: numel × %d-byte elements overflows or exceeds the %d-byte file", t.Name, dt.Size(), b.size)
	}
	t.NBytes = nbytes
	t.Offset = -1
	bf := field + ".data_buffer_idx"
	switch tv.Location {
	case format.LocExternal:
		if tv.FullyQualifiedName == "" {
			return b.fail(field+".extra_tensor_info.fully_qualified_name", pos, "external tensor has no fully-qualified name to find its data by")
		}
		t.DataBufferIndex = 0
		p.external++
	case format.LocInline:
		cb := b.root.ConstantBufferLength()
		if int64(tv.DataBufferIndex) >= int64(cb) {
			if cb == 0 {
				return b.fail(bf, pos, "tensor %q has data_buffer_idx %d but the program has no constant data (no constant_segment, empty constant_buffer)", t.Name, tv.DataBufferIndex)
			}
			return b.fail(bf, pos, "tensor %q: data_buffer_idx %d out of range (constant_buffer has %d entries: want below %[3]d)", t.Name, tv.DataBufferIndex, cb)
		}
		var buf ptefb.Buffer
		b.root.ConstantBuffer(&buf, int(tv.DataBufferIndex))
		spos, sn, _ := vecPos(buf.Table(), vtFirstField)
		if int64(sn) < nbytes {
			return b.fail(idx("Program.constant_buffer", int(tv.DataBufferIndex))+".storage", spos,
				"tensor %q needs %d bytes but its constant_buffer storage holds %d", t.Name, nbytes, sn)
		}
		s, err := segment.New(p.mf, spos, nbytes)
		if err != nil {
			return b.fail(bf, pos, "tensor %q: %v", t.Name, err)
		}
		t.Offset, t.Data = spos, s
	case format.LocSegment, format.LocMutable:
		seg, offs, what := b.constSeg, b.constOffsets, "constant_segment"
		if tv.Location == format.LocMutable {
			seg, offs, what = b.mutSeg, b.mutOffsets, "mutable_data_segments[0]"
			if seg < 0 {
				return b.fail(bf, pos, "mutable tensor %q has data_buffer_idx %d but the program has no mutable_data_segments", t.Name, tv.DataBufferIndex)
			}
		}
		if int64(tv.DataBufferIndex) >= int64(len(offs)) {
			return b.fail(bf, pos, "tensor %q: data_buffer_idx %d out of range (%s has %d offsets: want below %[4]d)", t.Name, tv.DataBufferIndex, what, len(offs))
		}
		off := offs[tv.DataBufferIndex]
		ss := p.segments[seg]
		if off > uint64(ss.Len()) || uint64(nbytes) > uint64(ss.Len())-off {
			return b.fail(bf, pos, "tensor %q: bytes [%d, %d+%d) lie outside its %d-byte segment %d (%s)",
				t.Name, off, off, nbytes, ss.Len(), seg, what)
		}
		s, err := ss.Sub(int64(off), nbytes)
		if err != nil {
			return b.fail(bf, pos, "tensor %q: %v", t.Name, err)
		}
		t.Offset, t.Data, t.Segment = s.Offset(), s, seg
	}
	tv.Tensor = len(p.tensors)
	p.tensors = append(p.tensors, t)
	return nil
}
