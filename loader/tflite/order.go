package tflite

import (
	"fmt"
	"slices"
	"strconv"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
)

// useOrder holds the use orders, computed on first request.
type useOrder struct {
	sub  [][]int // per subgraph: its constants in first-use order, unused last
	used []int   // per subgraph: how many of sub[i] some operator reads
	all  []int   // group "": see UseOrder
	nAll int     // how many of all are used
}

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
//
// The first call checks the operators (their operator codes, the tensors
// they read and write, the subgraphs they name) and returns the error of
// a bad one, as every later call does.
func (m *Model) UseOrder(group string) ([]int, error) { return m.orderOf(group, false) }

// UsedOrder returns the part of UseOrder(group) that operators read: what
// is left of it is unused (and left out of the JSON report's use_order).
// It implements format.UsedOrderer.
func (m *Model) UsedOrder(group string) ([]int, error) { return m.orderOf(group, true) }

func (m *Model) orderOf(group string, usedOnly bool) ([]int, error) {
	o, err := m.useOrder()
	if err != nil {
		return nil, err
	}
	order, n := o.all, o.nAll
	if group != "" {
		i := slices.Index(m.Groups(), group)
		if i < 0 {
			return nil, format.Wrapf(format.ErrNotFound, formatName, "", -1, "no subgraph %q", group)
		}
		order, n = o.sub[i], o.used[i]
	}
	if usedOnly {
		return order[:n:n], nil
	}
	return order, nil
}

// Groups returns the subgraphs' group names (Subgraph.Group), in file
// order.
func (m *Model) Groups() []string {
	g := m.listed().groups
	return g[:len(g):len(g)]
}

func (m *Model) useOrder() (*useOrder, error) {
	m.orderOnce.Do(func() { m.order, m.orderErr = m.computeOrder() })
	return m.order, m.orderErr
}

// operator is one operator as the use order reads it: the constants it
// reads (indices of listed tensors, in input order) and the subgraphs it
// names.
type operator struct {
	consts  []int
	callees [3]int // the subgraphs named, -1 past the last
}

// operatorDepth is an Operator table's nesting depth: Model, SubGraph,
// Operator.
const operatorDepth = 3

// operators verifies, reads and checks the operators of every subgraph:
// their tables, operator code, tensor and subgraph indices.
func (m *Model) operators() ([][]operator, error) {
	defer m.unpin()
	if !m.pin() {
		return nil, fmt.Errorf("tflite: the operators: %w", format.ErrClosed)
	}
	r := &m.root
	nCodes := int64(r.OperatorCodesLength())
	out := make([][]operator, m.nsub)
	next := 0
	var sg tflitefb.SubGraph
	var op tflitefb.Operator
	var opts flatbuffers.Table
	for i := range out {
		r.Subgraphs(&sg, i)
		nt := int64(sg.TensorsLength())
		// tensor index -> listed tensor, -1 for none
		consts := make([]int32, nt)
		for k := range consts {
			consts[k] = -1
		}
		for next < len(m.tensors) && int(m.tensors[next].Subgraph) == i {
			consts[m.tensors[next].Index] = int32(next)
			next++
		}
		out[i] = make([]operator, sg.OperatorsLength())
		var start int64
		if len(out[i]) > 0 {
			sgt := sg.Table()
			start = int64(sgt.Vector(flatbuffers.UOffsetT(sgt.Offset(vtSubGraphOperators))))
		}
		for k := range out[i] {
			field := func() string {
				return "Model.subgraphs[" + strconv.Itoa(i) + "].operators[" + strconv.Itoa(k) + "]"
			}
			// Verified here, the walk having left them (verify).
			m.walkMu.Lock()
			p, err := m.walk.Elem(start, k, field(), tflitefb.VerifyOperator, operatorDepth)
			m.walkMu.Unlock()
			if err != nil {
				return nil, err
			}
			op.Init(m.fb, flatbuffers.UOffsetT(p))
			if c := int64(op.OpcodeIndex()); outOf(c, nCodes) {
				return nil, rangeErr(field()+".opcode_index", pos(&op), c, nCodes, "operator code")
			}
			o := &out[i][k]
			tab := op.Table()
			for e := range op.InputsLength() {
				x := int64(op.Inputs(e))
				if x == -1 {
					continue // an optional input left out
				}
				if outOf(x, nt) {
					return nil, rangeErr(field()+".inputs", elemPos(&tab, vtOperatorInputs, e), x, nt, "tensor")
				}
				if c := consts[x]; c >= 0 {
					o.consts = append(o.consts, int(c))
				}
			}
			for e := range op.OutputsLength() {
				if x := int64(op.Outputs(e)); x != -1 && outOf(x, nt) {
					return nil, rangeErr(field()+".outputs", elemPos(&tab, vtOperatorOutputs, e), x, nt, "tensor")
				}
			}
			o.callees = [3]int{-1, -1, -1}
			nc := 0
			var bad error
			callees(&op, &opts, func(s int32) {
				if bad != nil {
					return
				}
				if bad = inRange(field()+".builtin_options", pos(&op), int64(s), int64(m.nsub), "subgraph"); bad == nil && nc < len(o.callees) {
					o.callees[nc] = int(s)
					nc++
				}
			})
			if bad != nil {
				return nil, bad
			}
		}
	}
	return out, nil
}

