package tflite

import (
	"github.com/edgeload/edgeload/loader/format"
)

// useOrder holds the use orders, computed on first request.
type useOrder struct {
	sub  [][]int // per subgraph: its constants in first-use order, unused last
	used []int   // per subgraph: how many of sub[i] some operator reads
	all  []int   // group "": see UseOrder
	nAll int     // how many of all are used
}

// Groups returns the subgraphs' group names (Subgraph.Group), in file
// order.
func (m *Model) Groups() []string { return m.groups[:len(m.groups):len(m.groups)] }

// UseOrder returns indices of listed tensors in the order a runtime first
// reads them. For a subgraph's group: its constants in the order its
// operators (stored in execution order) first name them as inputs, then
// those no operator reads (blockwise scales reached only through
// quantization details, orphans) in tensor order. For group "": the main
// subgraph's order, entering the subgraphs an operator names (WHILE cond
// and body, IF then and else, CALL_ONCE init, CALL, a StableHLO composite's
// decomposition) where it names them, then the subgraphs not reached, in
// index order, then every unused constant. A group the model lacks wraps
// format.ErrNotFound.
func (m *Model) UseOrder(group string) ([]int, error) {
	o := m.useOrder()
	if group == "" {
		return o.all, nil
	}
	i, err := m.group(group)
	if err != nil {
		return nil, err
	}
	return o.sub[i], nil
}

// UsedOrder returns the part of UseOrder(group) that operators read: what
// is left of it is unused (and left out of the JSON report's use_order).
// It implements format.UsedOrderer.
func (m *Model) UsedOrder(group string) ([]int, error) {
	o := m.useOrder()
	if group == "" {
		return o.all[:o.nAll:o.nAll], nil
	}
	i, err := m.group(group)
	if err != nil {
		return nil, err
	}
	return o.sub[i][:o.used[i]:o.used[i]], nil
}

func (m *Model) group(name string) (int, error) {
	for i, g := range m.groups {
		if g == name {
			return i, nil
		}
	}
	return 0, format.Wrapf(format.ErrNotFound, formatName, "", -1, "no subgraph %q", name)
}

func (m *Model) useOrder() *useOrder {
	m.orderOnce.Do(func() { m.order = m.computeOrder() })
	return m.order
}

func (m *Model) computeOrder() *useOrder {
	r := m.fb
	o := &useOrder{sub: make([][]int, len(m.subgraphs)), used: make([]int, len(m.subgraphs))}
	seen := make([]bool, len(m.tensors))
	// inputs calls f with each constant the operators of subgraph s read,
	// in order.
	inputs := func(s int, f func(c int)) {
		sg := &m.subgraphs[s]
		for k := range sg.NumOperators {
			op := r.elem(sg.ops, int64(k))
			start, n := r.vector(op, 1)
			for e := range n {
				if x := int32(r.u32(start + 4*e)); x >= 0 {
					if c := sg.consts[x]; c >= 0 {
						f(int(c))
					}
				}
			}
		}
	}
	for s := range m.subgraphs {
		var order []int
		inputs(s, func(c int) {
			if !seen[c] {
				seen[c] = true
				order = append(order, c)
			}
		})
		o.used[s] = len(order)
		for _, c := range m.subgraphs[s].consts {
			if c >= 0 && !seen[c] {
				order = append(order, int(c))
			}
		}
		o.sub[s] = order
	}

	// Group "": a walk from the main subgraph into those it names.
	clear(seen)
	visited := make([]bool, len(m.subgraphs))
	o.all = make([]int, 0, len(m.tensors))
	// The walk keeps its own stack of (subgraph, next operator) so that a
	// long chain of subgraphs cannot deepen the goroutine stack.
	type frame struct{ s, k int }
	var stack []frame
	walk := func(s0 int) {
		visited[s0] = true
		stack = append(stack[:0], frame{s0, 0})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			sg := &m.subgraphs[f.s]
			if f.k == sg.NumOperators {
				stack = stack[:len(stack)-1]
				continue
			}
			op := r.elem(sg.ops, int64(f.k))
			f.k++
			start, n := r.vector(op, 1)
			for e := range n {
				if x := int32(r.u32(start + 4*e)); x >= 0 {
					if c := sg.consts[x]; c >= 0 && !seen[c] {
						seen[c] = true
						o.all = append(o.all, int(c))
					}
				}
			}
			// Push the callees in reverse so that the first named runs first.
			var callees [3]int
			nc := 0
			calls(r, op, func(sub int32) {
				if nc < len(callees) && !visited[sub] {
					visited[sub] = true
					callees[nc] = int(sub)
					nc++
				}
			})
			for j := nc - 1; j >= 0; j-- {
				stack = append(stack, frame{callees[j], 0})
			}
		}
	}
	for s := range m.subgraphs {
		if !visited[s] {
			walk(s)
		}
	}
	o.nAll = len(o.all)
	for c := range m.tensors {
		if !seen[c] {
			o.all = append(o.all, c)
		}
	}
	return o
}
