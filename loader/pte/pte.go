// Package pte reads ExecuTorch program files (.pte) in place, from an
// *mmapfile.File the caller owns ([NewFile]). Opening verifies the headers
// and the FlatBuffer region (every offset, index and byte range) so that
// no accessor can panic afterwards, and touches no segment data: weights,
// delegate blobs and named data are zero-copy views, valid until the file
// holding them is closed.
//
// A method's instructions, tensor lists and tensors without data are
// checked on first use ([Program.VerifyMethods] checks them all); the
// methods, the tensor list and the name indexes are built by the first call
// that needs them. External tensors (data in a .ptd file) have Offset -1
// and no data until linked with [WithData] or [Program.Link].
package pte

import (
	"fmt"
	"sync"
	"sync/atomic"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

const formatName = "pte"

// Identifier is the FlatBuffer file identifier of the program schema this
// package reads.
const Identifier = "ET12"

// Option configures NewFile.
type Option func(*options)

type options struct {
	data     []*ptd.File
	maxDepth int
	name     string
	head     []byte // WithHead

	// Limits tests set (0: the default).
	maxObjects int
	budget     int64
	// noQuick turns off the fast paths of the checks (quick.go,
	// builder.indicesOK), so that tests can compare the outcomes.
	noQuick bool
}

// WithHead gives NewFile the file's first bytes when the caller has already
// read them (as a format sniffer has), so that it reads only the rest. They
// must be the file's own first bytes; NewFile copies what it uses.
func WithHead(head []byte) Option {
	return func(o *options) { o.head = head }
}

// WithData links the program to the given .ptd files as it is opened (see
// [Program.Link]); NewFile fails if an external tensor cannot be resolved.
func WithData(files ...*ptd.File) Option {
	return func(o *options) { o.data = append(o.data, files...) }
}

// WithMaxDepth bounds the nesting depth of FlatBuffer tables accepted by
// verification (default fbverify.DefaultMaxDepth). Programs nest at most 6
// tables deep; a smaller limit only rejects hostile files sooner.
func WithMaxDepth(n int) Option {
	return func(o *options) { o.maxDepth = n }
}

// WithName sets the name reported by [Program.Name] (by default the
// file's, mmapfile.File.Name).
func WithName(name string) Option {
	return func(o *options) { o.name = name }
}

// Header is what the 8-byte prefix and the optional extended header say.
type Header struct {
	// RootOffset is the u32 at [0,4): the FlatBuffer root table's offset.
	RootOffset uint32
	// Identifier is the file identifier at [4,8), "ET12".
	Identifier string
	// Extended reports whether the "eh00" extended header is present.
	Extended bool
	// Length is the extended header's length field (24, 32 or more); 0
	// without an extended header.
	Length uint32
	// ProgramSize is the size of the FlatBuffer region [0, ProgramSize),
	// headers included (the file size when there is no extended header).
	ProgramSize int64
	// SegmentBase is the absolute offset of segment data; 0 when the file
	// has none.
	SegmentBase int64
	// SegmentDataSize is the size of the segment data, when
	// SegmentDataSizeKnown (a header of 32 bytes or more).
	SegmentDataSize      int64
	SegmentDataSizeKnown bool
}

// ValueKind is the type of an execution plan value (the KernelTypes union
// tag).
type ValueKind uint8

// The value kinds, numbered as the KernelTypes union tags.
const (
	KindNone ValueKind = iota
	KindNull
	KindInt
	KindBool
	KindDouble
	KindTensor
	KindString
	KindIntList
	KindDoubleList
	KindBoolList
	KindTensorList
	KindOptionalTensorList
)

var kindNames = [...]string{"None", "Null", "Int", "Bool", "Double", "Tensor", "String", "IntList", "DoubleList", "BoolList", "TensorList", "OptionalTensorList"}

// String returns the kind's schema name, e.g. "Tensor".
func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ValueKind(%d)", uint8(k))
}

