package rten

import (
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
)

// Graph is a computation graph: the model's main graph or the subgraph of an
// If or Loop operator. Nodes are in the file's (topological) order; Inputs,
// Outputs and Captures are indices into Nodes, checked at Open.
type Graph struct {
	// Path names the graph: "graph" for the main graph, and for a subgraph
	// the path of its operator node followed by the attribute, e.g.
	// "graph/nodes/7/then_branch".
	Path     string
	Nodes    []Node
	Inputs   []uint32
	Outputs  []uint32
	Captures []uint32 // nodes whose values come from the enclosing graph
}

// NodeKind says what a graph node is.
type NodeKind uint8

// The node kinds, with their wire values (the NodeKind union tags).
const (
	KindOperator NodeKind = 1 // a computation step (Node.Op)
	KindConstant NodeKind = 2 // a weight (Node.Constant)
	KindValue    NodeKind = 3 // a runtime value: input, output, capture (Node.Value)
)

var kindNames = [...]string{KindOperator: "operator", KindConstant: "constant", KindValue: "value"}

// String returns "operator", "constant" or "value".
func (k NodeKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "NodeKind(" + strconv.Itoa(int(k)) + ")"
}

// Node is one node of a graph. Exactly one of Op, Constant and Value is set,
// as Kind says.
type Node struct {
	Name     string // may be empty
	Kind     NodeKind
	Op       *Operator
	Constant *Constant // points into the Model's Constants()
	Value    *Value
}

// Operator is an operator node's content.
type Operator struct {
	Type OperatorType
	// AttrsType is the OperatorAttrs union tag of the operator's attributes
	// (0 for none). Attribute contents are not decoded, except the
	// subgraphs of If and Loop.
	AttrsType uint8
	// Inputs and Outputs are indices into the graph's Nodes; a negative
	// value marks an absent optional input or an unused output.
	Inputs  []int32
	Outputs []int32
	// Subgraphs holds the graphs of an If (then_branch, else_branch, each
	// when present) or a Loop (body).
	Subgraphs []Subgraph
}

// Subgraph is a graph held by an operator's attributes.
type Subgraph struct {
	Attr  string // "then_branch", "else_branch" or "body"
	Graph *Graph
}

// Value is a value node's content: the expected shape and element type of a
// runtime tensor, both optional in the file.
type Value struct {
	Shape    []Dim // nil when the file records no shape
	HasShape bool
	// DType is the element type when HasDType is set; Invalid for a dtype
	// value this loader does not know (RawDType holds it).
	DType    format.DType
	HasDType bool
	RawDType uint8
}

// Dim is one dimension of a value's shape: a fixed size, or a symbolic
// dimension named by Name (Symbolic set).
type Dim struct {
	Value    uint32
	Name     string
	Symbolic bool
}

// String returns the dimension's name if it is symbolic, its size otherwise.
func (d Dim) String() string {
	if d.Symbolic {
		return d.Name
	}
	return strconv.FormatUint(uint64(d.Value), 10)
}

// Constant is a constant node's tensor: the format-neutral description
// (dtype, shape, location, offset, size and a zero-copy Data view) and where
// in the graphs it was found.
type Constant struct {
	format.Tensor
	// Graph is the Path of the graph holding the node.
	Graph string
	// Node is the node's index in that graph's Nodes.
	Node int
	// DataOffset is the file's data_offset for an external constant
	// (relative to the tensor data section); -1 for an inline one.
	DataOffset int64
}

// External reports whether the constant's bytes live in the tensor data
// section (V2) rather than inline in the FlatBuffer.
func (c *Constant) External() bool { return c.DataOffset >= 0 }

// Walk calls fn for g and, depth first in node order, for every subgraph
// below it (a subgraph shared by several operators once per operator; Open
// bounds the total). It stops early when fn returns false and reports
// whether it ran to the end.
func (g *Graph) Walk(fn func(*Graph) bool) bool {
	if !fn(g) {
		return false
	}
	for i := range g.Nodes {
		if op := g.Nodes[i].Op; op != nil {
			for _, s := range op.Subgraphs {
				if !s.Graph.Walk(fn) {
					return false
				}
			}
		}
	}
	return true
}
