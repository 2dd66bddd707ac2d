package ptn

import (
	"fmt"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptnfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/arena"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
)

// The argument union tags edgeload reads.
const (
	argTensor         = 1
	argTensorList     = 11
	argOptTensorList  = 12
	argGraph          = 13
	opPlaceholder     = 1
	schemeAffineGroup = 1
)

// readGraph verifies program.ptg and reads its methods.
func (f *File) readGraph(g Member) error {
	if g.Size > fbverify.MaxSize {
		return errorf(GraphMember, g.Offset, "%d bytes, more than a FlatBuffer can have", g.Size)
	}
	fb, buf, err := region.Read(f.mf, g.Offset, g.Size)
	if err != nil {
		return fmt.Errorf("ptn: reading %s: %w", GraphMember, err)
	}
	defer region.Put(buf)
	if len(fb) < 8 {
		return errorf(GraphMember, g.Offset, "%d bytes: too short for a FlatBuffer", len(fb))
	}
	if id := fb[4:8]; string(id) != Identifier {
		return wrapf(format.ErrUnknownFormat, GraphMember, g.Offset+4, "file identifier %q, want %q", id, Identifier)
	}
	if err := fbverify.NewWalk(fb, fbverify.Options{Format: formatName, Base: g.Offset}).Verify("Program", ptnfb.VerifyProgram); err != nil {
		return err
	}
	p := ptnfb.GetRootAsProgram(fb, 0)
	var names arena.Strings
	f.version = names.Copy(p.Version())
	r := reader{f: f, names: &names, base: g.Offset}
	var m ptnfb.Method
	f.methods = make([]Method, p.MethodsLength())
	f.groups = make([]string, len(f.methods))
	for i := range f.methods {
		p.Methods(&m, i)
		if err := r.method(&m, &f.methods[i], i); err != nil {
			return err
		}
		f.groups[i] = f.methods[i].Name
	}
	f.methodIx = nameindex.Make(len(f.methods), func(i int) string { return f.methods[i].Name })
	for i := range f.methods {
		if _, rep := f.methodIx.Insert(i); rep {
			return errorf("Program.methods["+strconv.Itoa(i)+"].name", -1, "method %s appears twice", strconv.Quote(f.methods[i].Name))
		}
	}
	return nil
}

// reader reads the methods of a verified program.
type reader struct {
	f     *File
	names *arena.Strings
	base  int64
	done  map[flatbuffers.UOffsetT]bool // subgraphs already checked
}

// key returns the tensor of a data key, or an error naming where the key
// was met.
func (r *reader) key(k []byte, field string) (int, error) {
	i, ok := r.f.index.Lookup(string(k))
	if !ok {
		return 0, errorf(field, -1, "data key %s is not in %s or %s", strconv.Quote(string(k)), ConstantsMember, AliasesMember)
	}
	return i, nil
}

// quantKeys returns the AffineGroup keys of a verified TensorMeta.
func quantKeys(meta *ptnfb.TensorMeta) (scale, zero []byte) {
	q := meta.Quant(nil)
	if q == nil || q.SchemeType() != schemeAffineGroup {
		return nil, nil
	}
	var t flatbuffers.Table
	if !q.Scheme(&t) {
		return nil, nil
	}
	var ag ptnfb.AffineGroup
	ag.Init(t.Bytes, t.Pos)
	return ag.ScaleDataKey(), ag.ZeroPointDataKey()
}

