// Package ggufcheck writes GGUF files for tests (Builder), makes the
// generated files loader/gguf's sweep and fuzz targets start from, and
// exercises every accessor and view of an opened file (File). It imports
// loader/gguf and the layers below it, and is imported by tests only.
package ggufcheck

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/edgeload/edgeload/loader/gguf"
)

// Val is an encoded metadata value and its type.
type Val struct {
	T gguf.ValueType
	B []byte // the encoding after the type
}

func le(n int, put func([]byte)) []byte { b := make([]byte, n); put(b); return b }

// U8 encodes a uint8 value.
func U8(v uint8) Val { return Val{gguf.TypeUint8, []byte{v}} }

// I8 encodes an int8 value.
func I8(v int8) Val { return Val{gguf.TypeInt8, []byte{byte(v)}} }

// U16 encodes a uint16 value.
func U16(v uint16) Val { return Val{gguf.TypeUint16, binary.LittleEndian.AppendUint16(nil, v)} }

// I16 encodes an int16 value.
func I16(v int16) Val { return Val{gguf.TypeInt16, binary.LittleEndian.AppendUint16(nil, uint16(v))} }

// U32 encodes a uint32 value.
func U32(v uint32) Val { return Val{gguf.TypeUint32, binary.LittleEndian.AppendUint32(nil, v)} }

// I32 encodes an int32 value.
func I32(v int32) Val { return Val{gguf.TypeInt32, binary.LittleEndian.AppendUint32(nil, uint32(v))} }

// U64 encodes a uint64 value.
func U64(v uint64) Val { return Val{gguf.TypeUint64, binary.LittleEndian.AppendUint64(nil, v)} }

// I64 encodes an int64 value.
func I64(v int64) Val { return Val{gguf.TypeInt64, binary.LittleEndian.AppendUint64(nil, uint64(v))} }

// F32 encodes a float32 value.
func F32(v float32) Val {
	return Val{gguf.TypeFloat32, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

// F64 encodes a float64 value.
func F64(v float64) Val {
	return Val{gguf.TypeFloat64, binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))}
}

// Bool encodes a bool value.
func Bool(v bool) Val {
	if v {
		return Val{gguf.TypeBool, []byte{1}}
	}
	return Val{gguf.TypeBool, []byte{0}}
}

// Str encodes a string value.
func Str(s string) Val { return Val{gguf.TypeString, AppendStr(nil, s)} }

// AppendStr appends a GGUF string (u64 length, bytes).
func AppendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// Arr encodes an array of elements of type t (each of them of type t).
func Arr(t gguf.ValueType, elems ...Val) Val {
	b := binary.LittleEndian.AppendUint32(nil, uint32(t))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(elems)))
	for _, e := range elems {
		b = append(b, e.B...)
	}
	return Val{gguf.TypeArray, b}
}

// Tensor is a tensor for Builder: NE innermost first, as GGUF stores it.
type Tensor struct {
	Name string
	Type gguf.Type
	NE   []uint64
	Data []byte
}

// Builder assembles a GGUF file the way gguf-py's writer lays it out:
// metadata in the order added, tensor infos, padding to the alignment,
// then each tensor padded to the alignment.
type Builder struct {
	Version   uint32 // 3 when 0
	Alignment int64  // the layout's alignment, 32 when 0 (add general.alignment yourself)
	kvs       []byte
	nkv       int
	Tensors   []Tensor
	// Written by Bytes: the end of the tensor infos, the data section's
	// start and each tensor's offset relative to it.
	HeaderEnd, DataStart int64
	Offsets              []int64
}

// KV adds a metadata pair.
func (b *Builder) KV(key string, v Val) *Builder {
	b.kvs = AppendStr(b.kvs, key)
	b.kvs = binary.LittleEndian.AppendUint32(b.kvs, uint32(v.T))
	b.kvs = append(b.kvs, v.B...)
	b.nkv++
	return b
}

// Add adds a tensor.
func (b *Builder) Add(t Tensor) *Builder { b.Tensors = append(b.Tensors, t); return b }

// Bytes returns the file.
func (b *Builder) Bytes() []byte {
	v, a := b.Version, b.Alignment
	if v == 0 {
		v = 3
	}
	if a == 0 {
		a = 32
	}
	out := append([]byte("GGUF"), le(4, func(p []byte) { binary.LittleEndian.PutUint32(p, v) })...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(b.Tensors)))
	out = binary.LittleEndian.AppendUint64(out, uint64(b.nkv))
	out = append(out, b.kvs...)
	b.Offsets = b.Offsets[:0]
	var pos int64
	for _, t := range b.Tensors {
		out = AppendStr(out, t.Name)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(t.NE)))
		for _, x := range t.NE {
			out = binary.LittleEndian.AppendUint64(out, x)
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(t.Type))
		out = binary.LittleEndian.AppendUint64(out, uint64(pos))
		b.Offsets = append(b.Offsets, pos)
		pos = pad(pos+int64(len(t.Data)), a)
	}
	b.HeaderEnd = int64(len(out))
	if len(b.Tensors) > 0 {
		out = append(out, make([]byte, pad(int64(len(out)), a)-int64(len(out)))...)
	}
	b.DataStart = pad(b.HeaderEnd, a)
	for _, t := range b.Tensors {
		out = append(out, t.Data...)
		out = append(out, make([]byte, pad(int64(len(out)), a)-int64(len(out)))...)
	}
	return out
}

func pad(x, a int64) int64 { return (x + a - 1) / a * a }

// Fill returns n bytes of a pattern that depends on seed.
func Fill(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// BlockBytes returns the bytes of ne elements (innermost first) of ggml
// type t, from the spec's table of block sizes.
func BlockBytes(t gguf.Type, ne ...uint64) int {
	elems, size := t.DType().Block()
	n := int(ne[0]) / elems * size
	for _, x := range ne[1:] {
		n *= int(x)
	}
	return n
}

// ModelShaped returns a model-shaped GGUF file: token_embd, layers blocks
// of the nine tensors of a llama layer, output_norm and output (small
// shapes, f32), and a vocabulary of vocab token strings with their scores
// and types.
func ModelShaped(layers, vocab int) []byte {
	var b Builder
	b.KV("general.architecture", Str("llama"))
	b.KV("llama.block_count", U32(uint32(layers)))
	b.KV("tokenizer.ggml.model", Str("llama"))
	tok := make([]Val, vocab)
	scores := make([]Val, vocab)
	types := make([]Val, vocab)
	for i := range tok {
		tok[i] = Str("tok" + strconv.Itoa(i))
		scores[i] = F32(float32(-i))
		types[i] = I32(1)
	}
	b.KV("tokenizer.ggml.tokens", Arr(gguf.TypeString, tok...))
	b.KV("tokenizer.ggml.scores", Arr(gguf.TypeFloat32, scores...))
	b.KV("tokenizer.ggml.token_type", Arr(gguf.TypeInt32, types...))
	f32 := func(name string, ne ...uint64) {
		b.Add(Tensor{Name: name, Type: 0, NE: ne, Data: Fill(BlockBytes(0, ne...), byte(len(b.Tensors)))})
	}
	f32("token_embd.weight", 8, 4)
	for l := range layers {
		p := "blk." + strconv.Itoa(l) + "."
		for _, n := range []string{"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"} {
			f32(p+n+".weight", 8)
		}
	}
	f32("output_norm.weight", 8)
	f32("output.weight", 8, 4)
	return b.Bytes()
}
