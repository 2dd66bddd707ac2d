package pte_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// The tests' own reading of a program's instructions, through the
// generated code on the file's bytes: the use order and the instructions
// the package computes are checked against it.

// rawInstr is an instruction as the test reads it.
type rawInstr struct {
	kind pte.InstructionKind
	op   int
	args []int32
	dest int
}

// rawPlan is what the test reads of an execution plan.
type rawPlan struct {
	name   string
	weight []bool    // by value: a tensor whose data the file holds or names
	lists  [][]int32 // by value: the items of a (optional) tensor list
	chains [][]rawInstr
}

// readPlans reads every execution plan of the trusted program in b.
func readPlans(t *testing.T, b []byte) []rawPlan {
	t.Helper()
	prog := ptefb.GetRootAsProgram(b, 0)
	plans := make([]rawPlan, prog.ExecutionPlanLength())
	for i := range plans {
		var ep ptefb.ExecutionPlan
		prog.ExecutionPlan(&ep, i)
		rp := &plans[i]
		rp.name = string(ep.Name())
		nv := ep.ValuesLength()
		rp.weight = make([]bool, nv)
		rp.lists = make([][]int32, nv)
		for v := 0; v < nv; v++ {
			var ev ptefb.EValue
			ep.Values(&ev, v)
			var tab flatbuffers.Table
			if !ev.Val(&tab) {
				continue
			}
			switch ev.ValType() {
			case ptefb.KernelTypesTensor:
				var x ptefb.Tensor
				x.Init(tab.Bytes, tab.Pos)
				var eti ptefb.ExtraTensorInfo
				external := x.ExtraTensorInfo(&eti) != nil && eti.Location() == 1
				rp.weight[v] = external || x.DataBufferIdx() > 0
			case ptefb.KernelTypesTensorList:
				var x ptefb.TensorList
				x.Init(tab.Bytes, tab.Pos)
				for k := 0; k < x.ItemsLength(); k++ {
					rp.lists[v] = append(rp.lists[v], x.Items(k))
				}
			case ptefb.KernelTypesOptionalTensorList:
				var x ptefb.OptionalTensorList
				x.Init(tab.Bytes, tab.Pos)
				for k := 0; k < x.ItemsLength(); k++ {
					rp.lists[v] = append(rp.lists[v], x.Items(k))
				}
			}
		}
		for c := 0; c < ep.ChainsLength(); c++ {
			var ch ptefb.Chain
			ep.Chains(&ch, c)
			var ins []rawInstr
			for k := 0; k < ch.InstructionsLength(); k++ {
				var in ptefb.Instruction
				ch.Instructions(&in, k)
				r := rawInstr{kind: pte.InstructionKind(in.InstrArgsType()), op: -1, dest: -1}
				var tab flatbuffers.Table
				if in.InstrArgs(&tab) {
					switch in.InstrArgsType() {
					case ptefb.InstructionArgumentsKernelCall:
						var x ptefb.KernelCall
						x.Init(tab.Bytes, tab.Pos)
						r.op = int(x.OpIndex())
						for a := 0; a < x.ArgsLength(); a++ {
							r.args = append(r.args, x.Args(a))
						}
					case ptefb.InstructionArgumentsDelegateCall:
						var x ptefb.DelegateCall
						x.Init(tab.Bytes, tab.Pos)
						r.op = int(x.DelegateIndex())
						for a := 0; a < x.ArgsLength(); a++ {
							r.args = append(r.args, x.Args(a))
						}
					case ptefb.InstructionArgumentsMoveCall:
						var x ptefb.MoveCall
						x.Init(tab.Bytes, tab.Pos)
						r.args = []int32{x.MoveFrom(), x.MoveTo()}
					case ptefb.InstructionArgumentsJumpFalseCall:
						var x ptefb.JumpFalseCall
						x.Init(tab.Bytes, tab.Pos)
						r.args, r.dest = []int32{x.CondValueIndex()}, int(x.DestinationInstruction())
					case ptefb.InstructionArgumentsFreeCall:
						var x ptefb.FreeCall
						x.Init(tab.Bytes, tab.Pos)
						r.args = []int32{x.ValueIndex()}
					}
				}
				ins = append(ins, r)
			}
			rp.chains = append(rp.chains, ins)
		}
	}
	return plans
}

