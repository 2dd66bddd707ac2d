package rten_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/segment"
)

func i32(v ...int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func value(name string, dims ...uint32) writer.RTenNode {
	v := &writer.RTenValue{DType: format.Float32}
	for _, d := range dims {
		v.Shape = append(v.Shape, writer.RTenDim{Value: d})
	}
	return writer.RTenNode{Name: name, Value: v}
}

func constant(name string, dt format.DType, inline bool, data []byte, shape ...uint32) writer.RTenNode {
	return writer.RTenNode{Name: name, Constant: &writer.RTenConstant{DType: dt, Shape: shape, Inline: inline, Data: data}}
}

func op(name string, t rten.OperatorType, in []int32, out []int32) writer.RTenNode {
	return writer.RTenNode{Name: name, Operator: &writer.RTenOperator{Type: uint8(t), Inputs: in, Outputs: out}}
}

// simpleModel is a small valid V2 model: input x, a weight w (external), a
// bias b (inline), MatMul and Add, output y.
func simpleModel() *writer.RTen {
	return &writer.RTen{Graph: writer.RTenGraph{
		Nodes: []writer.RTenNode{
			value("x", 1, 2),
			constant("w", format.Float32, false, hostile.F32(1, 2, 3, 4), 2, 2),
			constant("b", format.Float32, true, hostile.F32(0.5, -0.5), 2),
			value("xw", 1, 2),
			op("matmul", opType("MatMul"), []int32{0, 1}, []int32{3}),
			value("y", 1, 2),
			op("add", opType("Add"), []int32{3, 2}, []int32{5}),
		},
		Inputs:  []uint32{0},
		Outputs: []uint32{5},
	}}
}

func opType(name string) rten.OperatorType {
	t, ok := rten.ParseOperatorType(name)
	if !ok {
		panic("unknown operator " + name)
	}
	return t
}

// build returns the file bytes of w, failing the test on error.
func build(tb testing.TB, w *writer.RTen) ([]byte, writer.RTenLayoutInfo) {
	tb.Helper()
	b, info, err := w.Bytes()
	if err != nil {
		tb.Fatalf("writer: %v", err)
	}
	return b, info
}

// bytesOf returns the file bytes of w.
func bytesOf(tb testing.TB, w *writer.RTen) []byte {
	tb.Helper()
	b, _ := build(tb, w)
	return b
}

// writeFile writes w to a temporary file and returns its path.
func writeFile(tb testing.TB, w *writer.RTen, name string) (string, writer.RTenLayoutInfo) {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	info, err := w.WriteFile(p)
	if err != nil {
		tb.Fatalf("writer: %v", err)
	}
	return p, info
}

// wantFormatError checks that err is a *format.FormatError for "rten"
// wrapping sentinel, whose text contains every fragment.
func wantFormatError(tb testing.TB, err error, sentinel error, fragments ...string) *format.FormatError {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want one wrapping %v", sentinel)
	}
	var fe *format.FormatError
	if !errors.As(err, &fe) {
		tb.Fatalf("error %v (%T) is not a *format.FormatError", err, err)
	}
	if fe.Format != "rten" {
		tb.Errorf("FormatError.Format = %q, want rten", fe.Format)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		tb.Errorf("error %v does not wrap %v", err, sentinel)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			tb.Errorf("error %q does not mention %q", err, f)
		}
	}
	return fe
}

// typedView reads c's data through the typed view its dtype calls for and
// returns the element count and whether the view copied.
func typedView(c *rten.Constant) (n int, copied bool, err error) {
	switch c.DType {
	case format.Float32:
		v, cp, err := segment.As[float32](c.Data)
		return len(v), cp, err
	case format.Int32:
		v, cp, err := segment.As[int32](c.Data)
		return len(v), cp, err
	case format.Int8:
		v, cp, err := segment.As[int8](c.Data)
		return len(v), cp, err
	case format.Uint8:
		v, cp, err := segment.As[uint8](c.Data)
		return len(v), cp, err
	}
	return 0, false, nil
}

// checkModel asserts the invariants every successfully opened Model must
// hold: those of rtencheck.Model (every accessor and view, through every
// read path), then the ones it does not check: the file is size bytes,
// every constant node's Constant is an element of Constants(), Tensor(name)
// finds every constant, constant names follow the naming rule, every
// constant's shape fits the file and its view starts at its offset, the
// typed view through segment.As has numel elements, and every operator type
// (known or not) has a name. It returns a description of the first
// violation, or "" (usable from the fuzz target and tests).
func checkModel(m *rten.Model, size int64) string {
	if err := rtencheck.Model(m); err != nil {
		return err.Error()
	}
	if got := m.File().Len(); got != size {
		return fmt.Sprintf("file of %d bytes, want %d", got, size)
	}
	consts := m.Constants()
	isConst := map[*rten.Constant]bool{}
	for i := range consts {
		isConst[&consts[i]] = true
	}
	var bad string
	m.Graph().Walk(func(g *rten.Graph) bool {
		for i := range g.Nodes {
			nd := &g.Nodes[i]
			switch nd.Kind {
			case rten.KindOperator:
				if nd.Op.Type.String() == "" {
					bad = fmt.Sprintf("operator %s/%d: empty operator name", g.Path, i)
					return false
				}
			case rten.KindConstant:
				if !isConst[nd.Constant] {
					bad = fmt.Sprintf("constant node %s/%d not in Constants()", g.Path, i)
					return false
				}
			}
		}
		return true
	})
	if bad != "" {
		return bad
	}
	for i := range consts {
		c := &consts[i]
		if got, ok := m.Tensor(c.Name); !ok || got.Name != c.Name {
			return fmt.Sprintf("Tensor(%q) = %v, %v", c.Name, got, ok)
		}
		if c.Name == "" || !c.NameExplicit && !strings.HasPrefix(c.Name, c.Graph+"/nodes/") {
			return fmt.Sprintf("constant %d name %q explicit %v", i, c.Name, c.NameExplicit)
		}
		if c.Location == format.LocNone {
			continue // rtencheck.Model checks it has no data
		}
		numel, nb, ok := format.Numel(c.Shape, c.DType, size)
		if !ok || nb != c.NBytes || c.Offset < 0 || c.Offset > size-c.NBytes {
			return fmt.Sprintf("constant %q: shape %v %v nbytes %d at %d in a %d-byte file", c.Name, c.Shape, c.DType, c.NBytes, c.Offset, size)
		}
		if c.Data.Offset() != c.Offset {
			return fmt.Sprintf("constant %q view %v, want [%d+%d)", c.Name, c.Data, c.Offset, c.NBytes)
		}
		if n, _, err := typedView(c); err != nil || int64(n) != numel {
			return fmt.Sprintf("constant %q typed view: %d elements, %v; want %d", c.Name, n, err, numel)
		}
	}
	for i := 0; i < 300; i++ {
		t := rten.OperatorType(i % 256)
		if t.String() == "" {
			return "empty operator type name"
		}
	}
	return ""
}

// readFile reads a file, failing the test on error.
func readFile(tb testing.TB, p string) []byte {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// mustOrder returns m's use order (group "").
func mustOrder(m *rten.Model) []int {
	o, err := m.UseOrder("")
	if err != nil {
		panic(err)
	}
	return o
}
