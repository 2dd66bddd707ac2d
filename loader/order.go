package loader

import "fmt"

// UseOrder returns indices into Tensors in the order the model first uses
// the tensors, each index once: the order in which to fault in (or
// stream) the weights.
//
// For a program (see pte.Program.UseOrder) it is a method's weights in the
// order its instructions first use them, chain by chain and instruction by
// instruction (a KernelCall's or DelegateCall's arguments, directly or as
// items of a TensorList or OptionalTensorList), followed by the weights no
// instruction uses, in value order. Method "" gives every method's order
// in turn, in file order (so a method whose name is empty is reached only
// through it); a method the program does not have wraps ErrNotFound.
//
// For an RTen model (see rten.Model.UseOrder) it is the constants in the
// order the graph's operators first use them, the operators taken in a
// topological order with ties broken by node index, a subgraph's constants
// at the operator that holds it, and unused constants last. For a .ptd it
// is the tensors in key (file) order. Both have a single order, method "";
// any other name wraps ErrNotFound.
//
// The order is computed on each call from the verified metadata; it
// allocates its result and scratch space only.
func (m *Model) UseOrder(method string) ([]int, error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("loader: use order: %w", ErrClosed)
	}
	if m.prog != nil {
		return m.prog.UseOrder(method)
	}
	if method != "" {
		return nil, fmt.Errorf("loader: use order: method %q: a %s file has no methods: %w", method, m.format, ErrNotFound)
	}
	if m.rt != nil {
		return m.rt.UseOrder(), nil
	}
	order := make([]int, len(m.tensors))
	for i := range order {
		order[i] = i
	}
	return order, nil
}
