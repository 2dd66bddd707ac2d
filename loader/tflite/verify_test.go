package tflite_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
)

// listing is what a model lists, for comparing two readings of one model.
func listing(t *testing.T, m *tflite.Model) string {
	t.Helper()
	var b strings.Builder
	for i := range m.NumTensors() {
		tt := m.TensorAt(i)
		fmt.Fprintf(&b, "%s %v %v %d %d\n", tt.Name, tt.DType, tt.Shape, tt.Offset, tt.NBytes)
	}
	for i, s := range m.Segments() {
		fmt.Fprintf(&b, "segment %d: buffer %d [%d +%d)\n", i, m.SegmentIndex(i), s.Offset(), s.Len())
	}
	for _, g := range append(m.Groups(), "") {
		order, err := m.UseOrder(g)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "order %q: %v\n", g, order)
	}
	return b.String()
}

// tables returns the positions of the tables of the sample model: the
// root, its subgraphs, their tensors and operators, the buffers, metadata,
// signatures and operator codes.
func tables(fb hostile.FB) []int {
	root := fb.Root()
	out := []int{root}
	each := func(t, id int, f func(int)) {
		if fb.Field(t, id) < 0 {
			return
		}
		_, n := fb.Vector(t, id)
		for i := range n {
			e := fb.Elem(t, id, i)
			out = append(out, e)
			if f != nil {
				f(e)
			}
		}
	}
	each(root, 2, func(sg int) { each(sg, 0, nil); each(sg, 3, nil) })
	for _, id := range []int{1, 4, 6, 7} {
		each(root, id, nil)
	}
	return out
}

// TestTableSizeIgnored: the table size a vtable records is not checked (the
// C++ Verifier LiteRT runs never reads it, and LiteRT runs such a file):
// with every table's size set to 0, 2, or 0xfffe (past the end of the
// file), the sample model reads exactly as before.
func TestTableSizeIgnored(t *testing.T) {
	for _, external := range []bool{false, true} {
		orig := tflitegen.Sample(external).Bytes()
		m, err := open(orig)
		if err != nil {
			t.Fatal(err)
		}
		want := listing(t, m)
		for _, size := range []uint16{0, 2, 0xfffe} {
			b := slices.Clone(orig)
			fb := hostile.FB{B: b}
			ts := tables(fb)
			for _, tab := range ts {
				fb.PutU16(fb.VTable(tab)+2, size)
			}
			m, err := open(b)
			if err != nil {
				t.Fatalf("external=%v: %d tables of size %d: %v", external, len(ts), size, err)
			}
			if got := listing(t, m); got != want {
				t.Errorf("external=%v: tables of size %d read as\n%s\nwant\n%s", external, size, got, want)
			}
		}
	}
}

// TestMetadataBufferVerified: the deprecated Model.metadata_buffer list is
// verified like every other field (LiteRT refuses a file whose length
// runs past the end): a valid one opens, a corrupt length or a misaligned
// vector is refused, naming the field.
func TestMetadataBufferVerified(t *testing.T) {
	g := tflitegen.Sample(false)
	g.MetadataBuffer = []int32{5}
	orig := g.Bytes()
	if _, err := open(orig); err != nil {
		t.Fatalf("a metadata_buffer list of one index: %v", err)
	}
	fb := hostile.FB{B: orig}
	vec, _ := fb.Vector(fb.Root(), 5)
	for _, c := range []struct {
		name string
		put  func(fb hostile.FB)
		want string
	}{
		{"length 2^30", func(fb hostile.FB) { fb.PutU32(vec, 1<<30) }, "runs past the end"},
		{"length one past the end", func(fb hostile.FB) { fb.PutU32(vec, uint32((len(orig)-vec-4)/4+1)) }, "runs past the end"},
		{"vector at an odd position", func(fb hostile.FB) { fb.PutU32(fb.MustField(fb.Root(), 5), uint32(vec-fb.MustField(fb.Root(), 5)+2)) }, "not 4-aligned"},
	} {
		b := slices.Clone(orig)
		c.put(hostile.FB{B: b})
		_, err := open(b)
		var fe *format.FormatError
		if !errors.As(err, &fe) || fe.Field != "Model.metadata_buffer" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a Model.metadata_buffer error saying %q", c.name, err, c.want)
		}
	}
}
