package fbverify_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/fbtestfb"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// The fields of internal/schema/fbtest.fbs, as the model below reads them.
type fieldKind int

const (
	scalar    fieldKind = iota // size bytes
	str                        // string
	vecScalar                  // vector of size-byte scalars
	vecTable                   // vector of tables of type table
	vecString                  // vector of strings
	table                      // a table of type table
	unionTag                   // the union's tag (1 byte)
	unionVal                   // the union's value: tag 1 Leaf, tag 2 Node
)

type fieldDesc struct {
	kind  fieldKind
	size  int
	table string
}

var fbtestSchema = map[string][]fieldDesc{
	"Leaf": {{kind: scalar, size: 1}, {kind: scalar, size: 2}, {kind: scalar, size: 4}, {kind: scalar, size: 8}, {kind: str}},
	"Node": {
		{kind: scalar, size: 4}, {kind: vecTable, table: "Leaf"}, {kind: vecScalar, size: 4},
		{kind: vecScalar, size: 8}, {kind: vecScalar, size: 1}, {kind: table, table: "Node"},
		{kind: unionTag}, {kind: unionVal}, {kind: vecString}, {kind: table, table: "Leaf"},
		{kind: vecScalar, size: 2},
	},
}

// cxxModel is the C++ Verifier of FlatBuffers (flatbuffers::Verifier with
// its default options, include/flatbuffers/verifier.h) and the Verify
// functions flatc writes, transcribed rule by rule in plain code for the
// schema above: positions are offsets from the buffer's start and "size_t"
// arithmetic is done in Go ints, a negative position standing for a C++
// wrap-around (which its range checks refuse).
type cxxModel struct {
	b             []byte
	depth, tables int
	// offsetField, when set, is told of every offset field the walk
	// follows: its vtable entry, its position and its target.
	offsetField func(entry, pos, target int)
}

func (c *cxxModel) u32(p int) int { return int(binary.LittleEndian.Uint32(c.b[p:])) }
func (c *cxxModel) u16(p int) int { return int(binary.LittleEndian.Uint16(c.b[p:])) }

// verify is Verifier::Verify(elem, elem_len).
func (c *cxxModel) verify(elem, n int) bool { return elem >= 0 && n < len(c.b) && elem <= len(c.b)-n }

// verifyT is Verifier::Verify<T>(elem): aligned to T's size and inside.
func (c *cxxModel) verifyT(elem, size int) bool { return elem&(size-1) == 0 && c.verify(elem, size) }

// offset is Verifier::VerifyOffset(start): the target, 0 when refused.
func (c *cxxModel) offset(start int) int {
	if !c.verifyT(start, 4) {
		return 0
	}
	o := c.u32(start)
	if o == 0 || int32(o) < 0 || !c.verify(start+o, 1) {
		return 0
	}
	return start + o
}

// tableStart is Verifier::VerifyTableStart with VerifyComplexity.
func (c *cxxModel) tableStart(t int) bool {
	if !c.verifyT(t, 4) {
		return false
	}
	vt := t - int(int32(c.u32(t)))
	c.depth++
	c.tables++
	if c.depth > 64 || c.tables > 1000000 || !c.verifyT(vt, 2) {
		return false
	}
	vsize := c.u16(vt)
	return vsize&1 == 0 && c.verify(vt, vsize)
}

// fieldOffset is Table::GetOptionalFieldOffset for field id.
func (c *cxxModel) fieldOffset(t, id int) int {
	vt := t - int(int32(c.u32(t)))
	if f := 4 + 2*id; f < c.u16(vt) {
		return c.u16(vt + f)
	}
	return 0
}

// vector is Verifier::VerifyVectorOrString: the length when accepted.
func (c *cxxModel) vector(v, elem int) (int, bool) {
	if !c.verifyT(v, 4) {
		return 0, false
	}
	// The length as C++'s uoffset_t: compared before it becomes an int,
	// which on a 32-bit platform it would not fit.
	u := binary.LittleEndian.Uint32(c.b[v:])
	if uint64(u) >= (1<<31-1)/uint64(elem) {
		return 0, false
	}
	n := int(u)
	return n, c.verify(v, 4+elem*n)
}

