package tflite

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/segment"
)

// listing is what the first call of Tensors, TensorAt, Lookup, Subgraphs
// or Groups builds from the verified FlatBuffer: every tensor of every
// subgraph, the listed ones with their names, and the name index. Nothing
// in it can fail: NewFile checked what it reads, and the copies are
// bounded by what the verifier visited.
type listing struct {
	subgraphs []Subgraph
	tensors   []*Tensor // the listed tensors, pointing into subgraphs
	index     nameindex.Index
	groups    []string
}

func (m *Model) listed() *listing {
	m.listOnce.Do(func() { m.list = m.buildListing() })
	return m.list
}

func (m *Model) buildListing() *listing {
	l := &listing{subgraphs: make([]Subgraph, m.nsub), tensors: make([]*Tensor, len(m.tensors))}
	defer m.unpin()
	if !m.pin() {
		m.closedListing(l)
		return l
	}
	var sg tflitefb.SubGraph
	next := 0 // the next listed tensor
	for i := range l.subgraphs {
		m.root.Subgraphs(&sg, i)
		s := &l.subgraphs[i]
		s.Index = i
		s.Name = string(sg.Name())
		s.Inputs, s.Outputs = vec[int32](sg.InputsLength(), sg.Inputs), vec[int32](sg.OutputsLength(), sg.Outputs)
		s.NumOperators = sg.OperatorsLength()
		s.Tensors = m.subgraphTensors(i, &sg)
		for next < len(m.tensors) && int(m.tensors[next].Subgraph) == i {
			t := &s.Tensors[m.tensors[next].Index]
			d := m.buffers[t.Buffer].Data
			t.Location, t.Offset, t.NBytes, t.Data = format.LocSegment, d.Offset(), d.Len(), d
			l.tensors[next] = t
			next++
		}
	}
	m.names(l)
	return l
}

// closedListing fills l, for a model closed before its listing was built
// (its FlatBuffer gone), with what NewFile kept: the listed tensors'
// places and bytes, no names, shapes or types.
func (m *Model) closedListing(l *listing) {
	for i := range l.subgraphs {
		l.subgraphs[i].Index = i
	}
	ts := make([]Tensor, len(m.tensors))
	for k, c := range m.tensors {
		t := &ts[k]
		t.Subgraph, t.Index, t.Buffer, t.Offset = int(c.Subgraph), int(c.Index), c.Buffer, -1
		d := m.buffers[c.Buffer].Data
		t.Location, t.Offset, t.NBytes, t.Data = format.LocSegment, d.Offset(), d.Len(), d
		l.tensors[k] = t
	}
	m.names(l)
}

// subgraphTensors reads the tensors of subgraph i, their shapes and names
// carved from one slice and one string (two allocations a subgraph, not two
// a tensor).
func (m *Model) subgraphTensors(i int, sg *tflitefb.SubGraph) []Tensor {
	nt := sg.TensorsLength()
	out := make([]Tensor, nt)
	var t tflitefb.Tensor
	dims, chars := 0, 0
	for j := range nt {
		sg.Tensors(&t, j)
		dims += t.ShapeLength()
		chars += len(t.Name())
	}
	dimArena := make([]int64, dims)
	nameBytes := make([]byte, 0, chars)
	for j := range nt {
		sg.Tensors(&t, j)
		nameBytes = append(nameBytes, t.Name()...)
	}
	names := string(nameBytes)
	for j := range out {
		sg.Tensors(&t, j)
		tt := &out[j]
		tt.Subgraph, tt.Index = i, j
		tt.Offset = -1
		tt.Type = TensorType(t.Type())
		tt.DType = tt.Type.DType()
		tt.Buffer = int(t.Buffer())
		tt.Variable = t.IsVariable()
		tt.HasRank = t.HasRank()
		tt.ExternalBuffer = t.ExternalBuffer()
		tt.table = t.Table().Pos
		var q tflitefb.QuantizationParameters
		var sp tflitefb.SparsityParameters
		tt.Quantized, tt.Sparse = t.Quantization(&q) != nil, t.Sparsity(&sp) != nil
		n := len(t.Name())
		tt.RawName, names = names[:n], names[n:]
		tt.Name = tt.RawName
		nd := t.ShapeLength()
		tab := t.Table()
		tt.HasShape = tab.Offset(vtTensorShape) != 0
		tt.Shape, dimArena = dimArena[:nd:nd], dimArena[nd:]
		for k := range tt.Shape {
			tt.Shape[k] = int64(t.Shape(k))
		}
		if tab.Offset(vtTensorShapeSignature) != 0 {
			tt.ShapeSignature = widen[int32](t.ShapeSignatureLength(), t.ShapeSignature)
		}
	}
	return out
}

// names gives the listed tensors their names (package doc) and the
// subgraphs their groups, and builds the name index.
func (m *Model) names(l *listing) {
	// Which names do listed tensors of two or more subgraphs carry? (None
	// when they all belong to one subgraph.)
	var first map[string]int // name -> subgraph of its first carrier
	shared := map[string]bool{}
	if ts := l.tensors; len(ts) > 0 && ts[0].Subgraph != ts[len(ts)-1].Subgraph {
		first = make(map[string]int, len(ts))
		for _, t := range ts {
			if t.RawName == "" {
				continue
			}
			if s, ok := first[t.RawName]; !ok {
				first[t.RawName] = t.Subgraph
			} else if s != t.Subgraph {
				shared[t.RawName] = true
			}
		}
	}
	for _, t := range l.tensors {
		sg := strconv.Itoa(t.Subgraph)
		switch {
		case t.RawName == "":
			t.Name = sg + "/tensors/" + strconv.Itoa(t.Index)
		case shared[t.RawName]:
			t.Name, t.NameExplicit = sg+"/"+t.RawName, true
		default:
			t.NameExplicit = true
		}
	}
	l.index = nameindex.New(len(l.tensors), func(i int) string { return l.tensors[i].Name })

	count := make(map[string]int, len(l.subgraphs))
	for i := range l.subgraphs {
		count[l.subgraphs[i].Name]++
	}
	l.groups = make([]string, len(l.subgraphs))
	for i := range l.subgraphs {
		sg := &l.subgraphs[i]
		sg.Group = sg.Name
		if _, err := strconv.Atoi(sg.Name); sg.Name == "" || count[sg.Name] > 1 || err == nil {
			sg.Group = strconv.Itoa(i)
		}
		l.groups[i] = sg.Group
	}
}

// segments lists the buffers holding bytes (buffer 0, the sentinel,
// aside), in file order.
func (m *Model) segments() {
	for i := range m.buffers {
		if i > 0 && m.buffers[i].Kind != BufferEmpty {
			m.segBuf = append(m.segBuf, i)
		}
	}
	slices.SortStableFunc(m.segBuf, func(a, b int) int {
		return cmp.Compare(m.buffers[a].Data.Offset(), m.buffers[b].Data.Offset())
	})
	m.segs = make([]segment.Segment, len(m.segBuf))
	for i, b := range m.segBuf {
		m.segs[i] = m.buffers[b].Data
	}
}