func (r *reader) method(m *ptnfb.Method, out *Method, mi int) error {
	at := "Program.methods[" + strconv.Itoa(mi) + "]"
	out.Name = r.names.Copy(m.Name())
	var c ptnfb.NamedTensorRef
	var meta ptnfb.TensorMeta
	out.Constants = make([]Constant, m.ConstantsLength())
	ph := make(map[string]int, len(out.Constants)) // placeholder name → constant
	for i := range out.Constants {
		m.Constants(&c, i)
		field := at + ".constants[" + strconv.Itoa(i) + "]"
		t, err := r.key(c.DataKey(), field+".data_key")
		if err != nil {
			return err
		}
		k := Constant{Name: r.names.Copy(c.Name()), DataKey: r.names.Copy(c.DataKey()), Kind: uint8(c.Kind()), Mutated: c.Mutated(), Tensor: t}
		c.Meta(&meta)
		if s, z := quantKeys(&meta); s != nil {
			for _, q := range [][]byte{s, z} {
				if len(q) == 0 {
					continue
				}
				if _, err := r.key(q, field+".meta.quant"); err != nil {
					return err
				}
				k.QuantKeys = append(k.QuantKeys, r.names.Copy(q))
			}
		}
		if _, dup := ph[k.Name]; !dup {
			ph[k.Name] = i
		}
		out.Constants[i] = k
	}
	var mb ptnfb.MutableBufferSpec
	out.MutableBuffers = make([]MutableBuffer, m.MutableBuffersLength())
	for i := range out.MutableBuffers {
		m.MutableBuffers(&mb, i)
		out.MutableBuffers[i] = MutableBuffer{Name: r.names.Copy(mb.Name()), FQN: r.names.Copy(mb.Fqn())}
	}
	g := m.Graph(nil)
	if err := r.tensorValueKeys(g, at+".graph", 0); err != nil {
		return err
	}
	// The nodes, in order: a non-placeholder node reads the constants
	// its tensor arguments name.
	seen := make(map[int]bool, len(out.Constants))
	read := func(name []byte) {
		ci, ok := ph[string(name)]
		if !ok || seen[ci] {
			return
		}
		seen[ci] = true
		out.reads = append(out.reads, int32(ci))
	}
	var node ptnfb.Node
	var na ptnfb.NamedArgument
	var arg ptnfb.Argument
	var tab flatbuffers.Table
	for i := range g.NodesLength() {
		g.Nodes(&node, i)
		if node.OpKind() == opPlaceholder {
			continue
		}
		for j := range node.InputsLength() {
			node.Inputs(&na, j)
			na.Arg(&arg)
			if !arg.Value(&tab) {
				continue
			}
			switch arg.ValueType() {
			case argTensor:
				var ta ptnfb.TensorArg
				ta.Init(tab.Bytes, tab.Pos)
				read(ta.Name())
			case argTensorList:
				var tl ptnfb.TensorListArg
				tl.Init(tab.Bytes, tab.Pos)
				for k := range tl.NamesLength() {
					read(tl.Names(k))
				}
			case argOptTensorList:
				var ol ptnfb.OptionalTensorListArg
				ol.Init(tab.Bytes, tab.Pos)
				for k := range ol.NamesLength() {
					if k < ol.HasValueLength() && ol.HasValue(k) {
						read(ol.Names(k))
					}
				}
			}
		}
	}
	return nil
}

// tensorValueKeys checks the quantization keys of a graph's tensor values
// and of its subgraphs' (depth bounded by the verifier's nesting limit).
func (r *reader) tensorValueKeys(g *ptnfb.Graph, at string, depth int) error {
	// a subgraph shared by many nodes is checked once
	if r.done == nil {
		r.done = map[flatbuffers.UOffsetT]bool{}
	}
	if r.done[g.Table().Pos] {
		return nil
	}
	r.done[g.Table().Pos] = true
	if depth > fbverify.DefaultMaxDepth {
		return errorf(at, -1, "subgraphs nested deeper than %d", fbverify.DefaultMaxDepth)
	}
	var tv ptnfb.TensorValue
	var meta ptnfb.TensorMeta
	for i := range g.TensorValuesLength() {
		g.TensorValues(&tv, i)
		if tv.Meta(&meta) == nil {
			continue
		}
		s, z := quantKeys(&meta)
		for _, q := range [][]byte{s, z} {
			if len(q) > 0 {
				if _, err := r.key(q, at+".tensor_values["+strconv.Itoa(i)+"].meta.quant"); err != nil {
					return err
				}
			}
		}
	}
	var node ptnfb.Node
	var na ptnfb.NamedArgument
	var arg ptnfb.Argument
	var tab flatbuffers.Table
	for i := range g.NodesLength() {
		g.Nodes(&node, i)
		for j := range node.InputsLength() {
			node.Inputs(&na, j)
			na.Arg(&arg)
			if arg.ValueType() != argGraph || !arg.Value(&tab) {
				continue
			}
			var ga ptnfb.GraphArg
			ga.Init(tab.Bytes, tab.Pos)
			if err := r.tensorValueKeys(ga.Graph(nil), at+".nodes["+strconv.Itoa(i)+"].graph", depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
