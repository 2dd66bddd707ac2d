package rten_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/segment"
)

// f32 returns the little-endian bytes of v.
func f32(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

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
			constant("w", format.Float32, false, f32(1, 2, 3, 4), 2, 2),
			constant("b", format.Float32, true, f32(0.5, -0.5), 2),
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
// hold, exercising every accessor and view. It returns a description of
// the first violation, or "" (usable from the fuzz target and tests).
func checkModel(m *rten.Model, size int64) string {
	h := m.Header()
	switch h.Version {
	case 1:
		if h.ModelOffset != 0 || h.ModelLen != size || len(m.Segments()) != 0 {
			return fmt.Sprintf("V1 header %+v, %d segments, file %d", h, len(m.Segments()), size)
		}
	case 2:
		if h.ModelOffset < rten.HeaderSize || h.ModelLen > size-h.ModelOffset ||
			h.TensorDataOffset < h.ModelOffset+h.ModelLen || h.TensorDataOffset > size {
			return fmt.Sprintf("V2 header %+v outside a %d-byte file", h, size)
		}
		segs := m.Segments()
		if len(segs) != 1 || segs[0].Offset() != h.TensorDataOffset || segs[0].Offset()+segs[0].Len() != size {
			return fmt.Sprintf("segments %v for header %+v, file %d", segs, h, size)
		}
		if b, err := segs[0].Bytes(); err != nil || int64(len(b)) != segs[0].Len() {
			return fmt.Sprintf("segment bytes: %d, %v", len(b), err)
		}
	default:
		return fmt.Sprintf("version %d", h.Version)
	}
	_ = m.Metadata()
	_ = m.Warnings()
	_ = m.File().Len()

	consts := m.Constants()
	isConst := map[*rten.Constant]bool{}
	for i := range consts {
		isConst[&consts[i]] = true
	}
	var bad string
	m.Graph().Walk(func(g *rten.Graph) bool {
		n := len(g.Nodes)
		for _, list := range [][]uint32{g.Inputs, g.Outputs, g.Captures} {
			for _, v := range list {
				if int(v) >= n {
					bad = fmt.Sprintf("graph %s refers to node %d of %d", g.Path, v, n)
					return false
				}
			}
		}
		for i := range g.Nodes {
			nd := &g.Nodes[i]
			switch nd.Kind {
			case rten.KindOperator:
				if nd.Op == nil || nd.Constant != nil || nd.Value != nil {
					bad = fmt.Sprintf("operator node %s/%d has wrong content", g.Path, i)
					return false
				}
				if nd.Op.Type.String() == "" {
					bad = "empty operator name"
					return false
				}
				for _, list := range [][]int32{nd.Op.Inputs, nd.Op.Outputs} {
					for _, v := range list {
						if v >= 0 && int(v) >= n {
							bad = fmt.Sprintf("operator %s/%d refers to node %d of %d", g.Path, i, v, n)
							return false
						}
					}
				}
				for _, s := range nd.Op.Subgraphs {
					if s.Graph == nil || s.Attr == "" {
						bad = "empty subgraph"
						return false
					}
				}
			case rten.KindConstant:
				if nd.Constant == nil || !isConst[nd.Constant] || nd.Constant.Node != i {
					bad = fmt.Sprintf("constant node %s/%d not in Constants()", g.Path, i)
					return false
				}
			case rten.KindValue:
				if nd.Value == nil {
					bad = "value node without value"
					return false
				}
				for _, d := range nd.Value.Shape {
					_ = d.String()
				}
				_ = nd.Value.DType.String()
			default:
				bad = fmt.Sprintf("node kind %v", nd.Kind)
				return false
			}
			_ = nd.Kind.String()
		}
		return true
	})
	if bad != "" {
		return bad
	}

	if len(m.Tensors()) != len(consts) {
		return fmt.Sprintf("%d tensors, %d constants", len(m.Tensors()), len(consts))
	}
	for i := range consts {
		c := &consts[i]
		if got, ok := m.Constant(c.Name); !ok || got.Name != c.Name {
			return fmt.Sprintf("Constant(%q) = %v, %v", c.Name, got, ok)
		}
		if got, ok := m.Tensor(c.Name); !ok || got.Name != c.Name {
			return fmt.Sprintf("Tensor(%q) = %v, %v", c.Name, got, ok)
		}
		if c.Name == "" || !c.NameExplicit && !strings.HasPrefix(c.Name, c.Graph+"/nodes/") {
			return fmt.Sprintf("constant %d name %q explicit %v", i, c.Name, c.NameExplicit)
		}
		t := m.Tensors()[i]
		if t.Name != c.Name || t.Offset != c.Offset || t.NBytes != c.NBytes {
			return fmt.Sprintf("tensor %d differs from constant", i)
		}
		switch c.Location {
		case format.LocNone:
			if c.Offset != -1 || c.Data.Len() != 0 {
				return fmt.Sprintf("constant %q without data has offset %d", c.Name, c.Offset)
			}
			continue
		case format.LocSegment:
			if !c.External() || c.Offset != h.TensorDataOffset+c.DataOffset {
				return fmt.Sprintf("external constant %q at %d, data_offset %d", c.Name, c.Offset, c.DataOffset)
			}
		case format.LocInline:
			if c.External() || c.Offset < h.ModelOffset || c.Offset+c.NBytes > h.ModelOffset+h.ModelLen {
				return fmt.Sprintf("inline constant %q at %d+%d outside the model data", c.Name, c.Offset, c.NBytes)
			}
		default:
			return fmt.Sprintf("constant %q location %v", c.Name, c.Location)
		}
		numel, nb, ok := format.Numel(c.Shape, c.DType, size)
		if !ok || nb != c.NBytes || c.Offset < 0 || c.Offset > size-c.NBytes {
			return fmt.Sprintf("constant %q: shape %v %v nbytes %d at %d in a %d-byte file", c.Name, c.Shape, c.DType, c.NBytes, c.Offset, size)
		}
		if c.Data.Offset() != c.Offset || c.Data.Len() != c.NBytes {
			return fmt.Sprintf("constant %q view %v, want [%d+%d)", c.Name, c.Data, c.Offset, c.NBytes)
		}
		b, err := c.Data.Bytes()
		if err != nil || int64(len(b)) != c.NBytes {
			return fmt.Sprintf("constant %q bytes: %d, %v", c.Name, len(b), err)
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
