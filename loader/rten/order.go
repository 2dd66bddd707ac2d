package rten

// order returns the indices into Tensors (and Constants) of the model's
// constants in the order its operators first use them. The operators of a
// graph run in a topological order of the graph (Kahn's algorithm: an
// operator is ready once every operator producing one of its inputs has
// run; among the ready ones the lowest node index runs first), and each
// uses its inputs in order, then the constants of its subgraphs (an If's
// then_branch and else_branch, a Loop's body), each in that subgraph's own
// use order. A subgraph's capture uses the constant of the same name in
// the nearest enclosing graph that has one. A subgraph shared by several
// operators is ordered once, at the first. Operators left on a cycle run
// after the others, in node order, and constants no operator uses follow
// at the end in the order of Constants. Each index appears once.
func (m *Model) order() []int {
	o := &orderer{
		order: make([]int, 0, len(m.consts)),
		seen:  make([]bool, len(m.consts)),
		index: make(map[*Constant]int, len(m.consts)),
		done:  make(map[*Graph]bool),
		names: make(map[*Graph]map[string]int),
	}
	for i := range m.consts {
		o.index[&m.consts[i]] = i
	}
	if m.graph != nil {
		o.graph(m.graph, nil)
	}
	for i := range o.seen {
		if !o.seen[i] {
			o.order = append(o.order, i)
		}
	}
	return o.order
}

// orderer collects a use order.
type orderer struct {
	order []int
	seen  []bool                    // by constant index
	index map[*Constant]int         // a Constant's index in Constants
	done  map[*Graph]bool           // graphs already ordered
	names map[*Graph]map[string]int // node names of enclosing graphs, built when a capture needs them
}

// graph appends the constants of g in use order; scope holds the enclosing
// graphs, innermost last.
func (o *orderer) graph(g *Graph, scope []*Graph) {
	if o.done[g] {
		return
	}
	o.done[g] = true
	n := len(g.Nodes)
	captured := make([]bool, n)
	for _, c := range g.Captures {
		if int(c) < n {
			captured[c] = true
		}
	}
	inner := append(scope[:len(scope):len(scope)], g)
	for _, i := range topoOrder(g) {
		op := g.Nodes[i].Op
		for _, x := range op.Inputs {
			if x < 0 || int(x) >= n {
				continue
			}
			switch {
			case g.Nodes[x].Constant != nil:
				o.use(g.Nodes[x].Constant)
			case captured[x]:
				o.use(o.capture(g.Nodes[x].Name, scope))
			}
		}
		for _, s := range op.Subgraphs {
			if s.Graph != nil {
				o.graph(s.Graph, inner)
			}
		}
	}
}

// use records the use of constant c (nil: none).
func (o *orderer) use(c *Constant) {
	if c == nil {
		return
	}
	if i, ok := o.index[c]; ok && !o.seen[i] {
		o.seen[i] = true
		o.order = append(o.order, i)
	}
}

// capture returns the constant a capture named name refers to: the node of
// that name in the nearest enclosing graph that has one, when it is a
// constant; nil otherwise. An unnamed capture refers to nothing.
func (o *orderer) capture(name string, scope []*Graph) *Constant {
	if name == "" {
		return nil
	}
	for k := len(scope) - 1; k >= 0; k-- {
		g := scope[k]
		idx, ok := o.names[g]
		if !ok {
			idx = make(map[string]int, len(g.Nodes))
			for i := len(g.Nodes) - 1; i >= 0; i-- { // the first node of a name wins
				if nm := g.Nodes[i].Name; nm != "" {
					idx[nm] = i
				}
			}
			o.names[g] = idx
		}
		if i, ok := idx[name]; ok {
			return g.Nodes[i].Constant // nil for a value or an operator
		}
	}
	return nil
}

// topoOrder returns the node indices of g's operators in a topological
// order: Kahn's algorithm over the edges from the operator producing a
// value to each operator taking it as input (the first producer in node
// order when several claim a value), ties broken by the lowest node index.
// Operators left on a cycle follow in node order.
func topoOrder(g *Graph) []int {
	n := len(g.Nodes)
	producer := make([]int32, n)
	for i := range producer {
		producer[i] = -1
	}
	ops := 0
	for i := range g.Nodes {
		op := g.Nodes[i].Op
		if op == nil {
			continue
		}
		ops++
		for _, x := range op.Outputs {
			if x >= 0 && int(x) < n && producer[x] < 0 {
				producer[x] = int32(i)
			}
		}
	}
	// The edges producer -> consumer, grouped by producer (start[p] to
	// start[p+1]), and each consumer's count of edges still to run.
	start := make([]int32, n+1)
	indeg := make([]int32, n)
	edge := func(i int, fn func(p int32)) {
		for _, x := range g.Nodes[i].Op.Inputs {
			if x >= 0 && int(x) < n {
				if p := producer[x]; p >= 0 && int(p) != i {
					fn(p)
				}
			}
		}
	}
	for i := range g.Nodes {
		if g.Nodes[i].Op != nil {
			edge(i, func(p int32) { start[p+1]++; indeg[i]++ })
		}
	}
	for p := 0; p < n; p++ {
		start[p+1] += start[p]
	}
	succ := make([]int32, start[n])
	fill := make([]int32, n)
	copy(fill, start[:n])
	for i := range g.Nodes {
		if g.Nodes[i].Op != nil {
			edge(i, func(p int32) { succ[fill[p]] = int32(i); fill[p]++ })
		}
	}
	order := make([]int, 0, ops)
	var ready minHeap
	for i := range g.Nodes {
		if g.Nodes[i].Op != nil && indeg[i] == 0 {
			ready = append(ready, int32(i)) // ascending: already a heap
		}
	}
	ran := make([]bool, n)
	for len(ready) > 0 {
		i := ready.pop()
		ran[i] = true
		order = append(order, int(i))
		for _, s := range succ[start[i]:start[i+1]] {
			if indeg[s]--; indeg[s] == 0 {
				ready.push(s)
			}
		}
	}
	for i := range g.Nodes {
		if g.Nodes[i].Op != nil && !ran[i] {
			order = append(order, i)
		}
	}
	return order
}

// minHeap is a binary heap of node indices, lowest on top.
type minHeap []int32

func (h *minHeap) push(x int32) {
	s := append(*h, x)
	for k := len(s) - 1; k > 0; {
		up := (k - 1) / 2
		if s[up] <= s[k] {
			break
		}
		s[up], s[k] = s[k], s[up]
		k = up
	}
	*h = s
}

func (h *minHeap) pop() int32 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for k := 0; ; {
		c := 2*k + 1
		if c >= len(s) {
			break
		}
		if c+1 < len(s) && s[c+1] < s[c] {
			c++
		}
		if s[k] <= s[c] {
			break
		}
		s[k], s[c] = s[c], s[k]
		k = c
	}
	*h = s
	return top
}
