package pte

import (
	"strconv"
	"sync"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// Open verifies every tensor and keeps, for each one with data in (or
// named by) the file, a tensorRec: pointer-free, so the garbage collector
// never scans it, and enough to hand out the tensor's bytes
// (Program.TensorData). The Tensor values, with their names, shapes and dim
// orders, are built from the records (and the verified FlatBuffer) by the
// first call that needs them: Tensors, Tensor, TensorAt, External or Link.

// tensorRec is what Open keeps of a tensor: 24 bytes (1024 of them stay
// under the runtime's 32 KiB large-object size), enough for its data
// (TensorData). The rest is read again from its verified Tensor table when
// the list is built, and its method and value from Program.valueTensor.
type tensorRec struct {
	off    int64  // absolute offset of the data; -1 for an external tensor
	nbytes int64  //
	tensor uint32 // position of the Tensor table (a FlatBuffer is under 2 GiB)
	loc    format.Location
	dt     format.DType
}

// segmentOf returns the index of the segment that holds the data of
// tensors at loc; -1 when not a segment.
func (p *Program) segmentOf(loc format.Location) int {
	switch loc {
	case format.LocSegment:
		return p.constSeg
	case format.LocMutable:
		return p.mutSeg
	}
	return -1
}

// tensorList holds the Tensor values, built once from the records.
type tensorList struct {
	once    sync.Once
	tensors []Tensor
}

// NumTensors returns the number of tensors (len(Tensors())) without
// building them.
func (p *Program) NumTensors() int { return len(p.recs) }

// TensorData returns the bytes of tensor i (Tensors()[i].Data) without
// building the tensor list: the cheapest way to a data pointer for every
// weight. The zero Segment for an external tensor not linked to its data.
// It allocates nothing (for a linked external tensor it builds the list,
// as Link did). It panics if i is out of range, like an index expression.
func (p *Program) TensorData(i int) segment.Segment {
	r := &p.recs[i]
	if r.loc == format.LocExternal {
		return p.all()[i].Data
	}
	s, _ := segment.New(p.mf, r.off, r.nbytes) // checked by Open
	return s
}

// all returns the tensor list, building it on first use.
func (p *Program) all() []Tensor {
	p.list.once.Do(p.buildList)
	return p.list.tensors
}

// buildList makes the Tensor values from the records and their verified
// Tensor tables: names, shapes and dim orders are copied out of the
// FlatBuffer into three arrays sized exactly, one allocation each.
func (p *Program) buildList() {
	var shapeLen, dimLen, nameLen int
	var x ptefb.Tensor
	var eti ptefb.ExtraTensorInfo
	fqn := func(x *ptefb.Tensor) []byte {
		if x.ExtraTensorInfo(&eti) == nil {
			return nil
		}
		return eti.FullyQualifiedName()
	}
	// Each record's method and value: every value that made a record
	// names it.
	type methodValue struct{ m, v int32 }
	of := make([]methodValue, len(p.recs))
	for m, vt := range p.valueTensor {
		for v, k := range vt {
			if k >= 0 {
				of[k] = methodValue{int32(m), int32(v)}
			}
		}
	}
	for i := range p.recs {
		r := &p.recs[i]
		x.Init(p.fb, flatbuffers.UOffsetT(r.tensor))
		shapeLen += x.SizesLength()
		dimLen += x.DimOrderLength()
		if n := len(fqn(&x)); n > 0 {
			nameLen += n
		} else {
			nameLen += len(p.methods[of[i].m].Name) + len("/values/") + 10
		}
	}
	ts := make([]Tensor, len(p.recs))
	shapes := make([]int64, 0, shapeLen)
	dims := make([]uint8, 0, dimLen)
	names := make([]byte, 0, nameLen)
	for i := range p.recs {
		r := &p.recs[i]
		t := &ts[i]
		x.Init(p.fb, flatbuffers.UOffsetT(r.tensor))
		s0 := len(shapes)
		for k := range x.SizesLength() {
			shapes = append(shapes, int64(x.Sizes(k)))
		}
		t.Shape = shapes[s0:len(shapes):len(shapes)]
		if len(t.Shape) == 0 {
			t.Shape = []int64{} // a scalar: empty, not nil
		}
		if d := x.DimOrderBytes(); len(d) > 0 {
			d0 := len(dims)
			dims = append(dims, d...)
			t.DimOrder = dims[d0:len(dims):len(dims)]
		}
		n0 := len(names)
		m, value := &p.methods[of[i].m], of[i].v
		if f := fqn(&x); len(f) > 0 {
			names = append(names, f...)
			t.NameExplicit = true
		} else {
			names = append(names, m.Name...)
			names = append(names, "/values/"...)
			names = strconv.AppendInt(names, int64(value), 10)
		}
		if len(names) > n0 {
			t.Name = unsafe.String(&names[n0], len(names)-n0)
		}
		t.DType, t.Location, t.NBytes, t.Offset = r.dt, r.loc, r.nbytes, r.off
		if r.loc != format.LocExternal {
			t.Data, _ = segment.New(p.mf, r.off, r.nbytes) // checked by Open
			t.DataBufferIndex = x.DataBufferIdx()
		}
		t.Method, t.Value, t.ScalarType, t.RequiresGrad = m.Name, int(value), x.ScalarType(), x.RequiresGrad()
		t.Segment = p.segmentOf(r.loc)
	}
	p.list.tensors = ts
}
