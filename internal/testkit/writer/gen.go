package writer

// The committed fixtures in testdata/ (at the repository root) are what
// Fixtures returns. Regenerate them with `go generate ./internal/testkit/writer`;
// TestFixturesUpToDate fails when the committed files differ from what the
// writer produces now.
//go:generate go test -run ^TestFixturesUpToDate$ . -args -update-fixtures

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/loader/format"
)

// Fixture is a small model file committed in testdata/.
type Fixture struct {
	Name  string // file name in testdata/, e.g. "tiny.pte"
	About string // what it exercises
	Data  []byte
}

// Fixtures returns the small model files of testdata/, built with the
// writer. The bytes are deterministic: the same for every run.
func Fixtures() ([]Fixture, error) {
	var out []Fixture
	add := func(name, about string, b []byte, err error) error {
		if err != nil {
			return fmt.Errorf("fixture %s: %w", name, err)
		}
		out = append(out, Fixture{Name: name, About: about, Data: b})
		return nil
	}
	b, err := TinyPTE().Bytes()
	if err := add("tiny.pte", "a program: float32 constants in a constant segment, an XNNPACK-style delegate blob in a segment, one named data blob", b, err); err != nil {
		return nil, err
	}
	b, err = TinyExternalPTE().Bytes()
	if err := add("tiny-external.pte", "a program whose weights are external tensors, held in tiny.ptd", b, err); err != nil {
		return nil, err
	}
	b, err = TinyPTD().Bytes()
	if err := add("tiny.ptd", "named data for tiny-external.pte: linear.weight and linear.bias with tensor layouts", b, err); err != nil {
		return nil, err
	}
	b, _, err = TinyRTen(false).Bytes()
	if err := add("tiny-v2.rten", "an RTen V2 model: a MatMul and an Add, one external and one inline constant", b, err); err != nil {
		return nil, err
	}
	b, _, err = TinyRTen(true).Bytes()
	if err := add("tiny-v1.rten", "the same model as RTen V1: no header, every constant inline", b, err); err != nil {
		return nil, err
	}
	bp, err := TinyBPTE()
	if err == nil {
		b, err = bp.Bytes()
	}
	if err := add("tiny.bpte", "a bundled program: tiny.pte with two test cases of its method forward", b, err); err != nil {
		return nil, err
	}
	b = ziptest.TaskBundle(
		ziptest.Entry{Name: "hand_detector.tflite", Data: tflitegen.Sample(false).Bytes()},
		ziptest.Entry{Name: "hand_landmarks_detector.tflite", Data: tflitegen.Sample(true).Bytes()},
	)
	if err := add("tiny.task", "a MediaPipe task bundle (a zip that starts with zero padding) of two TFLite models, tflitegen's sample in both buffer layouts", b, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// float32Bytes encodes vs little-endian.
func float32Bytes(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// ramp returns n float32 values start, start+step, ...
func ramp(n int, start, step float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = start + float32(i)*step
	}
	return v
}

// TinyPTE is testdata/tiny.pte: method "forward" computing
// linear(x) = x·Wᵀ + b through a delegate, with W (2×3, named
// "linear.weight"), b (3, "linear.bias") and an unnamed scale (1) as
// constants, a delegate blob in its own segment and one named data blob.
func TinyPTE() *PTE {
	return &PTE{
		Methods: []PTEMethod{{
			Name: "forward",
			Tensors: []PTETensor{
				{Kind: PTEConstant, ScalarType: PTEFloat32, Sizes: []int32{3, 2}, Name: "linear.weight", Data: float32Bytes(ramp(6, 0.5, 0.25)...)},
				{Kind: PTEConstant, ScalarType: PTEFloat32, Sizes: []int32{3}, Name: "linear.bias", Data: float32Bytes(0.1, 0.2, 0.3)},
				{Kind: PTEConstant, ScalarType: PTEFloat32, Sizes: []int32{}, Data: float32Bytes(2)},
				{Kind: PTEPlanned, ScalarType: PTEFloat32, Sizes: []int32{1, 2}}, // input x
				{Kind: PTEPlanned, ScalarType: PTEFloat32, Sizes: []int32{1, 3}}, // output
			},
			Inputs:              []int32{3},
			Outputs:             []int32{4},
			NonConstBufferSizes: []int64{0, 32},
			Delegates: []PTEDelegate{{
				ID:           "XnnpackBackend",
				CompileSpecs: []PTECompileSpec{{Key: "num_threads", Value: []byte{1}}},
				Blob:         PTEBlob{Data: []byte("XN00 tiny delegate blob: a backend reads this once at init")},
			}},
		}},
		NamedData: []PTEBlob{{Key: "sha256:0f1e2d3c", Data: []byte("packed weights shared by name")}},
	}
}

// TinyExternalPTE is testdata/tiny-external.pte: the linear layer of
// TinyPTE with its weight and bias stored outside, in tiny.ptd.
func TinyExternalPTE() *PTE {
	return &PTE{
		Methods: []PTEMethod{{
			Name: "forward",
			Tensors: []PTETensor{
				{Kind: PTEExternal, ScalarType: PTEFloat32, Sizes: []int32{3, 2}, Name: "linear.weight"},
				{Kind: PTEExternal, ScalarType: PTEFloat32, Sizes: []int32{3}, Name: "linear.bias"},
				{Kind: PTEPlanned, ScalarType: PTEFloat32, Sizes: []int32{1, 2}},
				{Kind: PTEPlanned, ScalarType: PTEFloat32, Sizes: []int32{1, 3}},
			},
			Inputs:              []int32{2},
			Outputs:             []int32{3},
			Operators:           []string{"aten::linear"},
			NonConstBufferSizes: []int64{0, 32},
		}},
	}
}

// TinyPTD is testdata/tiny.ptd: the external tensors of TinyExternalPTE.
func TinyPTD() *PTD {
	return &PTD{Entries: []PTDEntry{
		{Key: "linear.weight", Layout: &PTDLayout{ScalarType: PTDScalarFloat32, Sizes: []int32{3, 2}}, Data: float32Bytes(ramp(6, 0.5, 0.25)...)},
		{Key: "linear.bias", Layout: &PTDLayout{ScalarType: PTDScalarFloat32, Sizes: []int32{3}}, Data: float32Bytes(0.1, 0.2, 0.3)},
	}}
}

// TinyRTen is testdata/tiny-v2.rten (v1 false) or tiny-v1.rten: y = x·W + b
// with x an input of shape [batch, 2] (batch symbolic), W (2×3, in the
// tensor data section in V2) and b (3, inline).
func TinyRTen(v1 bool) *RTen {
	return &RTen{
		V1: v1,
		Graph: RTenGraph{
			Nodes: []RTenNode{
				{Name: "x", Value: &RTenValue{Shape: []RTenDim{{Name: "batch"}, {Value: 2}}, DType: format.Float32}},
				{Name: "linear.weight", Constant: &RTenConstant{DType: format.Float32, Shape: []uint32{2, 3}, Data: float32Bytes(ramp(6, 0.5, 0.25)...)}},
				{Name: "linear.bias", Constant: &RTenConstant{DType: format.Float32, Shape: []uint32{3}, Inline: true, Data: float32Bytes(0.1, 0.2, 0.3)}},
				{Name: "matmul", Operator: &RTenOperator{Type: uint8(rtenfb.OperatorTypeMatMul), Inputs: []int32{0, 1}, Outputs: []int32{4}}},
				{Name: "xw", Value: &RTenValue{}},
				{Name: "add", Operator: &RTenOperator{Type: uint8(rtenfb.OperatorTypeAdd), Inputs: []int32{4, 2}, Outputs: []int32{6}}},
				{Name: "y", Value: &RTenValue{Shape: []RTenDim{{Name: "batch"}, {Value: 3}}, DType: format.Float32}},
			},
			Inputs:  []uint32{0},
			Outputs: []uint32{6},
		},
		Metadata: &RTenMetadata{Description: "edgeload test fixture: a linear layer", License: "CC0-1.0"},
	}
}

// MixedMethod is a method of n float32 tensor values of small, varied
// shapes: constants in the constant segment, except every plannedEvery-th
// value (counting from 1), a memory-planned activation with no data. The
// large plans of the parallel-reading tests.
func MixedMethod(name string, n, plannedEvery int) PTEMethod {
	m := PTEMethod{Name: name, Tensors: make([]PTETensor, n)}
	for i := range m.Tensors {
		kind := PTEConstant
		if plannedEvery > 0 && i%plannedEvery == 1 {
			kind = PTEPlanned
		}
		m.Tensors[i] = PTETensor{Kind: kind, ScalarType: PTEFloat32, Sizes: []int32{int32(i%7 + 1), 2}}
	}
	return m
}