// str is Verifier::VerifyString.
func (c *cxxModel) str(s int) bool {
	n, ok := c.vector(s, 1)
	end := s + 4 + n
	return ok && c.verify(end, 1) && c.b[end] == 0
}

// elem is Vector<Offset<T>>::Get(i): the target, unchecked.
func (c *cxxModel) elem(v, i int) int { p := v + 4 + 4*i; return p + c.u32(p) }

// table is the Verify function flatc writes for table name.
func (c *cxxModel) table(name string, t int) bool {
	if !c.tableStart(t) {
		return false
	}
	fields := fbtestSchema[name]
	for id, f := range fields {
		fo := c.fieldOffset(t, id)
		switch f.kind {
		case scalar:
			if fo != 0 && !c.verifyT(t+fo, f.size) {
				return false
			}
			continue
		case unionTag:
			if fo != 0 && !c.verifyT(t+fo, 1) {
				return false
			}
			continue
		}
		// An offset field: Table::VerifyOffset, then its target.
		if fo == 0 {
			continue
		}
		p := c.offset(t + fo)
		if p == 0 {
			return false
		}
		if c.offsetField != nil {
			c.offsetField(t-int(int32(c.u32(t)))+4+2*id, t+fo, p)
		}
		switch f.kind {
		case str:
			if !c.str(p) {
				return false
			}
		case vecScalar:
			if _, ok := c.vector(p, f.size); !ok {
				return false
			}
		case vecTable, vecString:
			n, ok := c.vector(p, 4)
			if !ok {
				return false
			}
			for i := range n {
				if f.kind == vecString && !c.str(c.elem(p, i)) || f.kind == vecTable && !c.table(f.table, c.elem(p, i)) {
					return false
				}
			}
		case table:
			if !c.table(f.table, p) {
				return false
			}
		case unionVal:
			tag := 0
			if to := c.fieldOffset(t, id-1); to != 0 {
				tag = int(c.b[t+to])
			}
			// flatc's union verifier: NONE and unknown tags are accepted.
			if tag == 1 && !c.table("Leaf", p) || tag == 2 && !c.table("Node", p) {
				return false
			}
		}
	}
	c.depth--
	return true
}

// cxxAccepts is Verifier::VerifyBuffer<Node>(nullptr).
func cxxAccepts(b []byte) bool {
	c := &cxxModel{b: b}
	if len(b) < 12 {
		return false
	}
	t := c.offset(0)
	return t != 0 && c.table("Node", t)
}

func buildLeaf(b *flatbuffers.Builder, x int, name string) flatbuffers.UOffsetT {
	s := b.CreateString(name)
	b.StartObject(5)
	b.PrependInt64Slot(3, int64(x)<<40, 0)
	b.PrependUOffsetTSlot(4, s, 0)
	b.PrependInt32Slot(2, int32(x), 0)
	b.PrependInt16Slot(1, int16(x), 0)
	b.PrependInt8Slot(0, int8(x), 0)
	return b.EndObject()
}

