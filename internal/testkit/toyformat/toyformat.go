// Package toyformat is a model format that exists only in tests, to show
// that a format plugs into edgeload with one package, one sniff rule and
// one registration, and nothing changed elsewhere.
//
// A toy file is "TOY1", a little-endian uint32 count, then per tensor a
// name (a length byte and its bytes), a uint64 offset and a uint32 count of
// float32 elements, then the data. Its use order is the reverse of file
// order, so that a test can tell the two apart.
//
// A file whose magic ends in one of the letters of Faults instead of "1"
// (WriteFaulty) opens as a toy file that breaks one item of the
// format.Model contract, for the tests of package formattest, which must
// catch each.
package toyformat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Magic starts every toy file.
const Magic = "TOY1"

// Faults are the ways a faulty toy file breaks the format.Model contract:
// 'L' Lookup finds the next tensor, 'O' UseOrder names its first tensor
// twice (and not its last), 'E' the errors of a file cut short are not
// *format.FormatErrors, 'C' a second Close fails, 'D' the tensors' views are
// copies made at Open, detached from the file.
const Faults = "LOECD"

// Format is the toy format's registration, made when the package is
// imported.
var Format = format.Registration{
	Name:  "toy",
	Files: "toy files, for the tests",
	Order: "reverse file order",
	Magic: `"TOY1" at offset 0`,
	Sniff: func(head []byte) bool {
		return len(head) >= 4 && string(head[:3]) == Magic[:3] && strings.IndexByte("1"+Faults, head[3]) >= 0
	},
	Open: func(mf *mmapfile.File, _ *format.Config) (format.Model, error) { return NewFile(mf) },
}

func init() { format.Register(Format) }

// File is an opened toy file.
type File struct {
	mf      *mmapfile.File
	tensors []format.Tensor
	index   map[string]int
	data    segment.Segment
	fault   byte // one of Faults, or '1'
	closed  bool
}

func formatErr(off int64, msg string, args ...any) error {
	return format.Errorf("toy", "", off, msg, args...)
}

// NewFile reads the toy file in mf.
func NewFile(mf *mmapfile.File) (*File, error) {
	size := mf.Len()
	var hdr [8]byte
	if _, err := mf.ReadAt(hdr[:], 0); err != nil {
		return nil, formatErr(0, "header: %v", err)
	}
	fault := hdr[3]
	if string(hdr[:3]) != Magic[:3] || strings.IndexByte("1"+Faults, fault) < 0 {
		return nil, formatErr(0, "magic %q, want %q", hdr[:4], Magic)
	}
	bad := formatErr
	if fault == 'E' {
		bad = func(off int64, msg string, args ...any) error { return fmt.Errorf(msg, args...) }
	}
	n := int64(binary.LittleEndian.Uint32(hdr[4:]))
	if n > size/14 {
		return nil, bad(4, "%d tensors cannot fit in %d bytes", n, size)
	}
	f := &File{mf: mf, tensors: make([]format.Tensor, n), fault: fault}
	pos, end := int64(8), int64(8)
	var rec [13]byte
	for i := range f.tensors {
		var l [1]byte
		if _, err := mf.ReadAt(l[:], pos); err != nil {
			return nil, bad(pos, "name length: %v", err)
		}
		name := make([]byte, l[0])
		if _, err := mf.ReadAt(name, pos+1); err != nil {
			return nil, bad(pos+1, "name: %v", err)
		}
		pos += 1 + int64(l[0])
		if _, err := mf.ReadAt(rec[:12], pos); err != nil {
			return nil, bad(pos, "entry: %v", err)
		}
		off, cnt := binary.LittleEndian.Uint64(rec[:8]), int64(binary.LittleEndian.Uint32(rec[8:12]))
		if off > math.MaxInt64 || int64(off) > size || cnt*4 > size-int64(off) {
			return nil, bad(pos, "tensor %q: %d floats at %d run past the %d-byte file", name, cnt, off, size)
		}
		d, err := segment.New(mf, int64(off), cnt*4)
		if err != nil {
			return nil, bad(pos, "tensor %q: %v", name, err)
		}
		if fault == 'D' {
			b := make([]byte, cnt*4+int64(off))
			if _, err := mf.ReadAt(b[off:], int64(off)); err != nil {
				return nil, bad(int64(off), "tensor %q: %v", name, err)
			}
			d, _ = segment.New(mmapfile.NewBytes(b), int64(off), cnt*4)
		}
		f.tensors[i] = format.Tensor{Name: string(name), NameExplicit: true, DType: format.Float32, Shape: []int64{cnt},
			Location: format.LocSegment, Offset: int64(off), NBytes: cnt * 4, Data: d}
		pos += 12
		end = max(end, int64(off)+cnt*4)
	}
	for i := range f.tensors {
		if f.tensors[i].Offset < pos {
			return nil, bad(f.tensors[i].Offset, "tensor %q overlaps the header", f.tensors[i].Name)
		}
	}
	f.data, _ = segment.New(mf, pos, size-pos)
	f.index = make(map[string]int, len(f.tensors))
	for i := len(f.tensors) - 1; i >= 0; i-- {
		f.index[f.tensors[i].Name] = i
	}
	return f, nil
}