// Value is one entry of an execution plan's values. Only the fields of its
// Kind are set.
type Value struct {
	Kind    ValueKind
	Int     int64     // KindInt
	Bool    bool      // KindBool
	Double  float64   // KindDouble
	String  string    // KindString
	Ints    []int64   // KindIntList
	Doubles []float64 // KindDoubleList
	Bools   []bool    // KindBoolList
	// Items are value indices (KindTensorList, KindOptionalTensorList;
	// -1 = none in the optional list).
	Items []int32
	// Tensor describes a KindTensor value.
	Tensor *TensorValue
}

// TensorValue is a tensor value of an execution plan, whether or not the
// file holds its data.
type TensorValue struct {
	ScalarType   int8
	DType        format.DType
	Sizes        []int64
	DimOrder     []uint8 // nil: contiguous
	RequiresGrad bool
	// DataBufferIndex is data_buffer_idx: 0 for a tensor without initial
	// data, else an index into the constant (or mutable) offsets.
	DataBufferIndex uint32
	// Planned reports allocation_info (memory planned); MemoryID and
	// MemoryOffset say where.
	Planned       bool
	MemoryID      uint32
	MemoryOffset  uint64
	ShapeDynamism int8
	// FullyQualifiedName is extra_tensor_info.fully_qualified_name.
	FullyQualifiedName string
	// Location is where the data lives; LocNone for a tensor without data
	// in the file (an activation or input).
	Location format.Location
	// Tensor is the index of the tensor in Program.Tensors, or -1.
	Tensor int
}

// Operator is an entry of an execution plan's operator table.
type Operator struct {
	Name     string
	Overload string
}

// Chain summarises a chain of instructions.
type Chain struct {
	Inputs       []int32
	Outputs      []int32
	Instructions int // number of instructions (verified by the method's first check)
}

// Method is an execution plan. Its values are decoded on demand
// ([Method.Value]); its instructions, tensor lists and tensors without data
// are checked on first use (see [Program.VerifyMethods]).
type Method struct {
	Name  string
	Index int // position in Program.execution_plan
	// Inputs and Outputs are value indices.
	Inputs  []int32
	Outputs []int32
	Chains  []Chain
	// Operators is the plan's operator table.
	Operators []Operator
	// Delegates are indices into Program.Delegates of this plan's
	// delegates, in plan order.
	Delegates []int
	// NonConstBufferSizes are the planned memory buffer sizes.
	NonConstBufferSizes []int64
	// EncodedInputs and EncodedOutputs are the container metadata strings
	// (pytree specs); empty when absent.
	EncodedInputs  string
	EncodedOutputs string

	p      *Program
	pos    flatbuffers.UOffsetT // the ExecutionPlan table
	nv     int                  // len(values)
	check1 *methodCheck         // the instructions' check (check.go)
}

// Tensor is a tensor whose bytes the program holds (constant, mutable) or
// names (external). The embedded format.Tensor carries the name, dtype,
// shape, location, absolute offset, byte size and a zero-copy view.
type Tensor struct {
	format.Tensor
	// Method is the execution plan the tensor value belongs to, Value its
	// index in the plan's values.
	Method string
	Value  int
	// ScalarType is the file's ScalarType (DType is its meaning).
	ScalarType   int8
	RequiresGrad bool
	// DataBufferIndex is data_buffer_idx (0 for an external tensor).
	DataBufferIndex uint32
	// Segment is the index of the segment holding the bytes (constant or
	// mutable); -1 for inline and external tensors.
	Segment int
}

// DelegateLocation says where a delegate's processed blob lives.
type DelegateLocation uint8

// Delegate blob locations.
const (
	// DelegateInline: in Program.backend_delegate_data, inside the
	// FlatBuffer region.
	DelegateInline DelegateLocation = 0
	// DelegateSegment: a whole segment.
	DelegateSegment DelegateLocation = 1
)

// String returns "inline" or "segment".
func (l DelegateLocation) String() string {
	if l == DelegateSegment {
		return "segment"
	}
	return "inline"
}

// CompileSpec is a key/value pair a backend was compiled with.
type CompileSpec struct {
	Key   string
	Value []byte
}

