package pte

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader/format"
)

// The optional interfaces of package format a program implements for the
// command's report.
var (
	_ format.Reporter      = (*Program)(nil)
	_ format.Warner        = (*Program)(nil)
	_ format.SegmentKinder = (*Program)(nil)
)

// methodSummary counts what one method holds: the "methods" of the
// command's JSON report.
type methodSummary struct {
	Name         string `json:"name"`
	Values       int    `json:"values"`
	Inputs       int    `json:"inputs"`
	Outputs      int    `json:"outputs"`
	Operators    int    `json:"operators"`
	Chains       int    `json:"chains"`
	Instructions int    `json:"instructions"`
	Delegates    int    `json:"delegates"`
}

// delegateSummary is where one delegate's blob lives: the "delegates" of
// the command's JSON report. Segment is nil for an inline blob.
type delegateSummary struct {
	Method       string `json:"method"`
	Index        int    `json:"index"`
	ID           string `json:"id"`
	Location     string `json:"location"`
	Segment      *int   `json:"segment"`
	Offset       int64  `json:"offset"`
	Size         int64  `json:"size"`
	CompileSpecs int    `json:"compile_specs"`
}

// headerFields returns the header as the report shows it, in order: the
// prefix's fields, the extended header's when present, the schema version
// and whether constants use the legacy constant buffer.
func (p *Program) headerFields() format.Fields {
	h := p.Header()
	fs := format.Fields{
		{Key: "identifier", Value: h.Identifier},
		{Key: "root_offset", Value: h.RootOffset},
		{Key: "extended_header", Value: h.Extended},
	}
	if h.Extended {
		fs = append(fs,
			format.Field{Key: "extended_header_length", Value: h.Length},
			format.Field{Key: "program_size", Value: h.ProgramSize},
			format.Field{Key: "segment_base_offset", Value: h.SegmentBase})
		if h.SegmentDataSizeKnown {
			fs = append(fs, format.Field{Key: "segment_data_size", Value: h.SegmentDataSize})
		}
	} else {
		fs = append(fs, format.Field{Key: "program_size", Value: h.ProgramSize})
	}
	return append(fs,
		format.Field{Key: "version", Value: p.Version()},
		format.Field{Key: "legacy_constant_buffer", Value: p.Legacy()})
}

// methodSummaries counts what each method holds, in method order.
func (p *Program) methodSummaries() []methodSummary {
	var out []methodSummary
	for _, me := range p.Methods() {
		s := methodSummary{Name: me.Name, Values: me.NumValues(), Inputs: len(me.Inputs), Outputs: len(me.Outputs),
			Operators: len(me.Operators), Chains: len(me.Chains), Delegates: len(me.Delegates)}
		for _, c := range me.Chains {
			s.Instructions += c.Instructions
		}
		out = append(out, s)
	}
	return out
}

// delegateSummaries describes each delegate's blob, in Delegates order.
func (p *Program) delegateSummaries() []delegateSummary {
	var out []delegateSummary
	for _, d := range p.Delegates() {
		s := delegateSummary{Method: d.Method, Index: d.Index, ID: d.ID, Location: d.Location.String(),
			Offset: d.Data.Offset(), Size: d.Data.Len(), CompileSpecs: len(d.CompileSpecs)}
		if d.Location == DelegateSegment {
			i := d.SegmentIndex
			s.Segment = &i
		}
		out = append(out, s)
	}
	return out
}

// ReportFields returns the program's members of the command's JSON report:
// "header" (headerFields), and "methods" and "delegates" when the program
// has any.
func (p *Program) ReportFields() []format.Field {
	fs := []format.Field{{Key: "header", Value: p.headerFields()}}
	if ms := p.methodSummaries(); len(ms) > 0 {
		fs = append(fs, format.Field{Key: "methods", Value: ms})
	}
	if ds := p.delegateSummaries(); len(ds) > 0 {
		fs = append(fs, format.Field{Key: "delegates", Value: ds})
	}
	return fs
}

// ReportText writes the program's sections of the command's text report:
// the header under the title "ExecuTorch program", then the methods and
// the delegates tables.
func (p *Program) ReportText(w io.Writer) error {
	var b bytes.Buffer
	p.headerFields().WriteText(&b, "ExecuTorch program")
	if ms := p.methodSummaries(); len(ms) > 0 {
		fmt.Fprintf(&b, "\nmethods (%d)\n", len(ms))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  NAME\tVALUES\tINPUTS\tOUTPUTS\tOPERATORS\tINSTRUCTIONS\tDELEGATES\n")
		for _, m := range ms {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\n", m.Name, m.Values, m.Inputs, m.Outputs, m.Operators, m.Instructions, m.Delegates)
		}
		tw.Flush()
	}
	if ds := p.delegateSummaries(); len(ds) > 0 {
		fmt.Fprintf(&b, "\ndelegates (%d)\n", len(ds))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  METHOD\tINDEX\tBACKEND\tBLOB\tOFFSET\tSIZE\tCOMPILE SPECS\n")
		for _, d := range ds {
			where := d.Location
			if d.Segment != nil {
				where = fmt.Sprintf("segment %d", *d.Segment)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t%s\t%d\n", d.Method, d.Index, d.ID, where, d.Offset, format.SizeName(d.Size), d.CompileSpecs)
		}
		tw.Flush()
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Warnings says how many external tensors are not resolved, if any.
func (p *Program) Warnings() []string {
	if total, unresolved := p.External(); unresolved > 0 {
		return []string{fmt.Sprintf("%d of %d external tensors are not resolved: pass the .ptd file that holds them with --data", unresolved, total)}
	}
	return nil
}

// SegmentKinds says what each segment holds, from the tensors, delegates
// and named data that point into it: "constant", "mutable", "delegate",
// "named_data", joined with "+"; "" for a segment nothing points into.
func (p *Program) SegmentKinds() []string {
	kinds := make([]string, len(p.Segments()))
	add := func(i int, k string) {
		if i < 0 || i >= len(kinds) || strings.Contains(kinds[i], k) {
			return
		}
		if kinds[i] != "" {
			kinds[i] += "+"
		}
		kinds[i] += k
	}
	ts := p.Tensors()
	for i := range ts {
		switch ts[i].Location {
		case format.LocSegment:
			add(ts[i].Segment, "constant")
		case format.LocMutable:
			add(ts[i].Segment, "mutable")
		}
	}
	for _, d := range p.Delegates() {
		if d.Location == DelegateSegment {
			add(d.SegmentIndex, "delegate")
		}
	}
	for _, nd := range p.NamedData() {
		add(nd.Segment, "named_data")
	}
	return kinds
}
