// Package npy opens NumPy's .npy files (np.save; format versions 1.0,
// 2.0 and 3.0): one array, a header that is a Python dict literal, then
// the array's bytes in C order. The array is one tensor, named "array",
// and its bytes are the file's one segment.
//
// Arrays whose bytes are not plain little-endian numbers in C order are
// refused with format.ErrUnsupportedVersion: big-endian and Fortran-order
// arrays, and object, string, structured and datetime dtypes.
package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Magic starts every .npy file; the format's major and minor version
// follow it.
const Magic = "\x93NUMPY"

// TensorName is the name of a file's one tensor.
const TensorName = "array"

const formatName = "npy"

// maxDims bounds a shape's dimensions (NumPy's own limit is 64).
const maxDims = 64

// maxHeader is the longest header np.load reads without being told to
// (its max_header_size): Relayout writes none longer.
const maxHeader = 10000

// Format registers .npy files with package format at init.
var Format = format.Registration{
	Name:  formatName,
	Files: "NumPy arrays (.npy, np.save)",
	Order: "the one array",
	Magic: `"\x93NUMPY" at offset 0`,
	Sniff: func(head []byte) bool { return len(head) >= 6 && string(head[:6]) == Magic },
	Open:  func(mf *mmapfile.File, _ *format.Config) (format.Model, error) { return NewFile(mf) },
}

func init() { format.Register(Format) }

// File is an opened .npy file.
type File struct {
	mf           *mmapfile.File
	major, minor byte
	hlen         int    // the header's length, padding included
	hdr          header // what it says
	tensors      [1]format.Tensor
	segs         []segment.Segment
}

var (
	_ format.Model      = (*File)(nil)
	_ format.Reporter   = (*File)(nil)
	_ format.Relayouter = (*File)(nil)
)

func errorf(sentinel error, field string, off int64, msg string, args ...any) error {
	return format.Wrapf(sentinel, formatName, field, off, msg, args...)
}

// NewFile reads the .npy file in mf, which the caller keeps and closes
// after the File and its views.
func NewFile(mf *mmapfile.File) (*File, error) {
	size := mf.Len()
	var pre [12]byte
	n, _ := mf.ReadAt(pre[:], 0)
	if n < 10 {
		return nil, errorf(format.ErrTruncated, "magic", 0, "the %d-byte file is shorter than the 10-byte preamble", size)
	}
	if string(pre[:6]) != Magic {
		return nil, errorf(format.ErrMalformed, "magic", 0, "magic %q, want %q", pre[:6], Magic)
	}
	f := &File{mf: mf, major: pre[6], minor: pre[7]}
	start := int64(10)
	switch f.major {
	case 1:
		f.hlen = int(binary.LittleEndian.Uint16(pre[8:]))
	case 2, 3:
		if n < 12 {
			return nil, errorf(format.ErrTruncated, "header_len", 8, "the %d-byte file is shorter than the 12-byte preamble of version %d", size, f.major)
		}
		start, f.hlen = 12, int(min(int64(binary.LittleEndian.Uint32(pre[8:])), math.MaxInt32))
	default:
		return nil, errorf(format.ErrUnsupportedVersion, "version", 6, "format version %d.%d, want 1.0, 2.0 or 3.0", f.major, f.minor)
	}
	if int64(f.hlen) > size-start {
		return nil, errorf(format.ErrTruncated, "header_len", 8, "a %d-byte header runs past the end of the %d-byte file", f.hlen, size)
	}
	text := make([]byte, f.hlen)
	if _, err := mf.ReadAt(text, start); err != nil {
		return nil, errorf(format.ErrTruncated, "header", start, "reading the header: %v", err)
	}
	var herr *headerError
	if f.hdr, herr = parseHeader(text); herr != nil {
		sentinel := format.ErrMalformed
		if herr.unsupported {
			sentinel = format.ErrUnsupportedVersion
		}
		return nil, errorf(sentinel, "header", start+int64(herr.pos), "%s", herr.msg)
	}
	dt, msg := dtypeOf(f.hdr.descr)
	if msg != "" {
		return nil, errorf(format.ErrUnsupportedVersion, "header.descr", start, "%s", msg)
	}
	if f.hdr.fortran {
		return nil, errorf(format.ErrUnsupportedVersion, "header.fortran_order", start,
			"a Fortran-order array is not supported: its bytes are not in C order (save np.ascontiguousarray(a))")
	}
	data := start + int64(f.hlen)
	_, nbytes, ok := format.Numel(f.hdr.shape, dt, size)
	switch {
	case !ok:
		return nil, errorf(format.ErrTruncated, "header.shape", start, "shape %v of %s needs more bytes than the %d-byte file has", f.hdr.shape, dt, size)
	case nbytes > size-data:
		return nil, errorf(format.ErrTruncated, "data", data, "shape %v of %s needs %d bytes, and %d follow the header", f.hdr.shape, dt, nbytes, size-data)
	case nbytes < size-data:
		return nil, errorf(format.ErrMalformed, "data", data+nbytes, "%d bytes follow the array's %d", size-data-nbytes, nbytes)
	}
	seg, err := segment.New(mf, data, nbytes)
	if err != nil {
		return nil, errorf(format.ErrMalformed, "data", data, "%v", err)
	}
	f.tensors[0] = format.Tensor{Name: TensorName, DType: dt, Shape: f.hdr.shape, Location: format.LocSegment,
		Offset: data, NBytes: nbytes, Data: seg}
	f.segs = []segment.Segment{seg}
	return f, nil
}

