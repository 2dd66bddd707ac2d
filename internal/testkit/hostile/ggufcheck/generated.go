package ggufcheck

import (
	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/gguf"
)

// LiveTypes are the ggml type ids a file may use (the spec's table without
// the removed ids), with the smallest ne[0] of each: its block size.
var LiveTypes = []struct {
	ID    gguf.Type
	Block uint64
	Bytes int
}{
	{0, 1, 4}, {1, 1, 2}, {2, 32, 18}, {3, 32, 20}, {6, 32, 22}, {7, 32, 24}, {8, 32, 34}, {9, 32, 36},
	{10, 256, 84}, {11, 256, 110}, {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {15, 256, 292},
	{16, 256, 66}, {17, 256, 74}, {18, 256, 98}, {19, 256, 50}, {20, 32, 18}, {21, 256, 110},
	{22, 256, 82}, {23, 256, 136}, {24, 1, 1}, {25, 1, 2}, {26, 1, 4}, {27, 1, 8}, {28, 1, 8},
	{29, 256, 56}, {30, 1, 2}, {34, 256, 54}, {35, 256, 66}, {39, 32, 17}, {40, 64, 36},
	{41, 128, 18}, {42, 64, 18},
}

// AllValues adds one pair of every value type, arrays of each and nested
// arrays, to b.
func AllValues(b *Builder) *Builder {
	b.KV("general.architecture", Str("llama"))
	b.KV("t.u8", U8(200)).KV("t.i8", I8(-100)).KV("t.u16", U16(60000)).KV("t.i16", I16(-30000))
	b.KV("t.u32", U32(4000000000)).KV("t.i32", I32(-2000000000)).KV("t.f32", F32(1e-5))
	b.KV("t.bool", Bool(true)).KV("t.str", Str("h\xe9llo\x00\xa0")).KV("t.u64", U64(0x123456789ABCDEF0))
	b.KV("t.i64", I64(-0x123456789ABCDEF0)).KV("t.f64", F64(0.1))
	b.KV("t.arr.u8", Arr(gguf.TypeUint8, U8(1), U8(2))).KV("t.arr.bool", Arr(gguf.TypeBool, Bool(false), Bool(true)))
	b.KV("t.arr.str", Arr(gguf.TypeString, Str("a"), Str(""), Str("ccc")))
	b.KV("t.arr.empty", Arr(gguf.TypeFloat64))
	b.KV("t.arr.nested", Arr(gguf.TypeArray, Arr(gguf.TypeInt32, I32(1), I32(2)), Arr(gguf.TypeString, Str("x")), Arr(gguf.TypeArray, Arr(gguf.TypeUint64, U64(7)))))
	return b
}

// Generated returns generated GGUF files: every value type with f32
// tensors of 0 to 4 dims; every live ggml type (v2); alignment 64; a file
// without tensors ending unpadded; a small model-shaped file.
func Generated() []hostile.Seed {
	var seeds []hostile.Seed
	add := func(name string, b []byte) { seeds = append(seeds, hostile.Seed{Name: "gen/" + name, Data: b}) }

	var b Builder
	AllValues(&b)
	b.Add(Tensor{Name: "scalar", Type: 0, NE: nil, Data: Fill(4, 1)})
	b.Add(Tensor{Name: "vec", Type: 0, NE: []uint64{5}, Data: Fill(20, 2)})
	b.Add(Tensor{Name: "mat", Type: 1, NE: []uint64{3, 2}, Data: Fill(12, 3)})
	b.Add(Tensor{Name: "empty", Type: 0, NE: []uint64{0, 4}})
	b.Add(Tensor{Name: "cube4", Type: 30, NE: []uint64{2, 3, 1, 2}, Data: Fill(24, 4)})
	add("values.gguf", b.Bytes())

	t := Builder{Version: 2}
	t.KV("general.architecture", Str("test"))
	for _, lt := range LiveTypes {
		ne := []uint64{lt.Block, 2}
		t.Add(Tensor{Name: "t." + lt.ID.String(), Type: lt.ID, NE: ne, Data: Fill(2*lt.Bytes, byte(lt.ID))})
	}
	add("types-v2.gguf", t.Bytes())

	a := Builder{Alignment: 64}
	a.KV("general.alignment", U32(64))
	a.Add(Tensor{Name: "token_embd.weight", Type: 8, NE: []uint64{64, 3}, Data: Fill(6*34, 5)})
	a.Add(Tensor{Name: "output.weight", Type: 0, NE: []uint64{3}, Data: Fill(12, 6)})
	add("align64.gguf", a.Bytes())

	var v Builder
	v.KV("tokenizer.ggml.tokens", Arr(gguf.TypeString, Str("<s>"), Str("\xa0"), Str(";\r")))
	add("vocab-only.gguf", v.Bytes())

	add("model.gguf", ModelShaped(2, 40))
	return seeds
}
