package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

func open(b []byte) (*gguf.File, error) { return gguf.NewFile(mmapfile.NewBytes(b)) }

// TestTypes checks the type table against FORMATS-gguf.md's: every live id
// has the spec's block size and bytes, the removed ids and ids past 42 have
// none.
func TestTypes(t *testing.T) {
	live := map[gguf.Type]bool{}
	for _, lt := range ggufcheck.LiveTypes {
		live[lt.ID] = true
		e, b := lt.ID.DType().Block()
		if uint64(e) != lt.Block || b != lt.Bytes {
			t.Errorf("%v: block %d × %d bytes, spec says %d × %d", lt.ID, e, b, lt.Block, lt.Bytes)
		}
	}
	for id := gguf.Type(0); id < 60; id++ {
		if !live[id] && id.DType() != format.Invalid {
			t.Errorf("id %d (%v) reads as %v; it is removed or unknown", id, id, id.DType())
		}
	}
	if gguf.TypeCount != 43 {
		t.Errorf("TypeCount %d, want GGML_TYPE_COUNT 43", gguf.TypeCount)
	}
}

// TestGenerated opens the generated files and compares them with what the
// builder wrote: offsets, shapes, bytes.
func TestGenerated(t *testing.T) {
	for _, s := range ggufcheck.Generated() {
		t.Run(s.Name, func(t *testing.T) {
			f, err := open(s.Data)
			if err != nil {
				t.Fatal(err)
			}
			if err := ggufcheck.File(f); err != nil {
				t.Fatal(err)
			}
		})
	}
	var b ggufcheck.Builder
	b.Version = 2
	for _, lt := range ggufcheck.LiveTypes {
		b.Add(ggufcheck.Tensor{Name: "t" + lt.ID.String(), Type: lt.ID, NE: []uint64{lt.Block * 2, 3}, Data: ggufcheck.Fill(6*lt.Bytes, byte(lt.ID))})
	}
	data := b.Bytes()
	f, err := open(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.DataOffset() != b.DataStart || f.HeaderEnd() != b.HeaderEnd || f.Version() != 2 {
		t.Errorf("data %d header end %d version %d; builder: %d %d", f.DataOffset(), f.HeaderEnd(), f.Version(), b.DataStart, b.HeaderEnd)
	}
	for i, bt := range b.Tensors {
		ti := f.TensorInfo(i)
		got, _ := ti.Data.Bytes()
		if ti.Name != bt.Name || ti.Type != bt.Type || !reflect.DeepEqual(ti.Shape, []int64{3, int64(bt.NE[0])}) ||
			ti.NE != [4]int64{int64(bt.NE[0]), 3, 1, 1} || ti.Offset != b.DataStart+b.Offsets[i] || !bytes.Equal(got, bt.Data) {
			t.Errorf("tensor %d: %q %v %v %v at %d", i, ti.Name, ti.Type, ti.Shape, ti.NE, ti.Offset)
		}
		if e, by := ti.Block(); ti.NumBlocks() != 6 || by != ggufcheck.LiveTypes[i].Bytes || uint64(e) != ggufcheck.LiveTypes[i].Block {
			t.Errorf("tensor %q: %d blocks of %d × %d bytes", ti.Name, ti.NumBlocks(), e, by)
		}
	}
}

// TestMetadata reads every value type through the getters.
func TestMetadata(t *testing.T) {
	var b ggufcheck.Builder
	f, err := open(ggufcheck.AllValues(&b).Bytes())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := f.MetaUint("t.u64")
	i, _ := f.MetaInt("t.i64")
	i8, _ := f.MetaInt("t.i8")
	u32, _ := f.MetaUint("t.u32")
	fl, _ := f.MetaFloat("t.f32")
	d, _ := f.MetaFloat("t.f64")
	bo, _ := f.MetaBool("t.bool")
	s, _ := f.MetaString("t.str")
	if u != 0x123456789ABCDEF0 || i != -0x123456789ABCDEF0 || i8 != -100 || u32 != 4000000000 || float32(fl) != 1e-5 || d != 0.1 || !bo || s != "h\xe9llo\x00\xa0" {
		t.Errorf("values %x %d %d %d %v %v %v %q", u, i, i8, u32, fl, d, bo, s)
	}
	if _, ok := f.MetaUint("t.i8"); ok {
		t.Error("a negative int8 read as uint")
	}
	if _, ok := f.MetaString("missing"); ok {
		t.Error("a missing key was found")
	}
	if v, _ := f.Metadata("missing"); v.Type() != gguf.TypeInvalid {
		t.Errorf("missing key has type %v", v.Type())
	}
	a, ok := f.MetaArray("t.arr.nested")
	if !ok || a.Len() != 3 || a.ElemType() != gguf.TypeArray {
		t.Fatalf("nested array %v %d", a.ElemType(), a.Len())
	}
	third, _ := a.At(2)
	inner, _ := third.AsArray()
	v, _ := inner.At(0)
	in2, _ := v.AsArray()
	x, _ := in2.At(0)
	if n, _ := x.AsUint(); n != 7 {
		t.Errorf("[2][0][0] = %d, want 7", n)
	}
	strs, _ := f.MetaArray("t.arr.str")
	var got []string
	for _, e := range strs.All() {
		s, _ := e.AsString()
		got = append(got, s)
	}
	if !reflect.DeepEqual(got, []string{"a", "", "ccc"}) {
		t.Errorf("strings %q", got)
	}
	var text strings.Builder
	if err := f.ReportText(&text); err != nil || !strings.Contains(text.String(), "t.arr.str") {
		t.Errorf("report text %q, %v", text.String(), err)
	}
}

// TestUseOrder checks the documented order on names in scrambled file order.
func TestUseOrder(t *testing.T) {
	names := []string{
		"output.weight", "blk.10.ffn_down.weight", "mystery", "blk.2.attn_q.bias", "blk.2.attn_q.weight",
		"blk.2.zz_unknown.weight", "output_norm.weight", "blk.2.ffn_gate.weight", "token_embd.weight",
		"blk.2.attn_norm.weight", "blk.10.attn_norm.weight", "blk.x.attn_q.weight", "rope_freqs.weight",
		"blk.2.attn_k.weight", "blk.2.attn_v.weight", "blk.2.attn_output.weight", "blk.2.ffn_norm.weight",
		"blk.2.ffn_up.weight", "blk.2.ffn_down.weight", "blk.2.attn_q_norm.weight",
	}
	want := []string{
		"token_embd.weight", "rope_freqs.weight",
		"blk.2.attn_norm.weight", "blk.2.attn_q.weight", "blk.2.attn_q.bias", "blk.2.attn_q_norm.weight",
		"blk.2.attn_v.weight", "blk.2.attn_k.weight", "blk.2.attn_output.weight", "blk.2.ffn_norm.weight",
		"blk.2.ffn_gate.weight", "blk.2.ffn_up.weight", "blk.2.ffn_down.weight", "blk.2.zz_unknown.weight",
		"blk.10.attn_norm.weight", "blk.10.ffn_down.weight",
		"output_norm.weight", "output.weight",
		"mystery", "blk.x.attn_q.weight",
	}
	var b ggufcheck.Builder
	for _, n := range names {
		b.Add(ggufcheck.Tensor{Name: n, Type: 0, NE: []uint64{1}, Data: make([]byte, 4)})
	}
	f, err := open(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	order, err := f.UseOrder("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range order {
		got = append(got, f.TensorAt(i).Name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order\n%q\nwant\n%q", got, want)
	}
	if _, err := f.UseOrder("forward"); !errors.Is(err, format.ErrNotFound) {
		t.Errorf("UseOrder(forward) = %v", err)
	}
}

// TestLookupAllocs: lookups by tensor name and metadata key allocate
// nothing.
func TestLookupAllocs(t *testing.T) {
	f, err := open(ggufcheck.ModelShaped(4, 100))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Clone("blk.3.ffn_up.weight")
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := f.Lookup(name); !ok {
			t.Fatal("not found")
		}
		if _, ok := f.Tensor(name); !ok {
			t.Fatal("not found")
		}
		if _, ok := f.MetaUint("llama.block_count"); !ok {
			t.Fatal("not found")
		}
	}); n != 0 {
		t.Errorf("lookups allocate %v times", n)
	}
}

// TestOpenIndependentOfVocabulary: opening a file allocates the same
// number of times whatever its vocabulary's size, and reading the
// vocabulary allocates nothing but the strings asked for.
func TestOpenIndependentOfVocabulary(t *testing.T) {
	small, big := ggufcheck.ModelShaped(33, 1000), ggufcheck.ModelShaped(33, 150000)
	count := func(b []byte) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := open(b); err != nil {
				t.Fatal(err)
			}
		})
	}
	if s, g := count(small), count(big); s != g {
		t.Errorf("open allocates %v times with 1,000 tokens, %v with 150,000", s, g)
	}
	f, _ := open(big)
	a, _ := f.MetaArray("tokenizer.ggml.tokens")
	var n, total int
	if allocs := testing.AllocsPerRun(1, func() {
		n, total = 0, 0
		for _, v := range a.All() {
			b, _ := v.AsBytes()
			total += len(b)
			n++
		}
	}); allocs != 0 || n != 150000 {
		t.Errorf("%d tokens iterated with %v allocations", n, allocs)
	}
	last, _ := a.At(149999)
	if s, _ := last.AsString(); s != "tok149999" {
		t.Errorf("last token %q", s)
	}
}

