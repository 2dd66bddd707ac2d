package pte

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbread"
)

// InstructionKind is the type of an instruction (the InstructionArguments
// union tag).
type InstructionKind uint8

// The instruction kinds, numbered as the InstructionArguments union tags.
// An instruction without arguments (tag NONE) has kind NoInstruction.
const (
	NoInstruction InstructionKind = iota
	KernelCall
	DelegateCall
	MoveCall
	JumpFalseCall
	FreeCall
)

var instructionNames = [...]string{"None", "KernelCall", "DelegateCall", "MoveCall", "JumpFalseCall", "FreeCall"}

// String returns the kind's schema name, e.g. "KernelCall".
func (k InstructionKind) String() string {
	if int(k) < len(instructionNames) {
		return instructionNames[k]
	}
	return fmt.Sprintf("InstructionKind(%d)", uint8(k))
}

// Instruction is one instruction of a chain.
type Instruction struct {
	Kind InstructionKind
	// Op is the operator index into Method.Operators (KernelCall) or the
	// delegate index into Method.Delegates (DelegateCall); -1 otherwise.
	Op int
	// Args are value indices: a KernelCall's or DelegateCall's arguments;
	// a MoveCall's from and to; a JumpFalseCall's condition; a FreeCall's
	// value.
	Args []int32
	// Dest is a JumpFalseCall's destination instruction (the chain's
	// length ends the chain); -1 otherwise.
	Dest int
}

// Instructions decodes the instructions of chain c of the plan, in order,
// from the verified FlatBuffer. The result is the caller's: the arguments
// of all its instructions share one array. The first call on a method
// checks its instructions (every operator, delegate and value index in
// range) and fails as every later call does when they are not valid; it
// also fails for a chain out of range or a closed program.
func (m *Method) Instructions(c int) ([]Instruction, error) {
	p := m.p
	if c < 0 || c >= len(m.Chains) {
		return nil, fmt.Errorf("pte: method %q: chain %d out of range (%d chains): %w", m.Name, c, len(m.Chains), format.ErrNotFound)
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	start, n := m.instructions(c)
	out := make([]Instruction, n)
	var tab flatbuffers.Table
	// args returns instruction k's arguments table, or false for tag NONE.
	// The check verified the instructions through 64-bit offsets, which
	// fbread follows the same way.
	args := func(k int) (ptefb.InstructionArguments, bool) {
		t, a, ok := instrArgs(p.fb, fbread.Deref(p.fb, start+4*int64(k)))
		tab = a
		return t, ok
	}
	// The call arguments of every instruction in one array: counted first.
	total := 0
	for k := range n {
		if t, ok := args(k); ok {
			switch t {
			case ptefb.InstructionArgumentsKernelCall, ptefb.InstructionArgumentsDelegateCall:
				total += i32Field(tab, vtCallArgs).len()
			case ptefb.InstructionArgumentsMoveCall:
				total += 2
			case ptefb.InstructionArgumentsJumpFalseCall, ptefb.InstructionArgumentsFreeCall:
				total++
			}
		}
	}
	all := make([]int32, 0, total)
	for k := range out {
		ins := &out[k]
		ins.Op, ins.Dest = -1, -1
		t, ok := args(k)
		if !ok {
			continue
		}
		start := len(all)
		// Every union member is a table: x is read as the kind's type.
		var x ptefb.KernelCall
		x.Init(tab.Bytes, tab.Pos)
		switch t {
		case ptefb.InstructionArgumentsKernelCall:
			ins.Kind, ins.Op = KernelCall, int(x.OpIndex())
			all = appendI32s(all, i32Field(tab, vtCallArgs))
		case ptefb.InstructionArgumentsDelegateCall:
			ins.Kind, ins.Op = DelegateCall, int((*ptefb.DelegateCall)(&x).DelegateIndex())
			all = appendI32s(all, i32Field(tab, vtCallArgs))
		case ptefb.InstructionArgumentsMoveCall:
			ins.Kind = MoveCall
			all = append(all, (*ptefb.MoveCall)(&x).MoveFrom(), (*ptefb.MoveCall)(&x).MoveTo())
		case ptefb.InstructionArgumentsJumpFalseCall:
			jc := (*ptefb.JumpFalseCall)(&x)
			ins.Kind, ins.Dest = JumpFalseCall, int(jc.DestinationInstruction())
			all = append(all, jc.CondValueIndex())
		case ptefb.InstructionArgumentsFreeCall:
			ins.Kind = FreeCall
			all = append(all, (*ptefb.FreeCall)(&x).ValueIndex())
		default:
			continue // a tag this reader does not know: verification rejects it
		}
		ins.Args = all[start:len(all):len(all)]
	}
	return out, nil
}

// appendI32s appends the entries of v to dst.
func appendI32s(dst []int32, v i32s) []int32 {
	for k := range v.len() {
		dst = append(dst, v.at(k))
	}
	return dst
}
