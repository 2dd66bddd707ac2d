package hostile

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
)

// Seed is a model file used as a sweep input or fuzz seed.
type Seed struct {
	Name string
	Data []byte
}

// Real returns the real files of ../shared/models/<sub> ("pte", "ptd",
// "rten"), sorted by name, read at test time (they are never copied into
// the repository). It returns nothing when the folder is absent: callers
// that require the files use testmodels.Dir first.
func Real(sub string) []Seed {
	m, _ := filepath.Glob(filepath.Join(testmodels.Root(), "..", "shared", "models", sub, "*"))
	sort.Strings(m)
	var out []Seed
	for _, p := range m {
		if !testmodels.IsModel(p) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, Seed{Name: sub + "/" + filepath.Base(p), Data: b})
		}
	}
	return out
}

// MaxFuzzSeed is the largest real file a fuzz target hands the fuzzing
// engine as a seed. A mutation of a multi-megabyte file costs milliseconds
// (copy, coverage, every view checked), and minimising one that finds new
// coverage runs the worker for many seconds without a report: the real
// ocrs (2.5 MB) and stories260k (1.3 MB) files turned a 15-second CI run
// into a few hundred executions. The plain test run (no -fuzz) still runs
// every real file through the fuzz invariants, and TestRealFiles checks
// them against their expected values.
const MaxFuzzSeed = 256 << 10

// Fuzzing reports whether the test binary runs the fuzzing engine (-fuzz
// given), as opposed to running the seed corpus as tests.
func Fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// RealSeeds returns the contents of Real(sub) for a fuzz target's seed
// corpus: under the fuzzing engine, without the files larger than
// MaxFuzzSeed; run as tests, all of them.
func RealSeeds(sub string) [][]byte {
	var out [][]byte
	for _, s := range Real(sub) {
		if Fuzzing() && len(s.Data) > MaxFuzzSeed {
			continue
		}
		out = append(out, s.Data)
	}
	return out
}

// FlatBufferEnd returns the end of the header and FlatBuffer region of a
// valid file (the part a sweep mutates): a program's program_size, a
// .ptd's flatbuffer_offset + flatbuffer_size, an RTen V2 model's
// model_offset + model_len, the whole of an RTen V1 model. It tells the
// formats apart as loader.Sniff does, through the format packages alone,
// so that the format packages' tests need not import package loader.
func FlatBufferEnd(b []byte) (int64, error) {
	if len(b) < 4 || string(b[:4]) != rten.Magic {
		switch {
		case len(b) >= 8 && string(b[4:6]) == "ET":
			p, err := pte.NewBytes(b)
			if err != nil {
				return 0, err
			}
			defer p.Close()
			return p.Header().ProgramSize, nil
		case len(b) >= 8 && string(b[4:6]) == "FT":
			f, err := ptd.NewBytes(b)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			return f.Header().FlatBufferLen(), nil
		}
	}
	m, err := rten.NewBytes(b)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	h := m.Header()
	return h.ModelOffset + h.ModelLen, nil
}

func f32(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// GeneratedPTE returns writer-made programs covering what the small real
// files lack: every value kind, mutable segments, delegates inline and in
// a (shared) segment, named data, a legacy inline constant_buffer, 24-byte
// and absent extended headers, external tensors, several methods.
func GeneratedPTE() ([]Seed, error) {
	fwd := writer.PTEMethod{
		Name: "forward",
		Tensors: []writer.PTETensor{
			{Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{2, 3}, Name: "w", Data: f32(1, 2, 3, 4, 5, 6)},
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
		{"header24.pte", &writer.PTE{HeaderLength: 24, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Data: f32(1, 2)}}}}}},
		{"legacy.pte", &writer.PTE{Legacy: true, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{
			{ScalarType: writer.PTEInt8, Sizes: []int32{3}, Data: []byte{1, 2, 3}},
			{ScalarType: writer.PTEFloat32, Sizes: []int32{2}, Name: "b", Data: f32(1, 2)}}}}}},
		{"noheader.pte", &writer.PTE{NoHeader: true, Methods: []writer.PTEMethod{{Name: "forward", Values: []writer.PTEValue{{Kind: writer.PTEInt, Int: 1}}}}}},
		{"mutable.pte", &writer.PTE{SegmentAlignment: 16, TensorAlignment: 4, Methods: []writer.PTEMethod{{Name: "m", Tensors: []writer.PTETensor{
			{Kind: writer.PTEMutable, ScalarType: writer.PTEInt32, Sizes: []int32{1}, Data: []byte{1, 0, 0, 0}},
			{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{5}, Data: []byte{1, 2, 3, 4, 5}}}}}}},
		{"header40.pte", &writer.PTE{HeaderLength: 40, Methods: []writer.PTEMethod{{Name: "forward", Tensors: []writer.PTETensor{{ScalarType: writer.PTEInt16, Sizes: []int32{2, 1}, Data: []byte{1, 0, 2, 0}}}}}}},
	}
	var out []Seed
	for _, w := range ws {
		b, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, Seed{w.name, b})
	}
	for _, w := range []struct {
		name string
		w    *writer.PTE
	}{{"tiny.pte", writer.TinyPTE()}, {"tiny-external.pte", writer.TinyExternalPTE()}} {
		b, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, Seed{w.name, b})
	}
	return out, nil
}