// Write returns a toy file holding the named tensors, in order.
func Write(names []string, values [][]float32) []byte { return WriteFaulty('1', names, values) }

// WriteFaulty returns a toy file that opens with the fault given (one of
// Faults; '1' for none).
func WriteFaulty(fault byte, names []string, values [][]float32) []byte {
	hdr := int64(8)
	for _, n := range names {
		hdr += 1 + int64(len(n)) + 12
	}
	b := binary.LittleEndian.AppendUint32([]byte(Magic[:3]+string(fault)), uint32(len(names)))
	off := hdr
	for i, n := range names {
		b = append(append(b, byte(len(n))), n...)
		b = binary.LittleEndian.AppendUint64(b, uint64(off))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(values[i])))
		off += 4 * int64(len(values[i]))
	}
	for _, v := range values {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// NumTensors returns the number of tensors.
func (f *File) NumTensors() int { return len(f.tensors) }

// TensorAt returns tensor i.
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i] }

// TensorData returns tensor i's bytes.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns the index of the tensor named name.
func (f *File) Lookup(name string) (int, bool) {
	i, ok := f.index[name]
	if ok && f.fault == 'L' {
		i = (i + 1) % len(f.tensors)
	}
	return i, ok
}

// Segments returns one segment: the data after the header.
func (f *File) Segments() []segment.Segment { return []segment.Segment{f.data} }

// NamedData returns nil.
func (f *File) NamedData() []format.NamedData { return nil }

// Groups returns nil: one order.
func (f *File) Groups() []string { return nil }

// UseOrder returns the tensors in reverse file order.
func (f *File) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, fmt.Errorf("toy: group %q: %w", group, format.ErrNotFound)
	}
	o := make([]int, len(f.tensors))
	for i := range o {
		o[i] = len(o) - 1 - i
	}
	if f.fault == 'O' && len(o) > 1 {
		o[len(o)-1] = o[0]
	}
	return o, nil
}

// Check returns nil.
func (f *File) Check() error { return nil }

// MappedFile returns the mapping.
func (f *File) MappedFile() *mmapfile.File { return f.mf }

// Close does nothing: the mapping is the loader's.
func (f *File) Close() error {
	if f.closed && f.fault == 'C' {
		return errors.New("toy: closed twice")
	}
	f.closed = true
	return nil
}

// ReportFields gives the JSON report one member of the toy's own.
func (f *File) ReportFields() []format.Field {
	return []format.Field{{Key: "toy", Value: format.Fields{{Key: "tensors", Value: len(f.tensors)}}}}
}

// ReportText writes a line about the toy file.
func (f *File) ReportText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "\ntoy\n  %d tensors\n", len(f.tensors))
	return err
}
