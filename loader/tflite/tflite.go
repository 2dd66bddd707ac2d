// Package tflite reads TensorFlow Lite / LiteRT models (.tflite): one
// FlatBuffer (identifier "TFL3") at byte 0 whose constant tensors keep their
// bytes in buffers, inline in the FlatBuffer or, in the large-model layout,
// at Buffer.offset/size from the file start.
//
// NewFile verifies the FlatBuffer as LiteRT's Verifier does and checks
// every index and byte range it hands out, touching no buffer page; the
// operators and the tensors' quantization and sparsity tables are verified
// at first use, or by Check. Tensors, segments and named data are
// zero-copy views of the mapping. A *Model implements format.Model and
// format.Reporter; what only TFLite has is reached through its methods.
//
// What a Model lists, following shared/spec/FORMATS-tflite.md §5:
//   - Tensors: every (subgraph, tensor) whose buffer holds bytes, in
//     subgraph order then tensor order. NBytes is the buffer's size (packed
//     int4/uint4/int2, sparse and string tensors included). The name is
//     Tensor.name; when listed tensors of two or more subgraphs share a
//     name, each gets "<subgraph index>/<name>"; an unnamed tensor gets
//     "<subgraph index>/tensors/<tensor index>" with NameExplicit false.
//   - Segments: one per buffer holding bytes (metadata buffers and buffers
//     no tensor names included), in file order; SegmentIndex gives each
//     one's buffer index.
//   - NamedData: the files of the zip archive TFLite Support appends after
//     a model with TFLITE_METADATA, those stored uncompressed (zero-copy).
//     They lie in no buffer: their Segment is -1.
//
// Every error about the file's content is a *format.FormatError with
// Format "tflite", naming the field path and the absolute file offset.
package tflite

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/edgeload/edgeload/internal/fbverify"
	"github.com/edgeload/edgeload/internal/schema/tflitefb"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/region"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// formatName is the Format of every *format.FormatError the package returns.
const formatName = "tflite"

// Identifier is the FlatBuffer file identifier of a .tflite file, at bytes
// [4, 8).
const Identifier = "TFL3"

// MaxVersion is the highest Model.version the package reads (schema 3;
// versions 0 to 2 are read the same way).
const MaxVersion = 3

// Format registers TFLite with package format at init.
var Format = format.Registration{
	Name:  formatName,
	Files: "TFLite and LiteRT models (.tflite)",
	Order: "for each subgraph, the order its operators read its constants",
	Magic: `"TFL3" at offset 4`,
	Sniff: Sniff,
	Open: func(mf *mmapfile.File, cfg *format.Config) (format.Model, error) {
		if mf == nil {
			return nil, format.Errorf(formatName, "", -1, "no file")
		}
		return parse(mf, cfg.Head)
	},
}

func init() { format.Register(Format) }

// Sniff reports whether head, a file's first bytes, carries the TFLite
// identifier.
func Sniff(head []byte) bool { return len(head) >= 8 && string(head[4:8]) == Identifier }

// TensorType is a TFLite tensor element type code (schema enum TensorType).
type TensorType int8

// The TensorType codes.
const (
	TypeFloat32 TensorType = iota
	TypeFloat16
	TypeInt32
	TypeUint8
	TypeInt64
	TypeString
	TypeBool
	TypeInt16
	TypeComplex64
	TypeInt8
	TypeFloat64
	TypeComplex128
	TypeUint64
	TypeResource
	TypeVariant
	TypeUint32
	TypeUint16
	TypeInt4
	TypeBFloat16
	TypeInt2
	TypeUint4
	TypeFloat8E4M3FN
	TypeFloat8E5M2
	numTypes
)

var typeDTypes = [numTypes]format.DType{
	TypeFloat32: format.Float32, TypeFloat16: format.Float16, TypeInt32: format.Int32,
	TypeUint8: format.Uint8, TypeInt64: format.Int64, TypeString: format.String,
	TypeBool: format.Bool, TypeInt16: format.Int16, TypeComplex64: format.Complex64,
	TypeInt8: format.Int8, TypeFloat64: format.Float64, TypeComplex128: format.Complex128,
	TypeUint64: format.Uint64, TypeUint32: format.Uint32, TypeUint16: format.Uint16,
	TypeInt4: format.Int4, TypeBFloat16: format.BFloat16, TypeInt2: format.Int2,
	TypeUint4: format.Uint4, TypeFloat8E4M3FN: format.Float8E4M3FN, TypeFloat8E5M2: format.Float8E5M2,
}

