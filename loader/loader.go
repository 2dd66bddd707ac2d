// Package loader opens a model file of any of the formats edgeload reads —
// an ExecuTorch program (.pte), an ExecuTorch named-data file (.ptd) or an
// RTen model (.rten) — after sniffing the format from its first bytes, and
// lists its tensors and segments the same way for all three.
//
// The file is memory-mapped once and nothing but its headers and FlatBuffer
// metadata is read at Open: every tensor and segment is a zero-copy view
// ([segment.Segment]) of the mapping, faulted in when first touched. What is
// specific to a format (methods, delegates, graphs, legacy layouts) stays
// with that format's package, reachable through [Model.Program],
// [Model.DataFile] and [Model.RTen].
//
// A model may also sit inside another file: [OpenFile] and [NewSection]
// take a file the caller has open, [OpenSection] a byte range of a file,
// [OpenZipEntry] an entry stored uncompressed in a zip archive or APK, and
// Open of an ExecuTorch bundled program (.bpte) opens the program it embeds
// ([Model.Bundle]). Each is mapped in place, with offsets relative to the
// model's first byte (docs/SECTIONS.md).
//
// Errors are values: a *[FormatError] names the format, the field, the file
// offset and what was expected, and the sentinels ([ErrUnknownFormat],
// [ErrTruncated], ...) work with errors.Is.
package loader

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// FormatError describes a problem with a file's content; see
// [format.FormatError].
type FormatError = format.FormatError

// The sentinel errors of package format, re-exported for errors.Is.
var (
	ErrUnknownFormat      = format.ErrUnknownFormat
	ErrUnsupportedVersion = format.ErrUnsupportedVersion
	ErrTruncated          = format.ErrTruncated
	ErrNotFound           = format.ErrNotFound
	ErrClosed             = format.ErrClosed
	ErrMalformed          = format.ErrMalformed
)

// Format names a model file format. Its values are the names the command's
// output uses.
type Format string

// The formats Sniff recognises. Unknown is the zero value.
const (
	Unknown Format = ""
	PTE     Format = "pte"  // ExecuTorch program
	PTD     Format = "ptd"  // ExecuTorch named data (FlatTensor)
	RTen    Format = "rten" // RTen model
	// BundledProgram is an ExecuTorch bundled program (.bpte): Open opens
	// the program it embeds (a PTE Model whose Bundle is set).
	BundledProgram Format = "bpte"
)

// String returns the format's name, or "unknown".
func (f Format) String() string {
	if f == Unknown {
		return "unknown"
	}
	return string(f)
}

// SniffLen is the number of leading bytes Sniff looks at.
const SniffLen = 8

// Sniff tells the format of a file from its first bytes (at least SniffLen
// of them for a pte or ptd answer): "ET" at offset 4 is an ExecuTorch
// program, "FT" at offset 4 a named-data file, "BP" at offset 4 a bundled
// program, "RTEN" at offset 0 an RTen V2 model. Anything else is Unknown,
// which may still be a headerless RTen V1 model: Open tries that before
// giving up.
//
// The version digits are not checked here: a program with identifier
// "ET13" sniffs as PTE, and opening it reports ErrUnsupportedVersion.
func Sniff(head []byte) Format {
	if len(head) >= 4 && string(head[:4]) == rten.Magic {
		return RTen
	}
	if len(head) >= 8 {
		switch string(head[4:6]) {
		case "ET":
			return PTE
		case "FT":
			return PTD
		case "BP":
			return BundledProgram
		}
	}
	return Unknown
}

// SniffFile reads the first SniffLen bytes of the file at path and sniffs
// them (see Sniff).
func SniffFile(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return Unknown, err
	}
	defer f.Close()
	head := make([]byte, SniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Unknown, err
	}
	return Sniff(head[:n]), nil
}

// Option configures Open.
type Option func(*config)

type config struct {
	data     []string
	dataFile []*ptd.File
	dataSrc  []dataSource
	mmap     []mmapfile.Option
}

// WithData opens the named .ptd files along with a program and resolves the
// program's external tensors against them (the first file holding a key
// wins). Open fails if an external tensor cannot be resolved, or if the
// file is not a program. The Model closes these files.
func WithData(paths ...string) Option {
	return func(c *config) { c.data = append(c.data, paths...) }
}

