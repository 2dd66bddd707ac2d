package tflite

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// parser reads a verified FlatBuffer into a Model.
type parser struct {
	m    *Model
	r    reader
	size int64
	// copied counts the bytes of vectors and strings copied out of the
	// FlatBuffer; shared vectors could otherwise make it exceed the file.
	copied, budget int64
	// dimArena and nameArena are what is left of the current subgraph's arenas
	// (arenas): its tensors' shapes and names, in tensor order.
	dimArena  []int64
	nameArena string
}

// charge counts n copied bytes of a field of the table at t.
func (p *parser) charge(n int64, t int64) error {
	p.copied += n
	if p.copied > p.budget {
		return format.Errorf(formatName, "", t, "shared vectors and strings of this table copy to more than %d bytes (want at most 4 times the FlatBuffer region)", p.budget)
	}
	return nil
}

// str copies string field id of the table at t.
func (p *parser) str(t int64, id int) (string, error) {
	b := p.r.bytes(t, id)
	if err := p.charge(int64(len(b)), t); err != nil {
		return "", err
	}
	return string(b), nil
}

// i32s copies int32 vector field id of the table at t.
func (p *parser) i32s(t int64, id int) ([]int32, error) {
	_, n := p.r.vector(t, id)
	if err := p.charge(4*n, t); err != nil {
		return nil, err
	}
	return p.r.i32s(t, id), nil
}

func parse(mf *mmapfile.File) (*Model, error) {
	fb, err := verify(mf)
	if err != nil {
		return nil, err
	}
	m := &Model{mf: mf, fb: fb}
	p := &parser{m: m, r: fb, size: mf.Len(), budget: 4*int64(len(fb)) + 1<<20}
	r := p.r
	root := r.root()
	m.version = r.fieldU32(root, 0, 0)
	if m.version > MaxVersion {
		return nil, format.Wrapf(format.ErrUnsupportedVersion, formatName, "Model.version", root,
			"schema version %d (want at most %d)", m.version, MaxVersion)
	}
	if m.description, err = p.str(root, 3); err != nil {
		return nil, err
	}
	steps := []func(int64) error{p.buffers, p.opcodes, p.subgraphs, p.metadata, p.signatures, p.external}
	for _, step := range steps {
		if err := step(root); err != nil {
			return nil, err
		}
	}
	p.segments()
	p.names()
	p.assocFiles()
	return m, nil
}

func (p *parser) buffers(root int64) error {
	r, m := p.r, p.m
	start, n := r.vector(root, 4)
	m.buffers = make([]Buffer, n)
	for i := range m.buffers {
		b := r.elem(start, int64(i))
		field := func() string { return "Model.buffers[" + strconv.Itoa(i) + "]" }
		ds, dn := r.vector(b, 0)
		off, size := r.fieldU64(b, 1), r.fieldU64(b, 2)
		var err error
		switch {
		case dn > 0 && off > 1:
			return format.Errorf(formatName, field(), b, "buffer has both %d bytes of data and offset %d (want one or the other: runtimes disagree on which wins)", dn, off)
		case dn > 0:
			m.buffers[i].Kind = BufferInline
			m.buffers[i].Data, err = segment.New(m.mf, ds, dn)
		case off > 1 && size > 0:
			if outOfFile(off, size, p.size) { // (the field's name is built only for the error)
				return fileRange(field()+".offset", b, off, size, p.size)
			}
			m.buffers[i].Kind = BufferOffset
			m.buffers[i].Data, err = segment.New(m.mf, int64(off), int64(size))
		}
		if err != nil {
			return format.Wrapf(format.ErrTruncated, formatName, field(), b, "%v", err)
		}
	}
	return nil
}

