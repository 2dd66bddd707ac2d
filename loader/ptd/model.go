package ptd

import (
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/internal/nameindex"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// Format registers .ptd files with package format at init.
var Format = format.Registration{
	Name:  "ptd",
	Files: "ExecuTorch named data (.ptd)",
	Order: "key order",
	Magic: "\"FT..\" at offset 4",
	Sniff: func(head []byte) bool { return len(head) >= 8 && string(head[4:6]) == "FT" },
	Open: func(mf *mmapfile.File, c *format.Config) (format.Model, error) {
		return NewFile(mf, WithHead(c.Head), WithName(c.Name))
	},
	Convert: Convert,
}

func init() { format.Register(Format) }

// NumTensors returns len(Tensors()).
func (f *File) NumTensors() int { return len(f.tensors) }

// TensorAt returns &Tensors()[i].
func (f *File) TensorAt(i int) *format.Tensor { return &f.tensors[i] }

// TensorData returns Tensors()[i].Data.
func (f *File) TensorData(i int) segment.Segment { return f.tensors[i].Data }

// Lookup returns the index in Tensors of the first tensor with the given
// key. The first call builds the index; later calls allocate nothing.
func (f *File) Lookup(name string) (int, bool) {
	f.byNameOnce.Do(func() {
		f.byName = nameindex.New(len(f.tensors), func(i int) string { return f.tensors[i].Name })
	})
	return f.byName.Lookup(name)
}

// Groups returns nil: a .ptd has one use order.
func (f *File) Groups() []string { return nil }

// FileOrder reports true: the format records no order of use, so
// UseOrder is file order.
func (f *File) FileOrder() bool { return true }

// UseOrder returns the tensors in key (file) order, for group "".
func (f *File) UseOrder(group string) ([]int, error) {
	if group != "" {
		return nil, fmt.Errorf("ptd: use order: %q: a .ptd file has no methods: %w", group, format.ErrNotFound)
	}
	order := make([]int, len(f.tensors))
	for i := range order {
		order[i] = i
	}
	return order, nil
}

// Check returns nil: Open checked everything.
func (f *File) Check() error {
	if f.closed.Load() {
		return format.ErrClosed
	}
	return nil
}