// wantOrder is the use order of plan rp as value indices, derived from
// the rule: call arguments in order (list items in order), then the
// unused weights in value order.
func (rp *rawPlan) wantOrder() []int {
	var out []int
	seen := make([]bool, len(rp.weight))
	add := func(v int32) {
		if v >= 0 && int(v) < len(rp.weight) && rp.weight[v] && !seen[v] {
			seen[v] = true
			out = append(out, int(v))
		}
	}
	for _, ch := range rp.chains {
		for _, in := range ch {
			if in.kind != pte.KernelCall && in.kind != pte.DelegateCall {
				continue
			}
			for _, a := range in.args {
				add(a)
				if a >= 0 && int(a) < len(rp.lists) {
					for _, x := range rp.lists[a] {
						add(x)
					}
				}
			}
		}
	}
	for v := range rp.weight {
		add(int32(v))
	}
	return out
}

// checkOrder compares p's use orders and instructions with the test's own
// reading of the program bytes b, and returns the order of method "".
func checkOrder(t *testing.T, p *pte.Program, b []byte) []int {
	t.Helper()
	plans := readPlans(t, b)
	ts := p.Tensors()
	// The tensor of each (method, value), as the tensor list says.
	byValue := map[string]map[int]int{}
	for i := range ts {
		if byValue[ts[i].Method] == nil {
			byValue[ts[i].Method] = map[int]int{}
		}
		byValue[ts[i].Method][ts[i].Value] = i
	}
	var all []int
	for pi := range plans {
		rp := &plans[pi]
		m, ok := p.Method(rp.name)
		if !ok {
			t.Fatalf("method %q missing", rp.name)
		}
		nw := 0
		for _, w := range rp.weight {
			if w {
				nw++
			}
		}
		if nw != len(byValue[rp.name]) {
			t.Fatalf("method %q: the test counts %d weights, the tensor list %d", rp.name, nw, len(byValue[rp.name]))
		}
		var want []int
		for _, v := range rp.wantOrder() {
			i, ok := byValue[rp.name][v]
			if !ok {
				t.Fatalf("method %q: value %d is a weight but not in the tensor list", rp.name, v)
			}
			want = append(want, i)
		}
		got, err := p.UseOrder(rp.name)
		if err != nil {
			t.Fatalf("UseOrder(%q): %v", rp.name, err)
		}
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("UseOrder(%q) = %v, want %v", rp.name, got, want)
		}
		all = append(all, want...)

		if len(m.Chains) != len(rp.chains) {
			t.Fatalf("method %q: %d chains, want %d", rp.name, len(m.Chains), len(rp.chains))
		}
		for c, ch := range rp.chains {
			ins, err := m.Instructions(c)
			if err != nil {
				t.Fatalf("method %q chain %d: %v", rp.name, c, err)
			}
			if len(ins) != len(ch) {
				t.Fatalf("method %q chain %d: %d instructions, want %d", rp.name, c, len(ins), len(ch))
			}
			for k, r := range ch {
				g := ins[k]
				if g.Kind != r.kind || g.Op != r.op || g.Dest != r.dest || !slices.Equal(g.Args, r.args) {
					t.Errorf("method %q chain %d instruction %d: %v op %d args %v dest %d, want %v op %d args %v dest %d",
						rp.name, c, k, g.Kind, g.Op, g.Args, g.Dest, r.kind, r.op, r.args, r.dest)
				}
			}
		}
	}
	got, err := p.UseOrder("")
	if err != nil {
		t.Fatalf("UseOrder(\"\"): %v", err)
	}
	if !slices.Equal(got, all) && len(got)+len(all) > 0 {
		t.Errorf("UseOrder(\"\") = %v, want %v", got, all)
	}
	if len(got) != len(ts) {
		t.Errorf("UseOrder(\"\") lists %d tensors, want all %d", len(got), len(ts))
	}
	return got
}

