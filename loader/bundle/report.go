package bundle

import (
	"bytes"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader/format"
)

// The command's report of a bundled program is the embedded program's
// with the bundle's own section.
var _ format.Reporter = (*Program)(nil)

// summary describes the bundle a program came from: the "bundle" of the
// command's JSON report.
type summary struct {
	Version       uint32         `json:"version"`
	ProgramOffset int64          `json:"program_offset"`
	ProgramSize   int64          `json:"program_size"`
	BundleSize    int64          `json:"bundle_size"`
	TestSuites    []suiteSummary `json:"test_suites"`
}

// suiteSummary counts one method test suite's cases and values.
type suiteSummary struct {
	Method    string `json:"method"`
	TestCases int    `json:"test_cases"`
	Inputs    int    `json:"inputs"`           // values over all cases
	Outputs   int    `json:"expected_outputs"` // values over all cases
}

// summary describes the bundle.
func (p *Program) summary() *summary {
	b := p.Bundle
	off, n := b.ProgramSection()
	s := &summary{Version: b.Version(), ProgramOffset: off, ProgramSize: n, BundleSize: b.File().Len(), TestSuites: []suiteSummary{}}
	for _, ts := range b.TestSuites() {
		ss := suiteSummary{Method: ts.Method, TestCases: len(ts.Cases)}
		for _, c := range ts.Cases {
			ss.Inputs += len(c.Inputs)
			ss.Outputs += len(c.ExpectedOutputs)
		}
		s.TestSuites = append(s.TestSuites, ss)
	}
	return s
}

// ReportFields returns the embedded program's members of the command's
// JSON report and "bundle": the program's place in the bundle and the
// method test suites.
func (p *Program) ReportFields() []format.Field {
	return append(p.Program.ReportFields(), format.Field{Key: "bundle", Value: p.summary()})
}

// ReportText writes the bundle's sections (where the program lies in it,
// and the method test suites), then the embedded program's.
func (p *Program) ReportText(w io.Writer) error {
	s := p.summary()
	var b bytes.Buffer
	b.WriteString("\nbundled program\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  program\t%d bytes at offset %d of the %d-byte bundle (offsets below are the program's)\n", s.ProgramSize, s.ProgramOffset, s.BundleSize)
	fmt.Fprintf(tw, "  version\t%d\n", s.Version)
	tw.Flush()
	fmt.Fprintf(&b, "\nmethod test suites (%d)\n", len(s.TestSuites))
	if len(s.TestSuites) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  METHOD\tTEST CASES\tINPUTS\tEXPECTED OUTPUTS\n")
		for _, ts := range s.TestSuites {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", ts.Method, ts.TestCases, ts.Inputs, ts.Outputs)
		}
		tw.Flush()
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	return p.Program.ReportText(w)
}