// GeneratedPTD returns writer-made .ptd files: current and legacy layouts,
// opaque blobs, shared segments, a long header, an untrimmed root vtable.
func GeneratedPTD() ([]Seed, error) {
	lay := func(st int8, s ...int32) *writer.PTDLayout { return &writer.PTDLayout{ScalarType: st, Sizes: s} }
	ws := []struct {
		name string
		w    *writer.PTD
	}{
		{"tiny.ptd", writer.TinyPTD()},
		{"mixed.ptd", &writer.PTD{Alignment: 128, HeaderLength: 56, Entries: []writer.PTDEntry{
			{Key: "a", Layout: lay(writer.PTDScalarFloat32, 2, 2), Data: f32(3, 3, 3, 3)},
			{Key: "b", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarInt8, Sizes: []int32{3, 1}, DimOrder: []uint8{1, 0}}, Data: []byte{1, 2, 3}},
			{Key: "s", SegmentRef: 1},
			{Key: "blob", Data: []byte("opaque")},
			{Key: "d", Layout: lay(writer.PTDScalarFloat64, 1), Data: make([]byte, 8)},
		}}},
		{"padded.ptd", &writer.PTD{RootVTablePad: 2, Entries: []writer.PTDEntry{{Key: "x", Layout: lay(writer.PTDScalarFloat32, 1), Size: 16}}}},
		{"legacy.ptd", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: lay(writer.PTDScalarFloat32, 3, 3), Data: f32(1, 2, 3, 4, 5, 6, 7, 8, 9)},
			{Key: "bias", Layout: lay(writer.PTDScalarFloat32, 3), Data: f32(1, 2, 3)},
			{Key: "nd", Data: []byte("blob")},
		}}},
		{"legacy-sparse.ptd", &writer.PTD{Legacy: true, OmitEmptyVectors: true, Entries: []writer.PTDEntry{{Key: "t", Layout: lay(writer.PTDScalarInt64, 2)}}}},
		{"empty.ptd", &writer.PTD{}},
	}
	var out []Seed
	for _, w := range ws {
		b, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, Seed{w.name, b})
	}
	return out, nil
}

