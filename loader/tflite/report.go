package tflite

import (
	"fmt"
	"io"

	"github.com/edgeload/edgeload/loader/format"
)

// SubgraphReport is one subgraph in the JSON report.
type SubgraphReport struct {
	Name      string `json:"name"`
	Tensors   int    `json:"tensors"`
	Operators int    `json:"operators"`
	// UseOrder names the constants operators read, in first-use order;
	// UseOrderTensors are their tensor indices; Unused names the others.
	UseOrder        []string `json:"use_order"`
	UseOrderTensors []int    `json:"use_order_tensors"`
	Unused          []string `json:"unused"`
}

// MetadataReport is one metadata entry in the JSON report.
type MetadataReport struct {
	Name   string `json:"name"`
	Buffer int    `json:"buffer"`
}

// SignatureReport is one signature def in the JSON report.
type SignatureReport struct {
	Key      string `json:"key"`
	Subgraph int    `json:"subgraph"`
	Inputs   int    `json:"inputs"`
	Outputs  int    `json:"outputs"`
}

// ReportFields returns version, description, subgraphs, metadata and
// signature_defs, as the expected/ files show them.
func (m *Model) ReportFields() []format.Field {
	sgs, ts := m.Subgraphs(), m.Tensors()
	subs := make([]SubgraphReport, len(sgs))
	for i := range sgs {
		sg := &sgs[i]
		order, _ := m.UseOrder(sg.Group)
		used, _ := m.UsedOrder(sg.Group)
		s := SubgraphReport{Name: sg.Name, Tensors: len(sg.Tensors), Operators: sg.NumOperators,
			UseOrder: []string{}, UseOrderTensors: []int{}, Unused: []string{}}
		for k, c := range order {
			if k < len(used) {
				s.UseOrder = append(s.UseOrder, ts[c].Name)
				s.UseOrderTensors = append(s.UseOrderTensors, ts[c].Index)
			} else {
				s.Unused = append(s.Unused, ts[c].Name)
			}
		}
		subs[i] = s
	}
	md := make([]MetadataReport, len(m.Metadata()))
	for i, x := range m.Metadata() {
		md[i] = MetadataReport{x.Name, x.Buffer}
	}
	sd := make([]SignatureReport, len(m.SignatureDefs()))
	for i, x := range m.SignatureDefs() {
		sd[i] = SignatureReport{x.Key, x.Subgraph, len(x.Inputs), len(x.Outputs)}
	}
	return []format.Field{
		{Key: "version", Value: m.version},
		{Key: "description", Value: m.Description()},
		{Key: "subgraphs", Value: subs},
		{Key: "metadata", Value: md},
		{Key: "signature_defs", Value: sd},
	}
}

// ReportText writes the model's version, subgraphs, signatures, metadata
// and associated files.
func (m *Model) ReportText(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("TFLite schema version %d, %q; %d buffers, FlatBuffer region %d bytes\n", m.version, m.Description(), len(m.buffers), len(m.fb))
	sgs := m.Subgraphs()
	for i := range sgs {
		sg := &sgs[i]
		used, _ := m.UsedOrder(sg.Group)
		order, _ := m.UseOrder(sg.Group)
		p("subgraph %d %q: %d tensors, %d operators, %d constants (%d unused)\n",
			i, sg.Name, len(sg.Tensors), sg.NumOperators, len(order), len(order)-len(used))
	}
	for _, s := range m.SignatureDefs() {
		p("signature %q: subgraph %d, %d inputs, %d outputs\n", s.Key, s.Subgraph, len(s.Inputs), len(s.Outputs))
	}
	for _, md := range m.Metadata() {
		p("metadata %q: buffer %d, %d bytes\n", md.Name, md.Buffer, md.Data.Len())
	}
	if v := m.MinRuntimeVersion(); v != "" {
		p("min runtime version %s\n", v)
	}
	for _, a := range m.AssociatedFiles() {
		p("associated file %q: %d bytes at %d (zip method %d)\n", a.Name, a.Size, a.Data.Offset(), a.Method)
	}
	return err
}