func TestUseOrderReal(t *testing.T) {
	for _, path := range testmodels.Files(t, "pte") {
		if !strings.HasSuffix(path, ".pte") {
			continue // a bundled program is not a program
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := mapOpen(t, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			order := checkOrder(t, p, b)
			if err := checkUseOrder(p); err != nil {
				t.Error(err)
			}
			ts := p.Tensors()
			switch filepath.Base(path) {
			case "arduino-keyword-spotting.pte":
				// The first instruction uses values 39, 40, 38, 37, 44.
				want := []string{"forward/values/39", "forward/values/40", "forward/values/38", "forward/values/37", "forward/values/44"}
				if len(order) < len(want) {
					t.Fatalf("order %v too short", order)
				}
				for k, w := range want {
					if ts[order[k]].Name != w {
						t.Errorf("order[%d] = %s, want %s", k, ts[order[k]].Name, w)
					}
				}
				m, _ := p.Method("forward")
				ins, _ := m.Instructions(0)
				if len(ins) == 0 || ins[0].Kind != pte.KernelCall {
					t.Fatalf("first instruction %+v, want a KernelCall", ins)
				}
			case "stories260k-qnn.pte":
				// Delegated: a DelegateCall of delegate 0 and no weights
				// the program itself holds.
				m, _ := p.Method("kv_forward")
				ins, _ := m.Instructions(0)
				if len(ins) != 1 || ins[0].Kind != pte.DelegateCall || ins[0].Op != 0 || len(ins[0].Args) == 0 {
					t.Errorf("kv_forward instructions %+v, want one DelegateCall of delegate 0 with arguments", ins)
				}
			}
		})
	}
}

// f32s returns n float32 zeros' bytes.
func f32s(n int) []byte { return make([]byte, 4*n) }

// reverseProgram is a program of two methods. "forward" has weights w0..w4
// (values 0-4), an activation (5), an input (6), a TensorList of w2 and w1
// (7), an optional list of w3 and none (8) and an Int (9); its first chain
// uses w4, the TensorList (w2, w1) and the Int; its second chain the
// optional list (w3) and w4 again; w0 is never used. "second" has one
// weight, used.
func reverseProgram() *writer.PTE {
	w := func(name string) writer.PTETensor {
		return writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{4}, Data: f32s(4), Name: name}
	}
	return &writer.PTE{Methods: []writer.PTEMethod{{
		Name: "forward",
		Tensors: []writer.PTETensor{
			w("w0"), w("w1"), w("w2"), w("w3"), w("w4"),
			{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4}},
			{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{4}},
		},
		Values: []writer.PTEValue{
			{Kind: writer.PTETensorList, Items: []int32{2, 1}},
			{Kind: writer.PTEOptionalTensorList, Items: []int32{3, -1}},
			{Kind: writer.PTEInt, Int: 7},
		},
		Inputs: []int32{6}, Outputs: []int32{5},
		Operators: []string{"aten::linear", "aten::cat"},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEMoveCall, A: 6, B: 5},
			{Kind: writer.PTEKernelCall, A: 0, Args: []int32{6, 4, 5}},
			{Kind: writer.PTEFreeCall, A: 6},
			{Kind: writer.PTEJumpFalseCall, A: 9, B: 5},
			{Kind: writer.PTEKernelCall, A: 1, Args: []int32{7, 9, 5}},
		},
		MoreChains: [][]writer.PTEInstruction{{
			{Kind: writer.PTEKernelCall, A: 1, Args: []int32{8, 4, 5}},
		}},
	}, {
		Name:      "second",
		Tensors:   []writer.PTETensor{w("s0")},
		Operators: []string{"aten::relu"},
		Instructions: []writer.PTEInstruction{
			{Kind: writer.PTEKernelCall, A: 0, Args: []int32{0}},
		},
	}}}
}

