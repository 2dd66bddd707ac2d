package rten_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// The report of tiny-v2.rten and tiny-v1.rten: header, graph counts and
// metadata as the writer was given them.
func TestReport(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		w := writer.TinyRTen(v1)
		b, info, err := w.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		m, err := rten.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		fs := format.Fields(m.ReportFields())
		var keys []string
		for _, f := range fs {
			keys = append(keys, f.Key)
		}
		if !slices.Equal(keys, []string{"header", "graph", "metadata"}) {
			t.Fatalf("v1 %v: keys %q", v1, keys)
		}
		js, _ := json.Marshal(fs)
		var doc struct {
			Header   map[string]int64
			Graph    map[string]any
			Metadata map[string]string
		}
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		_, hasData := doc.Header["tensor_data_offset"]
		if hasData == v1 || doc.Header["version"] != map[bool]int64{false: 2, true: 1}[v1] {
			t.Errorf("v1 %v: header %v (writer %+v)", v1, doc.Header, info)
		}
		// Counted from what the writer was given.
		var ops, consts, values int
		for _, n := range w.Graph.Nodes {
			switch {
			case n.Operator != nil:
				ops++
			case n.Constant != nil:
				consts++
			case n.Value != nil:
				values++
			}
		}
		g := doc.Graph
		if g["nodes"] != float64(len(w.Graph.Nodes)) || g["operators"] != float64(ops) || g["constants"] != float64(consts) || g["values"] != float64(values) ||
			g["inputs"] != float64(len(w.Graph.Inputs)) || g["outputs"] != float64(len(w.Graph.Outputs)) || g["subgraphs"] != 0.0 {
			t.Errorf("v1 %v: graph %v", v1, g)
		}
		if doc.Metadata["license"] != w.Metadata.License || doc.Metadata["description"] != w.Metadata.Description || len(doc.Metadata) != 2 {
			t.Errorf("v1 %v: metadata %v", v1, doc.Metadata)
		}
		if got, want := len(m.SegmentKinds()), len(m.Segments()); got != want {
			t.Errorf("v1 %v: %d kinds for %d segments", v1, got, want)
		}
		var text strings.Builder
		if err := m.ReportText(&text); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"\nRTen model\n", "\nmetadata (2)\n", "\ngraph\n", "Add×1 MatMul×1", "license      " + w.Metadata.License} {
			if !strings.Contains(text.String(), s) {
				t.Errorf("v1 %v: text lacks %q:\n%s", v1, s, text.String())
			}
		}
	}
}
