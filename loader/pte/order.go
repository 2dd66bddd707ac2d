package pte

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/ptefb"
	"github.com/edgeload/edgeload/loader/format"
)

// UseOrder returns the indices into Tensors of a method's weights
// (constant, mutable and external tensors) in the order its instructions
// first use them: chains, instructions and each KernelCall's or
// DelegateCall's arguments in order, an item of a TensorList or
// OptionalTensorList argument counting as used. The weights no instruction
// uses follow in value order; each index appears once. With method "" it is
// every method's order in turn; an unknown method wraps format.ErrNotFound.
// Delegate blobs are not listed (see Method.Delegates).
func (p *Program) UseOrder(method string) ([]int, error) {
	if p.closed.Load() {
		return nil, fmt.Errorf("pte: use order: %w", format.ErrClosed)
	}
	ms := p.methodList()
	if method != "" {
		i, ok := p.methodIndex(method)
		if !ok {
			return nil, fmt.Errorf("pte: use order: method %q: %w", method, format.ErrNotFound)
		}
		ms = ms[i : i+1]
	}
	n := 0
	for i := range ms {
		n += ms[i].numTensors()
	}
	u := &user{order: make([]int, 0, n)}
	for i := range ms {
		if err := u.method(&ms[i]); err != nil {
			return nil, err
		}
	}
	return u.order, nil
}

// numTensors returns the number of the method's values that are tensors
// of the tensor list.
func (m *Method) numTensors() int {
	n := 0
	for _, t := range m.p.valueTensor[m.Index] {
		if t >= 0 {
			n++
		}
	}
	return n
}

// user collects a use order. A tensor of the list is the tensor of one
// value of one method, so that marking values marks tensors.
type user struct {
	order []int
	vt    []int32 // the method's tensor of each value, or -1
	mark  []uint8 // by value: listed, expanded
	plan  ptefb.ExecutionPlan
}

// The marks of a value.
const (
	listed   = 1 << iota // its tensor is in the order
	expanded             // its list items were looked at
)

// method appends the tensors of m in use order.
func (u *user) method(m *Method) error {
	p := m.p
	u.vt = p.valueTensor[m.Index]
	if cap(u.mark) < len(u.vt) {
		u.mark = make([]uint8, len(u.vt))
	}
	u.mark = u.mark[:len(u.vt)]
	clear(u.mark)
	u.plan.Init(p.fb, m.pos)
	for c := range m.Chains {
		ins, err := m.Instructions(c)
		if err != nil {
			return err
		}
		for k := range ins {
			if ins[k].Kind != KernelCall && ins[k].Kind != DelegateCall {
				continue
			}
			for _, a := range ins[k].Args {
				u.use(a)
			}
		}
	}
	for v := range u.vt {
		u.tensor(v)
	}
	return nil
}

// use records the use of value v by an instruction: a tensor, or the
// items of a TensorList or OptionalTensorList. Each value is looked at
// once, so that a list used by many instructions costs its length once.
func (u *user) use(v int32) {
	if v < 0 || int(v) >= len(u.vt) || u.mark[v]&expanded != 0 {
		return
	}
	u.mark[v] |= expanded
	if u.tensor(int(v)) {
		return
	}
	var ev ptefb.EValue
	if !u.plan.Values(&ev, int(v)) {
		return
	}
	// The tag first: with tag NONE the value offset was never verified.
	tag := ev.ValType()
	if tag != ptefb.KernelTypesTensorList && tag != ptefb.KernelTypesOptionalTensorList {
		return
	}
	var tab flatbuffers.Table
	if !ev.Val(&tab) {
		return
	}
	items := i32Field(tab, vtListItems)
	for k := range items.len() {
		// -1 (none) in an optional list; range checked at Open.
		if x := items.at(k); x >= 0 && int(x) < len(u.vt) {
			u.tensor(int(x))
		}
	}
}

// tensor appends the tensor of value v if it has one not yet listed, and
// reports whether v is a tensor of the list.
func (u *user) tensor(v int) bool {
	t := u.vt[v]
	if t < 0 {
		return false
	}
	if u.mark[v]&listed == 0 {
		u.mark[v] |= listed
		u.order = append(u.order, int(t))
	}
	return true
}
