// Package loader opens a model file of any format edgeload reads, after
// sniffing the format from its first bytes, and lists its tensors,
// segments and named data the same way for all of them.
//
// Each format is a package of its own that implements [format.Model] and
// registers itself with [format.Register] when it is imported, as image/png
// does with package image. Package loader imports none of them: a program
// imports the formats it reads, and package formats imports every built-in
// one,
//
//	import _ "github.com/edgeload/edgeload/formats"
//
// What is specific to a format (methods, delegates, graphs, metadata) stays
// with that format's package, reached through [As] or [Model.Impl].
//
// The file is memory-mapped once and nothing but its headers and metadata
// is read at Open: every tensor and segment is a zero-copy view
// ([segment.Segment]) of the mapping, faulted in when first touched.
//
// Where the bytes live is package mmapfile's question: [Open] takes a
// path, [New] any mapping (a descriptor, a section of a file, a stored zip
// entry, a byte slice); [WithZipEntry] and [WithSection] open a model
// inside a file in place, with offsets relative to the model's first byte
// (docs/SECTIONS.md).
//
// Errors are values: a *[FormatError] names the format, the field, the file
// offset and what was expected, and the sentinels ([ErrUnknownFormat],
// [ErrTruncated], ...) work with errors.Is.
package loader

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/region"
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
	ErrCompressed         = format.ErrCompressed
)

// Format names a model file format: the Name of its [format.Registration]
// ("pte", "gguf", ...; [format.Registered] lists them), and the "format"
// of the command's output.
type Format string

// Unknown is the Format of bytes no registered format claims.
const Unknown Format = ""

// String returns the format's name, or "unknown".
func (f Format) String() string {
	if f == Unknown {
		return "unknown"
	}
	return string(f)
}

// LinksData reports whether models of the format link data files
// (WithData): a program links .ptd files.
func (f Format) LinksData() bool {
	r, ok := registration(string(f))
	return ok && r.DataFormat != ""
}

// SniffLen is the number of leading bytes Sniff needs to tell the built-in
// formats apart (a .ptn package needs its first zip header, up to a page);
// fewer may still answer.
const SniffLen = 8

// registration returns the registered format of the given name.
func registration(name string) (format.Registration, bool) {
	for _, r := range format.Registered() {
		if r.Name == name {
			return r, true
		}
	}
	return format.Registration{}, false
}

// sniff returns the registration that claims head.
func sniff(head []byte) (format.Registration, bool) {
	for _, r := range format.Registered() {
		if r.Sniff != nil && r.Sniff(head) {
			return r, true
		}
	}
	return format.Registration{}, false
}

// Sniff tells the format of a file from its first bytes (at least
// SniffLen of them, or up to a page for formats that need more), with the
// Sniff of every registered format: "ET" at offset 4 is an ExecuTorch
// program, "GGUF" at offset 0 a llama.cpp model, and so on. Anything else
// is Unknown, which may still be a format Open tries as a fallback (a
// headerless RTen V1 model).
//
// Version digits are not checked here: a program with identifier "ET13"
// sniffs as PTE, and opening it reports ErrUnsupportedVersion.
func Sniff(head []byte) Format {
	r, _ := sniff(head)
	return Format(r.Name)
}

// SniffFile reads the first bytes of the file at path and sniffs them
// (see Sniff).
func SniffFile(path string) (Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return Unknown, err
	}
	defer f.Close()
	head := make([]byte, region.HeadLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Unknown, err
	}
	return Sniff(head[:n]), nil
}

// Option configures Open and New.
type Option func(*config)

type config struct {
	data     []string
	dataMaps []*mmapfile.File
	mmap     []mmapfile.Option
	where    []mmapfile.Option // WithSection, WithZipEntry: the model's file only
}

// WithData opens the named files along with a model that links data files
// (a program's .ptd files) and resolves its external tensors against them
// (the first file holding a key wins). Open fails if an external tensor
// cannot be resolved, or if the model's format links no data files. The
// Model closes these files.
func WithData(paths ...string) Option {
	return func(c *config) { c.data = append(c.data, paths...) }
}

