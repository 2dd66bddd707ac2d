package format

import (
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
// package (reach it with a type assertion on loader.Model.Impl).
//
// Accessors return values read at Open, allocate nothing after their first
// call and are safe for concurrent use; Close is called once.
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
	// is the loader's.
	Close() error
}

// AuxTensors is implemented by a Model that carries tensors besides its
// own (a bundled program's test inputs and expected outputs): loader's
// Verify checks and reads them too.
type AuxTensors interface {
	AuxTensors() []*Tensor
}

// Config is what loader passes a format's Open besides the mapping.
type Config struct {
	// Head is the file's first bytes (up to a page), already read.
	Head []byte
	// Name is the path the model was opened from, or "" (for messages).
	Name string
	// Data are the files a caller gave to resolve external tensors
	// (loader.WithData), each of the format Registration.DataFormat names,
	// already opened. A format that takes none is never given any.
	Data []Model
	// Mmap are the caller's mapping options, for files a format opens
	// itself (the shards of a sharded checkpoint).
	Mmap []mmapfile.Option
}

// Registration is how a format plugs into package loader: a name, a sniff
// rule and an Open.
type Registration struct {
	// Name is the format's name ("pte", "gguf", ...), the value of
	// loader.Model.Format and of the command's "format".
	Name string
	// Magic says how the format's files start, for the error about a
	// file no format claims: `"ET.." at offset 4`.
	Magic string
	// Sniff reports whether the file's first bytes (up to a page; fewer for
	// a short file) are this format's. A nil Sniff makes the format a
	// fallback, tried after every other format declined the bytes.
	Sniff func(head []byte) bool
	// Open opens the model in mf, which the loader keeps and closes.
	Open func(mf *mmapfile.File, c *Config) (Model, error)
	// DataFormat names the format of the files a model of this format can
	// link with loader.WithData ("ptd" for a program); "" when it links
	// none, and loader refuses data files for it.
	DataFormat string
	// Convert, when set, lays out a file of this format holding the
	// tensors ts of src (package repack's --to): each with its bytes and
	// a row-major layout, in src's order; the data on align. What the
	// format cannot hold (a dtype it has no code for) is an error.
	Convert func(src Model, ts []*Tensor, align int64) (*Layout, error)
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

// MarshalJSON writes the fields as an object, keys in order.
func (fs Fields) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
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
