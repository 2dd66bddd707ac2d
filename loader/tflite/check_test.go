package tflite_test

import (
	"cmp"
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
	// The quantization and sparsity tables are verified by the first
	// Quantization or Sparsity: a bad one is an error of every later call
	// and of Check.
	perr := error(nil)
	for _, sg := range m.Subgraphs() {
		for j := range sg.Tensors {
			tt := &sg.Tensors[j]
			q, qerr := m.Quantization(tt)
			s, serr := m.Sparsity(tt)
			if qerr != nil || serr != nil {
				perr = cmp.Or(qerr, serr)
				if qerr == nil || serr == nil || qerr.Error() != serr.Error() {
					return fmt.Errorf("Quantization: %v, Sparsity: %v", qerr, serr)
				}
			} else if (q != nil) != tt.Quantized || (s != nil) != tt.Sparse {
				return fmt.Errorf("tensor %q: quantization %v (%v), sparsity %v (%v)", tt.Name, q != nil, tt.Quantized, s != nil, tt.Sparse)
			}
			_ = tt.Type.String()
		}
	}
	if perr != nil {
		if err := hostile.CheckError("tflite", perr); err != nil {
			return err
		}
	}
	// The operators are checked by the first use order: a bad one is an
	// error of every use order, the same each time, and of Check.
	_, oerr := m.UseOrder("")
	if oerr != nil {
		if err := hostile.CheckError("tflite", oerr); err != nil {
			return err
		}
		for _, g := range m.Groups() {
			if _, err := m.UseOrder(g); err == nil || err.Error() != oerr.Error() {
				return fmt.Errorf("UseOrder(\"\"): %v, but UseOrder(%q): %v", oerr, g, err)
			}
		}
	}
	for _, err := range []error{perr, oerr} {
		if known, problem := hostile.Contradiction(err); err != nil && (!known || problem != "") {
			return fmt.Errorf("message %q: known %v, contradicts itself: %q", err, known, problem)
		}
	}
	// Check makes both checks.
	if want, cerr := cmp.Or(perr, oerr), m.Check(); (want == nil) != (cerr == nil) || want != nil && cerr.Error() != want.Error() {
		return fmt.Errorf("Check: %v, want %v", cerr, want)
	}
	groups := append(m.Groups(), "")
	for _, g := range groups {
		order, err := m.UseOrder(g)
		if err != nil {
			break // (checked above)
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
	return m.ReportText(io.Discard)
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