// WithDataFiles is WithData for files the caller has mapped (a .ptd from a
// descriptor, a section, or a zip entry: see mmapfile). The Model takes
// them: its Close closes them, and so does a failed Open.
func WithDataFiles(files ...*mmapfile.File) Option {
	return func(c *config) { c.dataMaps = append(c.dataMaps, files...) }
}

// WithMmapOptions passes options (mapping mode, budget, page size) to
// mmapfile, for the model file and the WithData files.
func WithMmapOptions(opts ...mmapfile.Option) Option {
	return func(c *config) { c.mmap = append(c.mmap, opts...) }
}

// WithSection makes Open read the model stored in the bytes [off, off+n)
// of the file, mapped in place ([mmapfile.WithSection]): every offset the
// model reports is relative to off, and nothing outside the section is
// read. On Android an AssetFileDescriptor's start offset and length are
// off and n.
func WithSection(off, n int64) Option {
	return func(c *config) { c.where = append(c.where, mmapfile.WithSection(off, n)) }
}

// WithZipEntry makes Open read the model stored as the named entry of the
// zip archive (APK, JAR, AAR) at the path, mapped in place
// ([mmapfile.WithZipEntry]). A compressed entry is an error wrapping
// ErrCompressed that says how to store it; a missing one wraps
// ErrNotFound. The Model's Name is "path!/entry".
func WithZipEntry(entry string) Option {
	return func(c *config) { c.where = append(c.where, mmapfile.WithZipEntry(entry)) }
}

// Model is an opened model file of any format. Its accessors return values
// read at Open, allocate nothing and are safe for concurrent use (Close
// excepted); the slices they return are shared and must not be modified.
// Views are valid until Close.
type Model struct {
	format Format
	name   string
	mf     *mmapfile.File // the mapping Open made or New was given
	impl   format.Model
	closed atomic.Bool

	data     []format.Model   // the linked data files, in option order
	dataMaps []*mmapfile.File // their mappings
	opts     config           // in the Model, as cfg: not allocations of their own
	cfg      format.Config    // what open gave the format

	// tensors is Tensors, built by its first call for a format whose
	// tensors are not a []format.Tensor already.
	tensorsOnce sync.Once
	tensors     []format.Tensor
}

// Open maps the file at path (or the section or zip entry an option
// names), sniffs its format (see [Sniff]), and opens it with the format's
// package, which the program must have imported (package formats imports
// every built-in one). A file no registered format claims is tried with the
// fallback formats (a headerless RTen V1 model); if they fail too, the
// error wraps ErrUnknownFormat.
func Open(path string, opts ...Option) (*Model, error) {
	m := collect(opts)
	c := &m.opts
	mf, err := mmapfile.Open(path, append(c.mmap[:len(c.mmap):len(c.mmap)], c.where...)...)
	if err != nil {
		closeAll(c.dataMaps)
		return nil, err
	}
	return m.init(mf)
}

// New opens the model in mf, which the Model takes: its Close closes mf,
// and so does a failed New. Any mapping works: a descriptor
// ([mmapfile.NewFile]), a section or zip entry of one, a byte slice
// ([mmapfile.NewBytes]), or an io.ReaderAt ([mmapfile.NewReaderAt], where
// every view is a copy). WithSection and WithZipEntry do not apply.
func New(mf *mmapfile.File, opts ...Option) (*Model, error) {
	if mf == nil {
		return nil, os.ErrInvalid
	}
	return collect(opts).init(mf)
}

func collect(opts []Option) *Model {
	m := new(Model)
	for _, o := range opts {
		if o != nil {
			o(&m.opts)
		}
	}
	return m
}

func closeAll(mfs []*mmapfile.File) {
	for _, mf := range mfs {
		mf.Close()
	}
}

// init opens the model in mf with m's options, closing mf and their data maps on failure.
func (m *Model) init(mf *mmapfile.File) (*Model, error) {
	m.name, m.mf, m.dataMaps = mf.Name(), mf, m.opts.dataMaps
	if err := m.open(&m.opts); err != nil {
		for _, d := range m.data {
			d.Close()
		}
		closeAll(m.dataMaps)
		mf.Close()
		return nil, err
	}
	return m, nil
}