func (p *parser) opcodes(root int64) error {
	r, m := p.r, p.m
	start, n := r.vector(root, 1)
	m.opcodes = make([]OperatorCode, n)
	for i := range m.opcodes {
		t := r.elem(start, int64(i))
		c := &m.opcodes[i]
		c.Builtin = max(r.fieldI32(t, 3, 0), int32(int8(r.fieldU8(t, 0, 0))))
		c.Version = r.fieldI32(t, 2, 1)
		var err error
		if c.Custom, err = p.str(t, 1); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) subgraphs(root int64) error {
	r, m := p.r, p.m
	start, n := r.vector(root, 2)
	if n == 0 {
		return format.Errorf(formatName, "Model.subgraphs", root, "model has no subgraph (want at least the main graph)")
	}
	m.subgraphs = make([]Subgraph, n)
	for i := range m.subgraphs {
		if err := p.subgraph(i, r.elem(start, int64(i))); err != nil {
			return err
		}
	}
	for i := range m.subgraphs {
		if err := p.operators(i); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) subgraph(i int, t int64) error {
	r, m := p.r, p.m
	sg := &m.subgraphs[i]
	sg.Index = i
	field := func() string { return "Model.subgraphs[" + strconv.Itoa(i) + "]" }
	var err error
	if sg.Name, err = p.str(t, 4); err != nil {
		return err
	}
	if sg.Inputs, err = p.i32s(t, 1); err != nil {
		return err
	}
	if sg.Outputs, err = p.i32s(t, 2); err != nil {
		return err
	}
	ts, nt := r.vector(t, 0)
	for _, x := range append(sg.Inputs[:len(sg.Inputs):len(sg.Inputs)], sg.Outputs...) {
		if outOf(int64(x), nt) {
			return rangeErr(field()+".inputs", t, int64(x), nt, "tensor")
		}
	}
	sg.ops, _ = r.vector(t, 3)
	_, nops := r.vector(t, 3)
	sg.NumOperators = int(nops)
	sg.Tensors = make([]Tensor, nt)
	sg.consts = make([]int32, nt)
	if err := p.charge(4*nt, t); err != nil {
		return err
	}
	if err := p.arenas(t, ts, nt); err != nil {
		return err
	}
	for j := range sg.Tensors {
		sg.consts[j] = -1
		if err := p.tensor(sg, j, r.elem(ts, int64(j))); err != nil {
			return err
		}
	}
	return nil
}

// arenas sizes the shapes and names of the nt tensors of the vector at ts
// (of the subgraph at t) and makes one slice of dimensions and one string
// of names that tensor carves its shapes and names from: two allocations a
// subgraph instead of two a tensor. Both are charged as copies.
func (p *parser) arenas(t, ts, nt int64) error {
	r := p.r
	var dims, chars int64
	for j := range nt {
		e := r.elem(ts, j)
		_, nd := r.vector(e, 0)
		_, nc := r.vector(e, 3)
		dims, chars = dims+nd, chars+nc
	}
	if err := p.charge(8*dims+chars, t); err != nil {
		return err
	}
	p.dimArena = make([]int64, dims)
	b := make([]byte, 0, chars)
	for j := range nt {
		b = append(b, r.bytes(r.elem(ts, j), 3)...)
	}
	p.nameArena = string(b)
	return nil
}

func (p *parser) tensor(sg *Subgraph, j int, t int64) error {
	r, m := p.r, p.m
	tt := &sg.Tensors[j]
	field := func() string {
		return "Model.subgraphs[" + strconv.Itoa(sg.Index) + "].tensors[" + strconv.Itoa(j) + "]"
	}
	tt.Subgraph, tt.Index = sg.Index, j
	tt.Offset = -1
	tt.Type = TensorType(int8(r.fieldU8(t, 1, 0)))
	tt.DType = tt.Type.DType()
	tt.Buffer = int(r.fieldU32(t, 2, 0))
	tt.Variable = r.fieldU8(t, 5, 0) != 0
	tt.HasRank = r.fieldU8(t, 8, 0) != 0
	tt.ExternalBuffer = r.fieldU32(t, 10, 0)
	tt.quant, tt.sparsity = r.table(t, 4), r.table(t, 6)
	tt.Quantized, tt.Sparse = tt.quant != 0, tt.sparsity != 0
	_, nc := r.vector(t, 3) // the name and the shape, from arenas' (charged there)
	tt.RawName, p.nameArena = p.nameArena[:nc], p.nameArena[nc:]
	tt.Name = tt.RawName
	tt.HasShape = r.has(t, 0)
	ss, ns := r.vector(t, 0)
	tt.Shape, p.dimArena = p.dimArena[:ns:ns], p.dimArena[ns:]
	var err error
	for k := range tt.Shape {
		tt.Shape[k] = int64(int32(r.u32(ss + 4*int64(k))))
	}
	if r.has(t, 7) {
		if tt.ShapeSignature, err = p.i32s(t, 7); err != nil {
			return err
		}
	}
	if tt.Buffer != 0 {
		if outOf(int64(tt.Buffer), int64(len(m.buffers))) {
			return rangeErr(field()+".buffer", t, int64(tt.Buffer), int64(len(m.buffers)), "buffer")
		}
	}
	if tt.Buffer == 0 || m.buffers[tt.Buffer].Kind == BufferEmpty {
		return nil
	}
	// A constant: its buffer holds bytes.
	data := m.buffers[tt.Buffer].Data
	switch {
	case tt.DType == format.Invalid:
		return format.Errorf(formatName, field()+".type", t, "constant of type %v (want a type with a fixed layout: not resource or variant)", tt.Type)
	case tt.ExternalBuffer != 0:
		return format.Errorf(formatName, field()+".external_buffer", t, "tensor has both buffer %d and external buffer %d (want one)", tt.Buffer, tt.ExternalBuffer)
	}
	for _, d := range tt.Shape {
		if d < 0 {
			return format.Errorf(formatName, field()+".shape", t, "constant has shape %v (want no negative dimension)", tt.Shape)
		}
	}
	if tt.HasShape && !tt.Sparse && tt.DType != format.String {
		// (Bounded by 4 × the file: int2 packs four elements a byte.)
		_, nb, ok := format.Numel(tt.Shape, tt.DType, 4*p.size)
		if !ok || nb != data.Len() {
			return format.Errorf(formatName, field(), t, "%v %v needs %d bytes, buffer %d holds %d", tt.DType, tt.Shape, nb, tt.Buffer, data.Len())
		}
	}
	tt.Location = format.LocSegment
	tt.Offset = data.Offset()
	tt.NBytes = data.Len()
	tt.Data = data
	sg.consts[j] = int32(len(m.tensors))
	m.tensors = append(m.tensors, tt)
	return nil
}

// operators checks the operators of subgraph i: opcode, tensor and
// subgraph indices.
func (p *parser) operators(i int) error {
	r, m := p.r, p.m
	sg := &m.subgraphs[i]
	nt := int64(len(sg.Tensors))
	for k := range sg.NumOperators {
		o := r.elem(sg.ops, int64(k))
		field := func() string { return "Model.subgraphs[" + strconv.Itoa(i) + "].operators[" + strconv.Itoa(k) + "]" }
		if outOf(int64(r.fieldU32(o, 0, 0)), int64(len(m.opcodes))) {
			return rangeErr(field()+".opcode_index", o, int64(r.fieldU32(o, 0, 0)), int64(len(m.opcodes)), "operator code")
		}
		for _, id := range [2]int{1, 2} {
			start, n := r.vector(o, id)
			for e := range n {
				x := int64(int32(r.u32(start + 4*e)))
				if x == -1 {
					continue
				}
				if outOf(x, nt) {
					return rangeErr(field()+".inputs", start+4*e, x, nt, "tensor")
				}
			}
		}
		var bad error
		calls(r, o, func(s int32) {
			if bad == nil {
				bad = inRange(field()+".builtin_options", o, int64(s), int64(len(m.subgraphs)), "subgraph")
			}
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// calls calls f with each subgraph the operator at o names in its options
// (WHILE cond and body, IF then and else, CALL_ONCE init, CALL, a StableHLO
// composite's decomposition), in that order.
func calls(r reader, o int64, f func(int32)) {
	switch tag, v := r.union(o, 3); tag {
	case tagWhileOptions, tagIfOptions:
		f(r.fieldI32(v, 0, 0))
		f(r.fieldI32(v, 1, 0))
	case tagCallOnceOptions:
		f(r.fieldI32(v, 0, 0))
	case tagCallOptions:
		f(int32(min(r.fieldU32(v, 0, 0), 1<<31-1)))
	}
	if tag, v := r.union(o, 11); tag == tagStableHLOCompositeOptions {
		f(r.fieldI32(v, 1, 0))
	}
}

func (p *parser) metadata(root int64) error {
	r, m := p.r, p.m
	start, n := r.vector(root, 6)
	m.metadata = make([]Metadata, n)
	for i := range m.metadata {
		t := r.elem(start, int64(i))
		md := &m.metadata[i]
		field := func() string { return "Model.metadata[" + strconv.Itoa(i) + "]" }
		var err error
		if md.Name, err = p.str(t, 0); err != nil {
			return err
		}
		md.Buffer = int(r.fieldU32(t, 1, 0))
		if outOf(int64(md.Buffer), int64(len(m.buffers))) {
			return rangeErr(field()+".buffer", t, int64(md.Buffer), int64(len(m.buffers)), "buffer")
		}
		md.Data = m.buffers[md.Buffer].Data
	}
	return nil
}

func (p *parser) signatures(root int64) error {
	r, m := p.r, p.m
	start, n := r.vector(root, 7)
	m.signatures = make([]SignatureDef, n)
	for i := range m.signatures {
		t := r.elem(start, int64(i))
		sd := &m.signatures[i]
		field := func() string { return "Model.signature_defs[" + strconv.Itoa(i) + "]" }
		var err error
		if sd.Key, err = p.str(t, 2); err != nil {
			return err
		}
		sd.Subgraph = int(r.fieldU32(t, 4, 0))
		if outOf(int64(sd.Subgraph), int64(len(m.subgraphs))) {
			return rangeErr(field()+".subgraph_index", t, int64(sd.Subgraph), int64(len(m.subgraphs)), "subgraph")
		}
		nt := int64(len(m.subgraphs[sd.Subgraph].Tensors))
		for _, id := range [2]int{0, 1} {
			vs, vn := r.vector(t, id)
			list := make([]TensorMap, vn)
			for k := range list {
				e := r.elem(vs, int64(k))
				if list[k].Name, err = p.str(e, 0); err != nil {
					return err
				}
				list[k].Tensor = int(r.fieldU32(e, 1, 0))
				if outOf(int64(list[k].Tensor), nt) {
					return rangeErr(field()+".inputs.tensor_index", e, int64(list[k].Tensor), nt, "tensor")
				}
			}
			if id == 0 {
				sd.Inputs = list
			} else {
				sd.Outputs = list
			}
		}
	}
	return nil
}

func (p *parser) external(root int64) error {
	r, m := p.r, p.m
	gs, gn := r.vector(root, 8)
	groups := make([]string, gn)
	for i := range groups {
		var err error
		if groups[i], err = p.str(r.elem(gs, int64(i)), 0); err != nil {
			return err
		}
	}
	bs, bn := r.vector(root, 9)
	m.extBuffers = make([]ExternalBuffer, bn)
	for i := range m.extBuffers {
		t := r.elem(bs, int64(i))
		e := &m.extBuffers[i]
		g := r.fieldU32(t, 1, 0)
		if outOf(int64(g), gn) {
			return rangeErr("Model.external_buffers["+strconv.Itoa(i)+"].group", t, int64(g), gn, "external buffer group")
		}
		var err error
		if e.Packing, err = p.str(t, 4); err != nil {
			return err
		}
		e.ID, e.Group = r.fieldU32(t, 0, 0), groups[g]
		e.Offset, e.Length = r.fieldU64(t, 2), r.fieldU64(t, 3)
	}
	return nil
}

// segments lists the buffers holding bytes, in file order.
func (p *parser) segments() {
	m := p.m
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

// names gives the listed tensors their names (package doc) and the
// subgraphs their groups, and builds the name index.
func (p *parser) names() {
	m := p.m
	// Which names do listed tensors of two or more subgraphs carry? (None
	// when they all belong to one subgraph.)
	var first map[string]int // name -> subgraph of its first carrier
	shared := map[string]bool{}
	if len(m.tensors) > 0 && m.tensors[0].Subgraph != m.tensors[len(m.tensors)-1].Subgraph {
		first = make(map[string]int, len(m.tensors))
	}
	for _, t := range m.tensors {
		if first == nil {
			break
		}
		if t.RawName == "" {
			continue
		}
		if s, ok := first[t.RawName]; !ok {
			first[t.RawName] = t.Subgraph
		} else if s != t.Subgraph {
			shared[t.RawName] = true
		}
	}
	for _, t := range m.tensors {
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
	m.index = nameindex.New(len(m.tensors), func(i int) string { return m.tensors[i].Name })

	count := make(map[string]int, len(m.subgraphs))
	for i := range m.subgraphs {
		count[m.subgraphs[i].Name]++
	}
	m.groups = make([]string, len(m.subgraphs))
	for i := range m.subgraphs {
		sg := &m.subgraphs[i]
		sg.Group = sg.Name
		if _, err := strconv.Atoi(sg.Name); sg.Name == "" || count[sg.Name] > 1 || err == nil {
			sg.Group = strconv.Itoa(i)
		}
		m.groups[i] = sg.Group
	}
}