// buildNode writes a Node with every field set, its union holding a Leaf
// (or, at even depths above 0, a Node), and depth nested children.
func buildNode(b *flatbuffers.Builder, depth int) flatbuffers.UOffsetT {
	var child, member flatbuffers.UOffsetT
	tag := byte(1)
	if depth > 0 {
		child = buildNode(b, depth-1)
		if depth%2 == 0 {
			member, tag = buildNode(b, 0), 2
		}
	}
	if tag == 1 {
		member = buildLeaf(b, 9, "m")
	}
	l1, l2 := buildLeaf(b, 1, "one"), buildLeaf(b, 2, "")
	b.StartVector(4, 2, 4)
	b.PrependUOffsetT(l2)
	b.PrependUOffsetT(l1)
	leaves := b.EndVector(2)
	b.StartVector(4, 2, 4)
	b.PrependFloat32(1)
	b.PrependFloat32(2)
	floats := b.EndVector(2)
	b.StartVector(8, 2, 8)
	b.PrependInt64(3)
	b.PrependInt64(4)
	longs := b.EndVector(2)
	bytes := b.CreateByteVector([]byte{1, 2, 3})
	n1, n2 := b.CreateString("a"), b.CreateString("bc")
	b.StartVector(4, 2, 4)
	b.PrependUOffsetT(n2)
	b.PrependUOffsetT(n1)
	names := b.EndVector(2)
	leaf := buildLeaf(b, 5, "leaf")
	b.StartVector(2, 3, 2)
	b.PrependInt16(1)
	b.PrependInt16(2)
	b.PrependInt16(3)
	shorts := b.EndVector(3)
	b.StartObject(11)
	b.PrependUint32Slot(0, 7, 0)
	b.PrependUOffsetTSlot(1, leaves, 0)
	b.PrependUOffsetTSlot(2, floats, 0)
	b.PrependUOffsetTSlot(3, longs, 0)
	b.PrependUOffsetTSlot(4, bytes, 0)
	if depth > 0 {
		b.PrependUOffsetTSlot(5, child, 0)
	}
	b.PrependByteSlot(6, tag, 0)
	b.PrependUOffsetTSlot(7, member, 0)
	b.PrependUOffsetTSlot(8, names, 0)
	b.PrependUOffsetTSlot(9, leaf, 0)
	b.PrependUOffsetTSlot(10, shorts, 0)
	return b.EndObject()
}

func validNode(depth int) []byte {
	b := flatbuffers.NewBuilder(256)
	b.Finish(buildNode(b, depth))
	return b.FinishedBytes()
}

// lazyVerify verifies b with a lazy walk whose visitor records the Nodes
// it verifies, then verifies the lazy leaf field of each with Elem at the
// field's position.
func lazyVerify(b []byte, opt fbverify.Options) error {
	w := fbverify.NewWalk(b, opt)
	w.SetLazy(true)
	var nodes []int64
	w.SetVisitor(func(kind int, t fbverify.T) {
		if kind == fbtestfb.VisitNode && w.Has(&t, 9) {
			nodes = append(nodes, t.Pos()+w.Slot(&t, 9))
		}
	})
	if err := w.Verify("Node", fbtestfb.VerifyNode); err != nil {
		return err
	}
	for _, field := range nodes {
		// (Depth 2: these buffers nest far less than the limit.)
		if _, err := w.Elem(field, 0, "Leaf", fbtestfb.VerifyLeaf, 2); err != nil {
			return err
		}
	}
	return nil
}

// TestVisitor: the walk tells its visitor of every Leaf it verifies, after
// verifying it, in the order it meets them (a Node's fields in id order:
// leaves, the union member, leaf), and the visitor reads its fields; a
// lazy walk leaves the lazy leaf field, and does not tell of it.
func TestVisitor(t *testing.T) {
	b := validNode(0)
	for _, c := range []struct {
		lazy bool
		want []string
	}{
		{false, []string{"1/one", "2/", "9/m", "5/leaf"}},
		{true, []string{"1/one", "2/", "9/m"}},
	} {
		w := fbverify.NewWalk(b, fbverify.Options{Format: "test"})
		w.SetLazy(c.lazy)
		var got []string
		w.SetVisitor(func(kind int, t fbverify.T) {
			tt := &t
			if kind != fbtestfb.VisitLeaf {
				return
			}
			name := ""
			if start, n, ok := w.Vec(tt, 4); ok {
				name = string(b[start : start+n])
			}
			got = append(got, fmt.Sprintf("%d/%s", int8(w.Uint8(tt, 0, 0)), name))
		})
		if err := w.Verify("Node", fbtestfb.VerifyNode); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("lazy %v: visits %q, want %q", c.lazy, got, c.want)
		}
	}
}

