package writer

import (
	"errors"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/bpfb"
)

// BPTE describes an ExecuTorch bundled program (.bpte) to write: a program
// (any bytes; a .pte for a valid bundle) and test suites for its methods,
// in one FlatBuffer with identifier "BP08". The program's bytes are
// aligned to 32 and tensor data to 16, as upstream writes them.
type BPTE struct {
	Version uint32
	Program []byte
	// NoProgram leaves the program field out (an invalid bundle).
	NoProgram bool
	Suites    []BPTESuite
}

// BPTESuite is the test cases of one method.
type BPTESuite struct {
	Method string
	Cases  []BPTECase
}

// BPTECase is one test: inputs and expected outputs.
type BPTECase struct {
	Inputs, Outputs []BPTEValue
}

// BPTEValue is one value of a test case: a tensor when Tensor is set, else
// the scalar of Kind (bpfb.ValueUnionInt, Bool or Double; NONE for none).
type BPTEValue struct {
	Kind   bpfb.ValueUnion
	Int    int64
	Bool   bool
	Double float64
	Tensor *BPTETensor
}

// BPTETensor is a test tensor: an ExecuTorch ScalarType, sizes and bytes.
type BPTETensor struct {
	ScalarType int8
	Sizes      []int32
	Data       []byte
	DimOrder   []uint8
}

// byteVector writes data as a [ubyte] vector whose first byte is aligned to
// align.
func byteVector(b *flatbuffers.Builder, data []byte, align int) flatbuffers.UOffsetT {
	b.StartVector(1, len(data), align)
	for i := len(data) - 1; i >= 0; i-- {
		b.PrependByte(data[i])
	}
	return b.EndVector(len(data))
}

// Bytes returns the file.
func (p *BPTE) Bytes() (out []byte, err error) {
	defer func() {
		// The builder panics on misuse; report it as an error.
		if r := recover(); r != nil {
			out, err = nil, errors.New("writer: BPTE: flatbuffers builder failed")
		}
	}()
	b := flatbuffers.NewBuilder(1024)
	value := func(v BPTEValue) flatbuffers.UOffsetT {
		var val flatbuffers.UOffsetT
		kind := v.Kind
		switch {
		case v.Tensor != nil:
			kind = bpfb.ValueUnionTensor
			t := v.Tensor
			data := byteVector(b, t.Data, 16)
			var dims, order flatbuffers.UOffsetT
			bpfb.TensorStartSizesVector(b, len(t.Sizes))
			for i := len(t.Sizes) - 1; i >= 0; i-- {
				b.PrependInt32(t.Sizes[i])
			}
			dims = b.EndVector(len(t.Sizes))
			order = byteVector(b, t.DimOrder, 1)
			bpfb.TensorStart(b)
			bpfb.TensorAddScalarType(b, t.ScalarType)
			bpfb.TensorAddSizes(b, dims)
			bpfb.TensorAddData(b, data)
			bpfb.TensorAddDimOrder(b, order)
			val = bpfb.TensorEnd(b)
		case kind == bpfb.ValueUnionInt:
			bpfb.IntStart(b)
			bpfb.IntAddIntVal(b, v.Int)
			val = bpfb.IntEnd(b)
		case kind == bpfb.ValueUnionBool:
			bpfb.BoolStart(b)
			bpfb.BoolAddBoolVal(b, v.Bool)
			val = bpfb.BoolEnd(b)
		case kind == bpfb.ValueUnionDouble:
			bpfb.DoubleStart(b)
			bpfb.DoubleAddDoubleVal(b, v.Double)
			val = bpfb.DoubleEnd(b)
		}
		bpfb.ValueStart(b)
		bpfb.ValueAddValType(b, kind)
		if val != 0 {
			bpfb.ValueAddVal(b, val)
		}
		return bpfb.ValueEnd(b)
	}
	values := func(vs []BPTEValue) flatbuffers.UOffsetT {
		offs := make([]flatbuffers.UOffsetT, len(vs))
		for i, v := range vs {
			offs[i] = value(v)
		}
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		return b.EndVector(len(offs))
	}
	suites := make([]flatbuffers.UOffsetT, len(p.Suites))
	for i, s := range p.Suites {
		cases := make([]flatbuffers.UOffsetT, len(s.Cases))
		for j, c := range s.Cases {
			in, out := values(c.Inputs), values(c.Outputs)
			bpfb.BundledMethodTestCaseStart(b)
			bpfb.BundledMethodTestCaseAddInputs(b, in)
			bpfb.BundledMethodTestCaseAddExpectedOutputs(b, out)
			cases[j] = bpfb.BundledMethodTestCaseEnd(b)
		}
		bpfb.BundledMethodTestSuiteStartTestCasesVector(b, len(cases))
		for j := len(cases) - 1; j >= 0; j-- {
			b.PrependUOffsetT(cases[j])
		}
		cv := b.EndVector(len(cases))
		name := b.CreateString(s.Method)
		bpfb.BundledMethodTestSuiteStart(b)
		bpfb.BundledMethodTestSuiteAddMethodName(b, name)
		bpfb.BundledMethodTestSuiteAddTestCases(b, cv)
		suites[i] = bpfb.BundledMethodTestSuiteEnd(b)
	}
	bpfb.BundledProgramStartMethodTestSuitesVector(b, len(suites))
	for i := len(suites) - 1; i >= 0; i-- {
		b.PrependUOffsetT(suites[i])
	}
	sv := b.EndVector(len(suites))
	var prog flatbuffers.UOffsetT
	if !p.NoProgram {
		prog = byteVector(b, p.Program, 32)
	}
	bpfb.BundledProgramStart(b)
	bpfb.BundledProgramAddVersion(b, p.Version)
	bpfb.BundledProgramAddMethodTestSuites(b, sv)
	if !p.NoProgram {
		bpfb.BundledProgramAddProgram(b, prog)
	}
	b.FinishWithFileIdentifier(bpfb.BundledProgramEnd(b), []byte("BP08"))
	return b.FinishedBytes(), nil
}

// TinyBPTE is tiny.pte bundled with two test cases of its method "forward":
// a float32 [1, 2] input and the expected float32 [1, 2] output, and in the
// second case an int, a bool and a double beside them.
func TinyBPTE() (*BPTE, error) {
	prog, err := TinyPTE().Bytes()
	if err != nil {
		return nil, err
	}
	f32 := func(vs ...float32) *BPTETensor {
		return &BPTETensor{ScalarType: 6, Sizes: []int32{1, int32(len(vs))}, Data: float32Bytes(vs...), DimOrder: []uint8{0, 1}}
	}
	return &BPTE{Version: 2, Program: prog, Suites: []BPTESuite{{Method: "forward", Cases: []BPTECase{
		{Inputs: []BPTEValue{{Tensor: f32(1, 2)}}, Outputs: []BPTEValue{{Tensor: f32(3, 5)}}},
		{Inputs: []BPTEValue{{Tensor: f32(-1, 0.5)}, {Kind: bpfb.ValueUnionInt, Int: 7}, {Kind: bpfb.ValueUnionBool, Bool: true}, {Kind: bpfb.ValueUnionDouble, Double: 0.25}},
			Outputs: []BPTEValue{{Tensor: f32(0, 1)}}},
	}}}}, nil
}
