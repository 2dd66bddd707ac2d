package pte

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/fbread"
)

// programChecks is what the methods' checks share, one at a time under mu:
// the walk Open verified the program with (and its object limit) and what
// is left of the work budget.
type programChecks struct {
	mu     sync.Mutex
	walk   *fbverify.Walk
	budget int64
}

// methodCheck is the outcome of a method's checks of its values and its
// instructions, shared by every copy of the Method.
type methodCheck struct {
	values, instrs       sync.Once
	valuesErr, instrsErr error
}

// check checks the method's values and instructions the first time it is
// called, and returns the outcome at every call. It is safe for concurrent
// use.
func (m *Method) check() error {
	c := m.check1
	if err := m.once(&c.values, &c.valuesErr, m.checkValues); err != nil {
		return err
	}
	return m.once(&c.instrs, &c.instrsErr, m.checkInstructions)
}

// once runs the check f under the checks' lock the first time it is
// called with o, keeping its outcome in *err, and returns the outcome.
func (m *Method) once(o *sync.Once, err *error, f func() error) error {
	p := m.p
	if p.closed.Load() {
		return fmt.Errorf("pte: method %q: %w", m.Name, format.ErrClosed)
	}
	o.Do(func() {
		p.checks.mu.Lock()
		defer p.checks.mu.Unlock()
		if p.checks.walk == nil {
			*err = fmt.Errorf("pte: method %q: %w", m.Name, format.ErrClosed)
			return
		}
		*err = f()
	})
	return *err
}

// close drops the walk, whose buffer goes back to its pool at Close.
func (pc *programChecks) close() {
	pc.mu.Lock()
	pc.walk = nil
	pc.mu.Unlock()
}

// VerifyMethods checks every method's instructions (see Open: they are
// checked when first needed) and returns the first problem, in method
// order.
func (p *Program) VerifyMethods() error {
	ms := p.methodList()
	for i := range ms {
		if err := ms[i].check(); err != nil {
			return err
		}
	}
	return nil
}

// checkValues checks what Open leaves of m's values: the tensors without
// data in the file and the items of tensor lists.
func (m *Method) checkValues() error {
	p := m.p
	fb, pp := p.fb, int64(m.pos)
	b := &builder{p: p, fb: fb, budget: p.checks.budget, deferred: true}
	defer func() { p.checks.budget = b.budget }()
	fo := b.planF.Of(fb, pp)
	name := fbread.FieldBytes(fb, pp, fo[planName], 1)
	vstart, _ := fbread.FieldVector(fb, pp, fo[planValues])
	for v := range m.nv {
		if err := b.value(m.Index, name, v, m.nv, fbread.Deref(fb, vstart+4*int64(v))); err != nil {
			return err
		}
	}
	return nil
}

// Instruction depth: Program (1) > ExecutionPlan (2) > Chain (3) >
// Instruction (4).
const instructionDepth = 4

