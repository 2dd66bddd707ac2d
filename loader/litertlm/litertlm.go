// Package litertlm reads LiteRT-LM containers (.litertlm): a 32-byte
// header ("LITERTLM", version, header end), a FlatBuffer that lists
// metadata and sections, and the sections, each on a 16 KiB boundary.
//
// A TFLiteModel section is a complete .tflite file whose buffer offsets
// count from the section's start: NewFile opens it in place (a section
// File of the mapping, mmapfile.File.Sub) with package loader/tflite. The
// other sections (tokenizers, metadata protos, weights) are named data.
//
// As a format.Model, a container lists the tensors of its TFLite sections
// with absolute offsets, named "<section>/<name>" when it has more than
// one TFLite section (groups likewise), one segment per section, and the
// other sections as named data keyed "<section>/<data type>".
package litertlm

import (
	"cmp"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

const formatName = "litertlm"

// Magic is the first 8 bytes of a .litertlm file.
const Magic = "LITERTLM"

// MajorVersion is the container major version the package reads.
const MajorVersion = 1

// HeaderSize is the size of the fixed header before the FlatBuffer.
const HeaderSize = 32

// Format registers LiteRT-LM with package format at init.
var Format = format.Registration{
	Name:  formatName,
	Files: "LiteRT-LM containers (.litertlm)",
	Order: "each TFLite section's subgraphs, as for .tflite",
	Magic: `"LITERTLM" at offset 0`,
	Sniff: func(head []byte) bool { return len(head) >= 8 && string(head[:8]) == Magic },
	Open: func(mf *mmapfile.File, _ *format.Config) (format.Model, error) {
		return NewFile(mf)
	},
}

func init() { format.Register(Format) }

// DataType is a section's AnySectionDataType.
type DataType uint8

// The section data types.
const (
	TypeNone DataType = iota
	TypeGenericBinaryData
	TypeDeprecated
	TypeTFLiteModel
	TypeSPTokenizer
	TypeLlmMetadataProto
	TypeHFTokenizerZlib
	TypeTFLiteWeights
	TypeExecutorMetadataProto
)

var typeNames = []string{"NONE", "GenericBinaryData", "Deprecated", "TFLiteModel", "SP_Tokenizer",
	"LlmMetadataProto", "HF_Tokenizer_Zlib", "TFLiteWeights", "ExecutorMetadataProto"}

// String returns the schema's name of the type.
func (t DataType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "DataType(" + strconv.Itoa(int(t)) + ")"
}

// KeyValue is a KeyValuePair of the system metadata or of a section.
// String values are decoded; for the numeric VData members (structs in
// early writers, tables in later ones) only the tag is given.
type KeyValue struct {
	Key string
	// Tag is the VData union tag (9: StringValue).
	Tag    uint8
	String string
}

// Section is one section of the container.
type Section struct {
	Type  DataType
	Items []KeyValue
	// Data is the section's bytes [begin_offset, end_offset), absolute.
	Data segment.Segment
	// Model is the opened model of a TFLiteModel section, nil otherwise.
	Model *tflite.Model

	sub *mmapfile.File
	// begin, end: the absolute positions of the begin_offset and
	// end_offset fields.
	begin, end int64
}

// Model is an opened .litertlm container.
type Model struct {
	mf                  *mmapfile.File
	headerEnd           int64
	closed              atomic.Bool
	major, minor, patch uint32
	system              []KeyValue
	sections            []Section

	tensors []format.Tensor
	from    [][2]int // tensor -> (section, index in its model)
	segs    []segment.Segment
	segSec  []int // segment -> section
	named   []format.NamedData
	index   nameindex.Index
	groups  []string
	gfrom   [][2]int // group -> (section, subgraph)
	models  []int    // sections holding a model, in order
}

// NewFile reads the container in mf, which stays the caller's (Close
// closes only the section files NewFile opened).
func NewFile(mf *mmapfile.File) (*Model, error) {
	m := &Model{mf: mf}
	if err := m.parse(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Version returns the container version.
func (m *Model) Version() (major, minor, patch uint32) { return m.major, m.minor, m.patch }

// SystemMetadata returns the system metadata entries.
func (m *Model) SystemMetadata() []KeyValue { return m.system }

// Sections returns the sections in file order.
func (m *Model) Sections() []Section { return m.sections }

// NumTensors returns the number of tensors of the TFLite sections.
func (m *Model) NumTensors() int { return len(m.tensors) }

// TensorAt returns tensor i, its Offset absolute in the container.
func (m *Model) TensorAt(i int) *format.Tensor { return &m.tensors[i] }

// TensorData returns tensor i's bytes.
func (m *Model) TensorData(i int) segment.Segment { return m.tensors[i].Data }

// Lookup returns the index of the first tensor named name.
func (m *Model) Lookup(name string) (int, bool) { return m.index.Lookup(name) }

// Segments returns one segment per section, in file order.
func (m *Model) Segments() []segment.Segment { return m.segs[:len(m.segs):len(m.segs)] }

// NamedData returns the sections that hold no model.
func (m *Model) NamedData() []format.NamedData { return m.named[:len(m.named):len(m.named)] }

// Groups returns the groups of the TFLite sections' models.
func (m *Model) Groups() []string { return m.groups[:len(m.groups):len(m.groups)] }

// UseOrder returns the use order of a group; "" gives every model's
// used tensors in turn (each model's own "" order), then every model's
// unused ones.
func (m *Model) UseOrder(group string) ([]int, error) { return m.order(group, false) }

// UsedOrder is UseOrder without the tensors no operator reads (a
// subgraph's unread constants); it implements format.UsedOrderer.
func (m *Model) UsedOrder(group string) ([]int, error) { return m.order(group, true) }

func (m *Model) order(group string, usedOnly bool) ([]int, error) {
	if group == "" {
		var out, rest []int
		for _, s := range m.models {
			sm := m.sections[s].Model
			all, _ := sm.UseOrder("")
			used, _ := sm.UsedOrder("")
			out = append(out, m.rebase(s, used)...)
			rest = append(rest, m.rebase(s, all[len(used):])...)
		}
		if usedOnly {
			return out, nil
		}
		return append(out, rest...), nil
	}
	for g, name := range m.groups {
		if name == group {
			s := m.gfrom[g][0]
			sm := m.sections[s].Model
			get := sm.UseOrder
			if usedOnly {
				get = sm.UsedOrder
			}
			o, err := get(sm.Groups()[m.gfrom[g][1]])
			return m.rebase(s, o), err
		}
	}
	return nil, format.Wrapf(format.ErrNotFound, formatName, "", -1, "no group %q", group)
}

// SegmentIndex returns the index of the section segment i holds (the
// index a report shows); it implements format.SegmentIndexer.
func (m *Model) SegmentIndex(i int) int { return m.segSec[i] }

// MappedFile returns the container's mapping.
func (m *Model) MappedFile() *mmapfile.File { return m.mf }

// rebase maps tensor indices of section s's model to the container's.
func (m *Model) rebase(s int, o []int) []int {
	base, _ := slices.BinarySearchFunc(m.from, [2]int{s, 0}, func(a, b [2]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	out := make([]int, len(o))
	for i, x := range o {
		out[i] = base + x
	}
	return out
}

// Check checks the TFLite sections' models.
func (m *Model) Check() error {
	for _, s := range m.models {
		if err := m.sections[s].Model.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the section files NewFile opened.
func (m *Model) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	var err error
	for i := range m.sections {
		if s := &m.sections[i]; s.sub != nil {
			if s.Model != nil {
				s.Model.Close()
			}
			err = cmp.Or(err, s.sub.Close())
		}
	}
	return err
}
