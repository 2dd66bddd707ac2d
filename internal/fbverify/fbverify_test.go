package fbverify

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/loader/format"
)

// The test schema:
//
//	table Leaf { x: int; name: string; }
//	union U { Leaf }
//	table Node { id: uint; leaves: [Leaf]; data: [float]; child: Node; u: U; names: [string]; }
// The test schema's verifiers, made of the steps as fbgen writes them.

func table(w *Walk, pos int64, fields func(*T) error) error {
	t, err := w.Start(pos)
	if err != nil {
		return err
	}
	err = fields(&t)
	w.Leave()
	return err
}

// str verifies the string field id of t, named name.
func str(w *Walk, t *T, id int, required bool, name string) error {
	if q, err := w.Ref(t, id, required); err != nil {
		return w.At(err, name, -1)
	} else if q != 0 {
		if err := w.String(q); err != nil {
			return w.At(err, name, -1)
		}
	}
	return nil
}

// tables verifies the table vector field id of t, named name, with elem.
func tables(w *Walk, t *T, id int, name string, elem func(*Walk, int64) error) error {
	q, err := w.Ref(t, id, false)
	if err != nil || q == 0 {
		return w.At(err, name, -1)
	}
	start, n, err := w.Vector(q, 4)
	if err != nil {
		return w.At(err, name, -1)
	}
	for i := int64(0); i < n; i++ {
		e, err := w.Deref(start + 4*i)
		if err == nil {
			err = elem(w, e)
		}
		if err != nil {
			return w.At(w.At(err, "", int(i)), name, -1)
		}
	}
	return nil
}

func verifyLeaf(w *Walk, pos int64) error {
	return table(w, pos, func(t *T) error {
		if err := w.Scalar(t, 0, 4); err != nil {
			return w.At(err, "x", -1)
		}
		return str(w, t, 1, false, "name")
	})
}

// openU makes Node.u accept unknown tags as tables (fbgen's (open));
// opaqueU accepts them as the offset Union checked (fbgen's (opaque)).
var openU, opaqueU bool

func verifyNode(w *Walk, pos int64) error {
	return table(w, pos, func(t *T) error {
		if err := w.Scalar(t, 0, 4); err != nil {
			return w.At(err, "id", -1)
		}
		if err := tables(w, t, 1, "leaves", verifyLeaf); err != nil {
			return err
		}
		if q, err := w.Ref(t, 2, false); err != nil {
			return w.At(err, "data", -1)
		} else if q != 0 {
			if _, _, err := w.Vector(q, 4); err != nil {
				return w.At(err, "data", -1)
			}
		}
		if q, err := w.Ref(t, 3, false); err != nil {
			return w.At(err, "child", -1)
		} else if q != 0 {
			if err := verifyNode(w, q); err != nil {
				return w.At(err, "child", -1)
			}
		}
		if tag, q, err := w.Union(t, 4); err != nil {
			return w.At(err, "u", -1)
		} else {
			switch {
			case tag == 0 || q == 0:
			case tag == 1:
				err = verifyLeaf(w, q)
			case opaqueU:
			case openU:
				err = w.Bare(q)
			default:
				err = w.UnknownTag(t, 4, tag, 2)
			}
			if err != nil {
				return w.At(err, "u", -1)
			}
		}
		if q, err := w.Ref(t, 6, false); err != nil {
			return w.At(err, "names", -1)
		} else if q != 0 {
			start, n, err := w.Vector(q, 4)
			if err != nil {
				return w.At(err, "names", -1)
			}
			for i := int64(0); i < n; i++ {
				e, err := w.Deref(start + 4*i)
				if err == nil {
					err = w.String(e)
				}
				if err != nil {
					return w.At(w.At(err, "", int(i)), "names", -1)
				}
			}
		}
		return nil
	})
}

// verifyList verifies a List { nodes: [Node]; }.
func verifyList(w *Walk, pos int64) error {
	return table(w, pos, func(t *T) error { return tables(w, t, 0, "nodes", verifyNode) })
}