// GeneratedRTen returns writer-made RTen models: V1 and V2, If and Loop
// subgraphs (nested), metadata, symbolic dims, every constant dtype inline
// and external, unaligned tensors, an unknown operator type.
func GeneratedRTen() ([]Seed, error) {
	opType := func(name string) uint8 {
		t, ok := rten.ParseOperatorType(name)
		if !ok {
			panic("unknown operator " + name)
		}
		return uint8(t)
	}
	val := func(name string, dims ...uint32) writer.RTenNode {
		v := &writer.RTenValue{DType: format.Float32}
		for _, d := range dims {
			v.Shape = append(v.Shape, writer.RTenDim{Value: d})
		}
		return writer.RTenNode{Name: name, Value: v}
	}
	cst := func(name string, dt format.DType, inline bool, data []byte, shape ...uint32) writer.RTenNode {
		return writer.RTenNode{Name: name, Constant: &writer.RTenConstant{DType: dt, Shape: shape, Inline: inline, Data: data}}
	}
	simple := func() *writer.RTen {
		return &writer.RTen{Graph: writer.RTenGraph{
			Nodes: []writer.RTenNode{
				val("x", 1, 2),
				cst("w", format.Float32, false, f32(1, 2, 3, 4), 2, 2),
				cst("b", format.Float32, true, f32(0.5, -0.5), 2),
				val("xw", 1, 2),
				{Name: "matmul", Operator: &writer.RTenOperator{Type: opType("MatMul"), Inputs: []int32{0, 1}, Outputs: []int32{3}}},
				val("y", 1, 2),
				{Name: "add", Operator: &writer.RTenOperator{Type: opType("Add"), Inputs: []int32{3, 2, -1}, Outputs: []int32{5}}},
			},
			Inputs:  []uint32{0},
			Outputs: []uint32{5},
		}}
	}
	sub := simple()
	sub.Graph.Nodes = append(sub.Graph.Nodes, writer.RTenNode{Name: "if", Operator: &writer.RTenOperator{
		Type: opType("If"), Inputs: []int32{0}, Outputs: []int32{5},
		Then: &writer.RTenGraph{Nodes: []writer.RTenNode{cst("t", format.Int8, false, []byte{1, 2}, 2), val("o")}, Outputs: []uint32{1}},
		Else: &writer.RTenGraph{
			Nodes: []writer.RTenNode{
				cst("", format.Uint8, true, []byte{3}, 1),
				{Name: "loop", Operator: &writer.RTenOperator{Type: opType("Loop"), Inputs: []int32{0, -1}, Body: &writer.RTenGraph{
					Nodes:   []writer.RTenNode{cst("k", format.Int32, false, []byte{5, 0, 0, 0}, 1), val("v", 1)},
					Outputs: []uint32{1}, Captures: []uint32{0},
				}}},
			},
			Outputs: []uint32{0},
		},
	}})
	v1 := simple()
	v1.V1 = true
	v1sub := *sub
	v1sub.V1 = true
	meta := simple()
	meta.Metadata = &writer.RTenMetadata{ONNXHash: "abc", Description: "d", License: "MIT", Commit: "c", CodeRepository: "r", ModelRepository: "m", RunID: "1", RunURL: "u"}
	meta.Graph.Nodes[0].Value.Shape[0] = writer.RTenDim{Name: "batch"}
	meta.Graph.Nodes[4].Operator.Type = 200
	meta.Graph.Nodes[4].Operator.AttrsType = 7
	unaligned := simple()
	unaligned.Align = 1
	unaligned.Graph.Nodes = append(unaligned.Graph.Nodes,
		cst("u8", format.Uint8, false, []byte{1, 2, 3}, 3), cst("f", format.Float32, false, f32(9), 1),
		cst("i8", format.Int8, true, []byte{0xff}, 1), cst("i32", format.Int32, true, []byte{1, 0, 0, 0}, 1))
	elem := simple()
	elem.Align = writer.RTenAlignElement
	elem.Graph.Nodes[2].Constant.NoDType = true
	var out []Seed
	for _, w := range []struct {
		name string
		w    *writer.RTen
	}{
		{"simple-v2.rten", simple()}, {"subgraphs-v2.rten", sub}, {"simple-v1.rten", v1}, {"subgraphs-v1.rten", &v1sub},
		{"metadata.rten", meta}, {"unaligned.rten", unaligned}, {"elem-aligned.rten", elem},
		{"tiny-v2.rten", writer.TinyRTen(false)}, {"tiny-v1.rten", writer.TinyRTen(true)},
	} {
		b, _, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, Seed{w.name, b})
	}
	return out, nil
}

// SmallFile is the size up to which a sweep tries every truncation length
// of a file; larger files are swept over their header and FlatBuffer
// region only (truncations inside it, and a sample past it).
const SmallFile = 60 << 10

// MaxRegionOffsets bounds the offsets a sweep mutates in one file: a
// larger FlatBuffer region is sampled with the step that brings it under
// the bound (and the sweep logs the step).
const MaxRegionOffsets = 32 << 10

// LargeFileBudget bounds the work of a sweep over a file larger than
// SmallFile: its offsets are sampled so that offsets × file size stays
// under it (every case reads the whole file a few times: checksums of
// every view). For the real files: about 1,200 offsets of mnist (109 KB),
// 100 of stories260k (1.3 MB), 64 of ocrs (2.5 MB).
const LargeFileBudget = 128 << 20

// SweepFiles returns the sweep inputs for the real files of
// ../shared/models/<sub> (none when sub is "") and the generated seeds
// gen: each file's header
// and FlatBuffer region to mutate, and its truncation lengths (all of them
// for a file up to SmallFile bytes). Under CI=true the real files must be
// there.
func SweepFiles(tb testing.TB, sub string, gen []Seed) []File {
	tb.Helper()
	var real []Seed
	if sub != "" {
		real = Real(sub)
		if len(real) == 0 && os.Getenv("CI") == "true" {
			testmodels.Dir(tb) // fails, saying where the files were expected
		}
	}
	var out []File
	for _, s := range append(real, gen...) {
		n := int64(len(s.Data))
		end, err := FlatBufferEnd(s.Data)
		if err != nil {
			// a real file that must not open (a bundled program): sweep
			// its first KiB, where every check lives
			end = min(n, 1024)
		}
		f := File{Name: s.Name, Data: s.Data, Mutate: []Range{{0, end}}}
		if n > SmallFile {
			// truncations inside the region, then 64 spread over the rest
			// and the last 8 bytes
			f.Truncate = []Range{{0, end + 1}}
			for i := int64(1); i <= 64; i++ {
				l := end + (n-end)*i/65
				f.Truncate = append(f.Truncate, Range{l, l + 1})
			}
			f.Truncate = append(f.Truncate, Range{n - 8, n})
		}
		budget := int64(MaxRegionOffsets)
		if n > SmallFile {
			budget = min(budget, max(LargeFileBudget/n, 64))
		}
		if end > budget {
			f.Step = int((end + budget - 1) / budget)
		}
		out = append(out, f)
	}
	return out
}