// checkInstructions verifies every instruction of every chain of m with
// the program's walk, then checks its indices: operators, delegates,
// values and jump destinations.
func (m *Method) checkInstructions() error {
	p := m.p
	pc := &p.checks
	nv, nops, ndel := m.nv, len(m.Operators), len(m.Delegates)
	for ci := range m.Chains {
		field := func() string { return idx(planField(m.Index)+".chains", ci) }
		start, ni := m.instructions(ci)
		pc.budget -= int64(ni)
		if pc.budget < 0 {
			return overBudget(p, field()+".instructions", start)
		}
		for k := 0; k < ni; k++ {
			// The instruction's table, reached as the full verification
			// reaches it: its offset followed in 64-bit arithmetic.
			ipos, err := pc.walk.Elem(start, k, "Instruction", ptefb.VerifyInstruction, instructionDepth)
			if err != nil {
				return prefixField(err, idx(field()+".instructions", k), "Instruction")
			}
			kind, tab, ok := instrArgs(p.fb, ipos)
			if !ok {
				continue
			}
			pos := int64(tab.Pos)
			f := func(suffix string) string { return idx(field()+".instructions", k) + ".instr_args" + suffix }
			outOfRange := func(what, suffix string, x int32, n int) error {
				return format.Errorf(formatName, f(suffix), pos, "%s %d out of range (%d)", what, x, n)
			}
			args := func() error {
				v := i32Field(tab, vtCallArgs)
				pc.budget -= int64(v.len())
				if pc.budget < 0 {
					return overBudget(p, f(".args"), pos)
				}
				if j := v.bad(0, nv); j >= 0 {
					return format.Errorf(formatName, idx(f(".args"), j), pos, "value index %d out of range (the plan has %d values)", v.at(j), nv)
				}
				return nil
			}
			// Every union member is a table: x is read as the kind's type.
			var x ptefb.KernelCall
			x.Init(tab.Bytes, tab.Pos)
			switch kind {
			case ptefb.InstructionArgumentsKernelCall:
				if op := x.OpIndex(); op < 0 || int(op) >= nops {
					return outOfRange("op_index", ".op_index", op, nops)
				}
				if err := args(); err != nil {
					return err
				}
			case ptefb.InstructionArgumentsDelegateCall:
				if d := (*ptefb.DelegateCall)(&x).DelegateIndex(); d < 0 || int(d) >= ndel {
					return outOfRange("delegate_index", ".delegate_index", d, ndel)
				}
				if err := args(); err != nil {
					return err
				}
			case ptefb.InstructionArgumentsMoveCall:
				mc := (*ptefb.MoveCall)(&x)
				if v := mc.MoveFrom(); v < 0 || int(v) >= nv {
					return outOfRange("value index", ".move_from", v, nv)
				}
				if v := mc.MoveTo(); v < 0 || int(v) >= nv {
					return outOfRange("value index", ".move_to", v, nv)
				}
			case ptefb.InstructionArgumentsJumpFalseCall:
				jc := (*ptefb.JumpFalseCall)(&x)
				if v := jc.CondValueIndex(); v < 0 || int(v) >= nv {
					return outOfRange("value index", ".cond_value_index", v, nv)
				}
				// Jumping to ni ends the chain.
				if d := jc.DestinationInstruction(); d < 0 || int(d) >= ni+1 {
					return outOfRange("destination_instruction", ".destination_instruction", d, ni+1)
				}
			case ptefb.InstructionArgumentsFreeCall:
				if v := (*ptefb.FreeCall)(&x).ValueIndex(); v < 0 || int(v) >= nv {
					return outOfRange("value index", ".value_index", v, nv)
				}
			}
		}
	}
	return nil
}

// instructions returns the position of the first instruction offset of
// chain c and the number of instructions: the vector Open verified.
func (m *Method) instructions(c int) (start int64, n int) {
	var plan ptefb.ExecutionPlan
	plan.Init(m.p.fb, m.pos)
	var ch ptefb.Chain
	plan.Chains(&ch, c)
	start, n, _ = vecPos(ch.Table(), vtChainInstructions)
	return start, n
}

// instrArgs returns the kind and the arguments table of the verified
// Instruction table at pos; ok is false for tag NONE, whose value offset
// was not verified and must not be followed.
func instrArgs(fb []byte, pos int64) (kind ptefb.InstructionArguments, tab flatbuffers.Table, ok bool) {
	var in ptefb.Instruction
	in.Init(fb, flatbuffers.UOffsetT(pos))
	kind = in.InstrArgsType()
	return kind, tab, kind != ptefb.InstructionArgumentsNONE && in.InstrArgs(&tab)
}

// prefixField makes the field path of a walk's error, which starts at the
// table the walk was given (named name), start at the program instead.
func prefixField(err error, path, name string) error {
	var fe *format.FormatError
	if errors.As(err, &fe) {
		fe.Field = path + strings.TrimPrefix(fe.Field, name)
	}
	return err
}

// overBudget is the error of a field, at offset off, that the program's
// work budget does not cover.
func overBudget(p *Program, field string, off int64) error {
	return format.Errorf(formatName, field, off, "the program's references are shared so much that reading it would take work out of proportion to its %d bytes", len(p.fb))
}
