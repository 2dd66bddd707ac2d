package pte_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestUnionNoneValueNotFollowed: a union whose tag is NONE has its value
// offset checked (as the C++ Verifier does) but the value is not verified,
// so it must never be read. The EValue here has no tag and a value that
// is no table (its vtable offset points at an odd position); Open must
// report a None value, not read it. The same holds for an Instruction. A
// value slot past the end of the buffer is refused.
func TestUnionNoneValueNotFollowed(t *testing.T) {
	for _, which := range []string{"EValue", "Instruction"} {
		b := flatbuffers.NewBuilder(256)
		ptefb.NullStart(b)
		null := ptefb.NullEnd(b)
		var values, chains flatbuffers.UOffsetT
		if which == "EValue" {
			ptefb.EValueStart(b)
			ptefb.EValueAddVal(b, null) // a value without a tag
			ev := ptefb.EValueEnd(b)
			b.StartVector(4, 1, 4)
			b.PrependUOffsetT(ev)
			values = b.EndVector(1)
		} else {
			ptefb.InstructionStart(b)
			ptefb.InstructionAddInstrArgs(b, null)
			in := ptefb.InstructionEnd(b)
			b.StartVector(4, 1, 4)
			b.PrependUOffsetT(in)
			ins := b.EndVector(1)
			ptefb.ChainStart(b)
			ptefb.ChainAddInstructions(b, ins)
			ch := ptefb.ChainEnd(b)
			b.StartVector(4, 1, 4)
			b.PrependUOffsetT(ch)
			chains = b.EndVector(1)
		}
		name := b.CreateString("m")
		ptefb.ExecutionPlanStart(b)
		ptefb.ExecutionPlanAddName(b, name)
		if values != 0 {
			ptefb.ExecutionPlanAddValues(b, values)
		}
		if chains != 0 {
			ptefb.ExecutionPlanAddChains(b, chains)
		}
		plan := ptefb.ExecutionPlanEnd(b)
		b.StartVector(4, 1, 4)
		b.PrependUOffsetT(plan)
		plans := b.EndVector(1)
		b.StartVector(4, 0, 4)
		segs := b.EndVector(0)
		ptefb.ProgramStart(b)
		ptefb.ProgramAddExecutionPlan(b, plans)
		ptefb.ProgramAddSegments(b, segs) // so the root's vtable differs from the union's
		b.FinishWithFileIdentifier(ptefb.ProgramEnd(b), []byte("ET12"))
		raw := bytes.Clone(b.FinishedBytes())
		if _, err := pte.NewFile(mmapfile.NewBytes(raw)); err != nil {
			t.Fatalf("%s: the well-formed program does not open: %v", which, err)
		}
		// The union's vtable: 8 bytes, table of 8 bytes, no tag slot, the
		// value at 4. Point the value slot far past the buffer's end.
		vt := bytes.Index(raw, []byte{8, 0, 8, 0, 0, 0, 4, 0})
		if vt < 0 {
			t.Fatalf("%s: vtable not found", which)
		}
		wild := bytes.Clone(raw)
		binary.LittleEndian.PutUint16(wild[vt+6:], 0xfff0)
		if p, err := pte.NewFile(mmapfile.NewBytes(wild)); err == nil && p.Check() == nil {
			t.Errorf("%s: a value slot past the end of the buffer was accepted", which)
		}
		// The value (the Null table, found through the table that uses the
		// union's vtable) gets a vtable offset of 1.
		for p := 0; p+4 <= len(raw); p += 4 {
			if int(int32(binary.LittleEndian.Uint32(raw[p:]))) == p-vt {
				v := p + int(binary.LittleEndian.Uint16(raw[vt+6:]))
				null := v + int(binary.LittleEndian.Uint32(raw[v:]))
				binary.LittleEndian.PutUint32(raw[null:], 1)
				break
			}
		}
		p, err := pte.NewFile(mmapfile.NewBytes(raw))
		if err != nil {
			t.Fatalf("%s: %v", which, err)
		}
		m := p.Methods()[0]
		vals, err := m.Values()
		if err != nil {
			t.Fatalf("%s: Values: %v", which, err)
		}
		if which == "EValue" && (len(vals) != 1 || vals[0].Kind != pte.KindNone) {
			t.Errorf("values %+v, want one None value", vals)
		}
		if which == "Instruction" && (len(m.Chains) != 1 || m.Chains[0].Instructions != 1) {
			t.Errorf("chains %+v, want one chain of one instruction", m.Chains)
		}
	}
}