// WithDataFiles is WithData for .ptd files the caller has already opened.
// The Model does not close them; they must stay open while it is used.
func WithDataFiles(files ...*ptd.File) Option {
	return func(c *config) { c.dataFile = append(c.dataFile, files...) }
}

// WithMmapOptions passes options (mapping mode, budget, page size) to
// mmapfile.Open, for the model file and the WithData files.
func WithMmapOptions(opts ...mmapfile.Option) Option {
	return func(c *config) { c.mmap = append(c.mmap, opts...) }
}

// Model is an opened model file of any format. Its accessors return values
// read at Open, allocate nothing and are safe for concurrent use (Close
// excepted); the slices they return are shared and must not be modified.
// Views are valid until Close.
type Model struct {
	format Format
	name   string
	mf     *mmapfile.File
	closed atomic.Bool

	prog *pte.Program
	ptd  *ptd.File
	rt   *rten.Model

	data     []*ptd.File      // every linked .ptd, in option order
	ownData  []*ptd.File      // the ones Close closes
	dataMaps []*mmapfile.File // the mappings of WithDataZipEntry/WithDataSection files

	bundle *bundle.File   // the bundle a program came from
	outer  *mmapfile.File // the bundle's mapping (mf is the program's)

	// tensors is the file's tensor list (built on first use for a
	// program); index (of a .ptd's tensors) maps names to it, built by
	// the first Tensor call. A program and an RTen model look names up in
	// their own indexes.
	tensorsOnce sync.Once
	tensors     []format.Tensor
	indexOnce   sync.Once
	index       nameindex.Index
	segments    []segment.Segment
	// named is the named data (for a .ptd, a format-neutral copy made by
	// the first call that needs it).
	namedOnce sync.Once
	named     []format.NamedData
}

// Open maps the file at path, sniffs its format (see [Sniff]), and opens it
// with the format's package. A bundled program opens as the program it
// embeds. A file that sniffs as Unknown is tried as a headerless RTen V1
// model; if that fails too, the error wraps ErrUnknownFormat.
func Open(path string, opts ...Option) (*Model, error) {
	c := collect(opts)
	mf, err := mmapfile.Open(path, c.mmap...)
	if err != nil {
		return nil, err
	}
	return newOwned(mf, path, opts)
}

// NewBytes opens the model held in b (views alias b, which must not change
// while the Model is used). WithData paths are opened from disk.
func NewBytes(b []byte, opts ...Option) (*Model, error) {
	return newOwned(mmapfile.NewBytes(b), "", opts)
}

// NewReaderAt opens the model read through r (size bytes). Nothing is
// mapped: every view is a copy read from r when asked for.
func NewReaderAt(r io.ReaderAt, size int64, opts ...Option) (*Model, error) {
	if r == nil {
		return nil, os.ErrInvalid
	}
	return newOwned(mmapfile.NewReaderAt(r, size), "", opts)
}

func collect(opts []Option) *config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return &c
}

// newOwned opens the model in mf, closing mf if that fails.
func newOwned(mf *mmapfile.File, name string, opts []Option) (*Model, error) {
	m, err := newModel(mf, name, collect(opts))
	if err != nil {
		mf.Close()
		return nil, err
	}
	return m, nil
}

// newModel opens the model in mf (which the Model then owns).
func newModel(mf *mmapfile.File, name string, c *config) (m *Model, err error) {
	// The first page, which the format package's Open takes (WithHead)
	// rather than read again.
	head, hbuf, err := region.Head(mf, nil)
	if err != nil {
		return nil, err
	}
	defer region.Put(hbuf)
	f := Sniff(head)
	if f == BundledProgram {
		return newBundled(mf, name, c)
	}
	m = &Model{format: f, name: name, mf: mf}
	if len(c.data)+len(c.dataFile)+len(c.dataSrc) > 0 && f != PTE {
		what := "not a program"
		if f != Unknown {
			what = "a " + string(f) + " file"
		}
		return nil, fmt.Errorf("loader: data files apply to .pte programs only, and %s is %s", displayName(name), what)
	}
	switch f {
	case PTE:
		if err := m.openData(c); err != nil {
			return nil, err
		}
		p, err := pte.NewFile(mf, pte.WithHead(head), pte.WithData(m.data...))
		if err != nil {
			m.closeData()
			return nil, err
		}
		m.prog = p
	case PTD:
		d, err := ptd.NewFile(mf, ptd.WithHead(head))
		if err != nil {
			return nil, err
		}
		m.ptd = d
	case RTen:
		r, err := rten.NewFile(mf, rten.WithHead(head))
		if err != nil {
			return nil, err
		}
		m.rt = r
	default:
		r, rerr := rten.NewFile(mf, rten.WithHead(head))
		if rerr != nil {
			return nil, unknownFormat(head, rerr)
		}
		m.format, m.rt = RTen, r
	}
	m.build()
	return m, nil
}

