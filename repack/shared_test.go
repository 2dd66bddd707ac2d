package repack_test

import (
	"errors"
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

func TestSharedObjects(t *testing.T) {
	dir := t.TempDir()
	// Small sharing unpacks fine.
	small := filepath.Join(dir, "small.pte")
	if err := os.WriteFile(small, sharedProgram(50, 50), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := repack.Repack(small, filepath.Join(dir, "small-out.pte"), repack.Options{}); err != nil {
		t.Fatalf("small shared program: %v", err)
	}
	// 2000 × 2000 frames: about 700 MB unpacked from 16 KB.
	big := filepath.Join(dir, "big.pte")
	if err := os.WriteFile(big, sharedProgram(2000, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(big)
	if err != nil {
		t.Fatalf("the loader refuses the program: %v", err)
	}
	m.Close()
	_, err = repack.Repack(big, filepath.Join(dir, "big-out.pte"), repack.Options{})
	if err == nil || !strings.Contains(err.Error(), "share objects") {
		t.Fatalf("Repack of a program of shared objects: %v", err)
	}
	if errors.Is(err, repack.ErrSameFile) {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Errorf("%d files in the directory, want 3", len(es))
	}
}
