package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader"
)

const inspectAbout = `Show what a model file holds: its format and header, its segments with
their sizes and alignment, methods and delegates (.pte) or the graph (.rten),
every tensor, named data, and warnings such as segments not aligned to the
page size. Offsets are absolute file offsets.

External tensors of a .pte are resolved against the .ptd files given with
--data (repeatable); their offsets are then offsets in that file.

--order adds, for each method of a .pte, its weights in the order the
method's instructions first use them (unused ones last); for a .rten the
constants in the order the graph's operators use them; for a .ptd the
tensors in key order. The JSON always has it as "use_order": method name
to tensor names, with "" the key of a .rten's or .ptd's one order.`

func runInspect(c *cli, args []string) int {
	fs := newFlags(lookup("inspect"), inspectAbout)
	asJSON := fs.Bool("json", false, "print JSON: format, file_size, segments, named_data, tensors, ...")
	sums := fs.Bool("sha256", false, "add the SHA-256 of each tensor's bytes (reads every tensor)")
	order := fs.Bool("order", false, "add each method's weights in the order it first uses them (JSON: use_order, always)")
	var data stringList
	fs.Var(&data, "data", "a `FILE.ptd` holding external tensors (repeatable)")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, fmt.Sprintf("want one FILE, got %d arguments", len(pos)))
	}
	path := pos[0]
	m, err := loader.Open(path, loader.WithData(data...))
	if err != nil {
		c.fileError(path, err)
		return exitInvalid
	}
	defer m.Close()
	r, err := buildReport(m, *sums)
	if err != nil {
		c.fileError(path, err)
		return exitInvalid
	}
	var buf bytes.Buffer
	if *asJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			c.errorf("%s: %v", path, err)
			return exitInvalid
		}
		buf.Write(b)
		buf.WriteByte('\n')
	} else {
		printReport(&buf, path, r, *sums)
		if *order {
			printUseOrder(&buf, m, r.UseOrder)
		}
	}
	if _, err := c.stdout.Write(buf.Bytes()); err != nil {
		c.errorf("writing output: %v", err)
		return exitInvalid
	}
	return exitOK
}

// fileError prints an error about a file as one line, naming the file
// unless the error already does (as os errors do).
func (c *cli) fileError(path string, err error) {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		c.errorf("%v", err)
		return
	}
	c.errorf("%s: %v", path, err)
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

// formatNames are the long names of the formats for the text output.
var formatNames = map[string]string{
	"pte":  "ExecuTorch program",
	"ptd":  "ExecuTorch named data (FlatTensor)",
	"rten": "RTen model",
}

