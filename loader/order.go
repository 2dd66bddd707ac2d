package loader

import "fmt"

// UseOrder returns indices into Tensors in the order the model first uses
// the tensors, each index once, those no group uses last: the order in
// which to fault in (or stream) the weights. Each format documents its
// order: a program's method's instructions (pte.Program.UseOrder), an RTen
// graph's operators (rten.Model.UseOrder), the key order of a .ptd.
//
// group names one of Groups (a program's method); "" gives every group's
// order in turn, in file order, and is the only group of a format without
// groups. A group the model lacks wraps ErrNotFound.
//
// The order comes from the verified metadata; a format may compute it
// once and return the same slice each time (GGUF, a sharded checkpoint),
// so do not modify it.
func (m *Model) UseOrder(group string) ([]int, error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("loader: use order: %w", ErrClosed)
	}
	return m.impl.UseOrder(group)
}
