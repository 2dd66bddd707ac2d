package tflite_test

import (
	"fmt"
	"io"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/tflite"
)

// exercise uses every accessor and view of an opened model and reports a
// violated invariant. Hostile inputs that open must pass it.
func exercise(m *tflite.Model) error {
	size := m.Size()
	if m.FlatBufferLen() > size || m.MappedFile() == nil {
		return fmt.Errorf("region %d of a %d-byte file", m.FlatBufferLen(), size)
	}
	_, _, _ = m.Version(), m.Description(), m.MinRuntimeVersion()
	var last int64
	for i, s := range m.Segments() {
		if err := hostile.Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return err
		}
		if s.Offset() < last || s.Len() == 0 {
			return fmt.Errorf("segment %d at %d (len %d) after %d", i, s.Offset(), s.Len(), last)
		}
		last = s.Offset()
		if b := m.SegmentIndex(i); m.Buffers()[b].Data != s {
			return fmt.Errorf("segment %d is not buffer %d", i, b)
		}
	}
	for i := range m.NumTensors() {
		t := m.TensorAt(i)
		tt := m.Tensors()[i]
		if &tt.Tensor != t || m.TensorData(i) != t.Data || !tt.Listed() {
			return fmt.Errorf("tensor %d: accessors disagree", i)
		}
		if j, ok := m.Lookup(t.Name); !ok || m.TensorAt(j).Name != t.Name {
			return fmt.Errorf("Lookup(%q) = %d, %v", t.Name, j, ok)
		}
		if t.Location != format.LocSegment || t.NBytes != t.Data.Len() || t.Offset != t.Data.Offset() || !t.DType.Valid() {
			return fmt.Errorf("tensor %q: %v nbytes %d view %v", t.Name, t.Location, t.NBytes, t.Data)
		}
		var err error
		// hostile's typed views cover the whole-byte types; the packed
		// ones, sparse and string tensors get the bounds and view checks.
		if tt.HasShape && !tt.Sparse && t.DType.Size() > 0 {
			err = hostile.FileTensor(t, i)
		} else {
			err = hostile.SegmentBounds(t.Name, t.Data)
		}
		if err != nil {
			return err
		}
	}
	for _, sg := range m.Subgraphs() {
		for j := range sg.Tensors {
			tt := &sg.Tensors[j]
			_ = m.Quantization(tt)
			_ = m.Sparsity(tt)
			_ = tt.Type.String()
		}
	}
	groups := append(m.Groups(), "")
	for _, g := range groups {
		order, err := m.UseOrder(g)
		if err != nil {
			return err
		}
		used, err := m.UsedOrder(g)
		if err != nil || len(used) > len(order) {
			return fmt.Errorf("Used(%q): %d of %d, %v", g, len(used), len(order), err)
		}
		seen := make(map[int]bool, len(order))
		for k, c := range order {
			if c < 0 || c >= m.NumTensors() || seen[c] || (k < len(used) && used[k] != c) {
				return fmt.Errorf("UseOrder(%q) = %v", g, order)
			}
			seen[c] = true
		}
		if g == "" && len(order) != m.NumTensors() {
			return fmt.Errorf("UseOrder(\"\") has %d of %d tensors", len(order), m.NumTensors())
		}
	}
	for _, nd := range m.NamedData() {
		if nd.Segment != -1 {
			return fmt.Errorf("named data %q in segment %d", nd.Key, nd.Segment)
		}
		if err := hostile.Segment(nd.Key, nd.Data); err != nil {
			return err
		}
	}
	for _, a := range m.AssociatedFiles() {
		if err := hostile.SegmentBounds(a.Name, a.Data); err != nil {
			return err
		}
	}
	for _, md := range m.Metadata() {
		if md.Data != m.Buffers()[md.Buffer].Data {
			return fmt.Errorf("metadata %q", md.Name)
		}
	}
	_, _, _ = m.SignatureDefs(), m.OperatorCodes(), m.ExternalBuffers()
	_ = m.ReportFields()
	if err := m.ReportText(io.Discard); err != nil {
		return err
	}
	return m.Check()
}

// generated returns the generated seeds: the sample in both layouts, with
// a zip trailer, and small variants.
func generated() []hostile.Seed {
	var out []hostile.Seed
	for _, ext := range []bool{false, true} {
		s := tflitegenSample(ext)
		out = append(out, hostile.Seed{Name: fmt.Sprintf("sample-external-%v.tflite", ext), Data: s})
	}
	return out
}
