package repack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/repack"
)

// sharedProgram builds a program whose one chain's stack trace (which the
// loader does not read) lists n times one FrameList of m times one Frame:
// a small file whose naive unpacking makes n×m frames.
func sharedProgram(n, m int) []byte {
	b := flatbuffers.NewBuilder(0)
	file := b.CreateString(strings.Repeat("model.py/", 12))
	ptefb.FrameStart(b)
	ptefb.FrameAddFilename(b, file)
	ptefb.FrameAddLineno(b, 1)
	frame := ptefb.FrameEnd(b)
	ptefb.FrameListStartItemsVector(b, m)
	for range m {
		b.PrependUOffsetT(frame)
	}
	items := b.EndVector(m)
	ptefb.FrameListStart(b)
	ptefb.FrameListAddItems(b, items)
	fl := ptefb.FrameListEnd(b)
	ptefb.ChainStartStacktraceVector(b, n)
	for range n {
		b.PrependUOffsetT(fl)
	}
	trace := b.EndVector(n)

	ptefb.KernelCallStartArgsVector(b, 1)
	b.PrependInt32(0)
	args := b.EndVector(1)
	ptefb.KernelCallStart(b)
	ptefb.KernelCallAddArgs(b, args)
	kc := ptefb.KernelCallEnd(b)
	ptefb.InstructionStart(b)
	ptefb.InstructionAddInstrArgsType(b, ptefb.InstructionArgumentsKernelCall)
	ptefb.InstructionAddInstrArgs(b, kc)
	in := ptefb.InstructionEnd(b)
	ptefb.ChainStartInstructionsVector(b, 1)
	b.PrependUOffsetT(in)
	ins := b.EndVector(1)
	ptefb.ChainStart(b)
	ptefb.ChainAddInstructions(b, ins)
	ptefb.ChainAddStacktrace(b, trace)
	chain := ptefb.ChainEnd(b)
	ptefb.ExecutionPlanStartChainsVector(b, 1)
	b.PrependUOffsetT(chain)
	chains := b.EndVector(1)

	ptefb.IntStart(b)
	ptefb.IntAddIntVal(b, 7)
	iv := ptefb.IntEnd(b)
	ptefb.EValueStart(b)
	ptefb.EValueAddValType(b, ptefb.KernelTypesInt)
	ptefb.EValueAddVal(b, iv)
	ev := ptefb.EValueEnd(b)
	ptefb.ExecutionPlanStartValuesVector(b, 1)
	b.PrependUOffsetT(ev)
	values := b.EndVector(1)

	opName, overload := b.CreateString("aten::add"), b.CreateString("out")
	ptefb.OperatorStart(b)
	ptefb.OperatorAddName(b, opName)
	ptefb.OperatorAddOverload(b, overload)
	op := ptefb.OperatorEnd(b)
	ptefb.ExecutionPlanStartOperatorsVector(b, 1)
	b.PrependUOffsetT(op)
	ops := b.EndVector(1)

	name := b.CreateString("forward")
	ptefb.ExecutionPlanStart(b)
	ptefb.ExecutionPlanAddName(b, name)
	ptefb.ExecutionPlanAddValues(b, values)
	ptefb.ExecutionPlanAddChains(b, chains)
	ptefb.ExecutionPlanAddOperators(b, ops)
	plan := ptefb.ExecutionPlanEnd(b)
	ptefb.ProgramStartExecutionPlanVector(b, 1)
	b.PrependUOffsetT(plan)
	plans := b.EndVector(1)
	ptefb.ProgramStart(b)
	ptefb.ProgramAddExecutionPlan(b, plans)
	b.FinishWithFileIdentifier(ptefb.ProgramEnd(b), []byte("ET12"))
	return b.FinishedBytes()
}

// TestSharedObjects: a program whose tables share objects is copied
// with the sharing kept, each shared object once: small and large sharing
// repack to a program of about the input's size that holds every frame.
func TestSharedObjects(t *testing.T) {
	dir := t.TempDir()
	for _, nm := range [][2]int{{50, 50}, {2000, 2000}} {
		// 2000 × 2000 frames: about 700 MB if each reference were copied,
		// from 16 KB.
		in := filepath.Join(dir, "in.pte")
		b := sharedProgram(nm[0], nm[1])
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := loader.Open(in)
		if err != nil {
			t.Fatalf("the loader refuses the program: %v", err)
		}
		m.Close()
		out := filepath.Join(dir, "out.pte")
		res, err := repack.Repack(in, out, repack.Options{})
		if err != nil {
			t.Fatalf("%v shared program: %v", nm, err)
		}
		if res.Size > int64(len(b))+1024 {
			t.Errorf("%v shared program: %d bytes from %d", nm, res.Size, len(b))
		}
		checkShared(t, out, nm[0], nm[1])
	}
}

// checkShared reads the repacked sharedProgram(n, m) at path with the
// generated FlatBuffer code, not edgeload's reader, and checks what the
// program held: the method, its Int value 7, its one KernelCall of value
// 0, and a stack trace of n frame lists of m frames, each the frame
// written.
func checkShared(t *testing.T, path string, n, m int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := ptefb.GetRootAsProgram(b, 0)
	var plan ptefb.ExecutionPlan
	if p.ExecutionPlanLength() != 1 || !p.ExecutionPlan(&plan, 0) || string(plan.Name()) != "forward" {
		t.Fatalf("repacked: %d plans", p.ExecutionPlanLength())
	}
	var ev ptefb.EValue
	var tab flatbuffers.Table
	var iv ptefb.Int
	if plan.ValuesLength() != 1 || !plan.Values(&ev, 0) || ev.ValType() != ptefb.KernelTypesInt || !ev.Val(&tab) {
		t.Fatalf("repacked: %d values", plan.ValuesLength())
	}
	iv.Init(tab.Bytes, tab.Pos)
	if iv.IntVal() != 7 {
		t.Errorf("repacked: value 0 is %d, want 7", iv.IntVal())
	}
	var ch ptefb.Chain
	var in ptefb.Instruction
	var kc ptefb.KernelCall
	if plan.ChainsLength() != 1 || !plan.Chains(&ch, 0) || ch.InstructionsLength() != 1 || !ch.Instructions(&in, 0) ||
		in.InstrArgsType() != ptefb.InstructionArgumentsKernelCall || !in.InstrArgs(&tab) {
		t.Fatal("repacked: not one chain of one KernelCall")
	}
	kc.Init(tab.Bytes, tab.Pos)
	if kc.ArgsLength() != 1 || kc.Args(0) != 0 {
		t.Errorf("repacked: KernelCall args %d", kc.ArgsLength())
	}
	if ch.StacktraceLength() != n {
		t.Fatalf("repacked: %d frame lists in the stack trace, want %d", ch.StacktraceLength(), n)
	}
	var fl ptefb.FrameList
	var fr ptefb.Frame
	for i := range n {
		if !ch.Stacktrace(&fl, i) || fl.ItemsLength() != m {
			t.Fatalf("repacked: frame list %d has %d frames, want %d", i, fl.ItemsLength(), m)
		}
		for j := range m {
			if !fl.Items(&fr, j) || string(fr.Filename()) != strings.Repeat("model.py/", 12) || fr.Lineno() != 1 {
				t.Fatalf("repacked: frame %d of list %d is %q:%d", j, i, fr.Filename(), fr.Lineno())
			}
		}
	}
}