// patch returns a copy of b with v written little-endian at off.
func patch(b []byte, off int, v any) []byte {
	c := bytes.Clone(b)
	var w bytes.Buffer
	binary.Write(&w, binary.LittleEndian, v)
	copy(c[off:], w.Bytes())
	return c
}

// TestErrors: each hostile change gives a gguf FormatError wrapping the
// right sentinel and saying what was wrong.
func TestErrors(t *testing.T) {
	one := func(name string, ty gguf.Type, ne ...uint64) []byte {
		var b ggufcheck.Builder
		b.Add(ggufcheck.Tensor{Name: name, Type: ty, NE: ne, Data: make([]byte, 64)})
		return b.Bytes()
	}
	two := func(name2 string, off2 uint64) []byte {
		var b ggufcheck.Builder
		b.Add(ggufcheck.Tensor{Name: "a", Type: 0, NE: []uint64{8}, Data: make([]byte, 32)})
		b.Add(ggufcheck.Tensor{Name: name2, Type: 0, NE: []uint64{8}, Data: make([]byte, 32)})
		out := b.Bytes()
		return patch(out, int(b.HeaderEnd)-8, off2)
	}
	kv := func(key string, v ggufcheck.Val) []byte {
		var b ggufcheck.Builder
		return b.KV(key, v).Bytes()
	}
	base := one("a", 0, 16)
	nested := ggufcheck.Arr(gguf.TypeUint8)
	for range gguf.MaxArrayDepth {
		nested = ggufcheck.Arr(gguf.TypeArray, nested)
	}
	cases := []struct {
		name     string
		b        []byte
		sentinel error
		msg      string
	}{
		{"empty", nil, format.ErrTruncated, "magic"},
		{"magic", []byte("GGUX\x03\x00\x00\x00"), format.ErrUnknownFormat, "magic"},
		{"fugg", patch(base, 0, []byte("FUGG")), format.ErrUnsupportedVersion, "big-endian"},
		{"v1", patch(base, 4, uint32(1)), format.ErrUnsupportedVersion, "version 1 is not supported"},
		{"big-endian", patch(base, 4, uint32(0x03000000)), format.ErrUnsupportedVersion, "big-endian"},
		{"v4", patch(base, 4, uint32(4)), format.ErrUnsupportedVersion, "version 4"},
		{"tensor count", patch(base, 8, uint64(1)<<40), format.ErrTruncated, "tensor infos"},
		{"kv count", patch(base, 16, uint64(1)<<62), format.ErrTruncated, "metadata pairs"},
		{"unknown type", one("a", 57, 16), format.ErrMalformed, "unknown ggml type id 57"},
		{"removed type", one("a", 4, 32), format.ErrMalformed, "q4_2 (id 4) was removed"},
		{"block multiple", one("a", 2, 48), format.ErrMalformed, "not a multiple of q4_0's block size 32"},
		{"five dims", one("a", 0, 1, 1, 1, 1, 1), format.ErrMalformed, "at most 4"},
		{"negative ne", one("a", 0, 1<<63), format.ErrMalformed, "negative"},
		{"element overflow", one("a", 0, 1<<32, 1<<32), format.ErrMalformed, "2^63-1 elements"},
		{"too big", one("a", 28, 1<<40), format.ErrTruncated, "need more bytes"},
		{"misaligned", two("b", 48), format.ErrMalformed, "not a multiple of the alignment 32"},
		{"overlap", two("b", 0), format.ErrMalformed, "overlaps"},
		{"past end", two("b", 64), format.ErrTruncated, "run past"},
		{"duplicate name", two("a", 32), format.ErrMalformed, "duplicate tensor name"},
		{"truncated data", base[:len(base)-1], format.ErrTruncated, "run past"},
		{"alignment 1", kv("general.alignment", ggufcheck.U32(1)), format.ErrMalformed, "alignment 1"},
		{"alignment 48", kv("general.alignment", ggufcheck.U32(48)), format.ErrMalformed, "power of two"},
		{"alignment u64", kv("general.alignment", ggufcheck.U64(64)), format.ErrMalformed, "want uint32"},
		{"bool", kv("b", ggufcheck.Val{T: gguf.TypeBool, B: []byte{2}}), format.ErrMalformed, "want 0 or 1"},
		{"bool array", kv("b", ggufcheck.Arr(gguf.TypeBool, ggufcheck.Val{T: gguf.TypeBool, B: []byte{3}})), format.ErrMalformed, "want 0 or 1"},
		{"value type", kv("b", ggufcheck.Val{T: 13, B: []byte{0}}), format.ErrMalformed, "value type 13"},
		{"element type", kv("b", ggufcheck.Val{T: gguf.TypeArray, B: []byte{99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}), format.ErrMalformed, "element type 99"},
		{"nesting", kv("b", nested), format.ErrMalformed, "nested more than 16"},
		{"empty key", kv("", ggufcheck.U64(1)), format.ErrMalformed, "empty key"},
		{"key utf8", kv("\xff", ggufcheck.U8(1)), format.ErrMalformed, "UTF-8"},
		{"huge string", patch(kv("s", ggufcheck.Str("abc")), 24+9+4, uint64(1)<<60), format.ErrTruncated, "string"},
		{"huge array", patch(kv("s", ggufcheck.Arr(gguf.TypeString, ggufcheck.Str("x"))), 24+9+4+4, uint64(1)<<61), format.ErrTruncated, "array of"},
	}
	var dup ggufcheck.Builder
	dup.KV("k", ggufcheck.U8(1)).KV("k", ggufcheck.U8(2))
	cases = append(cases, struct {
		name     string
		b        []byte
		sentinel error
		msg      string
	}{"duplicate key", dup.Bytes(), format.ErrMalformed, "duplicate key"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := open(c.b)
			if err == nil {
				t.Fatalf("opened: %d tensors", f.NumTensors())
			}
			var fe *format.FormatError
			if !errors.As(err, &fe) || fe.Format != "gguf" || !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err = %v; want a gguf FormatError wrapping %v saying %q", err, c.sentinel, c.msg)
			}
			if err := hostile.CheckError("gguf", err); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestZeroTensorFiles: a file without tensors may end before its aligned
// data start (the data segment is then empty at the end of the file).
func TestZeroTensorFiles(t *testing.T) {
	var b ggufcheck.Builder
	b.KV("a", ggufcheck.Str("xyz"))
	data := b.Bytes()
	f, err := open(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.DataOffset() != int64(len(data)) || f.Segments()[0].Len() != 0 || len(data)%32 == 0 {
		t.Errorf("data offset %d of %d bytes", f.DataOffset(), len(data))
	}
}
