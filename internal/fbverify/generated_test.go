package fbverify_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/fbtestfb"
	"github.com/edgeload/edgeload/internal/testkit/hostile"
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
	n := c.u32(v)
	if n >= (1<<31-1)/elem {
		return 0, false
	}
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
	w.SetVisitor(func(kind int, t *fbverify.T) {
		if kind == fbtestfb.VisitNode && w.Has(t, 9) {
			nodes = append(nodes, t.Pos()+w.Slot(t, 9))
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
		w.SetVisitor(func(kind int, tt *fbverify.T) {
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
	for _, buf := range [][]byte{validNode(0), validNode(1), validNode(2)} {
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
