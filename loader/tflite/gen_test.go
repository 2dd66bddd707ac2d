package tflite_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

func open(b []byte) (*tflite.Model, error) {
	return tflite.NewFile(mmapfile.NewBytes(b))
}

// TestSample reads tflitegen.Sample in both layouts; every value checked
// is one the generator was given.
func TestSample(t *testing.T) {
	for _, external := range []bool{false, true} {
		g := tflitegen.Sample(external)
		b := g.Bytes()
		m, err := open(b)
		if err != nil {
			t.Fatalf("external=%v: %v", external, err)
		}
		wantKind := tflite.BufferInline
		if external {
			wantKind = tflite.BufferOffset
		}
		// Every buffer holding bytes is a segment, with the generator's bytes.
		if n := len(m.Segments()); n != 7 {
			t.Errorf("external=%v: %d segments, want 7", external, n)
		}
		for i, s := range m.Segments() {
			bi := m.SegmentIndex(i)
			got, _ := s.Bytes()
			if !slices.Equal(got, g.Buffers[bi].Data) || m.Buffers()[bi].Kind != wantKind {
				t.Errorf("external=%v: segment %d (buffer %d) = %v kind %v, want %v", external, i, bi, got, m.Buffers()[bi].Kind, g.Buffers[bi].Data)
			}
		}
		type want struct {
			name     string
			explicit bool
			dtype    format.DType
			shape    []int64
			buffer   int
		}
		wants := []want{
			{"0/w", true, format.Float32, []int64{2}, 1},
			{"q", true, format.Int4, []int64{2, 2}, 2},
			{"q_scale", true, format.Float16, []int64{2}, 3},
			{"0/tensors/4", false, format.Int8, []int64{2, 2}, 4},
			{"0/c", true, format.Int32, []int64{}, 7},
			{"1/w", true, format.Float32, []int64{1, 2}, 1},
			{"2/c", true, format.Int32, []int64{}, 7},
		}
		if m.NumTensors() != len(wants) {
			t.Fatalf("external=%v: %d tensors, want %d", external, m.NumTensors(), len(wants))
		}
		for i, w := range wants {
			tt := m.Tensors()[i]
			data, _ := tt.Data.Bytes()
			if tt.Name != w.name || tt.NameExplicit != w.explicit || tt.DType != w.dtype || !slices.Equal(tt.Shape, w.shape) ||
				tt.Buffer != w.buffer || tt.NBytes != int64(len(g.Buffers[w.buffer].Data)) || !slices.Equal(data, g.Buffers[w.buffer].Data) ||
				tt.Location != format.LocSegment || tt.Offset != tt.Data.Offset() {
				t.Errorf("external=%v: tensor %d = %q %v %v %v buffer %d nbytes %d, want %+v", external, i, tt.Name, tt.NameExplicit, tt.DType, tt.Shape, tt.Buffer, tt.NBytes, w)
			}
			if j, ok := m.Lookup(w.name); !ok || j != i {
				t.Errorf("Lookup(%q) = %d, %v; want %d", w.name, j, ok, i)
			}
		}
		// TFLite-specific: sparsity, quantization, variable tensors.
		sp := m.Tensors()[3]
		if !sp.Sparse || sp.NBytes != 2 {
			t.Errorf("sparse tensor: sparse=%v nbytes=%d", sp.Sparse, sp.NBytes)
		}
		if s, _ := m.Sparsity(sp); s == nil || len(s.Dims) != 2 || !s.Dims[1].Sparse || !slices.Equal(s.Dims[1].Segments, []int32{0, 1, 2}) || s.Dims[0].DenseSize != 2 {
			t.Errorf("sparsity %+v", s)
		}
		if q, _ := m.Quantization(sp); q == nil || !slices.Equal(q.Scale, []float32{0.5}) {
			t.Errorf("quantization %+v", q)
		}
		if q, _ := m.Quantization(m.Tensors()[1]); q == nil || q.Blockwise == nil || *q.Blockwise != (tflite.Blockwise{Scales: 3, ZeroPoints: -1, BlockSize: 2}) {
			t.Errorf("blockwise quantization %+v", q)
		}
		if st := &m.Subgraphs()[0].Tensors[6]; !st.Variable || st.Listed() || st.Name != "state" {
			t.Errorf("variable tensor %+v", st)
		}
		// Use order.
		if g := m.Groups(); !slices.Equal(g, []string{"main", "body", "2"}) {
			t.Errorf("groups %q", g)
		}
		names := func(idx []int) []string {
			var out []string
			for _, i := range idx {
				out = append(out, m.TensorAt(i).Name)
			}
			return out
		}
		for _, c := range []struct {
			group string
			order []string
			used  int
		}{
			{"main", []string{"0/tensors/4", "0/w", "q", "0/c", "q_scale"}, 4},
			{"body", []string{"1/w"}, 1},
			{"2", []string{"2/c"}, 1},
			{"", []string{"0/tensors/4", "0/w", "2/c", "1/w", "q", "0/c", "q_scale"}, 6},
		} {
			order, err := m.UseOrder(c.group)
			used, err2 := m.UsedOrder(c.group)
			if err != nil || err2 != nil || !slices.Equal(names(order), c.order) || len(used) != c.used || !slices.Equal(used, order[:c.used]) {
				t.Errorf("group %q: order %q used %d (%v %v), want %q %d", c.group, names(order), len(used), err, err2, c.order, c.used)
			}
		}
		if _, err := m.UseOrder("nope"); !errors.Is(err, format.ErrNotFound) {
			t.Errorf("UseOrder(nope) = %v, want ErrNotFound", err)
		}
		if v := m.MinRuntimeVersion(); v != "1.14.0" {
			t.Errorf("MinRuntimeVersion %q", v)
		}
		if sd := m.SignatureDefs(); len(sd) != 1 || sd[0].Key != "serving_default" || sd[0].Inputs[0] != (tflite.TensorMap{Name: "x", Tensor: 0}) || sd[0].Outputs[0].Tensor != 5 {
			t.Errorf("signatures %+v", sd)
		}
		if m.Description() != "edgeload sample" || m.Version() != 3 {
			t.Errorf("description %q version %d", m.Description(), m.Version())
		}
	}
}

