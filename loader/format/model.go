package format

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Model is what a format package hands to package loader for one opened
// file: its tensors, segments and named data in the shared vocabulary, the
// order in which a runtime uses the tensors, and the checks Open leaves for
// later. loader.Model, package stream, package repack and the command work
// through it alone; what only one format has stays with that format's
// package (reach it with loader.As, or a type assertion on
// loader.Model.Impl). Package formattest checks that a Model keeps this
// contract.
//
// Accessors return values read at Open, allocate nothing after their first
// call and are safe for concurrent use. Close may be called more than
// once: the calls after the first do nothing and return nil.
type Model interface {
	// NumTensors returns the number of tensors.
	NumTensors() int
	// TensorAt returns tensor i, 0 <= i < NumTensors; the pointer stays
	// valid and unchanged until Close.
	TensorAt(i int) *Tensor
	// TensorData returns the bytes of tensor i (TensorAt(i).Data), without
	// building anything a caller did not ask for.
	TensorData(i int) segment.Segment
	// Lookup returns the index of the first tensor named name.
	Lookup(name string) (int, bool)
	// Segments returns the file's segments, absolute offsets, in file order.
	Segments() []segment.Segment
	// NamedData returns the key-addressed blobs that are not tensors.
	NamedData() []NamedData
	// Groups names the units a use order is given for (a program's
	// methods, a TFLite model's subgraphs), in file order; nil when the
	// format has one order, reached as group "".
	Groups() []string
	// UseOrder returns indices of tensors in the order the group first
	// uses them, each index once, the unused ones last; group "" gives
	// every group's order in turn. A group the model lacks wraps
	// ErrNotFound.
	UseOrder(group string) ([]int, error)
	// Check makes the checks Open left for later (a method's instructions,
	// checked at first use otherwise) without reading any tensor's bytes.
	Check() error
	// MappedFile returns the mapping the views point into: the one Open
	// was given, or a section of it (the program inside a bundle).
	MappedFile() *mmapfile.File
	// Close releases what the format opened; the mapping Open was given
	// is the loader's. It is idempotent.
	Close() error
}

// TensorLister is implemented by a Model whose tensors are a
// []Tensor already: loader.Model.Tensors returns the slice instead of
// building a copy.
type TensorLister interface {
	Tensors() []Tensor
}

// TensorBytesAppender is implemented by a Model with a faster way than
// TensorData(i).Bytes() for each i (a program mapped whole: one loop over
// one mapping): AppendTensorBytes appends every tensor's bytes to dst, in
// order, and on error returns the views taken so far.
type TensorBytesAppender interface {
	AppendTensorBytes(dst [][]byte) ([][]byte, error)
}

// Wrapper is implemented by a Model that is another format's model inside
// a container of its own (the program a bundled program embeds): Unwrap
// returns that model, so that loader.As finds it.
type Wrapper interface {
	Unwrap() Model
}

// AuxTensors is implemented by a Model that carries tensors besides its
// own (a bundled program's test inputs and expected outputs): loader's
// Verify checks and reads them too.
type AuxTensors interface {
	AuxTensors() []*Tensor
}

// Reporter is implemented by a format's Model that has facts of its own to
// show (a program's methods, GGUF metadata): the command's inspect adds
// Fields to its JSON object and prints Text under its generic listing.
type Reporter interface {
	// ReportFields returns extra members of the JSON report, in order,
	// with keys that are not the generic ones (format, file_size,
	// segments, named_data, tensors, use_order).
	ReportFields() []Field
	// ReportText writes the human-readable section.
	ReportText(w io.Writer) error
}

// Field is one member of a JSON report: Value is marshalled with
// encoding/json.
type Field struct {
	Key   string
	Value any
}

// Fields marshals as a JSON object with its members in order.
type Fields []Field

// MarshalJSON writes the fields as an object, keys in order, with <, >
// and & as they are (json.Marshal escapes them, and the escapes would
// survive an Encoder that does not).
func (fs Fields) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(f.Key); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		if err := enc.Encode(f.Value); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteText writes fs as a section of a text report: a blank line, the
// title, then a line per field, the key's underscores as spaces, the
// values aligned.
func (fs Fields) WriteText(w io.Writer, title string) error {
	if _, err := fmt.Fprintf(w, "\n%s\n", title); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range fs {
		fmt.Fprintf(tw, "  %s\t%v\n", strings.ReplaceAll(f.Key, "_", " "), f.Value)
	}
	return tw.Flush()
}

