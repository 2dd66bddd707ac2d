package pte

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/fbread"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/segment"
)

// methodList returns the methods, building them on first use.
func (p *Program) methodList() []Method {
	p.methodsOnce.Do(p.buildMethods)
	return p.methods
}

// methodBuilder copies the plans' strings and slices out of the verified
// FlatBuffer, in a few shared chunks rather than one allocation each.
type methodBuilder struct {
	builder     // its vtable caches, readTensor and strs
	nextRec int // the record of the next tensor value

	ints   arena.Slices[int32]
	int64s arena.Slices[int64]
	chains arena.Slices[Chain]
	ops    arena.Slices[Operator]
	dels   arena.Slices[int]
	specs  arena.Slices[CompileSpec]
	bytes  arena.Slices[byte]
}

// buildMethods builds the Method values, the value-to-tensor tables and the
// delegates from the plans Open checked (and charged to the work budget),
// so it cannot fail. After Close, before they were built, it builds nothing.
func (p *Program) buildMethods() {
	if p.closed.Load() {
		return // fb is gone
	}
	n := p.nmethods
	b := &methodBuilder{builder: builder{p: p, fb: p.fb}}
	ms := make([]Method, n)
	checks := make([]methodCheck, n)
	p.valueTensor = make([][]int32, n)
	p.delegates = make([]Delegate, 0, p.ndelegates)
	for i := range ms {
		ms[i].check1 = &checks[i]
		b.method(i, &ms[i], fbread.Deref(p.fb, p.plans+4*int64(i)))
	}
	p.methods = ms
	if n > methodScan && n <= maxNameSet {
		p.methodIdx = nameindex.New(n, func(i int) string { return ms[i].Name })
	}
}

// method builds plan i, the table at pp, into m.
func (b *methodBuilder) method(i int, m *Method, pp int64) {
	p, fb := b.p, b.fb
	m.Index, m.p, m.pos = i, p, flatbuffers.UOffsetT(pp)
	fo := *b.planF.Of(fb, pp)
	m.Name = b.strs.Copy(fbread.FieldBytes(fb, pp, fo[planName], 1))
	if fo[planMeta] != 0 {
		cm := fbread.Deref(fb, pp+fo[planMeta])
		cf := b.metaF.Of(fb, cm)
		m.EncodedInputs = b.strs.Copy(fbread.FieldBytes(fb, cm, cf[0], 1))
		m.EncodedOutputs = b.strs.Copy(fbread.FieldBytes(fb, cm, cf[1], 1))
	}

	vstart, n := fbread.FieldVector(fb, pp, fo[planValues])
	m.nv = int(n)
	vt := b.ints.Make(m.nv)
	for v := range vt {
		vt[v] = b.valueTensor(fbread.Deref(fb, vstart+4*int64(v)))
	}
	p.valueTensor[i] = vt

	m.Inputs = b.indices(i32s(fbread.FieldBytes(fb, pp, fo[planInputs], 4)))
	m.Outputs = b.indices(i32s(fbread.FieldBytes(fb, pp, fo[planOutputs], 4)))

	ostart, n := fbread.FieldVector(fb, pp, fo[planOperators])
	m.Operators = b.ops.Make(int(n))
	for k := range m.Operators {
		op := fbread.Deref(fb, ostart+4*int64(k))
		of := b.opF.Of(fb, op)
		m.Operators[k] = Operator{
			Name:     b.strs.Copy(fbread.FieldBytes(fb, op, of[0], 1)),
			Overload: b.strs.Copy(fbread.FieldBytes(fb, op, of[1], 1)),
		}
	}

	sizes := fbread.FieldBytes(fb, pp, fo[planBufferSize], 8)
	m.NonConstBufferSizes = b.int64s.Make(len(sizes) / 8)
	for k := range m.NonConstBufferSizes {
		m.NonConstBufferSizes[k] = int64(binary.LittleEndian.Uint64(sizes[8*k:]))
	}

	b.delegates(m, pp, fo[planDelegates])

	cstart, n := fbread.FieldVector(fb, pp, fo[planChains])
	m.Chains = b.chains.Make(int(n))
	for c := range m.Chains {
		ch := flatbuffers.Table{Bytes: fb, Pos: flatbuffers.UOffsetT(fbread.Deref(fb, cstart+4*int64(c)))}
		m.Chains[c] = Chain{
			Inputs:  b.indices(i32Field(ch, vtChainInputs)),
			Outputs: b.indices(i32Field(ch, vtChainOutputs)),
		}
		_, m.Chains[c].Instructions, _ = vecPos(ch, vtChainInstructions)
	}
}

// valueTensor returns the index in Program.recs of the tensor of the
// EValue at pos (Open recorded them in value order), or -1.
func (b *methodBuilder) valueTensor(pos int64) int32 {
	t := tensorAt(b.fb, &b.evalueF, pos)
	if t < 0 {
		return -1
	}
	x := b.readTensor(t)
	external := x.hasETI && x.location == locExternal
	if location(external, x.dbi, x.planned, b.p.inlineConsts) == format.LocNone {
		return -1
	}
	k := b.nextRec
	b.nextRec++
	if k >= len(b.p.recs) || int64(b.p.recs[k].tensor) != t {
		return -1
	}
	return int32(k)
}

// indices copies a vector of value indices (checked at Open).
func (b *methodBuilder) indices(v i32s) []int32 {
	out := b.ints.Make(v.len())
	for k := range out {
		out[k] = v.at(k)
	}
	return out
}

// delegates builds the backend delegates of the plan at pp (its delegates
// field at table offset fo), which Open checked, into m and
// Program.delegates.
func (b *methodBuilder) delegates(m *Method, pp, fo int64) {
	p, fb := b.p, b.fb
	start, n := fbread.FieldVector(fb, pp, fo)
	m.Delegates = b.dels.Make(int(n))
	root := ptefb.GetRootAsProgram(fb, 0)
	var bd ptefb.BackendDelegate
	var ref ptefb.BackendDelegateDataReference
	var cs ptefb.CompileSpec
	var inl ptefb.BackendDelegateInlineData
	for k := range m.Delegates {
		bd.Init(fb, flatbuffers.UOffsetT(fbread.Deref(fb, start+4*int64(k))))
		d := Delegate{Method: m.Name, Index: k, SegmentIndex: -1, ID: b.strs.Copy(bd.Id())}
		d.CompileSpecs = b.specs.Make(bd.CompileSpecsLength())
		for c := range d.CompileSpecs {
			bd.CompileSpecs(&cs, c)
			d.CompileSpecs[c] = CompileSpec{Key: b.strs.Copy(cs.Key())}
			if val := cs.ValueBytes(); len(val) > 0 {
				d.CompileSpecs[c].Value = b.bytes.Copy(val)
			}
		}
		bd.Processed(&ref)
		ri := ref.Index()
		d.DataIndex = int(ri)
		if ref.Location() == int8(DelegateSegment) {
			d.Location, d.SegmentIndex = DelegateSegment, int(ri)
			d.Data = p.segments[ri]
		} else {
			d.Location = DelegateInline
			root.BackendDelegateData(&inl, int(ri))
			dpos, dn, _ := vecPos(inl.Table(), vtFirstField)
			d.Data, _ = segment.New(p.mf, dpos, int64(dn)) // checked by Open
		}
		m.Delegates[k] = len(p.delegates)
		p.delegates = append(p.delegates, d)
	}
}