func (m *Model) open(c *config) error {
	// The first page, which the format's Open takes rather than read again.
	head, hbuf, err := region.Head(m.mf, nil)
	if err != nil {
		return err
	}
	defer func() { m.cfg.Head = nil; region.Put(hbuf) }() // the pooled buffer goes back
	reg, ok := sniff(head)
	cands := []format.Registration{reg}
	if !ok {
		cands = cands[:0]
		for _, r := range format.Registered() {
			if r.Fallback {
				cands = append(cands, r)
			}
		}
	}
	if len(c.data)+len(c.dataMaps) > 0 {
		if !ok || reg.DataFormat == "" {
			what := "not a model that links data files"
			if ok {
				what = "a " + reg.Name + " file"
			}
			return fmt.Errorf("loader: data files apply to models that link them (a .pte program), and %s is %s", cmp.Or(m.name, "the file"), what)
		}
		if err := m.openData(reg.DataFormat, c); err != nil {
			return err
		}
	}
	m.cfg = format.Config{Head: head, Name: m.name, Data: m.data, Mmap: c.mmap}
	var errs []error
	for _, r := range cands {
		impl, err := r.Open(m.mf, &m.cfg)
		if err == nil {
			m.format, m.impl = Format(r.Name), impl
			return nil
		}
		errs = append(errs, err)
	}
	if ok {
		return errs[0]
	}
	return unknownFormat(m.mf, head, errors.Join(errs...))
}

// unknownFormat builds the error for a file no format accepts; for a zip
// archive it first says how to open the models stored in it.
func unknownFormat(mf *mmapfile.File, head []byte, fallback error) error {
	hint := fmt.Sprintf("the file is only %d bytes long", len(head))
	if len(head) >= 8 {
		hint = fmt.Sprintf("bytes 0..8 are %q", head[:8])
	}
	if zh := archiveHint(mf); zh != "" {
		hint = zh + "; " + hint
	}
	var names []string
	for _, r := range format.Registered() {
		if r.Sniff != nil {
			names = append(names, r.Name+": "+r.Magic)
		}
	}
	if fallback == nil { // no format is a fallback
		return fmt.Errorf("%w: %s; no format claims it (%s)", ErrUnknownFormat, hint, strings.Join(names, "; "))
	}
	return fmt.Errorf("%w: %s; no format claims it (%s), and the fallbacks fail too (%v)",
		ErrUnknownFormat, hint, strings.Join(names, "; "), fallback)
}

// openData opens the WithData and WithDataFiles files as models of the
// given format.
func (m *Model) openData(want string, c *config) error {
	reg, _ := registration(want)
	for _, p := range c.data {
		mf, err := mmapfile.Open(p, c.mmap...)
		if err != nil {
			return fmt.Errorf("data file %s: %w", p, err)
		}
		m.dataMaps = append(m.dataMaps, mf)
	}
	for _, mf := range m.dataMaps {
		head, hbuf, err := region.Head(mf, nil)
		if err == nil && (reg.Sniff == nil || !reg.Sniff(head)) {
			err = fmt.Errorf("%w: not a %s file", ErrUnknownFormat, want)
		}
		var d format.Model
		if err == nil {
			d, err = reg.Open(mf, &format.Config{Head: head, Name: mf.Name(), Mmap: c.mmap})
		}
		region.Put(hbuf)
		if err != nil {
			return fmt.Errorf("data file %s: %w", cmp.Or(mf.Name(), "the file"), err)
		}
		m.data = append(m.data, d)
	}
	return nil
}

// Close unmaps the file and closes the data files. Views handed out become
// invalid. Close is idempotent.
func (m *Model) Close() error {
	if m == nil || m.closed.Swap(true) {
		return nil
	}
	err := m.impl.Close()
	if len(m.data)+len(m.dataMaps) == 0 {
		return errors.Join(err, m.mf.Close())
	}
	errs := []error{err}
	for _, d := range m.data {
		errs = append(errs, d.Close())
	}
	for _, mf := range m.dataMaps {
		errs = append(errs, mf.Close())
	}
	errs = append(errs, m.mf.Close())
	return errors.Join(errs...)
}

// Format returns the file's format.
func (m *Model) Format() Format { return m.format }

// Impl returns the format package's own value for the file (a
// *pte.Program, *bundle.Program, *ptd.File, *rten.Model, ...), for what
// only that format has; see also [As].
func (m *Model) Impl() format.Model { return m.impl }