// TestGeneratedAsCxx: over every truncation of buffers of
// internal/schema/fbtest.fbs, every change of one byte and every u16 and
// u32 rewrite at aligned positions, the verifiers fbgen writes accept, with
// Options.CxxRules and the C++ limits (depth 64, 1,000,000 tables), exactly
// what the model of the C++ Verifier accepts; with the default options, a
// subset of it. Every refusal's message is of a known family and its
// numbers make its claim true (hostile.Contradiction).
func TestGeneratedAsCxx(t *testing.T) {
	cxxOpt := fbverify.Options{Format: "test", CxxRules: true, MaxDepth: 64, MaxTables: 1000000, MaxObjects: 1 << 30}
	var checked, accepted, strict int
	check := func(b []byte) {
		want := cxxAccepts(b)
		got := fbverify.NewWalk(b, cxxOpt).Verify("Node", fbtestfb.VerifyNode)
		if (got == nil) != want {
			t.Fatalf("%x: fbgen's verifier says %v, the C++ model accepts: %v", b, got, want)
		}
		if got != nil {
			if known, problem := hostile.Contradiction(got); !known || problem != "" {
				t.Fatalf("%x: message %q: known %v, contradicts itself: %q", b, got, known, problem)
			}
		}
		// A lazy walk, then the lazy field of every Node it reached
		// verified by Elem at the field's position, gives the same verdict.
		if lazy := lazyVerify(b, cxxOpt); (lazy == nil) != want {
			t.Fatalf("%x: a lazy walk and its lazy fields say %v, the C++ model accepts: %v", b, lazy, want)
		}
		if fbverify.NewWalk(b, fbverify.Options{Format: "test", MaxObjects: 1 << 30}).Verify("Node", fbtestfb.VerifyNode) == nil {
			strict++
			if !want {
				t.Fatalf("%x: the default options accept what the C++ model refuses", b)
			}
		}
		checked++
		if want {
			accepted++
		}
	}
	for _, buf := range [][]byte{validNode(0), validNode(1), validNode(2), validWide(5)} {
		if !cxxAccepts(buf) {
			t.Fatal("the model refuses a buffer the Go builder wrote")
		}
		for i := 0; i <= len(buf); i++ {
			check(buf[:i])
		}
		b := make([]byte, len(buf))
		for i := range buf {
			for _, x := range []byte{0, 1, 2, 0xff, buf[i] ^ 1, buf[i] ^ 2, buf[i] ^ 0x80, buf[i] + 4} {
				copy(b, buf)
				b[i] = x
				check(b)
			}
		}
		for i := 0; i+2 <= len(buf); i += 2 {
			old := binary.LittleEndian.Uint16(buf[i:])
			for _, x := range []uint16{0, 2, 3, old + 2, old - 2, old + 4, 0xfffe} {
				copy(b, buf)
				binary.LittleEndian.PutUint16(b[i:], x)
				check(b)
			}
		}
		// Every offset field moved by 2 bytes, still pointing at its
		// target: a misaligned offset a reader could follow.
		(&cxxModel{b: buf, offsetField: func(entry, pos, target int) {
			for _, d := range []int{-2, 2} {
				if pos+d < 0 || pos+d+4 > len(buf) {
					continue
				}
				copy(b, buf)
				binary.LittleEndian.PutUint16(b[entry:], uint16(int(binary.LittleEndian.Uint16(buf[entry:]))+d))
				binary.LittleEndian.PutUint32(b[pos+d:], uint32(target-(pos+d)))
				check(b)
			}
		}}).table("Node", int(binary.LittleEndian.Uint32(buf)))
		for i := 0; i+4 <= len(buf); i += 4 {
			n, old := len(buf), binary.LittleEndian.Uint32(buf[i:])
			for _, x := range []uint32{0, old + 4, old - 4, old + 2, old + 8, uint32(n - i), uint32(n - i - 1), 1 << 31, uint32(int32(-i))} {
				copy(b, buf)
				binary.LittleEndian.PutUint32(b[i:], x)
				check(b)
			}
		}
	}
	t.Logf("%d buffers: the C++ model accepts %d, the default options %d", checked, accepted, strict)
}

