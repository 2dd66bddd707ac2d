package pte

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// checkProgram is two methods: "good", and "bad" whose one instruction
// names an operator the plan does not have.
func checkProgram(t *testing.T) *Program {
	t.Helper()
	method := func(name string, op int32) writer.PTEMethod {
		return writer.PTEMethod{
			Name:         name,
			Tensors:      []writer.PTETensor{{Kind: writer.PTEPlanned, ScalarType: writer.PTEFloat32, Sizes: []int32{2}}},
			Inputs:       []int32{0},
			Outputs:      []int32{0},
			Operators:    []string{"op"},
			Instructions: []writer.PTEInstruction{{Kind: writer.PTEKernelCall, A: op}},
		}
	}
	b, err := (&writer.PTE{Methods: []writer.PTEMethod{method("good", 0), method("bad", 7)}}).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatalf("Open checks no instruction, but: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A method's instructions are checked at its first check, once, with the
// same outcome for every caller and every copy of the Method.
func TestMethodCheck(t *testing.T) {
	p := checkProgram(t)
	good, _ := p.Method("good")
	if err := good.check(); err != nil {
		t.Fatalf("good: %v", err)
	}
	bad, _ := p.Method("bad")
	copies := p.Methods() // values: their check state is shared
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = bad.check()
			} else {
				errs[i] = copies[1].check()
			}
		})
	}
	wg.Wait()
	var fe *format.FormatError
	if !errors.As(errs[0], &fe) || !errors.Is(errs[0], format.ErrMalformed) ||
		fe.Field != "Program.execution_plan[1].chains[0].instructions[0].instr_args.op_index" || !strings.Contains(fe.Msg, "op_index 7 out of range") {
		t.Fatalf("bad: %v, want a malformed-file error naming op_index", errs[0])
	}
	for i, err := range errs {
		if err != errs[0] {
			t.Errorf("call %d: %v, want the first call's error itself", i, err)
		}
	}
	if err := p.VerifyMethods(); err != errs[0] {
		t.Errorf("VerifyMethods = %v, want %v", err, errs[0])
	}
	if n := testing.AllocsPerRun(100, func() { _ = bad.check() }); n != 0 {
		t.Errorf("a repeated check allocates %v times", n)
	}
	p.Close()
	if err := good.check(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("check after Close = %v, want ErrClosed", err)
	}
}

// A structural fault in an instruction is found by the method's check
// with the path a full verification gives.
func TestMethodCheckStructure(t *testing.T) {
	p := checkProgram(t)
	m, _ := p.Method("good")
	// Point the first instruction's vtable outside the FlatBuffer.
	fb := p.fb
	pos := instructionPos(p, m)
	fb[pos], fb[pos+1], fb[pos+2], fb[pos+3] = 0xff, 0xff, 0xff, 0x7f
	err := m.check()
	var fe *format.FormatError
	if !errors.As(err, &fe) || fe.Field != "Program.execution_plan[0].chains[0].instructions[0]" {
		t.Fatalf("check = %v, want an error at instructions[0]", err)
	}
	if full := fullVerify(fb); full == nil || full.Error() != err.Error() {
		t.Errorf("check = %v, a full verification %v", err, full)
	}
}

// An instruction offset whose target lies 4 GiB past its own position,
// far past the buffer, is refused by the method's check with the error a
// full verification gives, although in 32-bit arithmetic it wraps to an
// in-bounds table (the root, which reads as an Instruction without
// arguments); Instructions refuses the method too.
func TestMethodCheckOffsetWrap(t *testing.T) {
	p := checkProgram(t)
	m, _ := p.Method("good")
	fb := p.fb
	q, _ := m.instructions(0)
	root := int64(binary.LittleEndian.Uint32(fb))
	if root >= q {
		t.Fatalf("root table at %d is not before the instruction vector at %d", root, q)
	}
	binary.LittleEndian.PutUint32(fb[q:], uint32(root+1<<32-q))
	err := m.check()
	var fe *format.FormatError
	if !errors.As(err, &fe) || fe.Field != "Program.execution_plan[0].chains[0].instructions[0]" || fe.Offset != q {
		t.Fatalf("check = %v, want an error at instructions[0], offset %d", err, q)
	}
	if full := fullVerify(fb); full == nil || full.Error() != err.Error() {
		t.Errorf("check = %v, a full verification %v", err, full)
	}
	if _, ierr := m.Instructions(0); ierr == nil {
		t.Error("Instructions read a chain whose check failed")
	}
}

// instructionPos returns the position of m's first instruction table.
func instructionPos(p *Program, m *Method) int {
	var plan ptefb.ExecutionPlan
	plan.Init(p.fb, m.pos)
	var ch ptefb.Chain
	plan.Chains(&ch, 0)
	var in ptefb.Instruction
	ch.Instructions(&in, 0)
	return int(in.Table().Pos)
}