// printReport writes the human-readable summary.
func printReport(w io.Writer, path string, r *report, sums bool) {
	kind := formatNames[r.Format]
	if r.Legacy {
		kind += ", legacy 2025 layout"
	}
	tw := newTable(w)
	fmt.Fprintf(tw, "file\t%s\n", path)
	fmt.Fprintf(tw, "format\t%s (%s)\n", r.Format, kind)
	fmt.Fprintf(tw, "size\t%d bytes (%s)\n", r.FileSize, sizeName(r.FileSize))
	tw.Flush()

	section(w, "header", len(r.Header))
	tw = newTable(w)
	for _, f := range r.Header {
		fmt.Fprintf(tw, "  %s\t%v\n", strings.ReplaceAll(f.Name, "_", " "), f.Value)
	}
	tw.Flush()

	if r.Metadata != nil {
		section(w, "metadata", len(r.Metadata))
		tw = newTable(w)
		for _, f := range r.Metadata {
			fmt.Fprintf(tw, "  %s\t%v\n", strings.ReplaceAll(f.Name, "_", " "), f.Value)
		}
		tw.Flush()
	}

	section(w, "segments", len(r.Segments))
	if len(r.Segments) > 0 {
		tw = newTable(w)
		fmt.Fprintf(tw, "  INDEX\tOFFSET\tSIZE\tALIGN\tHOLDS\n")
		for _, s := range r.Segments {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\n", s.Index, s.Offset, bytesName(s.Size), alignName(s), orDash(s.Kind))
		}
		tw.Flush()
	}

	if r.Methods != nil {
		section(w, "methods", len(r.Methods))
		tw = newTable(w)
		fmt.Fprintf(tw, "  NAME\tVALUES\tINPUTS\tOUTPUTS\tOPERATORS\tINSTRUCTIONS\tDELEGATES\n")
		for _, m := range r.Methods {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\n", m.Name, m.Values, m.Inputs, m.Outputs, m.Operators, m.Instructions, m.Delegates)
		}
		tw.Flush()
	}
	if r.Delegates != nil {
		section(w, "delegates", len(r.Delegates))
		tw = newTable(w)
		fmt.Fprintf(tw, "  METHOD\tINDEX\tBACKEND\tBLOB\tOFFSET\tSIZE\tCOMPILE SPECS\n")
		for _, d := range r.Delegates {
			where := d.Location
			if d.Segment != nil {
				where = fmt.Sprintf("segment %d", *d.Segment)
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%d\t%s\t%d\n", d.Method, d.Index, d.ID, where, d.Offset, sizeName(d.Size), d.CompileSpecs)
		}
		tw.Flush()
	}
	if g := r.Graph; g != nil {
		section(w, "graph", -1)
		tw = newTable(w)
		fmt.Fprintf(tw, "  nodes\t%d (%d operators, %d constants, %d values)\n", g.Nodes, g.Operators, g.Constants, g.Values)
		fmt.Fprintf(tw, "  inputs, outputs\t%d, %d\n", g.Inputs, g.Outputs)
		fmt.Fprintf(tw, "  subgraphs\t%d\n", g.Subgraphs)
		if len(g.OpTypes) > 0 {
			fmt.Fprintf(tw, "  operators\t%s\n", opSummary(g.OpTypes))
		}
		tw.Flush()
	}

	section(w, "tensors", len(r.Tensors))
	if len(r.Tensors) > 0 {
		tw = newTable(w)
		head := "  NAME\tDTYPE\tSHAPE\tLOCATION\tOFFSET\tNBYTES"
		if sums {
			head += "\tSHA256"
		}
		fmt.Fprintln(tw, head)
		var total int64
		for _, t := range r.Tensors {
			off := "-"
			if t.Offset != nil {
				off = fmt.Sprint(*t.Offset)
			}
			loc := t.Location
			if t.DataFile != "" {
				loc += " (" + t.DataFile + ")"
			}
			line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%d", t.Name, t.DType, shapeName(t.Shape), loc, off, t.NBytes)
			if sums {
				line += "\t" + t.SHA256
			}
			fmt.Fprintln(tw, line)
			total += t.NBytes
		}
		tw.Flush()
		fmt.Fprintf(w, "  sum of nbytes: %s\n", bytesName(total))
	}

	if len(r.NamedData) > 0 || r.Format != "rten" {
		section(w, "named data", len(r.NamedData))
		if len(r.NamedData) > 0 {
			tw = newTable(w)
			fmt.Fprintf(tw, "  KEY\tSEGMENT\tOFFSET\tSIZE\n")
			for _, n := range r.NamedData {
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", n.Key, n.Segment, n.Offset, n.Size)
			}
			tw.Flush()
		}
	}

	if len(r.Warnings) > 0 {
		section(w, "warnings", len(r.Warnings))
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// section prints a blank line and a section title, with a count when n >= 0.
func section(w io.Writer, title string, n int) {
	if n >= 0 {
		fmt.Fprintf(w, "\n%s (%d)\n", title, n)
	} else {
		fmt.Fprintf(w, "\n%s\n", title)
	}
}

// alignName shows a segment's alignment; an empty segment has none to speak
// of, and offset 0 is aligned to everything.
func alignName(s segmentRep) string {
	if s.Size == 0 {
		return "-"
	}
	if s.Align >= maxAlign {
		return fmt.Sprintf(">=%d", maxAlign)
	}
	return fmt.Sprint(s.Align)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bytesName writes a byte count as "39216 (38.3 KiB)", or "512" below 1 KiB.
func bytesName(n int64) string {
	if n < 1024 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d (%s)", n, sizeName(n))
}

// shapeName writes a shape as [2 3 4]; a scalar as [].
func shapeName(s []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}
