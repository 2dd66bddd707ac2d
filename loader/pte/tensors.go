package pte

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// tensorRec is what Open keeps of a tensor with data in (or named by) the
// file: pointer-free and 24 bytes, enough for TensorData. The Tensor values
// are built from the records and their Tensor tables on first use.
type tensorRec struct {
	off    int64  // absolute offset of the data; -1 for an external tensor
	nbytes int64  //
	tensor uint32 // position of the Tensor table (a FlatBuffer is under 2 GiB)
	loc    format.Location
	dt     format.DType
}

// recPool holds the record arrays of closed programs for the next Open.
var recPool sync.Pool // of *[]tensorRec

// maxPooledRecs is the most records an array kept in recPool holds.
const maxPooledRecs = 1 << 14

// getRecs returns a record array of capacity at least n, from the pool
// when it has one.
func getRecs(n int) *[]tensorRec {
	buf, _ := recPool.Get().(*[]tensorRec)
	if buf == nil {
		buf = new([]tensorRec)
	}
	if cap(*buf) < n {
		*buf = make([]tensorRec, 0, n)
	}
	return buf
}

// putRecs puts back buf, the array from getRecs, with recs, which may be
// in it or in an array that outgrew it: the larger goes back.
func putRecs(buf *[]tensorRec, recs []tensorRec) {
	if buf == nil {
		return
	}
	if cap(recs) > cap(*buf) {
		*buf = recs
	}
	if cap(*buf) <= maxPooledRecs {
		*buf = (*buf)[:0]
		recPool.Put(buf)
	}
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
func (p *Program) NumTensors() int { return p.ntensors }

// TensorData returns the bytes of tensor i (Tensors()[i].Data) without
// building the tensor list; the zero Segment for an external tensor not
// linked to its data. It panics if i is out of range, like an index
// expression. After Close it returns an empty segment of the program's
// file.
func (p *Program) TensorData(i int) segment.Segment {
	recs := p.recs
	if uint(i) >= uint(len(recs)) {
		return p.closedData(i)
	}
	r := &recs[i]
	if r.loc == format.LocExternal {
		if !p.linked {
			return segment.Segment{} // no Link has resolved a tensor
		}
		if ts := p.all(); i < len(ts) {
			return ts[i].Data
		}
		return segment.Segment{} // closed before the list was built
	}
	s, _ := segment.New(p.mf, r.off, r.nbytes) // checked by Open
	return s
}

// closedData is TensorData's answer for an index it has no record for.
func (p *Program) closedData(i int) segment.Segment {
	if i < 0 || i >= p.ntensors {
		panic(fmt.Sprintf("pte: TensorData(%d) of a program of %d tensors", i, p.ntensors))
	}
	s, _ := segment.New(p.mf, 0, 0) // closed: the records were dropped
	return s
}

// AppendTensorBytes appends the bytes of every tensor, in order, to dst and
// returns it: element i is TensorData(i).Bytes() (nil for an external
// tensor not linked to its data). It allocates only when dst has too
// little room. On error (a closed file, a window that cannot be mapped) it
// returns the views taken so far; after Close, ErrClosed.
func (p *Program) AppendTensorBytes(dst [][]byte) ([][]byte, error) {
	if p.closed.Load() {
		return dst, fmt.Errorf("pte: %s: %w", p.name, format.ErrClosed)
	}
	recs := p.recs
	n0 := len(dst)
	dst = slices.Grow(dst, len(recs))[:n0+len(recs)]
	out := dst[n0:][:len(recs)]
	var all []byte
	if m := p.mf.Mode(); m == mmapfile.ModeWhole || m == mmapfile.ModeMemory {
		var err error
		if all, err = p.mf.View(0, p.mf.Len()); err != nil {
			return dst[:n0], err
		}
	}
	for i := 0; i < len(recs); i++ {
		if all != nil && recs[i].loc != format.LocExternal {
			if i += fillViews(out[i:], recs[i:], all); i == len(recs) {
				break
			}
		}
		b, err := p.TensorData(i).Bytes()
		if err != nil {
			return dst[:n0+i], err
		}
		out[i] = b
	}
	return dst, nil
}

// fillViews sets out[i] to the bytes of recs[i] in all (the whole file)
// up to the first external tensor, and returns how many it set.
//
//go:noinline
func fillViews(out [][]byte, recs []tensorRec, all []byte) int {
	out = out[:len(recs)]
	for i := range recs {
		r := &recs[i]
		if r.loc == format.LocExternal {
			return i
		}
		// Open checked the range against the file.
		out[i] = all[r.off : r.off+r.nbytes : r.off+r.nbytes]
	}
	return len(recs)
}

// all returns the tensor list, building it on first use.
func (p *Program) all() []Tensor {
	p.list.once.Do(p.buildList)
	return p.list.tensors
}

// buildList makes the Tensor values from the records and their verified
// Tensor tables, with names, shapes and dim orders in three shared arrays.
func (p *Program) buildList() {
	if p.closed.Load() {
		return // fb is gone (Close)
	}
	ms := p.methodList()
	fb := p.fb
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
	b := builder{p: p, fb: fb} // reads the tensor tables
	var shapeLen, dimLen, nameLen int
	for i := range p.recs {
		x := b.readTensor(int64(p.recs[i].tensor))
		shapeLen += x.sizes.len()
		dimLen += len(x.dimOrder)
		if n := len(x.fqn); n > 0 {
			nameLen += n
		} else {
			nameLen += len(ms[of[i].m].Name) + len("/values/") + 10
		}
	}
	ts := make([]Tensor, len(p.recs))
	shapes := make([]int64, 0, shapeLen)
	dims := make([]uint8, 0, dimLen)
	names := make([]byte, 0, nameLen)
	for i := range p.recs {
		r := &p.recs[i]
		t := &ts[i]
		x := b.readTensor(int64(r.tensor))
		s0 := len(shapes)
		for k := range x.sizes.len() {
			shapes = append(shapes, int64(x.sizes.at(k)))
		}
		t.Shape = shapes[s0:len(shapes):len(shapes)]
		if len(t.Shape) == 0 {
			t.Shape = []int64{} // a scalar: empty, not nil
		}
		if len(x.dimOrder) > 0 {
			d0 := len(dims)
			dims = append(dims, x.dimOrder...)
			t.DimOrder = dims[d0:len(dims):len(dims)]
		}
		n0 := len(names)
		m, value := &ms[of[i].m], of[i].v
		if len(x.fqn) > 0 {
			names = append(names, x.fqn...)
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
			t.DataBufferIndex = x.dbi
		}
		t.ScalarType, t.RequiresGrad = x.scalarType, x.requiresGrad
		t.Method, t.Value = m.Name, int(value)
		t.Segment = p.segmentOf(r.loc)
	}
	p.list.tensors = ts
}
