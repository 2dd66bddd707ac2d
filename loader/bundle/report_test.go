package bundle_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
)

// A bundled program reports its program's fields and text, and the
// bundle's: where the program lies and each suite's counts, as the writer
// was given them.
func TestReport(t *testing.T) {
	w, err := writer.TinyBPTE()
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	m, err := bundle.Format.Open(mmapfile.NewBytes(b), &format.Config{Name: "tiny.bpte"})
	if err != nil {
		t.Fatal(err)
	}
	p := m.(*bundle.Program)
	defer p.Close()
	fs := format.Fields(p.ReportFields())
	var keys []string
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	if !slices.Equal(keys, []string{"header", "methods", "delegates", "bundle"}) {
		t.Fatalf("keys %q", keys)
	}
	js, _ := json.Marshal(fs)
	var doc struct {
		Bundle struct {
			Version       uint32
			ProgramOffset int64 `json:"program_offset"`
			ProgramSize   int64 `json:"program_size"`
			BundleSize    int64 `json:"bundle_size"`
			TestSuites    []struct {
				Method          string
				TestCases       int `json:"test_cases"`
				Inputs          int
				ExpectedOutputs int `json:"expected_outputs"`
			} `json:"test_suites"`
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	bd := doc.Bundle
	if bd.Version != w.Version || bd.ProgramSize != int64(len(w.Program)) || bd.BundleSize != int64(len(b)) ||
		string(b[bd.ProgramOffset:bd.ProgramOffset+bd.ProgramSize]) != string(w.Program) {
		t.Errorf("bundle %+v", bd)
	}
	if len(bd.TestSuites) != len(w.Suites) {
		t.Fatalf("%d suites", len(bd.TestSuites))
	}
	for i, s := range w.Suites {
		in, out := 0, 0
		for _, c := range s.Cases {
			in += len(c.Inputs)
			out += len(c.Outputs)
		}
		if g := bd.TestSuites[i]; g.Method != s.Method || g.TestCases != len(s.Cases) || g.Inputs != in || g.ExpectedOutputs != out {
			t.Errorf("suite %d: %+v", i, g)
		}
	}
	var text strings.Builder
	if err := p.ReportText(&text); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	i, j := strings.Index(out, "\nmethod test suites (1)\n"), strings.Index(out, "\nExecuTorch program\n")
	if !strings.HasPrefix(out, "\nbundled program\n") || i < 0 || j < i {
		t.Errorf("text:\n%s", out)
	}
}