// callees calls f with each subgraph the operator op names in its options
// (WHILE cond and body, IF then and else, CALL_ONCE init, CALL, a
// StableHLO composite's decomposition), in that order. t is scratch.
func callees(op *tflitefb.Operator, t *flatbuffers.Table, f func(int32)) {
	if op.BuiltinOptions(t) {
		switch op.BuiltinOptionsType() {
		case tflitefb.BuiltinOptionsWhileOptions:
			var w tflitefb.WhileOptions
			w.Init(t.Bytes, t.Pos)
			f(w.CondSubgraphIndex())
			f(w.BodySubgraphIndex())
		case tflitefb.BuiltinOptionsIfOptions:
			var o tflitefb.IfOptions
			o.Init(t.Bytes, t.Pos)
			f(o.ThenSubgraphIndex())
			f(o.ElseSubgraphIndex())
		case tflitefb.BuiltinOptionsCallOnceOptions:
			var o tflitefb.CallOnceOptions
			o.Init(t.Bytes, t.Pos)
			f(o.InitSubgraphIndex())
		case tflitefb.BuiltinOptionsCallOptions:
			var o tflitefb.CallOptions
			o.Init(t.Bytes, t.Pos)
			f(int32(min(o.Subgraph(), 1<<31-1)))
		}
	}
	if op.BuiltinOptions2(t) && op.BuiltinOptions2Type() == tflitefb.BuiltinOptions2StableHLOCompositeOptions {
		var o tflitefb.StableHLOCompositeOptions
		o.Init(t.Bytes, t.Pos)
		f(o.DecompositionSubgraphIndex())
	}
}

func (m *Model) computeOrder() (*useOrder, error) {
	ops, err := m.operators()
	if err != nil {
		return nil, err
	}
	o := &useOrder{sub: make([][]int, m.nsub), used: make([]int, m.nsub)}
	seen := make([]bool, len(m.tensors))
	next := 0
	for s := range ops {
		var order []int
		for _, op := range ops[s] {
			for _, c := range op.consts {
				if !seen[c] {
					seen[c] = true
					order = append(order, c)
				}
			}
		}
		o.used[s] = len(order)
		// Then the subgraph's constants no operator reads, in tensor order.
		for next < len(m.tensors) && int(m.tensors[next].Subgraph) == s {
			if !seen[next] {
				order = append(order, next)
			}
			next++
		}
		o.sub[s] = order
	}

	// Group "": a walk from the main subgraph into those it names.
	clear(seen)
	visited := make([]bool, m.nsub)
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
			if f.k == len(ops[f.s]) {
				stack = stack[:len(stack)-1]
				continue
			}
			op := &ops[f.s][f.k]
			f.k++
			for _, c := range op.consts {
				if !seen[c] {
					seen[c] = true
					o.all = append(o.all, c)
				}
			}
			// Push the callees in reverse so that the first named runs first.
			var callees [3]int
			nc := 0
			for _, sub := range op.callees {
				if sub >= 0 && !visited[sub] {
					visited[sub] = true
					callees[nc] = sub
					nc++
				}
			}
			for j := nc - 1; j >= 0; j-- {
				stack = append(stack, frame{callees[j], 0})
			}
		}
	}
	for s := range m.nsub {
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
	return o, nil
}
