package rten

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader/format"
)

// The optional interfaces of package format a model implements for the
// command's report.
var (
	_ format.Reporter      = (*Model)(nil)
	_ format.Warner        = (*Model)(nil)
	_ format.SegmentKinder = (*Model)(nil)
)

// graphSummary counts the nodes of the graph and its subgraphs: the
// "graph" of the command's JSON report.
type graphSummary struct {
	Nodes     int            `json:"nodes"`
	Operators int            `json:"operators"`
	Constants int            `json:"constants"`
	Values    int            `json:"values"`
	Inputs    int            `json:"inputs"`
	Outputs   int            `json:"outputs"`
	Subgraphs int            `json:"subgraphs"`
	OpTypes   map[string]int `json:"op_types"`
}

// headerFields returns the header as the report shows it, in order.
func (m *Model) headerFields() format.Fields {
	h := m.Header()
	fs := format.Fields{{Key: "version", Value: h.Version}, {Key: "model_offset", Value: h.ModelOffset}, {Key: "model_len", Value: h.ModelLen}}
	if h.Version >= 2 {
		fs = append(fs, format.Field{Key: "tensor_data_offset", Value: h.TensorDataOffset})
	}
	return fs
}

// metadataFields returns the metadata strings that are set, in schema
// order.
func (m *Model) metadataFields() format.Fields {
	md := m.Metadata()
	var fs format.Fields
	for _, f := range []format.Field{
		{Key: "onnx_hash", Value: md.ONNXHash}, {Key: "description", Value: md.Description}, {Key: "license", Value: md.License},
		{Key: "commit", Value: md.Commit}, {Key: "code_repository", Value: md.CodeRepository}, {Key: "model_repository", Value: md.ModelRepository},
		{Key: "run_id", Value: md.RunID}, {Key: "run_url", Value: md.RunURL},
	} {
		if f.Value != "" {
			fs = append(fs, f)
		}
	}
	return fs
}

// graphSummary counts the nodes of every graph; inputs and outputs are
// the main graph's.
func (m *Model) graphSummary() *graphSummary {
	g := &graphSummary{OpTypes: map[string]int{}}
	m.Graph().Walk(func(gr *Graph) bool {
		if gr != m.Graph() {
			g.Subgraphs++
		}
		for _, n := range gr.Nodes {
			g.Nodes++
			switch n.Kind {
			case KindOperator:
				g.Operators++
				if n.Op != nil {
					g.OpTypes[n.Op.Type.String()]++
				}
			case KindConstant:
				g.Constants++
			case KindValue:
				g.Values++
			}
		}
		return true
	})
	g.Inputs, g.Outputs = len(m.Graph().Inputs), len(m.Graph().Outputs)
	return g
}

// ReportFields returns the model's members of the command's JSON report:
// "header", "graph" (node counts) and "metadata" (the strings that are
// set, if any).
func (m *Model) ReportFields() []format.Field {
	fs := []format.Field{{Key: "header", Value: m.headerFields()}, {Key: "graph", Value: m.graphSummary()}}
	if md := m.metadataFields(); len(md) > 0 {
		fs = append(fs, format.Field{Key: "metadata", Value: md})
	}
	return fs
}

// ReportText writes the header under the title "RTen model", the metadata
// and the graph's counts with its operator types, most frequent first.
func (m *Model) ReportText(w io.Writer) error {
	var b bytes.Buffer
	m.headerFields().WriteText(&b, "RTen model")
	if md := m.metadataFields(); len(md) > 0 {
		md.WriteText(&b, fmt.Sprintf("metadata (%d)", len(md)))
	}
	g := m.graphSummary()
	b.WriteString("\ngraph\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  nodes\t%d (%d operators, %d constants, %d values)\n", g.Nodes, g.Operators, g.Constants, g.Values)
	fmt.Fprintf(tw, "  inputs, outputs\t%d, %d\n", g.Inputs, g.Outputs)
	fmt.Fprintf(tw, "  subgraphs\t%d\n", g.Subgraphs)
	if len(g.OpTypes) > 0 {
		fmt.Fprintf(tw, "  operators\t%s\n", opSummary(g.OpTypes))
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

// SegmentKinds returns "tensor_data" for the tensor data section (V2).
func (m *Model) SegmentKinds() []string {
	kinds := make([]string, len(m.Segments()))
	for i := range kinds {
		kinds[i] = "tensor_data"
	}
	return kinds
}

// opSummary lists operator types by count, most frequent first, as
// "MatMul×2 Add×1".
func opSummary(ops map[string]int) string {
	names := slices.Collect(maps.Keys(ops))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(ops[b], ops[a]), strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s×%d", k, ops[k])
	}
	return strings.Join(parts, " ")
}
