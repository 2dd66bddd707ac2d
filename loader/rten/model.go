package rten

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Format registers RTen with package format at init: a headerless V1
// model is tried as a fallback, when no other format claims the file.
var Format = format.Registration{
	Name:     "rten",
	Files:    "RTen models (.rten V1 and V2)",
	Order:    "the order the graph's operators first use them",
	Magic:    "\"RTEN\" at offset 0",
	Sniff:    func(head []byte) bool { return len(head) >= 4 && string(head[:4]) == Magic },
	Fallback: true,
	Open: func(mf *mmapfile.File, c *format.Config) (format.Model, error) {
		return NewFile(mf, WithHead(c.Head))
	},
}

func init() { format.Register(Format) }

// NumTensors returns len(Tensors()).
func (m *Model) NumTensors() int { return len(m.tensors) }

// TensorAt returns &Tensors()[i].
func (m *Model) TensorAt(i int) *format.Tensor { return &m.tensors[i] }

// TensorData returns Tensors()[i].Data.
func (m *Model) TensorData(i int) segment.Segment { return m.tensors[i].Data }

// Lookup returns the index in Tensors of the first constant named name.
func (m *Model) Lookup(name string) (int, bool) { return m.byName.Lookup(name) }

// NamedData returns nil: an RTen model has none.
func (m *Model) NamedData() []format.NamedData { return nil }

// Groups returns nil: the graph and its subgraphs have one use order.
func (m *Model) Groups() []string { return nil }

// UseOrder returns the constants in the order the graph's operators first
// use them (group ""; see the package doc), unused ones last.
func (m *Model) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, fmt.Errorf("rten: use order: %q: an RTen model has no methods: %w", group, format.ErrNotFound)
	}
	return m.order(), nil
}

// Check returns nil: Open checked everything.
func (m *Model) Check() error { return nil }

// MappedFile returns the mapping the views point into (File).
func (m *Model) MappedFile() *mmapfile.File { return m.File() }