// A root to verify: a name and its verifier.
type root struct {
	name string
	f    func(*Walk, int64) error
}

var (
	node = root{"Node", verifyNode}
	list = root{"List", verifyList}
)

// Verify verifies buf from its root table with r.
func Verify(buf []byte, r root, opt Options) error { return NewWalk(buf, opt).Verify(r.name, r.f) }

func buildLeaf(b *flatbuffers.Builder, x int32, name string) flatbuffers.UOffsetT {
	s := b.CreateString(name)
	b.StartObject(2)
	b.PrependInt32Slot(0, x, 0)
	b.PrependUOffsetTSlot(1, s, 0)
	return b.EndObject()
}

// buildNode writes a Node with two leaves, three floats, a union leaf, and
// `depth` nested children.
func buildNode(b *flatbuffers.Builder, depth int) flatbuffers.UOffsetT {
	var child flatbuffers.UOffsetT
	if depth > 0 {
		child = buildNode(b, depth-1)
	}
	l1, l2 := buildLeaf(b, 1, "one"), buildLeaf(b, 2, "two")
	b.StartVector(4, 2, 4)
	b.PrependUOffsetT(l2)
	b.PrependUOffsetT(l1)
	leaves := b.EndVector(2)
	b.StartVector(4, 3, 4)
	for i := 0; i < 3; i++ {
		b.PrependFloat32(float32(i))
	}
	data := b.EndVector(3)
	ul := buildLeaf(b, 3, "union")
	n1 := b.CreateString("a")
	b.StartVector(4, 1, 4)
	b.PrependUOffsetT(n1)
	names := b.EndVector(1)
	b.StartObject(7)
	b.PrependUint32Slot(0, 7, 0)
	b.PrependUOffsetTSlot(1, leaves, 0)
	b.PrependUOffsetTSlot(2, data, 0)
	if depth > 0 {
		b.PrependUOffsetTSlot(3, child, 0)
	}
	b.PrependByteSlot(4, 1, 0)
	b.PrependUOffsetTSlot(5, ul, 0)
	b.PrependUOffsetTSlot(6, names, 0)
	return b.EndObject()
}