// TestRejects opens models that must be refused, each with a
// *format.FormatError wrapping the right sentinel.
func TestRejects(t *testing.T) {
	mutate := func(f func(m *tflitegen.Model)) []byte {
		m := tflitegen.Sample(false)
		f(m)
		return m.Bytes()
	}
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", []byte("\x08\x00\x00\x00TFL"), format.ErrTruncated},
		{"identifier", []byte("\x08\x00\x00\x00TFL4\x00\x00\x00\x00"), format.ErrUnknownFormat},
		{"version", mutate(func(m *tflitegen.Model) { m.Version = 4 }), format.ErrUnsupportedVersion},
		{"no subgraphs", mutate(func(m *tflitegen.Model) { m.Subgraphs = nil }), format.ErrMalformed},
		{"data and offset", mutate(func(m *tflitegen.Model) { m.Buffers[1].Both = true }), format.ErrMalformed},
		{"offset past end", mutate(func(m *tflitegen.Model) { m.Buffers[1] = tflitegen.Buffer{Offset: 1 << 40, Size: 8} }), format.ErrTruncated},
		{"offset overflow", mutate(func(m *tflitegen.Model) { m.Buffers[1] = tflitegen.Buffer{Offset: 1<<64 - 4, Size: 8} }), format.ErrTruncated},
		{"buffer index", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Tensors[1].Buffer = 99 }), format.ErrMalformed},
		{"size mismatch", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Tensors[1].Shape = []int32{3} }), format.ErrMalformed},
		{"negative dim", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Tensors[1].Shape = []int32{-2} }), format.ErrMalformed},
		{"resource constant", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Tensors[1].Type = 13 }), format.ErrMalformed},
		{"buffer and external", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Tensors[1].External = 1 }), format.ErrMalformed},
		{"op input", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Ops[0].Inputs[0] = 8 }), format.ErrMalformed},
		{"opcode", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Ops[0].Opcode = 2 }), format.ErrMalformed},
		{"while subgraph", mutate(func(m *tflitegen.Model) { m.Subgraphs[0].Ops[1].Calls[1] = 3 }), format.ErrMalformed},
		{"metadata buffer", mutate(func(m *tflitegen.Model) { m.Metadata[0].Buffer = 9 }), format.ErrMalformed},
		{"signature tensor", mutate(func(m *tflitegen.Model) { m.Signatures[0].Inputs["x"] = 8 }), format.ErrMalformed},
	}
	for _, c := range cases {
		m, err := open(c.b)
		if err == nil {
			err = m.Check() // the operators' indices are checked there
		}
		var fe *format.FormatError
		if !errors.As(err, &fe) || fe.Format != "tflite" || !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want a tflite FormatError wrapping %v", c.name, err, c.want)
		}
	}
	// A subgraph's input or output out of range is named by its field.
	for _, field := range []string{"inputs", "outputs"} {
		_, err := open(mutate(func(m *tflitegen.Model) {
			if field == "inputs" {
				m.Subgraphs[0].Inputs[0] = 99
			} else {
				m.Subgraphs[0].Outputs[0] = 99
			}
		}))
		if !errors.Is(err, format.ErrMalformed) || !strings.Contains(err.Error(), "Model.subgraphs[0]."+field) {
			t.Errorf("subgraph %s out of range: %v", field, err)
		}
	}
	// Placeholder offsets (<= 1) and size 0 are "no data", not errors.
	ok := mutate(func(m *tflitegen.Model) {
		m.Buffers[8] = tflitegen.Buffer{Offset: 1, Size: 1}
	})
	m, err := open(ok)
	if err != nil || len(m.Segments()) != 6 {
		t.Errorf("placeholder offset: %v", err)
	}
}

