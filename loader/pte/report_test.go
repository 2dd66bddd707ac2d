package pte_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// reportJSON marshals a Reporter's fields as the command's object does.
func reportJSON(t *testing.T, r format.Reporter) (keys []string, doc map[string]json.RawMessage) {
	t.Helper()
	fs := format.Fields(r.ReportFields())
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return keys, doc
}

func openTiny(t *testing.T, w *writer.PTE) *pte.Program {
	t.Helper()
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	p, err := pte.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// The report of tiny.pte: header, methods and delegates as the writer made
// them, segment kinds from the bytes each segment holds, no warnings.
func TestReport(t *testing.T) {
	w := writer.TinyPTE()
	p := openTiny(t, w)
	keys, doc := reportJSON(t, p)
	if !slices.Equal(keys, []string{"header", "methods", "delegates"}) {
		t.Fatalf("keys %q", keys)
	}
	var header map[string]any
	var methods []struct {
		Name                                                  string
		Values, Inputs, Outputs, Operators, Chains, Delegates int
	}
	var delegates []struct {
		Method, ID, Location string
		Index                int
		Segment              *int
		Size                 int64
		CompileSpecs         int `json:"compile_specs"`
	}
	json.Unmarshal(doc["header"], &header)
	json.Unmarshal(doc["methods"], &methods)
	json.Unmarshal(doc["delegates"], &delegates)
	wm, wd := w.Methods[0], w.Methods[0].Delegates[0]
	if header["identifier"] != "ET12" || header["extended_header"] != true {
		t.Errorf("header %v", header)
	}
	if len(methods) != 1 || methods[0].Name != wm.Name || methods[0].Values != len(wm.Tensors) || methods[0].Inputs != 1 || methods[0].Outputs != 1 || methods[0].Delegates != 1 {
		t.Errorf("methods %+v", methods)
	}
	if len(delegates) != 1 || delegates[0].ID != wd.ID || delegates[0].Location != "segment" || delegates[0].Segment == nil ||
		delegates[0].Size != int64(len(wd.Blob.Data)) || delegates[0].CompileSpecs != len(wd.CompileSpecs) {
		t.Fatalf("delegates %+v", delegates)
	}

	// What each segment holds, from its bytes.
	var want []string
	for _, s := range p.Segments() {
		b, err := s.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.HasPrefix(b, wd.Blob.Data):
			want = append(want, "delegate")
		case bytes.HasPrefix(b, w.NamedData[0].Data):
			want = append(want, "named_data")
		case bytes.Contains(b, wm.Tensors[1].Data):
			want = append(want, "constant")
		default:
			want = append(want, "")
		}
	}
	if got := p.SegmentKinds(); !slices.Equal(got, want) {
		t.Errorf("segment kinds %q, want %q", got, want)
	}
	if *delegates[0].Segment < 0 || *delegates[0].Segment >= len(want) || want[*delegates[0].Segment] != "delegate" {
		t.Errorf("delegate in segment %d, kinds %q", *delegates[0].Segment, want)
	}
	if ws := p.Warnings(); ws != nil {
		t.Errorf("warnings %q", ws)
	}

	var text strings.Builder
	if err := p.ReportText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"\nExecuTorch program\n  identifier  ", "\nmethods (1)\n", "\ndelegates (1)\n", wd.ID, "legacy constant buffer  false"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
}

// A program whose external tensors are not linked warns about them.
func TestReportUnresolved(t *testing.T) {
	p := openTiny(t, writer.TinyExternalPTE())
	ws := p.Warnings()
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "2 of 2 external tensors are not resolved") {
		t.Errorf("warnings %q", ws)
	}
}