// DType returns the element type, or format.Invalid for resource, variant
// and codes past the known ones.
func (t TensorType) DType() format.DType {
	if t >= 0 && t < numTypes {
		return typeDTypes[t]
	}
	return format.Invalid
}

// String returns the type's name ("float32", "resource", ...).
func (t TensorType) String() string {
	switch t {
	case TypeResource:
		return "resource"
	case TypeVariant:
		return "variant"
	}
	if d := t.DType(); d != format.Invalid {
		return d.String()
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Tensor is one tensor of a subgraph. For a listed tensor (one whose
// buffer holds bytes) the embedded format.Tensor has the name of §5,
// Location segment, the absolute Offset, NBytes = the buffer's size and a
// zero-copy Data view; for the others Location is none and Name is
// Tensor.name as stored.
type Tensor struct {
	format.Tensor
	// Subgraph and Index place the tensor: tensor Index of subgraph Subgraph.
	Subgraph, Index int
	// Type is the TFLite type code (DType maps it; resource and variant
	// have none).
	Type TensorType
	// Buffer is Tensor.buffer: an index into Model.Buffers, 0 for none.
	Buffer int
	// RawName is Tensor.name as stored ("" when absent).
	RawName string
	// Variable is Tensor.is_variable (a variable tensor's buffer, if any,
	// holds its initial value).
	Variable bool
	// HasRank is Tensor.has_rank.
	HasRank bool
	// HasShape reports whether the file gives a shape; without one, Shape
	// is empty and says nothing of NBytes.
	HasShape bool
	// ShapeSignature is Tensor.shape_signature (-1: unknown dimension);
	// nil when absent.
	ShapeSignature []int32
	// Quantized reports that the tensor has quantization parameters
	// (Model.Quantization).
	Quantized bool
	// ExternalBuffer is Tensor.external_buffer: an ExternalBuffer id
	// (schema 3d, bytes in another file), 0 for none.
	ExternalBuffer uint32

	table flatbuffers.UOffsetT // the Tensor table's position in the FlatBuffer
}

// Listed reports whether the tensor is one of the model's tensors (its
// buffer holds bytes).
func (t *Tensor) Listed() bool { return t.Location != format.LocNone }

// Subgraph is one subgraph of the model (subgraph 0 is the main graph).
type Subgraph struct {
	// Index is the subgraph's position in Model.subgraphs.
	Index int
	// Name is SubGraph.name ("" when absent).
	Name string
	// Group is the name UseOrder knows the subgraph by: Name, or the index
	// when the subgraph is unnamed, its name is repeated or is a number.
	Group string
	// Tensors are every tensor of the subgraph, by index.
	Tensors []Tensor
	// Inputs and Outputs are SubGraph.inputs and outputs (tensor indices).
	Inputs, Outputs []int32
	// NumOperators is the number of operators.
	NumOperators int
}

// BufferKind says where a buffer's bytes are.
type BufferKind uint8

// The buffer kinds.
const (
	// BufferEmpty: the buffer holds no bytes (no data, offset <= 1 or
	// size 0).
	BufferEmpty BufferKind = iota
	// BufferInline: the bytes are Buffer.data, inside the FlatBuffer.
	BufferInline
	// BufferOffset: the bytes are [Buffer.offset, +Buffer.size) of the
	// file (the large-model layout).
	BufferOffset
)

// Buffer is one entry of Model.buffers.
type Buffer struct {
	Kind BufferKind
	// Data is a zero-copy view of the bytes (the zero Segment when empty);
	// Data.Offset() is absolute.
	Data segment.Segment
}

// Metadata is one Model.metadata entry: a named buffer.
type Metadata struct {
	Name   string
	Buffer int
	Data   segment.Segment // the buffer's bytes (zero when it holds none)
}

// TensorMap maps a signature's input or output name to a tensor index of
// the signature's subgraph.
type TensorMap struct {
	Name   string
	Tensor int
}

// SignatureDef is one Model.signature_defs entry.
type SignatureDef struct {
	Key             string
	Subgraph        int
	Inputs, Outputs []TensorMap
}

// OperatorCode is one Model.operator_codes entry.
type OperatorCode struct {
	// Builtin is the builtin operator code (the larger of builtin_code and
	// deprecated_builtin_code, as the runtime reads it); 32 is CUSTOM.
	Builtin int32
	// Custom is custom_code ("" when absent).
	Custom  string
	Version int32
}

// ExternalBuffer is one Model.external_buffers entry (schema 3d): a slice
// of another file, named by its group.
type ExternalBuffer struct {
	ID             uint32
	Group          string
	Offset, Length uint64
	Packing        string
}

// AssociatedFile is a file of the zip archive TFLite Support appends after
// a model (labels, vocabularies).
type AssociatedFile struct {
	Name string
	// Method is the zip compression method (0: stored, 8: deflated).
	Method uint16
	// Size is the uncompressed size.
	Size int64
	// Data is a zero-copy view of the bytes as stored (compressed unless
	// Method is 0).
	Data segment.Segment
}

// Model is an opened .tflite model. Its methods are safe for concurrent
// use; views stay valid until the mapping is closed. NewFile builds only
// the views of the constants; the rest is built from the verified
// FlatBuffer by the first call that asks for it.
type Model struct {
	mf     *mmapfile.File
	fb     []byte         // the verified FlatBuffer region [0, len(fb))
	root   tflitefb.Model // its root table
	walk   fbverify.Walk  // the walk that verified it, which verifies what it left at first use
	walkMu sync.Mutex     // guards walk
	// region is the pooled buffer a small file was read into (fb), nil
	// when fb is a view of the mapping. Close hands it back, so whatever
	// reads fb (or root) once NewFile has returned pins it first (pin),
	// and reads nothing once the model is closed.
	region *[]byte
	sparse bool         // region is a sparse read of the file (verify)
	fbMu   sync.RWMutex // held for reading by a pin, for writing by Close

	paramsOnce sync.Once // the quantization and sparsity tables are verified
	paramsErr  error
	closed     atomic.Bool

	version uint32
	buffers []Buffer
	// tensors are the listed tensors (see the package doc): where each is
	// and which buffer holds its bytes.
	tensors []constant
	nsub    int

	listOnce sync.Once
	list     *listing // names, tensors and subgraphs, built by the first call that needs them

	segOnce sync.Once
	segs    []segment.Segment
	segBuf  []int // buffer index of each segment

	infoOnce sync.Once
	info     *info // description, operator codes, metadata, signatures, external buffers

	assocOnce sync.Once
	assoc     []AssociatedFile
	named     []format.NamedData

	orderOnce sync.Once
	order     *useOrder
	orderErr  error
}

// constant is a listed tensor: tensor Index of subgraph Subgraph, whose
// bytes are buffer Buffer.
type constant struct {
	Subgraph, Index int32
	Buffer          int
}

// NewFile reads the model in mf. mf stays the caller's: Close does not
// close it, and views are valid until it is closed.
func NewFile(mf *mmapfile.File) (*Model, error) {
	if mf == nil {
		return nil, format.Errorf(formatName, "", -1, "no file")
	}
	return parse(mf, nil)
}

// Version returns Model.version.
func (m *Model) Version() uint32 { return m.version }

// Description returns Model.description.
func (m *Model) Description() string { return m.infos().description }

// Size returns the file's size in bytes.
func (m *Model) Size() int64 { return m.mf.Len() }

// FlatBufferLen returns the length of the verified FlatBuffer region [0, n)
// (it may extend past the FlatBuffer's own tables: its end is not stored).
func (m *Model) FlatBufferLen() int64 { return int64(len(m.fb)) }

// MappedFile returns the mapping the views point into.
func (m *Model) MappedFile() *mmapfile.File { return m.mf }

// Subgraphs returns the subgraphs. The slice is shared: do not modify it.
func (m *Model) Subgraphs() []Subgraph { return m.listed().subgraphs }

// Buffers returns Model.buffers. The slice is shared: do not modify it.
func (m *Model) Buffers() []Buffer { return m.buffers }

// OperatorCodes returns Model.operator_codes.
func (m *Model) OperatorCodes() []OperatorCode { return m.infos().opcodes }

// Metadata returns Model.metadata.
func (m *Model) Metadata() []Metadata { return m.infos().metadata }

// SignatureDefs returns Model.signature_defs.
func (m *Model) SignatureDefs() []SignatureDef { return m.infos().signatures }

// ExternalBuffers returns Model.external_buffers (schema 3d).
func (m *Model) ExternalBuffers() []ExternalBuffer { return m.infos().extBuffers }

// AssociatedFiles returns the files of the zip archive appended after a
// model with TFLITE_METADATA (none when there is no such archive, or it
// does not parse as a zip).
func (m *Model) AssociatedFiles() []AssociatedFile {
	m.assocOnce.Do(m.assocFiles)
	return m.assoc
}

// Tensors returns the listed tensors (see the package doc).
func (m *Model) Tensors() []*Tensor { return m.listed().tensors }

// SegmentIndex returns the buffer index of segment i (the index a report
// shows); it implements format.SegmentIndexer.
func (m *Model) SegmentIndex(i int) int {
	m.segOnce.Do(m.segments)
	return m.segBuf[i]
}

// NumTensors returns the number of listed tensors.
func (m *Model) NumTensors() int { return len(m.tensors) }

// TensorAt returns listed tensor i.
func (m *Model) TensorAt(i int) *format.Tensor { return &m.listed().tensors[i].Tensor }

// TensorData returns the bytes of listed tensor i.
func (m *Model) TensorData(i int) segment.Segment { return m.buffers[m.tensors[i].Buffer].Data }

// AppendTensorBytes appends the bytes of every listed tensor, in tensor
// order, to dst.
func (m *Model) AppendTensorBytes(dst [][]byte) ([][]byte, error) {
	for _, c := range m.tensors {
		b, err := m.buffers[c.Buffer].Data.Bytes()
		if err != nil {
			return dst, err
		}
		dst = append(dst, b)
	}
	return dst, nil
}

// Lookup returns the index of the first listed tensor named name. It
// allocates nothing once the names are built (by the first call).
func (m *Model) Lookup(name string) (int, bool) { return m.listed().index.Lookup(name) }

// Segments returns one segment per buffer holding bytes, in file order.
func (m *Model) Segments() []segment.Segment {
	m.segOnce.Do(m.segments)
	return m.segs[:len(m.segs):len(m.segs)]
}

// NamedData returns the stored associated files, Segment -1 (see the
// package doc).
func (m *Model) NamedData() []format.NamedData {
	m.assocOnce.Do(m.assocFiles)
	return m.named[:len(m.named):len(m.named)]
}

// Check makes the checks NewFile leaves for later: it verifies the
// tensors' quantization and sparsity tables (which the first Quantization
// or Sparsity does otherwise) and the operators' tables, and checks the
// operators' indices (operator codes, tensors, subgraphs their options
// name), which the first use order does otherwise.
func (m *Model) Check() error {
	if m.closed.Load() {
		return format.ErrClosed
	}
	if err := m.verifyParams(); err != nil {
		return err
	}
	_, err := m.useOrder()
	return err
}

// Close marks the model closed and hands back the buffer a small file's
// FlatBuffer was read into; the mapping is the caller's.
func (m *Model) Close() error {
	if m.closed.Swap(true) || m.region == nil {
		return nil
	}
	m.fbMu.Lock() // no pin left: nothing reads the buffer
	m.putRegion()
	m.fbMu.Unlock()
	return nil
}

// putRegion hands the region back to its pool.
func (m *Model) putRegion() {
	if m.sparse {
		images.Put(m.region)
	} else {
		region.Put(m.region)
	}
	m.region = nil
}

// pin holds the FlatBuffer region against Close and reports whether the
// model is still open (fb may be read); either way the caller releases it
// with unpin. A pin is not taken twice by one goroutine (a Close waiting
// between the two would wait for ever).
func (m *Model) pin() bool {
	m.fbMu.RLock()
	return !m.closed.Load()
}

// unpin releases a pin.
func (m *Model) unpin() { m.fbMu.RUnlock() }

// MinRuntimeVersion returns the min_runtime_version metadata (the
// converter's zero-padded version string), "" when absent.
func (m *Model) MinRuntimeVersion() string {
	for _, md := range m.Metadata() {
		if md.Name == "min_runtime_version" {
			b := make([]byte, min(md.Data.Len(), 64))
			n, _ := md.Data.CopyTo(b)
			b, _, _ = bytes.Cut(b[:n], []byte{0})
			return string(b)
		}
	}
	return ""
}