// validWide returns a Node whose leaves vector holds n leaves, of three
// kinds that alternate (every scalar field set, at two positions modulo 8,
// and none set), so that consecutive elements share vtables or not.
func validWide(n int) []byte {
	b := flatbuffers.NewBuilder(256)
	leaves := make([]flatbuffers.UOffsetT, n)
	for k := range leaves {
		leaves[k] = buildLeaf(b, k%3, "")
		if k%2 == 0 {
			b.PrependByte(7) // moves the next leaf by a byte (4 once aligned)
		}
	}
	b.StartVector(4, n, 4)
	for k := n - 1; k >= 0; k-- {
		b.PrependUOffsetT(leaves[k])
	}
	vec := b.EndVector(n)
	b.StartObject(11)
	b.PrependUOffsetTSlot(1, vec, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// generatedDigest verifies, with verify (a generated verifier run under
// the given options), every truncation of buf, every change of one byte,
// every u16 rewrite at even positions and every u32 rewrite at 4-aligned
// ones, under the C++ rules and limits, the default options with several
// object, table and depth limits, and hashes what a caller sees: the
// error's text (message, offset, field path) and the objects left.
func generatedDigest(buf []byte, verify func(b []byte, o fbverify.Options) (int, error)) string {
	h := sha256.New()
	opts := []fbverify.Options{
		{Format: "test", CxxRules: true, MaxDepth: 64, MaxTables: 1000000, MaxObjects: 1 << 30},
		{Format: "test"},
		{Format: "test", MaxObjects: 5},
		{Format: "test", MaxObjects: 17},
		{Format: "test", MaxTables: 3},
		{Format: "test", MaxDepth: 2},
	}
	run := func(b []byte) {
		for _, o := range opts {
			left, err := verify(b, o)
			fmt.Fprintf(h, "%v|%d\n", err, left)
		}
	}
	for i := 0; i <= len(buf); i++ {
		run(buf[:i])
	}
	b := make([]byte, len(buf))
	for i := range buf {
		for _, x := range []byte{0, 0xff, buf[i] ^ 0x55, buf[i] + 1, buf[i] ^ 4} {
			copy(b, buf)
			b[i] = x
			run(b)
		}
	}
	for i := 0; i+2 <= len(buf); i += 2 {
		old := binary.LittleEndian.Uint16(buf[i:])
		for _, x := range []uint16{0, 3, old + 2, old - 2, old + 4, old - 4} {
			copy(b, buf)
			binary.LittleEndian.PutUint16(b[i:], x)
			run(b)
		}
	}
	for i := 0; i+4 <= len(buf); i += 4 {
		n, old := len(buf), binary.LittleEndian.Uint32(buf[i:])
		for _, x := range []uint32{0, old + 4, old - 4, old + 8, old - 8, uint32(n - i), uint32(n - i - 4), 1 << 31, uint32(int32(-i))} {
			copy(b, buf)
			binary.LittleEndian.PutUint32(b[i:], x)
			run(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// walkWith returns a digest's verify for the generated verifier of the
// root table named name: a walk (lazy when lazy is true, its lazy parts
// left unverified) and the objects it left.
func walkWith(name string, f func(*fbverify.Walk, int64) error, lazy bool) func([]byte, fbverify.Options) (int, error) {
	return func(b []byte, o fbverify.Options) (int, error) {
		w := fbverify.NewWalk(b, o)
		w.SetLazy(lazy)
		err := w.Verify(name, f)
		return w.Left(), err
	}
}

// TestGeneratedOutcomesUnchanged: the generated verifiers' fast paths
// (their vtable memos among them) change no outcome, on buffers of
// fbtest.fbs and of the pte and TFLite schemas. The digests were recorded
// from the generated verifiers that had none (commit 97ad439): an outcome
// that differs, in verdict, message, offset, field path or objects
// counted, changes a digest. Update them only for an intended change of
// outcome.
func TestGeneratedOutcomesUnchanged(t *testing.T) {
	node := walkWith("Node", fbtestfb.VerifyNode, false)
	lazyNode := func(b []byte, o fbverify.Options) (int, error) { return 0, lazyVerify(b, o) }
	for _, c := range []struct {
		name   string
		buf    []byte
		verify func([]byte, fbverify.Options) (int, error)
		want   string
	}{
		{"node0", validNode(0), node, "d780a1a16f17e3d7"},
		{"node2", validNode(2), node, "e935621de85b1ced"},
		{"node2-lazy", validNode(2), lazyNode, "75122d4fe34815d6"},
		{"wide7", validWide(7), node, "e93a99be89877597"},
		{"pte", pteProgram(t), walkWith("Program", ptefb.VerifyProgram, false), "b2aba70de42403a7"},
		{"pte-lazy", pteProgram(t), walkWith("Program", ptefb.VerifyProgram, true), "27279961bf43acc2"},
		{"tflite", tfliteModel(), walkWith("Model", tflitefb.VerifyModel, false), "81ef029da378a054"},
	} {
		if got := generatedDigest(c.buf, c.verify); got != c.want {
			t.Errorf("%s: outcome digest %s, want %s", c.name, got, c.want)
		}
	}
}

// pteProgram returns the FlatBuffer of a program of five constants, an
// activation, an int and a tensor list, and an operator and its
// instruction.
func pteProgram(t *testing.T) []byte {
	m := writer.PTEMethod{Name: "forward", Tensors: []writer.PTETensor{
		{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 3}},
		{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{4}},
		{Kind: writer.PTEConstant, ScalarType: writer.PTEInt64, Sizes: []int32{1}},
		{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 2}},
		{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{}},
		{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{3}},
	}, Values: []writer.PTEValue{{Kind: writer.PTEInt, Int: 3}, {Kind: writer.PTETensorList, Items: []int32{0, 1}}},
		Inputs: []int32{0}, Outputs: []int32{1}, Operators: []string{"aten::add"}}
	p := writer.PTE{Methods: []writer.PTEMethod{m}}
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b[:min(len(b), int(binary.LittleEndian.Uint64(b[16:])))]
}

// tfliteModel returns a model of two subgraphs whose tensors, buffers (in
// the large-model layout: offsets and sizes) and operators share vtables
// or not, with quantization, metadata and a while loop.
func tfliteModel() []byte {
	f32 := tflitefb.TensorTypeFLOAT32
	main := tflitegen.Subgraph{Name: "main", Inputs: []int32{0}, Outputs: []int32{0}, Tensors: []tflitegen.Tensor{
		{Name: "x", Type: f32, Shape: []int32{1}},
		{Name: "w1", Type: f32, Shape: []int32{1}, Buffer: 1},
		{Name: "w2", Type: tflitefb.TensorTypeINT8, Shape: []int32{4}, Buffer: 2, Scale: []float32{0.5}},
		{Type: f32, Buffer: 3},
	}, Ops: []tflitegen.Op{
		{Inputs: []int32{0, 1}, Outputs: []int32{0}},
		{Inputs: []int32{0}, Outputs: []int32{0}, Kind: "while", Calls: []int32{1, 1}},
		{Inputs: []int32{0, 2}, Outputs: []int32{0}},
	}}
	body := tflitegen.Subgraph{Name: "body", Inputs: []int32{0}, Outputs: []int32{0}, Tensors: []tflitegen.Tensor{
		{Name: "y", Type: f32, Shape: []int32{1}},
	}}
	m := &tflitegen.Model{External: true, Subgraphs: []tflitegen.Subgraph{main, body},
		Buffers:  []tflitegen.Buffer{{}, {Data: []byte{1, 2, 3, 4}}, {Data: []byte{5, 6, 7, 8}}, {}},
		Metadata: []tflitegen.Metadata{{Name: "min_runtime_version", Buffer: 3}},
	}
	b := m.Bytes()
	return b
}

// sharedVTable returns a Node whose leaves are two Leaf tables sharing one
// vtable (c at table offset 4, d, 8 bytes, at 8; 16 bytes recorded), the
// first at 48, the second at second; the buffer is n bytes long.
func sharedVTable(second, n int) []byte {
	b := make([]byte, n)
	le := binary.LittleEndian
	le.PutUint32(b[0:], 16) // root: the Node at 16
	// The Node's vtable at 8: 8 bytes, a table of 8, leaves at 4.
	le.PutUint16(b[8:], 8)
	le.PutUint16(b[10:], 8)
	le.PutUint16(b[14:], 4)
	le.PutUint32(b[16:], 16-8)
	le.PutUint32(b[20:], 4) // leaves: the vector at 24
	le.PutUint32(b[24:], 2)
	le.PutUint32(b[28:], 48-28)
	le.PutUint32(b[32:], uint32(second-32))
	// The Leaf vtable at 36: 12 bytes, a table of 16, c at 4, d at 8.
	le.PutUint16(b[36:], 12)
	le.PutUint16(b[38:], 16)
	le.PutUint16(b[44:], 4)
	le.PutUint16(b[46:], 8)
	for _, at := range []int{48, second} {
		le.PutUint32(b[at:], uint32(at-36))
	}
	return b
}

// TestMemoSharedVTable: a table that has the vtable of the table before
// it, which passed its checks, is refused as the C++ Verifier refuses it
// when its 8-byte field is not aligned or lies past the buffer's end, and
// accepted otherwise.
func TestMemoSharedVTable(t *testing.T) {
	for _, c := range []struct {
		second, n int
		ok        bool
	}{
		{64, 80, true},
		{72, 88, true},
		{68, 84, false}, // d at 76: not 8-aligned
		{64, 76, false}, // d runs past the end
		{64, 72, false}, // d starts at the end
		{72, 84, false},
	} {
		b := sharedVTable(c.second, c.n)
		if cxxAccepts(b) != c.ok {
			t.Fatalf("second leaf at %d in %d bytes: the C++ model accepts: %v, want %v", c.second, c.n, !c.ok, c.ok)
		}
		for _, o := range []fbverify.Options{{Format: "test"}, {Format: "test", CxxRules: true}} {
			if err := fbverify.NewWalk(b, o).Verify("Node", fbtestfb.VerifyNode); (err == nil) != c.ok {
				t.Errorf("second leaf at %d in %d bytes: %v, want accepted: %v", c.second, c.n, err, c.ok)
			}
		}
	}
}

// TestMemoLimits: Leaves that share one vtable (each after the first
// starts with a memo hit) are held to the table and object limits as any
// other table.
func TestMemoLimits(t *testing.T) {
	const n = 10
	b := flatbuffers.NewBuilder(256)
	var leaves [n]flatbuffers.UOffsetT
	for i := range leaves {
		b.StartObject(5)
		b.PrependInt8Slot(0, int8(i+1), 0)
		leaves[i] = b.EndObject()
	}
	b.StartVector(4, n, 4)
	for i := n - 1; i >= 0; i-- {
		b.PrependUOffsetT(leaves[i])
	}
	vec := b.EndVector(n)
	b.StartObject(11)
	b.PrependUOffsetTSlot(1, vec, 0)
	b.Finish(b.EndObject())
	buf := b.FinishedBytes()
	// The Node, the vector and n Leaves: n+1 tables, n+2 objects.
	for _, c := range []struct {
		o  fbverify.Options
		ok bool
	}{
		{fbverify.Options{MaxTables: n + 1}, true},
		{fbverify.Options{MaxTables: n}, false},
		{fbverify.Options{MaxObjects: n + 2}, true},
		{fbverify.Options{MaxObjects: n + 1}, false},
	} {
		c.o.Format = "test"
		if err := fbverify.NewWalk(buf, c.o).Verify("Node", fbtestfb.VerifyNode); (err == nil) != c.ok {
			t.Errorf("%d Leaves, %+v: %v, want accepted: %v", n, c.o, err, c.ok)
		}
	}
}