// unknownFormat builds the error for a file no format accepts.
func unknownFormat(head []byte, v1err error) error {
	hint := ""
	if len(head) >= 8 {
		hint = fmt.Sprintf("bytes 4..8 are %q", head[4:8])
	} else {
		hint = fmt.Sprintf("the file is only %d bytes long", len(head))
	}
	return fmt.Errorf("%w: %s; not a .pte (\"ET..\" at offset 4), .ptd (\"FT..\" at 4) or .rten (\"RTEN\" at 0) file, and not a headerless RTen V1 model either (%v)",
		ErrUnknownFormat, hint, v1err)
}

func displayName(name string) string {
	if name == "" {
		return "the file"
	}
	return name
}

// openData opens the WithData files.
func (m *Model) openData(c *config) error {
	for _, p := range c.data {
		d, err := ptd.Open(p, ptd.WithMmapOptions(c.mmap...))
		if err != nil {
			m.closeData()
			return fmt.Errorf("data file %s: %w", p, err)
		}
		m.data = append(m.data, d)
		m.ownData = append(m.ownData, d)
	}
	for _, s := range c.dataSrc {
		d, name, err := s.open(c.mmap)
		if err != nil {
			m.closeData()
			return fmt.Errorf("data file %s: %w", name, err)
		}
		m.data = append(m.data, d)
		m.ownData = append(m.ownData, d)
		m.dataMaps = append(m.dataMaps, d.MappedFile())
	}
	m.data = append(m.data, c.dataFile...)
	return nil
}

func (m *Model) closeData() {
	for _, d := range m.ownData {
		d.Close()
	}
	for _, mf := range m.dataMaps {
		mf.Close()
	}
	m.ownData, m.dataMaps = nil, nil
}

// build fills the format-neutral lists.
func (m *Model) build() {
	switch {
	case m.prog != nil:
		// Tensors are the program's own (TensorAt); the []format.Tensor
		// copy is made by the first Tensors call.
		m.segments = m.prog.Segments()
		m.named = m.prog.NamedData()
	case m.ptd != nil:
		m.tensors = m.ptd.Tensors()
		m.segments = m.ptd.Segments()
	case m.rt != nil:
		m.tensors = m.rt.Tensors()
		m.segments = m.rt.Segments()
	}
}

// allTensors returns the tensor list, building it on first use for a
// program.
func (m *Model) allTensors() []format.Tensor {
	if m.prog != nil {
		m.tensorsOnce.Do(func() {
			pts := m.prog.Tensors()
			m.tensors = make([]format.Tensor, len(pts))
			for i := range pts {
				m.tensors[i] = pts[i].Tensor
			}
		})
	}
	return m.tensors
}

// Close unmaps the file and closes the data files WithData opened. Views
// handed out become invalid. Close is idempotent.
func (m *Model) Close() error {
	if m == nil || m.closed.Swap(true) {
		return nil
	}
	var buf [4]error // room for the usual errors without an allocation
	errs := buf[:0]
	switch {
	case m.prog != nil:
		errs = append(errs, m.prog.Close())
	case m.ptd != nil:
		errs = append(errs, m.ptd.Close())
	case m.rt != nil:
		errs = append(errs, m.rt.Close())
	}
	for _, d := range m.ownData {
		errs = append(errs, d.Close())
	}
	for _, mf := range m.dataMaps {
		errs = append(errs, mf.Close())
	}
	errs = append(errs, m.mf.Close())
	if m.outer != nil {
		errs = append(errs, m.bundle.Close(), m.outer.Close())
	}
	return errors.Join(errs...)
}

// Format returns the file's format: PTE, PTD or RTen.
func (m *Model) Format() Format { return m.format }

// Name returns the path the model was opened from ("" for NewBytes and
// NewReaderAt).
func (m *Model) Name() string { return m.name }

// Size returns the size in bytes of the model: of its file, of its section
// (OpenSection, OpenZipEntry), or of the program a bundle embeds.
func (m *Model) Size() int64 { return m.mf.Len() }