// Delegate is a backend delegate of an execution plan.
type Delegate struct {
	Method string // the plan's name
	Index  int    // index in the plan's delegates
	ID     string // the backend id, e.g. "QnnBackend"
	// CompileSpecs are copies of the file's compile specs.
	CompileSpecs []CompileSpec
	Location     DelegateLocation
	// DataIndex is the index into backend_delegate_data (inline) or
	// segments (segment).
	DataIndex int
	// SegmentIndex is DataIndex for a segment blob, -1 for an inline one.
	SegmentIndex int
	// Data is a zero-copy view of the processed blob. A backend consumes
	// it once at initialisation; Data.Release() then drops its pages (the
	// view stays valid: touching it again faults them back in). Two
	// delegates may share a segment.
	Data segment.Segment
}

// Program is an opened ExecuTorch program. Its accessors are safe for
// concurrent use; Link and Close are not safe beside other calls.
type Program struct {
	mf     *mmapfile.File
	name   string
	closed atomic.Bool

	hdr     Header
	version uint32

	fb     []byte        // the FlatBuffer region, verified
	region *[]byte       // the pooled buffer fb was read into, if it was (package region)
	checks programChecks // what the methods' checks share (check.go)
	walk   fbverify.Walk // the walk Open verified the program with (checks.walk until Close)

	// Built on first use (methods.go, tensors.go).
	plans        int64 // position of the first execution_plan offset
	nmethods     int
	ndelegates   int
	methodsOnce  sync.Once
	methods      []Method
	methodIdx    nameindex.Index // by name, for more than methodScan methods
	recs         []tensorRec     // one per tensor (tensors.go); nil once closed
	recBuf       *[]tensorRec    // the pooled array recs may be in (tensors.go)
	ntensors     int             // len(recs) before Close
	constSeg     int             // segment index of the constant segment; -1 legacy
	mutSeg       int             // segment index of mutable_data_segments[0]; -1 none
	list         tensorList      // the Tensor values, built on first use
	valueTensor  [][]int32       // per method, per value: index into recs or -1
	inlineConsts bool            // constants are in the legacy constant_buffer (or there are none)

	indexOnce sync.Once
	tensorIdx nameindex.Index
	segments  []segment.Segment
	segArr    [2]segment.Segment // segments, for a program of up to 2
	named     []format.NamedData
	namedOnce sync.Once
	namedIdx  nameindex.Index
	delegates []Delegate
	legacy    bool
	external  int  // number of external tensors
	linked    bool // a Link resolved an external tensor (Link and Close are not concurrent with other calls)
}

// NewFile opens the program in mf: a mapped file or section, bytes in
// memory (mmapfile.NewBytes) or an io.ReaderAt (mmapfile.NewReaderAt). The
// program does not own mf: Close leaves it open, and the caller closes it
// after the program and every view from it are no longer used.
func NewFile(mf *mmapfile.File, opts ...Option) (*Program, error) {
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return newProgram(mf, o)
}

// Close releases the program; its file and the linked .ptd files stay the
// caller's. Views handed out become invalid. Close is idempotent. After
// Close the tensor list is empty unless it was built before, TensorData
// returns an empty view and AppendTensorBytes and a method's check fail
// with ErrClosed.
func (p *Program) Close() error {
	if p == nil || p.closed.Swap(true) {
		return nil
	}
	if p.region != nil {
		// Nothing reads fb once closed (Value and buildList check).
		p.fb = nil
		p.checks.close()
		region.Put(p.region)
		p.region = nil
	}
	putRecs(p.recBuf, p.recs)
	p.recs, p.recBuf = nil, nil
	return nil
}

// Name returns the name of the program's file (mmapfile.File.Name), or the
// name given with WithName.
func (p *Program) Name() string { return p.name }

// MappedFile returns the file the program's views point into.
func (p *Program) MappedFile() *mmapfile.File { return p.mf }

// Header returns what the file's headers say.
func (p *Program) Header() Header { return p.hdr }

// Version returns Program.version (always 0: later versions are rejected).
func (p *Program) Version() uint32 { return p.version }

// Legacy reports whether the program keeps its constants inline in the
// legacy constant_buffer rather than in a constant segment.
func (p *Program) Legacy() bool { return p.legacy }