// Warner is implemented by a Model that has warnings about a file that
// loads (an RTen graph without outputs, unresolved external tensors).
type Warner interface {
	Warnings() []string
}

// SegmentKinder is implemented by a Model that can say what each of its
// segments holds ("constant", "delegate+named_data", "tensor_data").
type SegmentKinder interface {
	SegmentKinds() []string
}

// UsedOrderer is implemented by a Model whose use order ends with tensors
// no operator reads that a report should leave out (a TFLite subgraph's
// unread constants): UsedOrder is UseOrder without them.
type UsedOrderer interface {
	UsedOrder(group string) ([]int, error)
}

// BlobUser is implemented by a Model whose groups read blobs besides their
// tensors, before them (a program's method hands its delegates' payloads
// to their backends at load): stream reads them first.
type BlobUser interface {
	GroupBlobs(group string) []Blob
}

// Blob is a byte range a group reads that is not a tensor.
type Blob struct {
	Name  string          // e.g. "delegate forward/0"
	Index int             // the format's own index of it (a delegate's)
	Data  segment.Segment // its bytes
}

// SegmentIndexer is implemented by a Model whose segments have indices of
// their own (a TFLite model's buffers): the report gives segment i the
// index SegmentIndex(i) instead of its position.
type SegmentIndexer interface {
	SegmentIndex(i int) int
}

// Relayouter is implemented by a Model that can be written anew with its
// data on an alignment boundary and the same meaning (package repack does
// the writing, reads the result back and compares it with the input).
type Relayouter interface {
	// Relayout lays the file out as o asks, with every segment (and what
	// else the format aligns) the format lets it place on o.Align.
	Relayout(o RelayoutOptions) (*Layout, error)
}

// RelayoutOptions say how to lay a file out anew.
type RelayoutOptions struct {
	// Align is the boundary, a power of two, every segment starts on (a
	// GGUF tensor, a TFLite buffer, a safetensors data buffer, ...), as an
	// absolute offset in the output.
	Align int64
	// TensorAlign, when not 0, also places every tensor inside its segment
	// on that boundary where the format lets it (several tensors share a
	// segment).
	TensorAlign int64
	// DataFile, when set, asks a format that links data files to move
	// its constant tensors to a new data file written at that path: the
	// Layout's File with Link set.
	DataFile string
	// Upgrade asks for the format's newest version where it has several
	// (an RTen V1 model is written as V2); others ignore it.
	Upgrade bool
}

// Layout is a file laid out anew: Head first, then each piece's bytes at
// its offset (pieces in offset order, not overlapping Head or each
// other), zeros between them and up to Size. Files are the other files
// the output is made of, written with it.
type Layout struct {
	Head   []byte
	Pieces []Piece
	Size   int64
	Files  []LayoutFile
}

// LayoutFile is a file of an output besides its main one.
type LayoutFile struct {
	// Name is where it is written: a relative name in the main output's
	// directory (a sharded checkpoint's shards, which its index names),
	// an absolute path as is.
	Name string
	// Link says the main output links it as a data file (a program's
	// DataFile); others it finds by itself.
	Link bool
	*Layout
}

// Piece is a range of the old file (Data) and where it goes in the new
// one.
type Piece struct {
	Offset int64
	Data   segment.Segment
}

// AlignUp returns x rounded up to a multiple of a (a > 0), for a
// Relayouter's offsets.
func AlignUp(x, a int64) int64 { return (x + a - 1) / a * a }

// MultiFile is implemented by a Model whose views point into files other
// than MappedFile (a sharded checkpoint's shards): Files lists them.
type MultiFile interface {
	Files() []*mmapfile.File
}

// SizeName writes a byte count as "512 B", "16 KiB" or "1.3 MiB".
func SizeName(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	suffix := "KMGTPE"[exp : exp+1]
	if n%div == 0 {
		return fmt.Sprintf("%d %siB", n/div, suffix)
	}
	return fmt.Sprintf("%.1f %siB", float64(n)/float64(div), suffix)
}
