// Package ptn reads ExecuTorch .ptn packages: a zip of stored members,
// read in place: program.ptg (an "NPTG" FlatBuffer graph of one or more
// methods), program.safetensors (the constants) and aliases.json (keys
// whose bytes equal another key's), the last two optional.
//
// [NewFile] verifies every member and reads which constants each method
// binds and in which order its nodes read them. Every tensor is a
// zero-copy view of the package file; an alias is a tensor of its own name
// with its owner's bytes.
package ptn

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// formatName is the Format of every *format.FormatError this package returns.
const formatName = "ptn"

// The members of a package.
const (
	GraphMember     = "program.ptg"
	ConstantsMember = "program.safetensors"
	AliasesMember   = "aliases.json"
)

// Identifier is the FlatBuffer file identifier of program.ptg.
const Identifier = "NPTG"

// ErrCompressed is wrapped by the error for a member that is compressed
// or encrypted: a package is read in place, never copied out.
var ErrCompressed = format.ErrCompressed

// Member is where a member's bytes lie in the package file.
type Member struct {
	Name   string
	Offset int64 // absolute offset of the first byte of the member's data
	Size   int64
}

// Constant is a method's binding of a graph placeholder to a key of
// program.safetensors (a NamedTensorRef).
type Constant struct {
	// Name is the placeholder's name in the method's graph.
	Name string
	// DataKey is the key of its bytes: a program.safetensors key or an
	// alias.
	DataKey string
	// Kind is 1 (parameter), 2 (buffer) or 3 (constant tensor).
	Kind uint8
	// Mutated marks a persistent buffer: its initial bytes are these, and
	// the method changes them at run time.
	Mutated bool
	// Tensor is the index of DataKey's tensor.
	Tensor int
	// QuantKeys are the keys of its quantization scale and zero point
	// (an AffineGroup scheme), when it has them.
	QuantKeys []string
}

// MutableBuffer is method state with no bytes in the package (a KV
// cache), zero-initialised at load.
type MutableBuffer struct {
	Name, FQN string
}

// Method is one method of the program.
type Method struct {
	Name           string
	Constants      []Constant
	MutableBuffers []MutableBuffer
	reads          []int32 // tensors its nodes read, in first-read order
}

// File is an open .ptn package. Its methods are safe for concurrent use;
// its views stay valid until the mapping is closed.
type File struct {
	mf       *mmapfile.File
	members  []Member
	version  string
	hsize    int64 // program.safetensors header size, -1 when absent
	meta     []safetensors.Meta
	tensors  []format.Tensor // program.safetensors in file order, then aliases by key
	owners   int             // tensors[:owners] are program.safetensors entries
	aliasOf  []int           // owner of tensors[owners+i]
	index    nameindex.Index
	segs     []segment.Segment
	methods  []Method
	groups   []string
	methodIx nameindex.Index
}

// NewFile parses the package in mf, which the caller closes after the File
// and its views are no longer used.
func NewFile(mf *mmapfile.File) (*File, error) {
	if mf == nil {
		return nil, os.ErrInvalid
	}
	f := &File{mf: mf, hsize: -1}
	byName, err := f.readZip()
	if err != nil {
		return nil, err
	}
	g, ok := byName[GraphMember]
	if !ok {
		return nil, errorf(GraphMember, -1, "the package has no %s", GraphMember)
	}
	if c, ok := byName[ConstantsMember]; ok {
		if err := f.readConstants(c); err != nil {
			return nil, err
		}
	}
	if a, ok := byName[AliasesMember]; ok {
		if _, ok := byName[ConstantsMember]; !ok {
			return nil, errorf(AliasesMember, a.Offset, "%s without %s", AliasesMember, ConstantsMember)
		}
		if err := f.readAliases(a); err != nil {
			return nil, err
		}
	}
	f.index = nameindex.New(len(f.tensors), func(i int) string { return f.tensors[i].Name })
	if err := f.readGraph(g); err != nil {
		return nil, err
	}
	return f, nil
}

func errorf(field string, off int64, msg string, args ...any) error {
	return format.Errorf(formatName, field, off, msg, args...)
}

func wrapf(sentinel error, field string, off int64, msg string, args ...any) error {
	return format.Wrapf(sentinel, formatName, field, off, msg, args...)
}

