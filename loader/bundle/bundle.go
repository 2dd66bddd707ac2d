// Package bundle opens ExecuTorch bundled programs (.bpte, identifier
// "BP08"): an ordinary program (.pte) wrapped in a FlatBuffer together with
// test cases for its methods, inputs and the outputs they must produce.
//
// [NewFile] reads a bundle from an *mmapfile.File the caller owns. The
// embedded program is a section of the bundle ([File.Program],
// [File.OpenProgram]): it is mapped in place, never copied. Every test
// value is read by NewFile; a test tensor's bytes are a zero-copy view like
// a model's weights. Package loader opens a bundle through [Format], as
// the *[Program] it embeds.
package bundle

import (
	"errors"
	"fmt"
	"io"
	"os"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/executorch"
	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/bpfb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Identifier is the FlatBuffer file identifier of the bundled programs this
// package reads, at offset 4.
const Identifier = "BP08"

const formatName = "bpte"

// Kind is the type of a test value.
type Kind uint8

// The kinds of test values, in the schema's union order.
const (
	KindNone   Kind = iota // no value
	KindTensor             // Value.Tensor
	KindInt                // Value.Int
	KindBool               // Value.Bool
	KindDouble             // Value.Double
)

var kindNames = [...]string{"none", "tensor", "int", "bool", "double"}

// String returns the kind's name, such as "tensor".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Value is one input or expected output of a test case. Only the field of
// its Kind is set.
type Value struct {
	Kind   Kind
	Int    int64
	Bool   bool
	Double float64
	// Tensor is a KindTensor value: its name is made up
	// ("forward/0/inputs/1": method, case, list, index), its Location is
	// format.LocInline, Offset the bundle offset of its bytes and Data a
	// zero-copy view of them.
	Tensor format.Tensor
}

// TestCase is one test of a method: the inputs to give it and the outputs
// it must produce.
type TestCase struct {
	Inputs          []Value
	ExpectedOutputs []Value
}

// TestSuite holds the test cases of one method of the program.
type TestSuite struct {
	Method string
	Cases  []TestCase
}

// File is an opened bundled program.
type File struct {
	name    string
	mf      *mmapfile.File
	version uint32
	progOff int64
	progLen int64
	suites  []TestSuite
}

// NewFile reads the bundled program in mf, which stays the caller's to
// close after the File and its views are no longer used. A bundle is one
// FlatBuffer, verified through one view of the whole file (in
// mmapfile.ModeCopy, a copy of it, program included).
func NewFile(mf *mmapfile.File) (*File, error) {
	if mf == nil {
		return nil, os.ErrInvalid
	}
	f := &File{name: mf.Name(), mf: mf}
	var err error
	if gerr := mf.Guard(func() { err = f.parse() }); gerr != nil {
		return nil, format.Wrapf(format.ErrTruncated, formatName, "file", 0, "reading the FlatBuffer: %v", gerr)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Vtable offsets of the vector fields whose positions (not only contents)
// the File reports: 4 + 2 × field id.
const (
	vtProgram    = 4 + 2*2 // BundledProgram.program
	vtTensorData = 4 + 2*2 // Tensor.data
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parse checks the identifier, verifies the FlatBuffer and reads the
// program's position and the test suites.
func (f *File) parse() error {
	size := f.mf.Len()
	var id [8]byte
	if n, err := f.mf.ReadAt(id[:], 0); n < len(id) {
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return format.Wrapf(format.ErrTruncated, formatName, "identifier", 0,
			"file of %d bytes is too short for a FlatBuffer identifier", size)
	}
	if ident := id[4:8]; string(ident) != Identifier {
		if ident[0] == 'B' && ident[1] == 'P' && isDigit(ident[2]) && isDigit(ident[3]) {
			return format.Wrapf(format.ErrUnsupportedVersion, formatName, "identifier", 4,
				"file identifier %q is a bundled program version this loader cannot read; want %q", ident, Identifier)
		}
		return format.Wrapf(format.ErrUnknownFormat, formatName, "identifier", 4,
			"file identifier %q (% x) is not %q: not a bundled program", ident, ident, Identifier)
	}
	if size > fbverify.MaxSize {
		return format.Errorf(formatName, "file", 0, "a bundled program is one FlatBuffer, at most %d bytes; this file has %d", int64(fbverify.MaxSize), size)
	}
	buf, err := f.mf.View(0, size)
	if err != nil {
		return err
	}
	if err := fbverify.NewWalk(buf, fbverify.Options{Format: formatName}).Verify("BundledProgram", bpfb.VerifyBundledProgram); err != nil {
		return err
	}
	root := bpfb.GetRootAsBundledProgram(buf, 0)
	f.version = root.Version()
	tab := root.Table()
	o := flatbuffers.UOffsetT(tab.Offset(vtProgram))
	start := int64(tab.Vector(o))
	f.progOff, f.progLen = start, int64(tab.VectorLen(o))

	var suite bpfb.BundledMethodTestSuite
	var tc bpfb.BundledMethodTestCase
	f.suites = make([]TestSuite, root.MethodTestSuitesLength())
	for i := range f.suites {
		root.MethodTestSuites(&suite, i)
		s := &f.suites[i]
		s.Method = string(suite.MethodName())
		s.Cases = make([]TestCase, suite.TestCasesLength())
		for j := range s.Cases {
			suite.TestCases(&tc, j)
			c := &s.Cases[j]
			path := fmt.Sprintf("method_test_suites[%d].test_cases[%d]", i, j)
			name := fmt.Sprintf("%s/%d", s.Method, j)
			if c.Inputs, err = f.values(tc.InputsLength(), tc.Inputs, path+".inputs", name+"/inputs"); err != nil {
				return err
			}
			if c.ExpectedOutputs, err = f.values(tc.ExpectedOutputsLength(), tc.ExpectedOutputs, path+".expected_outputs", name+"/expected_outputs"); err != nil {
				return err
			}
		}
	}
	return nil
}

// values reads a vector of n Values with get.
func (f *File) values(n int, get func(*bpfb.Value, int) bool, path, name string) ([]Value, error) {
	if n == 0 {
		return nil, nil
	}
	vs := make([]Value, n)
	var v bpfb.Value
	var t flatbuffers.Table
	for k := range vs {
		get(&v, k)
		kind := Kind(v.ValType())
		if kind == KindNone || !v.Val(&t) {
			continue
		}
		vs[k].Kind = kind
		// Every union member is a table: x is read as the kind's type.
		var x bpfb.Int
		x.Init(t.Bytes, t.Pos)
		switch kind {
		case KindInt:
			vs[k].Int = x.IntVal()
		case KindBool:
			vs[k].Bool = (*bpfb.Bool)(&x).BoolVal()
		case KindDouble:
			vs[k].Double = (*bpfb.Double)(&x).DoubleVal()
		case KindTensor:
			if err := f.tensor(&vs[k].Tensor, (*bpfb.Tensor)(&x), fmt.Sprintf("%s[%d].val", path, k), fmt.Sprintf("%s/%d", name, k)); err != nil {
				return nil, err
			}
		}
	}
	return vs, nil
}

// tensor fills t from the test tensor x.
func (f *File) tensor(t *format.Tensor, x *bpfb.Tensor, path, name string) error {
	tab := x.Table()
	t.Name = name
	t.Location = format.LocInline
	dt, msg := executorch.ScalarTypeDType(x.ScalarType())
	if dt == format.Invalid {
		return format.Errorf(formatName, path+".scalar_type", int64(tab.Pos), "%s", msg)
	}
	t.DType = dt
	t.Shape = make([]int64, x.SizesLength())
	for i := range t.Shape {
		d := x.Sizes(i)
		if d < 0 {
			return format.Errorf(formatName, path+".sizes", int64(tab.Pos), "dimension %d is negative (%d)", i, d)
		}
		t.Shape[i] = int64(d)
	}
	if b := x.DimOrderBytes(); len(b) > 0 {
		if len(b) != len(t.Shape) {
			return format.Errorf(formatName, path+".dim_order", int64(tab.Pos), "dim_order has %d entries for %d dimensions", len(b), len(t.Shape))
		}
		var seen [256]bool
		for _, d := range b {
			if int(d) >= len(b) || seen[d] {
				return format.Errorf(formatName, path+".dim_order", int64(tab.Pos), "dim_order %v is not a permutation of 0..%d", b, len(b)-1)
			}
			seen[d] = true
		}
		t.DimOrder = append([]uint8(nil), b...)
	}
	o := flatbuffers.UOffsetT(tab.Offset(vtTensorData))
	var off, n int64
	if o != 0 {
		off, n = int64(tab.Vector(o)), int64(tab.VectorLen(o))
	}
	_, nbytes, ok := format.Numel(t.Shape, dt, f.mf.Len())
	if !ok || nbytes != n {
		return format.Errorf(formatName, path+".data", off,
			"shape %v of %v needs %d bytes (ok=%v), but the data holds %d", t.Shape, dt, nbytes, ok, n)
	}
	t.Offset, t.NBytes = off, n
	seg, err := segment.New(f.mf, off, n)
	if err != nil {
		return format.Errorf(formatName, path+".data", off, "%v", err)
	}
	t.Data = seg
	return nil
}

// Name returns the name of the file (its path, or the name of the mapped
// file NewFile was given).
func (f *File) Name() string { return f.name }

// Version returns the bundled program's schema version field.
func (f *File) Version() uint32 { return f.version }

// File returns the mapped bundle every view points into.
func (f *File) File() *mmapfile.File { return f.mf }

// ProgramSection returns the byte range of the embedded program in the
// bundle.
func (f *File) ProgramSection() (off, n int64) { return f.progOff, f.progLen }

// Program returns the embedded program's bytes as a view of the bundle.
func (f *File) Program() segment.Segment {
	s, _ := segment.New(f.mf, f.progOff, f.progLen)
	return s
}

// OpenProgram maps the embedded program as a file of its own, a section
// of the bundle (mmapfile.File.Sub): pte.NewFile opens it in place, with
// offsets relative to the program's first byte. opts choose the mapping
// (by default the bundle's mode). Close it before the bundle.
func (f *File) OpenProgram(opts ...mmapfile.Option) (*mmapfile.File, error) {
	return f.mf.Sub(f.progOff, f.progLen, opts...)
}

// TestSuites returns the method test suites in file order. The slice is
// shared: do not modify it.
func (f *File) TestSuites() []TestSuite { return f.suites }

// Tensors returns every test tensor (inputs and expected outputs of every
// case of every suite), in file order.
func (f *File) Tensors() []*format.Tensor {
	var ts []*format.Tensor
	for i := range f.suites {
		for j := range f.suites[i].Cases {
			c := &f.suites[i].Cases[j]
			for _, vs := range [][]Value{c.Inputs, c.ExpectedOutputs} {
				for k := range vs {
					if vs[k].Kind == KindTensor {
						ts = append(ts, &vs[k].Tensor)
					}
				}
			}
		}
	}
	return ts
}

// Close leaves the file open: it is the caller's, and the File holds
// nothing else to release.
func (f *File) Close() error { return nil }
