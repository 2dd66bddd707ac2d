package repack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// converter returns the Convert of the registered format named name.
func converter(name string) (func(format.Model, []*format.Tensor, int64) (*format.Layout, error), bool) {
	for _, r := range format.Registered() {
		if r.Name == name && r.Convert != nil {
			return r.Convert, true
		}
	}
	return nil, false
}

// converters lists the names of the formats that convert.
func converters() string {
	var names []string
	for _, r := range format.Registered() {
		if r.Convert != nil {
			names = append(names, r.Name)
		}
	}
	return strings.Join(names, ", ")
}

// convertible returns the model's tensors, each with its bytes and a
// row-major layout, the form a conversion needs.
func convertible(m *loader.Model) ([]*format.Tensor, error) {
	ts := make([]*format.Tensor, m.NumTensors())
	for i := range ts {
		t := m.TensorAt(i)
		switch {
		case !t.Resolved():
			return nil, fmt.Errorf("repack: tensor %q has no data here (an external tensor: give its data file with --data)", t.Name)
		case t.DimOrder != nil && !slices.Equal(t.DimOrder, identity(len(t.DimOrder))):
			return nil, fmt.Errorf("repack: tensor %q has dim order %v, which a row-major file cannot hold", t.Name, t.DimOrder)
		case t.Sparse:
			return nil, fmt.Errorf("repack: tensor %q is sparse", t.Name)
		}
		ts[i] = t
	}
	return ts, nil
}

func identity(n int) []uint8 {
	d := make([]uint8, n)
	for i := range d {
		d[i] = uint8(i)
	}
	return d
}