// As returns the format package's own value for m as a T: Impl, or the
// model Impl wraps ([format.Wrapper]) if Impl is not a T. As[*pte.Program]
// is the program of a .pte and the one a bundled program embeds, and
// As[*gguf.File] a GGUF file's own value; ok is false when m holds no T.
func As[T any](m *Model) (t T, ok bool) {
	for impl := m.impl; impl != nil; {
		if t, ok = impl.(T); ok {
			return t, true
		}
		w, wraps := impl.(format.Wrapper)
		if !wraps {
			break
		}
		impl = w.Unwrap()
	}
	return t, false
}

// Name returns the path the model was opened from ("path!/entry" for a zip
// entry; "" for a byte slice).
func (m *Model) Name() string { return m.name }

// Size returns the size in bytes of the model: of its file, of its section
// or zip entry, or of the program a bundle embeds.
func (m *Model) Size() int64 { return m.impl.MappedFile().Len() }

// File returns the mapping every view of the model points into (a
// section of the file Open mapped, for the program inside a bundle; a
// resolved external tensor's view points into its data file instead).
func (m *Model) File() *mmapfile.File { return m.impl.MappedFile() }

// Tensors returns the tensors the file holds or names, in the format's
// order (see the format's package). Do not modify the slice. For a format
// whose own list is not a []format.Tensor (a program's), the first call
// copies it; [Model.NumTensors], [Model.TensorAt] and [Model.TensorData]
// give the same tensors without the copy.
func (m *Model) Tensors() []format.Tensor {
	if l, ok := m.impl.(format.TensorLister); ok {
		return l.Tensors()
	}
	m.tensorsOnce.Do(func() {
		m.tensors = make([]format.Tensor, m.impl.NumTensors())
		for i := range m.tensors {
			m.tensors[i] = *m.impl.TensorAt(i)
		}
	})
	return m.tensors
}

// NumTensors returns the number of tensors (len of Tensors). It builds
// nothing.
func (m *Model) NumTensors() int { return m.impl.NumTensors() }

// TensorData returns the bytes of tensor i, 0 <= i < NumTensors: the same
// view as TensorAt(i).Data, without building the tensor list where the
// format can avoid it (a program's). It allocates nothing.
func (m *Model) TensorData(i int) segment.Segment { return m.impl.TensorData(i) }

// AppendTensorBytes appends the bytes of every tensor, in order, to dst and
// returns it: element i is TensorData(i).Bytes(). A format with a faster
// way (a program mapped whole: one loop over one mapping) provides it. It
// allocates only when dst has too little room; on error it returns the
// views taken so far.
func (m *Model) AppendTensorBytes(dst [][]byte) ([][]byte, error) {
	if a, ok := m.impl.(format.TensorBytesAppender); ok {
		return a.AppendTensorBytes(dst)
	}
	for i := range m.impl.NumTensors() {
		b, err := m.impl.TensorData(i).Bytes()
		if err != nil {
			return dst, err
		}
		dst = append(dst, b)
	}
	return dst, nil
}

// TensorAt returns tensor i of Tensors, 0 <= i < NumTensors, without
// copying.
func (m *Model) TensorAt(i int) *format.Tensor { return m.impl.TensorAt(i) }

// Tensor returns the first tensor with the given name. The first call may
// build the format's name index; later calls allocate nothing.
func (m *Model) Tensor(name string) (*format.Tensor, bool) {
	i, ok := m.impl.Lookup(name)
	if !ok {
		return nil, false
	}
	return m.impl.TensorAt(i), true
}

// Segments returns the file's segments, with absolute offsets, in file
// order (what a segment is depends on the format: see its package).
func (m *Model) Segments() []segment.Segment { return m.impl.Segments() }

// NamedData returns the key-addressed blobs that are not tensors (a
// program's or a .ptd's named data).
func (m *Model) NamedData() []format.NamedData { return m.impl.NamedData() }

// Groups names the units UseOrder can be asked for (a program's methods),
// in file order; nil when the format has a single order.
func (m *Model) Groups() []string { return m.impl.Groups() }

// DataFiles returns the data files a model was linked to (WithData and
// WithDataFiles), in option order.
func (m *Model) DataFiles() []format.Model { return m.data }