// Methods returns the execution plans in file order; do not modify the
// slice. After Close it is empty unless it was built before.
func (p *Program) Methods() []Method { return p.methodList() }

// NumMethods returns the number of execution plans (len(Methods())) without
// building them.
func (p *Program) NumMethods() int { return p.nmethods }

// Method returns the execution plan with the given name.
func (p *Program) Method(name string) (*Method, bool) {
	i, ok := p.methodIndex(name)
	if !ok {
		return nil, false
	}
	return &p.methods[i], true
}

// methodScan is the most methods found by name with a scan of their
// names; a program with more has a name index (Program.methodIdx).
const methodScan = 8

// methodIndex returns the index of the method with the given name; it
// builds the methods.
func (p *Program) methodIndex(name string) (int, bool) {
	ms := p.methodList()
	if len(ms) > methodScan {
		return p.methodIdx.Lookup(name)
	}
	for i := range ms {
		if ms[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// Tensors returns every tensor with data in (or named by) the program: for
// each method in order, each constant, mutable or external tensor value in
// value order. Do not modify the slice. The first call builds the list.
func (p *Program) Tensors() []Tensor { return p.all() }

// Tensor returns the tensor with the given name (its fully-qualified name,
// or "<method>/values/<i>" when it has none); the first in Tensors order
// when several share it. The first call builds the tensor list and the name
// index; later calls allocate nothing.
func (p *Program) Tensor(name string) (*Tensor, bool) {
	i, ok := p.Lookup(name)
	if ts := p.all(); ok && i < len(ts) {
		return &ts[i], true
	}
	return nil, false
}

func (p *Program) buildIndex() {
	ts := p.all()
	p.tensorIdx = nameindex.New(len(ts), func(i int) string { return ts[i].Name })
}

// ValueTensor returns the tensor of value index value of the named method;
// false when that value is not a constant, mutable or external tensor. It
// allocates nothing.
func (p *Program) ValueTensor(method string, value int) (*Tensor, bool) {
	m, ok := p.methodIndex(method)
	if !ok || m >= len(p.valueTensor) || value < 0 || value >= len(p.valueTensor[m]) {
		return nil, false
	}
	i := p.valueTensor[m][value]
	if ts := p.all(); i >= 0 && int(i) < len(ts) {
		return &ts[i], true
	}
	return nil, false
}

// Segments returns views of the program's segments, in file order, with
// absolute offsets (segment_base_offset + segments[i].offset).
func (p *Program) Segments() []segment.Segment { return p.segments }

// NamedData returns Program.named_data in file order: each key's blob is a
// whole segment.
func (p *Program) NamedData() []format.NamedData { return p.named }

// NamedDataByKey returns the named data entry with the given key (the
// first one when a key repeats). The first call builds the key index;
// later calls allocate nothing.
func (p *Program) NamedDataByKey(key string) (format.NamedData, bool) {
	p.namedOnce.Do(func() {
		p.namedIdx = nameindex.New(len(p.named), func(i int) string { return p.named[i].Key })
	})
	i, ok := p.namedIdx.Lookup(key)
	if !ok {
		return format.NamedData{}, false
	}
	return p.named[i], true
}

// Delegates returns every backend delegate of every method, in method
// order.
func (p *Program) Delegates() []Delegate {
	p.methodList()
	return p.delegates
}

// ProgramData returns a view of the FlatBuffer region [0, program_size).
func (p *Program) ProgramData() segment.Segment {
	s, _ := segment.New(p.mf, 0, p.hdr.ProgramSize)
	return s
}

// FileSize returns the size of the program file in bytes.
func (p *Program) FileSize() int64 { return p.mf.Len() }

// External returns the number of external tensors, and how many of them
// are still unresolved (not linked to a .ptd).
func (p *Program) External() (total, unresolved int) {
	ts := p.all()
	for i := range ts {
		if ts[i].Location == format.LocExternal {
			total++
			if ts[i].Offset < 0 {
				unresolved++
			}
		}
	}
	return total, unresolved
}
