package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// inspectAbout is inspect's help text; the use orders are the registered
// formats'.
func inspectAbout() string {
	var orders strings.Builder
	formatTable(&orders, func(r format.Registration) string { return r.Order })
	return fmt.Sprintf(inspectText, orders.String())
}

const inspectText = `Show what a model file holds: its format and header, its segments with
their sizes and alignment, what the format holds (a program's methods and
delegates, an RTen graph, GGUF metadata, TFLite subgraphs and signatures,
...), every tensor, named data, and warnings such as segments not aligned
to the page size. Offsets are absolute file offsets.

External tensors of a .pte are resolved against the .ptd files given with
--data (repeatable); their offsets are then offsets in that file.

--order adds the order in which the model uses its weights, unused ones
last, as each format defines it:

%s
The JSON always has it as "use_order": method or subgraph name to tensor
names, with "" the key of a format's one order.

FILE (and --data) may be an entry stored uncompressed in a zip archive or
APK, ARCHIVE!/ENTRY: offsets are then relative to the entry. A FILE that
is no model but a zip archive (a MediaPipe .task bundle, an APK) is listed:
its files, and the ARCHIVE!/ENTRY that opens each stored model. A bundled
program (.bpte) shows the program it embeds, with offsets relative to the
program, and its method test suites.

Everything that can fail on a bad file (opening it, each tensor's SHA-256,
the use orders) happens before anything is written: such a file gives
exit status 1, one line on stderr and no output. The JSON is written as it
is produced, tensor by tensor, so an error writing standard output (a
closed pipe, a full disk) can leave part of it behind, with exit status 1.`

func runInspect(c *cli, args []string) int {
	fs := newFlags(lookup("inspect"), inspectAbout())
	asJSON := fs.Bool("json", false, "print JSON: format, file_size, segments, named_data, tensors, ...")
	sums := fs.Bool("sha256", false, "add the SHA-256 of each tensor's bytes (reads every tensor)")
	order := fs.Bool("order", false, "add each method's weights in the order it first uses them (JSON: use_order, always)")
	var data stringList
	fs.Var(&data, "data", "a `FILE.ptd` (or ARCHIVE!/ENTRY) holding external tensors (repeatable)")
	pos, code, ok := parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(c, fs, fmt.Sprintf("want one FILE, got %d arguments", len(pos)))
	}
	path := pos[0]
	m, err := openModel(path, data)
	if err != nil {
		if errors.Is(err, loader.ErrUnknownFormat) && len(data) == 0 {
			if ok, werr := inspectArchive(c.stdout, path, *asJSON); ok && werr == nil {
				return exitOK
			} else if ok {
				c.errorf("writing output: %v", werr)
				return exitInvalid
			}
		}
		c.fileError(path, err)
		return exitInvalid
	}
	defer m.Close()
	in, err := inspect(m, *sums, *asJSON)
	if err != nil {
		c.fileError(path, err)
		return exitInvalid
	}
	if *asJSON {
		err = in.writeJSON(c.stdout)
	} else {
		err = in.writeText(c.stdout, path, *order)
	}
	if err != nil {
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

// writeText writes the human-readable report: the file, its format and
// size, the format's own sections (format.Reporter), the segments, tensors
// and named data, the warnings and, with order, the use orders. It
// returns the first error writing w.
func (in *inspection) writeText(w io.Writer, path string, order bool) error {
	ew := &errWriter{w: w}
	bw := bufio.NewWriterSize(ew, 64<<10)
	m := in.m
	fileHeader(bw, path, m.Format().String(), m.Size())
	bw.Write(in.text)

	section(bw, "segments", len(in.segments))
	if len(in.segments) > 0 {
		tw := newTable(bw)
		fmt.Fprintf(tw, "  INDEX\tOFFSET\tSIZE\tALIGN\tHOLDS\n")
		for _, s := range in.segments {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\n", s.Index, s.Offset, bytesName(s.Size), alignName(s), orDash(s.Kind))
		}
		tw.Flush()
	}

	n := m.NumTensors()
	section(bw, "tensors", n)
	if n > 0 {
		tw := newTable(bw)
		head := "  NAME\tDTYPE\tSHAPE\tLOCATION\tOFFSET\tNBYTES"
		if in.sums != nil {
			head += "\tSHA256"
		}
		fmt.Fprintln(tw, head)
		var total int64
		for i := range n {
			t := in.tensorRep(i)
			off := "-"
			if t.Offset != nil {
				off = fmt.Sprint(*t.Offset)
			}
			loc := t.Location
			if t.DataFile != "" {
				loc += " (" + t.DataFile + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%v\t%s\t%s\t%d", t.Name, t.DType, t.Shape, loc, off, t.NBytes) // a shape as [2 3 4]
			if in.sums != nil {
				fmt.Fprintf(tw, "\t%s", t.SHA256)
			}
			fmt.Fprintln(tw)
			total += t.NBytes
		}
		tw.Flush()
		fmt.Fprintf(bw, "  sum of nbytes: %s\n", bytesName(total))
	}

	if named := m.NamedData(); len(named) > 0 {
		section(bw, "named data", len(named))
		tw := newTable(bw)
		fmt.Fprintf(tw, "  KEY\tSEGMENT\tOFFSET\tSIZE\n")
		for _, nd := range named {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\n", nd.Key, nd.Segment, nd.Data.Offset(), nd.Data.Len())
		}
		tw.Flush()
	}

	if len(in.warnings) > 0 {
		section(bw, "warnings", len(in.warnings))
		for _, s := range in.warnings {
			fmt.Fprintf(bw, "  %s\n", s)
		}
	}
	if order {
		printUseOrder(bw, m, in.orders)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return ew.err
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// fileHeader writes the table of a file's path, format and size.
func fileHeader(w io.Writer, path, format string, size int64) {
	tw := newTable(w)
	fmt.Fprintf(tw, "file\t%s\nformat\t%s\nsize\t%d bytes (%s)\n", path, format, size, sizeName(size))
	tw.Flush()
}

// section prints a blank line and a section title with a count.
func section(w io.Writer, title string, n int) {
	fmt.Fprintf(w, "\n%s (%d)\n", title, n)
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
