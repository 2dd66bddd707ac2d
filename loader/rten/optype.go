package rten

import (
	"strconv"

	"github.com/edgeload/edgeload/internal/schema/rtenfb"
)

// OperatorType is the kind of computation an operator node performs (an
// RTen OperatorType, a ubyte on the wire). The enumeration is append-only
// upstream: this loader names the first NumOperatorTypes values, and a newer
// file may carry values past them, which load and print as "Unknown(N)".
type OperatorType uint8

// NumOperatorTypes is the number of operator types this loader knows by name
// (values 0 to NumOperatorTypes-1).
const NumOperatorTypes = 145

// Operator types the loader itself cares about: their attributes hold
// subgraphs.
const (
	OpIf   OperatorType = 104 // If: then_branch and else_branch subgraphs
	OpLoop OperatorType = 116 // Loop: a body subgraph
)

// opNames is indexed by OperatorType. Built once from the generated names so
// that String never allocates for a known value.
var opNames = func() [NumOperatorTypes]string {
	var n [NumOperatorTypes]string
	for i := range n {
		n[i] = rtenfb.EnumNamesOperatorType[rtenfb.OperatorType(i)]
	}
	return n
}()

// Known reports whether t is one of the NumOperatorTypes named values.
func (t OperatorType) Known() bool { return int(t) < NumOperatorTypes }

// String returns the operator's upstream name ("Conv", "MatMul", ...), or
// "Unknown(N)" for a value this loader does not know.
func (t OperatorType) String() string {
	if t.Known() {
		return opNames[t]
	}
	return "Unknown(" + strconv.Itoa(int(t)) + ")"
}

// ParseOperatorType returns the OperatorType with the given upstream name.
func ParseOperatorType(name string) (OperatorType, bool) {
	for i, n := range opNames {
		if n == name {
			return OperatorType(i), true
		}
	}
	return 0, false
}