// readZip reads the central directory and returns the members by name:
// each stored, unique, inside the file.
func (f *File) readZip() (map[string]Member, error) {
	size := f.mf.Len()
	zr, err := zip.NewReader(f.mf, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		if errors.Is(err, format.ErrTruncated) {
			return nil, wrapf(format.ErrTruncated, "zip", -1, "reading the central directory: %v", err)
		}
		return nil, errorf("zip", -1, "not a readable zip: %v", err)
	}
	byName := make(map[string]Member, len(zr.File))
	for _, zf := range zr.File {
		field := "zip[" + zf.Name + "]"
		if _, dup := byName[zf.Name]; dup {
			return nil, errorf(field, -1, "member %q appears twice in the central directory", zf.Name)
		}
		if zf.Flags&0x1 != 0 {
			return nil, wrapf(ErrCompressed, field, -1, "member %q is encrypted; a package is read in place", zf.Name)
		}
		if zf.Method != zip.Store {
			return nil, wrapf(ErrCompressed, field, -1, "member %q is compressed (method %d, %d bytes for %d); a package is read in place: store it (zipfile.ZIP_STORED)",
				zf.Name, zf.Method, zf.CompressedSize64, zf.UncompressedSize64)
		}
		if zf.CompressedSize64 != zf.UncompressedSize64 {
			return nil, errorf(field, -1, "stored member %q has %d bytes stored for %d", zf.Name, zf.CompressedSize64, zf.UncompressedSize64)
		}
		off, err := zf.DataOffset()
		if err != nil {
			return nil, errorf(field, -1, "member %q: reading its local header: %v", zf.Name, err)
		}
		n := zf.UncompressedSize64
		if off < 0 || off > size || n > uint64(size-off) {
			return nil, wrapf(format.ErrTruncated, field, off, "member %q: %d bytes at %d run past the end of the %d-byte file", zf.Name, n, off, size)
		}
		m := Member{Name: zf.Name, Offset: off, Size: int64(n)}
		byName[zf.Name] = m
		f.members = append(f.members, m)

	}
	return byName, nil
}

// readConstants parses program.safetensors in place and lists its tensors
// with offsets in the package.
func (f *File) readConstants(c Member) error {
	sub, err := f.mf.Sub(c.Offset, c.Size, mmapfile.WithMode(mmapfile.ModeCopy))
	if err != nil {
		return fmt.Errorf("ptn: %s: %w", ConstantsMember, err)
	}
	defer sub.Close()
	st, err := safetensors.NewFile(sub)
	if err != nil {
		var fe *format.FormatError
		if errors.As(err, &fe) {
			off := fe.Offset
			if off >= 0 {
				off += c.Offset
			}
			return &format.FormatError{Format: formatName, Field: ConstantsMember + ":" + fe.Field, Offset: off, Msg: fe.Msg, Err: fe.Unwrap()}
		}
		return fmt.Errorf("ptn: %s: %w", ConstantsMember, err)
	}
	f.hsize = st.HeaderSize()
	f.meta = st.Metadata()
	f.tensors = make([]format.Tensor, st.NumTensors())
	for i, t := range st.Tensors() {
		t.Offset += c.Offset
		if t.Data, err = segment.New(f.mf, t.Offset, t.NBytes); err != nil {
			return fmt.Errorf("ptn: %s: tensor %q: %w", ConstantsMember, t.Name, err)
		}
		f.tensors[i] = t
	}
	f.owners = len(f.tensors)
	seg, err := segment.New(f.mf, c.Offset+st.DataOffset(), c.Size-st.DataOffset())
	if err != nil {
		return fmt.Errorf("ptn: %s: %w", ConstantsMember, err)
	}
	f.segs = []segment.Segment{seg}
	return nil
}

// maxAliases bounds aliases.json, which is read whole.
const maxAliases = 64 << 20

