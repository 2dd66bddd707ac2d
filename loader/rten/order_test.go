package rten_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
)

// wantUseOrder derives a model's use order from its graph in the
// simplest way: run the graph by repeatedly scanning the nodes for the
// first operator whose producers have all run, collecting the constants
// each uses (inputs, then captures resolved by name in the enclosing
// graphs, then subgraphs), and append the unused constants.
func wantUseOrder(m *rten.Model) []int {
	consts := m.Constants()
	seen := make([]bool, len(consts))
	var out []int
	add := func(c *rten.Constant) {
		for i := range consts {
			if &consts[i] == c && !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	done := map[*rten.Graph]bool{}
	var run func(g *rten.Graph, scope []*rten.Graph)
	run = func(g *rten.Graph, scope []*rten.Graph) {
		if done[g] {
			return
		}
		done[g] = true
		ran := make([]bool, len(g.Nodes))
		ready := func(i int) bool {
			for _, x := range g.Nodes[i].Op.Inputs {
				for j := range g.Nodes {
					if op := g.Nodes[j].Op; op != nil && j != i && !ran[j] && x >= 0 && slices.Contains(op.Outputs, x) {
						return false
					}
				}
			}
			return true
		}
		for {
			next := -1
			for i := range g.Nodes {
				if g.Nodes[i].Op != nil && !ran[i] && ready(i) {
					next = i
					break
				}
			}
			if next < 0 {
				break
			}
			ran[next] = true
			op := g.Nodes[next].Op
			for _, x := range op.Inputs {
				if x < 0 {
					continue
				}
				n := &g.Nodes[x]
				if n.Constant != nil {
					add(n.Constant)
				}
				if slices.Contains(g.Captures, uint32(x)) {
				outer:
					for k := len(scope) - 1; k >= 0; k-- {
						for j := range scope[k].Nodes {
							if scope[k].Nodes[j].Name == n.Name {
								add(scope[k].Nodes[j].Constant)
								break outer
							}
						}
					}
				}
			}
			for _, s := range op.Subgraphs {
				run(s.Graph, append(slices.Clone(scope), g))
			}
		}
	}
	run(m.Graph(), nil)
	for i := range seen {
		if !seen[i] {
			out = append(out, i)
		}
	}
	return out
}

func TestUseOrderReal(t *testing.T) {
	for _, path := range testmodels.Files(t, "rten") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, err := mapOpen(t, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			got, want := mustOrder(m), wantUseOrder(m)
			if !slices.Equal(got, want) {
				t.Errorf("UseOrder = %v\nwant %v", got, want)
			}
			if len(got) != len(m.Tensors()) || len(got) == 0 {
				t.Errorf("UseOrder lists %d of %d constants", len(got), len(m.Tensors()))
			}
		})
	}
}

// orderModel is a graph whose operators are not in topological order in
// the file, with an If whose then_branch captures a constant of the main
// graph, a constant of its own and an unused constant.
func orderModel() *writer.RTen {
	then := &writer.RTenGraph{
		Nodes: []writer.RTenNode{
			value("shared"), // captured
			constant("then.k", format.Float32, false, hostile.F32(1), 1),
			value("then.out"),
			op("then.add", opType("Add"), []int32{0, 1}, []int32{2}),
		},
		Outputs: []uint32{2}, Captures: []uint32{0},
	}
	els := &writer.RTenGraph{
		Nodes: []writer.RTenNode{
			constant("else.k", format.Float32, true, hostile.F32(2), 1),
			value("else.out"),
			op("else.neg", opType("Neg"), []int32{0}, []int32{1}),
		},
		Outputs: []uint32{1},
	}
	return &writer.RTen{Graph: writer.RTenGraph{
		Nodes: []writer.RTenNode{
			value("x"), // 0
			constant("late", format.Float32, false, hostile.F32(1), 1),  // 1
			constant("early", format.Float32, false, hostile.F32(2), 1), // 2
			value("t"), // 3
			op("B", opType("Add"), []int32{3, 1}, []int32{5}), // 4: after A
			value("y"), // 5
			op("A", opType("Mul"), []int32{0, 2}, []int32{3}),                                                                                   // 6
			constant("unused", format.Float32, true, hostile.F32(3), 1),                                                                         // 7
			{Name: "C", Operator: &writer.RTenOperator{Type: uint8(rten.OpIf), Inputs: []int32{5}, Outputs: []int32{9}, Then: then, Else: els}}, // 8: after B
			value("z"), // 9
			constant("shared", format.Float32, false, hostile.F32(4), 1), // 10: used only through the capture
			op("D", opType("Mul"), []int32{0, 12, -1}, []int32{13}),      // 11: ready at once
			constant("d.w", format.Float32, false, hostile.F32(5), 1),    // 12
			value("d.out"), // 13
		},
		Inputs: []uint32{0}, Outputs: []uint32{9, 13},
	}}
}

func TestUseOrderGraph(t *testing.T) {
	m, err := rten.NewFile(mmapfile.NewBytes(bytesOf(t, orderModel())))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := mustOrder(m)
	var names []string
	for _, i := range got {
		names = append(names, m.Constants()[i].Name)
	}
	// A (6) runs first, then B (4), then C (8, its subgraphs at once) and
	// D (11); ties go to the lowest node index.
	want := []string{"early", "late", "shared", "then.k", "else.k", "d.w", "unused"}
	if !slices.Equal(names, want) {
		t.Errorf("UseOrder = %v, want %v", names, want)
	}
	if w := wantUseOrder(m); !slices.Equal(got, w) {
		t.Errorf("UseOrder = %v, the test's derivation %v", got, w)
	}
}

// A cycle (hostile: each operator takes the other's output) does not stop
// the order: the operators on it follow in node order.
func TestUseOrderCycle(t *testing.T) {
	w := &writer.RTen{Graph: writer.RTenGraph{
		Nodes: []writer.RTenNode{
			value("a"),
			value("b"),
			constant("k1", format.Float32, true, hostile.F32(1), 1),
			constant("k2", format.Float32, true, hostile.F32(1), 1),
			op("P", opType("Add"), []int32{1, 3}, []int32{0}),
			op("Q", opType("Add"), []int32{0, 2}, []int32{1}),
			op("R", opType("Neg"), []int32{2}, []int32{1}), // a second producer of b
		},
		Outputs: []uint32{1},
	}}
	m, err := rten.NewFile(mmapfile.NewBytes(bytesOf(t, w)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var names []string
	for _, i := range mustOrder(m) {
		names = append(names, m.Constants()[i].Name)
	}
	// R is ready at once (k1); P waits for Q (first producer of b), Q for
	// P: both follow in node order, P (k2) first.
	if want := []string{"k1", "k2"}; !slices.Equal(names, want) {
		t.Errorf("UseOrder = %v, want %v", names, want)
	}
}

// isPermutation reports whether order holds each of 0..n-1 once.
func isPermutation(order []int, n int) bool {
	if len(order) != n {
		return false
	}
	seen := make([]bool, n)
	for _, i := range order {
		if i < 0 || i >= n || seen[i] {
			return false
		}
		seen[i] = true
	}
	return true
}