// File returns the mapped file every view of the model points into (a
// resolved external tensor's view points into its .ptd instead).
func (m *Model) File() *mmapfile.File { return m.mf }

// Tensors returns the tensors the file holds or names, in the format's
// order: for a program each constant, mutable or external tensor value of
// each method; for a .ptd each entry with a tensor layout; for an RTen model
// every constant of every graph, subgraphs included. Do not modify the
// slice. For a program, the first call copies the program's tensors into
// it; [Model.NumTensors] and [Model.TensorAt] give the same tensors without
// the copy, and [Model.TensorData] their bytes without building them.
func (m *Model) Tensors() []format.Tensor { return m.allTensors() }

// NumTensors returns the number of tensors (len of Tensors). It builds
// nothing.
func (m *Model) NumTensors() int {
	if m.prog != nil {
		return m.prog.NumTensors()
	}
	return len(m.tensors)
}

// TensorData returns the bytes of tensor i, 0 <= i < NumTensors: the same
// view as TensorAt(i).Data. For a program it does not build the tensor list
// (names, shapes; pte.Program.TensorData): a runtime that wants a data
// pointer for every weight pays for nothing else. It allocates nothing.
func (m *Model) TensorData(i int) segment.Segment {
	if m.prog != nil {
		return m.prog.TensorData(i)
	}
	return m.tensors[i].Data
}

// AppendTensorBytes appends the bytes of every tensor, in order, to dst and
// returns it: element i is TensorData(i).Bytes(). For a program mapped
// whole the views come from one loop over one mapping
// (pte.Program.AppendTensorBytes): the cheapest way to a data pointer for
// every weight. It allocates only when dst has too little room; on error it
// returns the views taken so far.
func (m *Model) AppendTensorBytes(dst [][]byte) ([][]byte, error) {
	if m.prog != nil {
		return m.prog.AppendTensorBytes(dst)
	}
	for i := range m.tensors {
		b, err := m.tensors[i].Data.Bytes()
		if err != nil {
			return dst, err
		}
		dst = append(dst, b)
	}
	return dst, nil
}

// TensorAt returns tensor i of Tensors, 0 <= i < NumTensors, without
// copying or allocating: for a program it points into the program's own
// tensor (the one pte.Program.Tensors holds).
func (m *Model) TensorAt(i int) *format.Tensor {
	if m.prog != nil {
		return &m.prog.Tensors()[i].Tensor
	}
	return &m.tensors[i]
}

// Tensor returns the first tensor with the given name. The first call
// builds the name index; later calls allocate nothing.
func (m *Model) Tensor(name string) (*format.Tensor, bool) {
	if m.prog != nil {
		t, ok := m.prog.Tensor(name)
		if !ok {
			return nil, false
		}
		return &t.Tensor, true
	}
	if m.rt != nil {
		return m.rt.Tensor(name)
	}
	m.indexOnce.Do(func() {
		m.index = nameindex.New(len(m.tensors), func(i int) string { return m.tensors[i].Name })
	})
	i, ok := m.index.Lookup(name)
	if !ok {
		return nil, false
	}
	return &m.tensors[i], true
}

// Segments returns the file's segments, with absolute offsets: a program's
// or a .ptd's segments in file order; for an RTen V2 model one segment, the
// tensor data section to the end of the file; none for RTen V1.
func (m *Model) Segments() []segment.Segment { return m.segments }

// NamedData returns the key-addressed blobs of a program or a .ptd (nil for
// RTen).
func (m *Model) NamedData() []format.NamedData {
	if m.ptd != nil {
		m.namedOnce.Do(func() {
			nd := m.ptd.NamedData()
			m.named = make([]format.NamedData, len(nd))
			for i := range nd {
				m.named[i] = nd[i].NamedData
			}
		})
	}
	return m.named
}

// Program returns the ExecuTorch program, or nil if the file is not one.
// Link its external tensors with WithData or WithDataFiles at Open: a later
// Program().Link is not reflected in the Model's Tensors.
func (m *Model) Program() *pte.Program { return m.prog }

// DataFile returns the .ptd file, or nil if the file is not one.
func (m *Model) DataFile() *ptd.File { return m.ptd }

// RTen returns the RTen model, or nil if the file is not one.
func (m *Model) RTen() *rten.Model { return m.rt }

// DataFiles returns the .ptd files a program was linked to (WithData and
// WithDataFiles), in option order.
func (m *Model) DataFiles() []*ptd.File { return m.data }
