package pte

import (
	"strconv"
	"sync"
	"unsafe"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// Open verifies every tensor and keeps, for each one with data in (or
// named by) the file, a tensorRec: pointer-free, so the garbage collector
// never scans it, and enough to hand out the tensor's bytes
// (Program.TensorData). The Tensor values, with their names, shapes and dim
// orders, are built from the records (and the verified FlatBuffer) by the
// first call that needs them: Tensors, Tensor, TensorAt, External or Link.

// tensorRec is what Open keeps of a tensor.
type tensorRec struct {
	off    int64  // absolute offset of the data; -1 for an external tensor
	nbytes int64  //
	sizes  uint32 // position of the first int32 of sizes (a FlatBuffer is under 2 GiB)
	dims   uint32 // position of dim_order
	fqn    uint32 // position of the fully-qualified name's bytes
	ns, nd int32  // len(sizes), len(dim_order)
	nfqn   int32  // len of the fully-qualified name; 0 for a made-up name
	method int32
	value  int32
	dbi    uint32
	loc    format.Location
	dt     format.DType
	st     int8
	grad   bool
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

// buildList makes the Tensor values from the records: names, shapes and dim
// orders are copied out of the verified FlatBuffer into three arrays sized
// exactly, one allocation each.
func (p *Program) buildList() {
	var shapeLen, dimLen, nameLen int
	for i := range p.recs {
		r := &p.recs[i]
		shapeLen += int(r.ns)
		dimLen += int(r.nd)
		nameLen += int(r.nfqn)
		if r.nfqn == 0 {
			nameLen += len(p.methods[r.method].Name) + len("/values/") + 10
		}
	}
	ts := make([]Tensor, len(p.recs))
	shapes := make([]int64, 0, shapeLen)
	dims := make([]uint8, 0, dimLen)
	names := make([]byte, 0, nameLen)
	fb := p.fb
	for i := range p.recs {
		r := &p.recs[i]
		t := &ts[i]
		s0 := len(shapes)
		for k := int64(0); k < int64(r.ns); k++ {
			q := int64(r.sizes) + 4*k
			shapes = append(shapes, int64(int32(uint32(fb[q])|uint32(fb[q+1])<<8|uint32(fb[q+2])<<16|uint32(fb[q+3])<<24)))
		}
		t.Shape = shapes[s0:len(shapes):len(shapes)]
		if r.ns == 0 {
			t.Shape = []int64{} // a scalar: empty, not nil
		}
		if r.nd > 0 {
			d0 := len(dims)
			dims = append(dims, fb[r.dims:int64(r.dims)+int64(r.nd)]...)
			t.DimOrder = dims[d0:len(dims):len(dims)]
		}
		n0 := len(names)
		m := &p.methods[r.method]
		if r.nfqn > 0 {
			names = append(names, fb[r.fqn:int64(r.fqn)+int64(r.nfqn)]...)
			t.NameExplicit = true
		} else {
			names = append(names, m.Name...)
			names = append(names, "/values/"...)
			names = strconv.AppendInt(names, int64(r.value), 10)
		}
		if len(names) > n0 {
			t.Name = unsafe.String(&names[n0], len(names)-n0)
		}
		t.DType, t.Location, t.NBytes, t.Offset = r.dt, r.loc, r.nbytes, r.off
		if r.loc != format.LocExternal {
			t.Data, _ = segment.New(p.mf, r.off, r.nbytes) // checked by Open
		}
		t.Method, t.Value, t.ScalarType, t.RequiresGrad = m.Name, int(r.value), r.st, r.grad
		t.DataBufferIndex, t.Segment = r.dbi, p.segmentOf(r.loc)
	}
	p.list.tensors = ts
}