// readAliases applies aliases.json: an object of alias key to owner key,
// each owner a program.safetensors key and no alias one.
func (f *File) readAliases(a Member) error {
	if a.Size > maxAliases {
		return errorf(AliasesMember, a.Offset, "%d bytes, more than the %d accepted", a.Size, maxAliases)
	}
	b := make([]byte, a.Size)
	if _, err := f.mf.ReadAt(b, a.Offset); err != nil && err != io.EOF {
		return fmt.Errorf("ptn: reading %s: %w", AliasesMember, err)
	}
	pairs, err := parseAliases(b, a.Offset)
	if err != nil {
		return err
	}
	owners := nameindex.New(f.owners, func(i int) string { return f.tensors[i].Name })
	for _, p := range pairs {
		if p[0] == "__metadata__" {
			return errorf(AliasesMember, a.Offset, "alias key %q is reserved", p[0])
		}
		if _, ok := owners.Lookup(p[0]); ok {
			return errorf(AliasesMember, a.Offset, "alias %q is a key of %s", p[0], ConstantsMember)
		}
		o, ok := owners.Lookup(p[1])
		if !ok {
			return errorf(AliasesMember, a.Offset, "alias %q names owner %q, which is not a key of %s", p[0], p[1], ConstantsMember)
		}
		t := f.tensors[o]
		t.Name = p[0]
		f.tensors = append(f.tensors, t)
		f.aliasOf = append(f.aliasOf, o)
	}
	return nil
}

// Members returns the package's members in central-directory order.
func (f *File) Members() []Member { return f.members[:len(f.members):len(f.members)] }

// Version returns Program.version ("1" from today's writer).
func (f *File) Version() string { return f.version }

// Methods returns the program's methods in file order. The slice is
// shared: do not modify it.
func (f *File) Methods() []Method { return f.methods[:len(f.methods):len(f.methods)] }

// Method returns the method named name.
func (f *File) Method(name string) (*Method, bool) {
	i, ok := f.methodIx.Lookup(name)
	if !ok {
		return nil, false
	}
	return &f.methods[i], true
}

// AliasOf returns the index of the tensor whose bytes tensor i shares
// through aliases.json, and whether tensor i is an alias.
func (f *File) AliasOf(i int) (int, bool) {
	if i < f.owners || i >= len(f.tensors) {
		return i, false
	}
	return f.aliasOf[i-f.owners], true
}

// ConstantsHeaderSize returns the header size of program.safetensors, -1
// when the package has none.
func (f *File) ConstantsHeaderSize() int64 { return f.hsize }

// NumTensors returns the number of tensors, aliases included.
func (f *File) NumTensors() int { return len(f.tensors) }

// TensorAt returns tensor i: program.safetensors entries in file order,
// then the aliases by key.
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i] }

// TensorData returns the bytes of tensor i.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns the index of the tensor named name (a key or an alias).
func (f *File) Lookup(name string) (int, bool) { return f.index.Lookup(name) }

// Segments returns the data buffer of program.safetensors, or nothing
// when the package has no constants.
func (f *File) Segments() []segment.Segment { return f.segs[:len(f.segs):len(f.segs)] }

// NamedData returns nil.
func (f *File) NamedData() []format.NamedData { return nil }

// Groups returns the method names in file order.
func (f *File) Groups() []string { return f.groups[:len(f.groups):len(f.groups)] }

// Check does nothing: NewFile verified the graph and read every method.
func (f *File) Check() error { return nil }

// Close does nothing: the mapping is the caller's.
func (f *File) Close() error { return nil }

var _ format.Model = (*File)(nil)

// Sniff reports whether head starts a zip whose first member is one of a
// package's.
func Sniff(head []byte) bool {
	if len(head) < 30 || string(head[:4]) != "PK\x03\x04" {
		return false
	}
	n := int(head[26]) | int(head[27])<<8
	if 30+n > len(head) {
		return false
	}
	switch string(head[30 : 30+n]) {
	case GraphMember, ConstantsMember, AliasesMember:
		return true
	}
	return false
}

// Format registers .ptn packages with package format at init.
var Format = format.Registration{
	Name:  formatName,
	Files: "ExecuTorch packages (.ptn: graph and safetensors in a stored zip)",
	Order: "for each method, the order its nodes first use them",
	Magic: "a zip whose first entry is program.ptg, program.safetensors or aliases.json",
	Sniff: Sniff,
	Open: func(mf *mmapfile.File, _ *format.Config) (format.Model, error) {
		return NewFile(mf)
	},
}

func init() { format.Register(Format) }

// MappedFile returns the package's mapping, which the views point into.
func (f *File) MappedFile() *mmapfile.File { return f.mf }