func TestUseOrderWriter(t *testing.T) {
	b, err := reverseProgram().Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pte.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	checkOrder(t, p, b)
	if err := checkUseOrder(p); err != nil {
		t.Error(err)
	}
	names := func(order []int) []string {
		var out []string
		for _, i := range order {
			out = append(out, p.Tensors()[i].Name)
		}
		return out
	}
	for _, c := range []struct {
		method string
		want   []string
	}{
		{"forward", []string{"w4", "w2", "w1", "w3", "w0"}},
		{"second", []string{"s0"}},
		{"", []string{"w4", "w2", "w1", "w3", "w0", "s0"}},
	} {
		got, err := p.UseOrder(c.method)
		if err != nil {
			t.Fatalf("UseOrder(%q): %v", c.method, err)
		}
		if !slices.Equal(names(got), c.want) {
			t.Errorf("UseOrder(%q) = %v, want %v", c.method, names(got), c.want)
		}
	}
	if _, err := p.UseOrder("backward"); !errors.Is(err, format.ErrNotFound) {
		t.Errorf("UseOrder(backward): %v, want ErrNotFound", err)
	}

	m, _ := p.Method("forward")
	ins, err := m.Instructions(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []pte.Instruction{
		{Kind: pte.MoveCall, Op: -1, Args: []int32{6, 5}, Dest: -1},
		{Kind: pte.KernelCall, Op: 0, Args: []int32{6, 4, 5}, Dest: -1},
		{Kind: pte.FreeCall, Op: -1, Args: []int32{6}, Dest: -1},
		{Kind: pte.JumpFalseCall, Op: -1, Args: []int32{9}, Dest: 5},
		{Kind: pte.KernelCall, Op: 1, Args: []int32{7, 9, 5}, Dest: -1},
	}
	if len(ins) != len(want) {
		t.Fatalf("%d instructions, want %d", len(ins), len(want))
	}
	for k := range want {
		g := ins[k]
		if g.Kind != want[k].Kind || g.Op != want[k].Op || g.Dest != want[k].Dest || !slices.Equal(g.Args, want[k].Args) {
			t.Errorf("instruction %d: %+v, want %+v", k, g, want[k])
		}
	}
	// Appending to one instruction's arguments must not change the next's.
	_ = append(ins[1].Args, 99)
	if ins[2].Args[0] != 6 {
		t.Errorf("instruction 2's arguments changed to %v by an append to instruction 1's", ins[2].Args)
	}
	if _, err := m.Instructions(2); !errors.Is(err, format.ErrNotFound) {
		t.Errorf("Instructions(2): %v, want ErrNotFound", err)
	}
	if _, err := m.Instructions(-1); !errors.Is(err, format.ErrNotFound) {
		t.Errorf("Instructions(-1): %v, want ErrNotFound", err)
	}
	if s := pte.KernelCall.String(); s != "KernelCall" {
		t.Errorf("KernelCall.String() = %q", s)
	}
	if s := pte.InstructionKind(9).String(); s != "InstructionKind(9)" {
		t.Errorf("InstructionKind(9).String() = %q", s)
	}

	p.Close()
	if _, err := p.UseOrder(""); !errors.Is(err, format.ErrClosed) {
		t.Errorf("UseOrder after Close: %v, want ErrClosed", err)
	}
	if _, err := m.Instructions(0); !errors.Is(err, format.ErrClosed) {
		t.Errorf("Instructions after Close: %v, want ErrClosed", err)
	}
}

// A program whose instruction names a value out of range is rejected, by
// Open or by the accessors, and nothing panics; a call argument that is
// not a tensor (an Int, a planned activation, a NONE instruction) is
// skipped.
func TestUseOrderHostile(t *testing.T) {
	base := func() *writer.PTE {
		return &writer.PTE{Methods: []writer.PTEMethod{{
			Name: "forward",
			Tensors: []writer.PTETensor{
				{ScalarType: writer.PTEFloat32, Sizes: []int32{1}, Data: f32s(1), Name: "a"},
				{ScalarType: writer.PTEFloat32, Sizes: []int32{1}, Data: f32s(1), Name: "b"},
			},
			Values:    []writer.PTEValue{{Kind: writer.PTEInt, Int: 1}, {Kind: writer.PTENull}},
			Operators: []string{"op"},
		}}}
	}
	for _, c := range []struct {
		name string
		ins  []writer.PTEInstruction
		want []string // nil: must fail
	}{
		{"arg out of range", []writer.PTEInstruction{{Kind: writer.PTEKernelCall, Args: []int32{1, 4}}}, nil},
		{"negative arg", []writer.PTEInstruction{{Kind: writer.PTEKernelCall, Args: []int32{-1}}}, nil},
		{"huge arg", []writer.PTEInstruction{{Kind: writer.PTEKernelCall, Args: []int32{1 << 30}}}, nil},
		{"op out of range", []writer.PTEInstruction{{Kind: writer.PTEKernelCall, A: 3, Args: []int32{1}}}, nil},
		{"delegate out of range", []writer.PTEInstruction{{Kind: writer.PTEDelegateCall, Args: []int32{1}}}, nil},
		{"move out of range", []writer.PTEInstruction{{Kind: writer.PTEMoveCall, A: 0, B: 9}}, nil},
		{"free out of range", []writer.PTEInstruction{{Kind: writer.PTEFreeCall, A: -3}}, nil},
		{"jump out of range", []writer.PTEInstruction{{Kind: writer.PTEJumpFalseCall, A: 2, B: 5}}, nil},
		{"non-tensor args", []writer.PTEInstruction{{Kind: writer.PTEKernelCall, Args: []int32{2, 3, 1}}}, []string{"b", "a"}},
		{"none instruction", []writer.PTEInstruction{{Kind: 0}, {Kind: writer.PTEKernelCall, Args: []int32{1}}}, []string{"b", "a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := base()
			w.Methods[0].Instructions = c.ins
			b, err := w.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			p, err := pte.NewFile(mmapfile.NewBytes(b))
			if err != nil {
				if c.want != nil {
					t.Fatalf("Open: %v", err)
				}
				return // rejected at Open
			}
			defer p.Close()
			m, _ := p.Method("forward")
			_, ierr := m.Instructions(0)
			order, err := p.UseOrder("")
			if c.want == nil {
				if err == nil || ierr == nil {
					t.Fatalf("Instructions: %v, UseOrder: %v, %v; want errors", ierr, order, err)
				}
				return
			}
			if err != nil || ierr != nil {
				t.Fatalf("Instructions: %v, UseOrder: %v", ierr, err)
			}
			var got []string
			for _, i := range order {
				got = append(got, p.Tensors()[i].Name)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("order %v, want %v", got, c.want)
			}
		})
	}
}

// checkUseOrder checks what an opened program promises of its use orders
// and instructions, whatever its bytes: method "" lists each tensor once,
// each method exactly its own tensors, and every instruction's indices
// are in range. An error must be a *format.FormatError (instructions may
// be verified when first read).
func checkUseOrder(p *pte.Program) error {
	var fe *format.FormatError
	ts := p.Tensors()
	check := func(method string) error {
		order, err := p.UseOrder(method)
		if err != nil {
			if errors.As(err, &fe) {
				return nil
			}
			return fmt.Errorf("use order of %q: %w", method, err)
		}
		seen := make([]bool, len(ts))
		for _, i := range order {
			if i < 0 || i >= len(ts) || seen[i] || (method != "" && ts[i].Method != method) {
				return fmt.Errorf("use order of %q: %v: bad index %d", method, order, i)
			}
			seen[i] = true
		}
		for i := range seen {
			if !seen[i] && (method == "" || ts[i].Method == method) {
				return fmt.Errorf("use order of %q: %v: tensor %d missing", method, order, i)
			}
		}
		return nil
	}
	if err := check(""); err != nil {
		return err
	}
	for _, m := range p.Methods() {
		if err := check(m.Name); err != nil {
			return err
		}
		for c := range m.Chains {
			ins, err := m.Instructions(c)
			if err != nil {
				if errors.As(err, &fe) {
					continue
				}
				return fmt.Errorf("method %q chain %d: %w", m.Name, c, err)
			}
			for k, in := range ins {
				for _, a := range in.Args {
					if a < 0 || int(a) >= m.NumValues() {
						return fmt.Errorf("method %q chain %d instruction %d: value %d out of range", m.Name, c, k, a)
					}
				}
				switch in.Kind {
				case pte.KernelCall:
					if in.Op < 0 || in.Op >= len(m.Operators) {
						return fmt.Errorf("method %q chain %d instruction %d: operator %d out of range", m.Name, c, k, in.Op)
					}
				case pte.DelegateCall:
					if in.Op < 0 || in.Op >= len(m.Delegates) {
						return fmt.Errorf("method %q chain %d instruction %d: delegate %d out of range", m.Name, c, k, in.Op)
					}
				case pte.JumpFalseCall:
					if in.Dest < 0 || in.Dest > len(ins) {
						return fmt.Errorf("method %q chain %d instruction %d: destination %d out of range", m.Name, c, k, in.Dest)
					}
				}
			}
		}
	}
	return nil
}

// BenchmarkUseOrder computes the use order of a writer-made program of
// 4096 weights, each used by one of 4096 instructions in reverse order.
func BenchmarkUseOrder(b *testing.B) {
	const n = 4096
	m := writer.PTEMethod{Name: "forward", Operators: []string{"aten::linear"}}
	for i := range n {
		m.Tensors = append(m.Tensors, writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{1}})
		m.Instructions = append(m.Instructions, writer.PTEInstruction{Kind: writer.PTEKernelCall, Args: []int32{int32(n - 1 - i)}})
	}
	data, err := (&writer.PTE{Methods: []writer.PTEMethod{m}}).Bytes()
	if err != nil {
		b.Fatal(err)
	}
	p, err := pte.NewFile(mmapfile.NewBytes(data))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	b.ReportAllocs()
	for b.Loop() {
		order, err := p.UseOrder("")
		if err != nil || len(order) != n || order[0] != n-1 {
			b.Fatalf("order %v..., %v", order[:1], err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/tensor")
}