// validList writes a List of n Nodes, each with `depth` children.
func validList(n, depth int) []byte {
	b := flatbuffers.NewBuilder(1024)
	nodes := make([]flatbuffers.UOffsetT, n)
	for i := range nodes {
		nodes[i] = buildNode(b, depth)
	}
	b.StartVector(4, n, 4)
	for i := n - 1; i >= 0; i-- {
		b.PrependUOffsetT(nodes[i])
	}
	vec := b.EndVector(n)
	b.StartObject(1)
	b.PrependUOffsetTSlot(0, vec, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

func valid(depth int) []byte {
	b := flatbuffers.NewBuilder(256)
	b.Finish(buildNode(b, depth))
	return b.FinishedBytes()
}

func TestValid(t *testing.T) {
	for _, d := range []int{0, 1, 5} {
		if err := Verify(valid(d), node, Options{Format: "test"}); err != nil {
			t.Fatalf("depth %d: valid buffer rejected: %v", d, err)
		}
	}
}

func mustFail(t *testing.T, buf []byte, opt Options, want string) *format.FormatError {
	t.Helper()
	if opt.Format == "" {
		opt.Format = "test"
	}
	err := Verify(buf, node, opt)
	if err == nil {
		t.Fatalf("accepted a bad buffer, want error containing %q", want)
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, format.ErrMalformed) {
		t.Fatalf("error %v is not a *FormatError wrapping ErrMalformed", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
	return fe
}

// find returns the position of the first occurrence of pat in buf.
func find(t *testing.T, buf []byte, pat []byte) int {
	t.Helper()
	i := strings.Index(string(buf), string(pat))
	if i < 0 {
		t.Fatalf("pattern %q not found", pat)
	}
	return i
}

func TestRootOutside(t *testing.T) {
	buf := valid(0)
	binary.LittleEndian.PutUint32(buf, uint32(len(buf)))
	mustFail(t, buf, Options{}, "past the end")
	mustFail(t, buf[:6], Options{}, "shorter than its 8-byte prefix")
}

func TestStringWithoutTerminator(t *testing.T) {
	buf := valid(0)
	i := find(t, buf, []byte("union\x00"))
	buf[i+5] = 'X'
	fe := mustFail(t, buf, Options{}, "NUL terminator")
	if fe.Field != "Node.u.name" {
		t.Errorf("field path %q, want Node.u.name", fe.Field)
	}
}

func TestVectorLengthTooLarge(t *testing.T) {
	buf := valid(0)
	// The float vector: length 3 followed by 0.0, 1.0, 2.0.
	pat := make([]byte, 8)
	binary.LittleEndian.PutUint32(pat, 3)
	binary.LittleEndian.PutUint32(pat[4:], 0x40000000) // 2.0 comes first: prepended in reverse
	i := find(t, buf, pat)
	binary.LittleEndian.PutUint32(buf[i:], 1<<31)
	fe := mustFail(t, buf, Options{Base: 1000}, "2147483648 elements")
	if fe.Field != "Node.data" || fe.Offset != int64(1000+i) {
		t.Errorf("got field %q offset %d, want Node.data at %d", fe.Field, fe.Offset, 1000+i)
	}
}

func TestUnknownUnionTag(t *testing.T) {
	for _, tag := range []byte{2, 0xff} {
		buf := valid(0)
		setUnionTag(t, buf, tag)
		mustFail(t, buf, Options{}, "unknown union tag")
	}
	// An open union accepts it and verifies the value as a bare table.
	buf := valid(0)
	setUnionTag(t, buf, 9)
	openU = true
	defer func() { openU = false }()
	if err := Verify(buf, node, Options{}); err != nil {
		t.Fatalf("open union: %v", err)
	}
}

// setUnionTag rewrites the root Node's union tag.
func setUnionTag(t *testing.T, buf []byte, tag byte) {
	t.Helper()
	root := int(binary.LittleEndian.Uint32(buf))
	vt := root - int(int32(binary.LittleEndian.Uint32(buf[root:])))
	fo := int(binary.LittleEndian.Uint16(buf[vt+4+2*4:]))
	if fo == 0 || buf[root+fo] != 1 {
		t.Fatal("union tag not where expected")
	}
	buf[root+fo] = tag
}

func TestUnionWithoutValue(t *testing.T) {
	buf := valid(0)
	root := int(binary.LittleEndian.Uint32(buf))
	vt := root - int(int32(binary.LittleEndian.Uint32(buf[root:])))
	binary.LittleEndian.PutUint16(buf[vt+4+2*5:], 0)
	mustFail(t, buf, Options{}, "has no value")
}

func TestBadVTable(t *testing.T) {
	buf := valid(0)
	root := int(binary.LittleEndian.Uint32(buf))
	vt := root - int(int32(binary.LittleEndian.Uint32(buf[root:])))
	b2 := append([]byte(nil), buf...)
	binary.LittleEndian.PutUint16(b2[vt:], 7) // odd size
	mustFail(t, b2, Options{}, "vtable size 7 is odd")
	b3 := append([]byte(nil), buf...)
	binary.LittleEndian.PutUint32(b3[root:], uint32(int32(-len(buf)))) // vtable past the end
	mustFail(t, b3, Options{}, "vtable offset")
	b4 := append([]byte(nil), buf...)
	binary.LittleEndian.PutUint16(b4[vt+4:], 0xfff0) // a field offset past the end of the buffer
	mustFail(t, b4, Options{}, "outside the FlatBuffer")
}

func TestRequired(t *testing.T) {
	req := root{"Req", func(w *Walk, pos int64) error {
		return table(w, pos, func(t *T) error { return str(w, t, 9, true, "must") })
	}}
	if err := Verify(valid(0), req, Options{}); err == nil || !strings.Contains(err.Error(), "required field") {
		t.Fatalf("missing required field: got %v", err)
	}
}

func TestDepthLimit(t *testing.T) {
	buf := valid(20)
	if err := Verify(buf, node, Options{MaxDepth: 50}); err != nil {
		t.Fatalf("depth 20 under limit 50: %v", err)
	}
	mustFail(t, buf, Options{MaxDepth: 10}, "nested more than 10 deep")

	// 10,000 nested tables: rejected by the default limit, quickly.
	b := flatbuffers.NewBuilder(1 << 20)
	var prev flatbuffers.UOffsetT
	for i := 0; i < 10000; i++ {
		b.StartObject(4)
		if i > 0 {
			b.PrependUOffsetTSlot(3, prev, 0)
		}
		prev = b.EndObject()
	}
	b.Finish(prev)
	mustFail(t, b.FinishedBytes(), Options{}, "nested more than")
}

// A DAG of shared tables: each level's vector points N times at the same
// next level. A naive walk visits N^levels tables; the object budget stops
// it after a number of visits proportional to the buffer size.
func TestSharedTablesBudget(t *testing.T) {
	b := flatbuffers.NewBuilder(1 << 16)
	const n, levels = 64, 8
	var prev flatbuffers.UOffsetT
	for l := 0; l < levels; l++ {
		var vec flatbuffers.UOffsetT
		if l > 0 {
			b.StartVector(4, n, 4)
			for i := 0; i < n; i++ {
				b.PrependUOffsetT(prev)
			}
			vec = b.EndVector(n)
		}
		b.StartObject(2)
		if l > 0 {
			b.PrependUOffsetTSlot(1, vec, 0)
		}
		prev = b.EndObject()
	}
	b.Finish(prev)
	var verifyFan func(w *Walk, pos int64) error
	verifyFan = func(w *Walk, pos int64) error {
		return table(w, pos, func(t *T) error { return tables(w, t, 1, "kids", verifyFan) })
	}
	fan := root{"Fan", verifyFan}
	err := Verify(b.FinishedBytes(), fan, Options{Format: "test"})
	if err == nil || !strings.Contains(err.Error(), "tables, vectors and strings visited") {
		t.Fatalf("shared-table DAG: got %v, want the object budget error", err)
	}
}

func TestOffsetOverflow(t *testing.T) {
	buf := valid(0)
	root := int(binary.LittleEndian.Uint32(buf))
	vt := root - int(int32(binary.LittleEndian.Uint32(buf[root:])))
	fo := int(binary.LittleEndian.Uint16(buf[vt+4+2*1:]))    // leaves
	binary.LittleEndian.PutUint32(buf[root+fo:], 0xFFFFFFF0) // would wrap in uint32
	mustFail(t, buf, Options{}, "past the end")
}

func TestRootFieldSlots(t *testing.T) {
	n, err := RootFieldSlots(valid(0), Options{})
	if err != nil || n != 7 {
		t.Fatalf("RootFieldSlots = %d, %v; want 7", n, err)
	}
	if _, err := RootFieldSlots([]byte{1, 2}, Options{}); err == nil {
		t.Fatal("RootFieldSlots accepted a 2-byte buffer")
	}
}

// Every truncation of a valid buffer is rejected or verified without panic,
// and so is every single-byte corruption.
func TestMutations(t *testing.T) {
	buf := valid(2)
	for i := 0; i <= len(buf); i++ {
		_ = Verify(buf[:i], node, Options{})
	}
	for i := range buf {
		for _, x := range []byte{0, 0xff, buf[i] ^ 0x55} {
			b := append([]byte(nil), buf...)
			b[i] = x
			_ = Verify(b, node, Options{})
		}
	}
}

// FuzzVerify verifies arbitrary bytes, in place and through Options.Fetch
// a byte at a time from a copy of poison: both must give the same outcome.
func FuzzVerify(f *testing.F) {
	f.Add(valid(0))
	f.Add(valid(3))
	f.Add(validList(3, 1))
	defer func(s int) { FetchPageShift = s }(FetchPageShift)
	FetchPageShift = 0
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, r := range []root{node, list} {
			err := Verify(b, r, Options{Format: "test"})
			_ = Verify(b, r, Options{Format: "test", MaxObjects: 9})
			p := bytes.Repeat([]byte{0xa5}, len(b))
			fetch := func(lo, hi int64) error { copy(p[lo:hi], b[lo:hi]); return nil }
			if perr := Verify(p, r, Options{Format: "test", Fetch: fetch}); fmt.Sprint(perr) != fmt.Sprint(err) {
				t.Fatalf("through Fetch: %v; in place: %v", perr, err)
			}
		}
		_, _ = RootFieldSlots(b, Options{})
	})
}

// outcomeDigest verifies every truncation, every single-byte change and,
// at every 4-byte-aligned position, every offset near the buffer's end of
// buf under several object limits, with the vtable cache and without, and
// hashes what a caller sees of each: the error's text (message, offset,
// field path) and the objects left.
func outcomeDigest(buf []byte, r root) string {
	h := sha256.New()
	run := func(b []byte) {
		for _, limit := range []int{0, 5, 17} {
			// Twice: the digests were recorded from the schema interpreter
			// with its vtable cache and without, which agreed.
			for range 2 {
				w := NewWalk(b, Options{Format: "test", MaxObjects: limit})
				err := w.Verify(r.name, r.f)
				fmt.Fprintf(h, "%v|%d\n", err, w.Left())
			}
		}
	}
	for i := 0; i <= len(buf); i++ {
		run(buf[:i])
	}
	b := make([]byte, len(buf))
	for i := range buf {
		for _, x := range []byte{0, 0xff, buf[i] ^ 0x55, buf[i] + 1} {
			copy(b, buf)
			b[i] = x
			run(b)
		}
	}
	for i := 0; i+4 <= len(buf); i += 4 {
		n := len(buf)
		for _, x := range []uint32{0, uint32(n - i), uint32(n - i - 1), uint32(n - i - 4), 1 << 31, uint32(int32(-i)), uint32(int32(-i - 1))} {
			copy(b, buf)
			binary.LittleEndian.PutUint32(b[i:], x)
			run(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// The fast paths (deref, vector, vtable and field's own offset check,
// which leave the messages to derefFail, vectorFail and vtableFail) change
// no outcome: the digests below were recorded from the plain checks they
// replaced (commit f6a2a87), and recorded again when the checks became the
// C++ Verifier's (TestCxxRules). A fast check that accepts what the plain
// one refused, or a message, offset, path or count that differs, changes a
// digest. Update them only for an intended change of outcome.
func TestOutcomesUnchanged(t *testing.T) {
	for _, c := range []struct {
		name string
		buf  []byte
		root root
		want string
	}{
		{"node0", valid(0), node, "0f2cbe895f5e5a6b"},
		{"node3", valid(3), node, "4b8571e78e7d8637"},
		{"list30", validList(3, 0), list, "3020f05bd7502225"},
		{"list21", validList(2, 1), list, "36892bf2bb568702"},
	} {
		if got := outcomeDigest(c.buf, c.root); got != c.want {
			t.Errorf("%s: outcome digest %s, want %s", c.name, got, c.want)
		}
	}
}

// TestFetchNoMemoHit: under Options.Fetch a memo never hits (MemoHit would
// read a table's header unfetched), where without it the same table hits.
func TestFetchNoMemoHit(t *testing.T) {
	b := valid(3)
	for _, fetch := range []bool{false, true} {
		opt := Options{Format: "test"}
		if fetch {
			opt.Fetch = func(lo, hi int64) error { return nil }
		}
		w := NewWalk(b, opt)
		tt, err := w.Start(int64(binary.LittleEndian.Uint32(b)))
		if err != nil {
			t.Fatal(err)
		}
		var m Memo
		w.Learn(&tt, &m, 4, false)
		if _, hit := w.MemoHit(tt.pos, &m); hit == fetch {
			t.Errorf("with Fetch %v: MemoHit hit %v", fetch, hit)
		}
	}
}