// dtypes maps a descr's type and size to the element type.
var dtypes = map[string]format.DType{
	"f2": format.Float16, "f4": format.Float32, "f8": format.Float64,
	"i1": format.Int8, "i2": format.Int16, "i4": format.Int32, "i8": format.Int64,
	"u1": format.Uint8, "u2": format.Uint16, "u4": format.Uint32, "u8": format.Uint64,
	"b1": format.Bool, "c8": format.Complex64, "c16": format.Complex128,
}

// dtypeOf returns the element type of a descr ("<f4"), or why it has
// none.
func dtypeOf(descr string) (format.DType, string) {
	if len(descr) < 3 {
		return format.Invalid, fmt.Sprintf("descr %q is not a byte order and a type", descr)
	}
	d, ok := dtypes[descr[1:]]
	if !ok {
		return format.Invalid, fmt.Sprintf("descr %q: only numbers and booleans are supported, not object, string, structured, void or datetime dtypes", descr)
	}
	switch order := descr[0]; {
	case order == '<', d.Size() == 1 && (order == '|' || order == '>' || order == '='):
		return d, ""
	case order == '>':
		return format.Invalid, fmt.Sprintf("descr %q: a big-endian array is not supported (save a.astype(a.dtype.newbyteorder('<')))", descr)
	}
	return format.Invalid, fmt.Sprintf("descr %q: byte order %q, want '<'", descr, descr[0])
}

// Version returns the file's format version, major and minor.
func (f *File) Version() (major, minor int) { return int(f.major), int(f.minor) }

// Descr returns the header's descr, such as "<f4".
func (f *File) Descr() string { return f.hdr.descr }

// NumTensors returns 1.
func (f *File) NumTensors() int { return 1 }

// TensorAt returns the array, i == 0.
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i] }

// TensorData returns the array's bytes, i == 0.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns 0 for TensorName.
func (f *File) Lookup(name string) (int, bool) { return 0, name == TensorName }

// Segments returns one segment: the array's bytes.
func (f *File) Segments() []segment.Segment { return f.segs }

// NamedData returns nil.
func (f *File) NamedData() []format.NamedData { return nil }

// Groups returns nil: one order.
func (f *File) Groups() []string { return nil }

// UseOrder returns [0] for group "".
func (f *File) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, fmt.Errorf("npy: use order: %q: a .npy file has no groups: %w", group, format.ErrNotFound)
	}
	return []int{0}, nil
}

// Check returns nil: NewFile checked everything.
func (f *File) Check() error { return nil }

// MappedFile returns the mapping the views point into.
func (f *File) MappedFile() *mmapfile.File { return f.mf }

// Close does nothing: the mapping is the caller's.
func (f *File) Close() error { return nil }

func (f *File) fields() format.Fields {
	return format.Fields{
		{Key: "version", Value: fmt.Sprintf("%d.%d", f.major, f.minor)},
		{Key: "descr", Value: f.hdr.descr},
		{Key: "fortran_order", Value: f.hdr.fortran},
		{Key: "header_len", Value: f.hlen},
	}
}

// ReportFields adds "npy": the version and what the header says.
func (f *File) ReportFields() []format.Field { return []format.Field{{Key: "npy", Value: f.fields()}} }

// ReportText writes the same as a section.
func (f *File) ReportText(w io.Writer) error { return f.fields().WriteText(w, "npy") }

// Relayout lays the file out with the array's bytes on an align-byte
// boundary: the header's dict, padded with spaces, fills the room before
// them, in the file's version. It refuses an alignment that needs a header
// longer than np.load reads by default (10000 bytes: 8 KiB is the largest
// power of two it allows).
func (f *File) Relayout(o format.RelayoutOptions) (*format.Layout, error) {
	align := o.Align
	if align < 1 || align > maxHeader {
		return nil, fmt.Errorf("npy: alignment %d: the header before the data would be longer than the %d bytes np.load reads by default (8 KiB is the largest alignment it allows)", align, maxHeader)
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", f.hdr.descr, shapeText(f.hdr.shape))
	major, pre := f.major, int64(10)
	if major != 1 {
		pre = 12
	}
	data := format.AlignUp(pre+int64(len(dict))+1, align)
	if data-pre > maxHeader {
		return nil, fmt.Errorf("npy: alignment %d: a %d-byte header is longer than the %d bytes np.load reads by default", align, data-pre, maxHeader)
	}
	head := append([]byte(Magic), major, 0)
	if major == 1 {
		head = binary.LittleEndian.AppendUint16(head, uint16(data-pre))
	} else {
		head = binary.LittleEndian.AppendUint32(head, uint32(data-pre))
	}
	head = append(head, dict...)
	for int64(len(head)) < data-1 {
		head = append(head, ' ')
	}
	head = append(head, '\n')
	return &format.Layout{Head: head, Pieces: []format.Piece{{Offset: data, Data: f.tensors[0].Data}}, Size: data + f.tensors[0].NBytes}, nil
}

// shapeText writes a shape as a Python tuple: (), (3,), (3, 4).
func shapeText(shape []int64) string {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	if len(shape) == 1 {
		return "(" + dims[0] + ",)"
	}
	return "(" + strings.Join(dims, ", ") + ")"
}