func mmapfileBytes(b []byte) *mmapfile.File { return mmapfile.NewBytes(b) }

// TestUseOrderEntersCalls: group "" enters the subgraphs an operator names
// where it names them, whatever the control flow, and reaches the others
// after the main subgraph's walk, in index order. Each model: main (0)
// calls through its first operator, then reads its constant k0; subgraph
// 1 is called by no one and reads d1; subgraphs 2 and 3 read c2 and c3.
// The orders below are written from that description (and the package
// doc), not from the code.
func TestUseOrderEntersCalls(t *testing.T) {
	f32 := tflitefb.TensorTypeFLOAT32
	sub := func(name, c string, buf uint32) tflitegen.Subgraph {
		return tflitegen.Subgraph{
			Name:    name,
			Tensors: []tflitegen.Tensor{{Name: name + "_in", Type: f32, Shape: []int32{1}}, {Name: c, Type: f32, Shape: []int32{1}, Buffer: buf}},
			Inputs:  []int32{0}, Outputs: []int32{0},
			Ops: []tflitegen.Op{{Opcode: 0, Inputs: []int32{0, 1}, Outputs: []int32{0}}},
		}
	}
	for _, c := range []struct {
		kind  string
		calls []int32
		want  []string
	}{
		{"while", []int32{2, 3}, []string{"c2", "c3", "k0", "d1"}},
		{"if", []int32{3, 2}, []string{"c3", "c2", "k0", "d1"}},
		{"call", []int32{2}, []string{"c2", "k0", "d1", "c3"}},
		{"call_once", []int32{3}, []string{"c3", "k0", "d1", "c2"}},
		{"composite", []int32{2}, []string{"c2", "k0", "d1", "c3"}},
		{"", nil, []string{"k0", "d1", "c2", "c3"}},
	} {
		one := []byte{0, 0, 0x80, 0x3f}
		g := &tflitegen.Model{
			Buffers: []tflitegen.Buffer{{}, {Data: one}, {Data: one}, {Data: one}, {Data: one}},
			Subgraphs: []tflitegen.Subgraph{
				{
					Name:    "main",
					Tensors: []tflitegen.Tensor{{Name: "x", Type: f32, Shape: []int32{1}}, {Name: "k0", Type: f32, Shape: []int32{1}, Buffer: 1}},
					Inputs:  []int32{0}, Outputs: []int32{0},
					Ops: []tflitegen.Op{
						{Opcode: 1, Inputs: []int32{0}, Outputs: []int32{0}, Kind: c.kind, Calls: c.calls},
						{Opcode: 0, Inputs: []int32{0, 1}, Outputs: []int32{0}},
					},
				},
				sub("decoy", "d1", 2), sub("s2", "c2", 3), sub("s3", "c3", 4),
			},
		}
		m, err := open(g.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		order, err := m.UseOrder("")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, i := range order {
			got = append(got, m.TensorAt(i).Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q calling %v: use order %q, want %q", c.kind, c.calls, got, c.want)
		}
	}
}
