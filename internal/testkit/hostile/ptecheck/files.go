package ptecheck

import (
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// RegionEnd returns the end of the header and FlatBuffer region of a
// valid program (the part a sweep mutates): its program_size.
func RegionEnd(b []byte) (int64, error) {
	p, err := pte.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return p.Header().ProgramSize, nil
}

// Generated returns writer-made programs covering what the small real
// files lack: every value kind, mutable segments, delegates inline and in
// a (shared) segment, named data, a legacy inline constant_buffer, 24-byte
// and absent extended headers, external tensors, several methods.
func Generated() ([]hostile.Seed, error) {
	fwd := writer.PTEMethod{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 3}, Name: "w", Data: hostile.F32(1, 2, 3, 4, 5, 6)},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEInt8, Sizes: []int32{3}, Data: []byte{1, 2, 3}},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat16, Sizes: []int32{1, 2}, DimOrder: []uint8{1, 0}, Name: "h", Data: []byte{0, 0x3c, 0, 0x40}},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEBool8, Sizes: []int32{2}, Name: "flags", Data: []byte{0, 1}},
			{Kind: writer.PTEMutable, ScalarType: writer.PTEInt64, Sizes: []int32{1}, Name: "step", Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}},
			{Kind: writer.PTEExternal, ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "ext"},
			{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{1, 2}},
			{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{1, 3}},
		},
		Values: []writer.PTEValue{
			{Kind: writer.PTENull}, {Kind: writer.PTEInt, Int: -5}, {Kind: writer.PTEBool, Bool: true},
			{Kind: writer.PTEDouble, Double: 0.5}, {Kind: writer.PTEString, String: "mean"},
			{Kind: writer.PTEIntList, Ints: []int64{1, 2}}, {Kind: writer.PTEDoubleList, Doubles: []float64{1.5}},
			{Kind: writer.PTEBoolList, Bools: []bool{true, false}}, {Kind: writer.PTETensorList, Items: []int32{0, 1}},
			{Kind: writer.PTEOptionalTensorList, Items: []int32{-1, 6}},
		},
		Inputs:              []int32{6},
		Outputs:             []int32{7},
		Operators:           []string{"aten::linear", "aten::add"},
		NonConstBufferSizes: []int64{0, 64},
		EncodedInputs:       "in-spec",
		EncodedOutputs:      "out-spec",
		Delegates: []writer.PTEDelegate{
			{ID: "XnnpackBackend", CompileSpecs: []writer.PTECompileSpec{{Key: "threads", Value: []byte{2}}}, Blob: writer.PTEBlob{Data: []byte("segment blob")}},
			{ID: "InlineBackend", Inline: true, Blob: writer.PTEBlob{Data: []byte("inline blob")}},
		},
	}
	second := writer.PTEMethod{
		Name: "encode",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEInt32, Sizes: []int32{2}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0}},
			{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4}},
		},
		Inputs: []int32{1}, Outputs: []int32{1},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEMoveCall, A: 0, B: 1}, {Kind: writer.PTEJumpFalseCall, A: 0, B: 0}, {Kind: writer.PTEFreeCall, A: 1},
		},
		Delegates: []writer.PTEDelegate{{ID: "Shared", Blob: writer.PTEBlob{Ref: 3}}},
	}
	ws := []struct {
		name string
		w    *writer.PTE
	}{
		{"rich.pte", &writer.PTE{Methods: []writer.PTEMethod{fwd, second}, NamedData: []writer.PTEBlob{{Key: "k1", Data: []byte("named one")}, {Key: "k2", Data: []byte("two")}}}},
		{"header24.pte", &writer.PTE{HeaderLength: 24, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: hostile.F32(1, 2)}}}}}},
		{"legacy.pte", &writer.PTE{Legacy: true, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
			{ScalarType: writer.PTEInt8, Sizes: []int32{3}, Data: []byte{1, 2, 3}},
			{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "b", Data: hostile.F32(1, 2)}}}}}},
		{"noheader.pte", &writer.PTE{NoHeader: true, Methods: []writer.PTEMethod{{Name: "forward", Values: []writer.PTEValue{{Kind: writer.PTEInt, Int: 1}}}}}},
		{"mutable.pte", &writer.PTE{SegmentAlignment: 16, TensorAlignment: 4, Methods: []writer.PTEMethod{{Name: "m", Tensors: []writer.PTETensor{
			{Kind: writer.PTEMutable, ScalarType: writer.PTEInt32, Sizes: []int32{1}, Data: []byte{1, 0, 0, 0}},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{5}, Data: []byte{1, 2, 3, 4, 5}}}}}}},
		{"header40.pte", &writer.PTE{HeaderLength: 40, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{{ScalarType: writer.PTEInt16, Sizes: []int32{2, 1}, Data: []byte{1, 0, 2, 0}}}}}}},
		{"tiny.pte", writer.TinyPTE()},
		{"tiny-external.pte", writer.TinyExternalPTE()},
	}
	var out []hostile.Seed
	for _, w := range ws {
		b, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, hostile.Seed{Name: w.name, Data: b})
	}
	return out, nil
}
