package repack

import (
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/edgeload/edgeload/loader"
)

// Difference is one way two files' tensors differ.
type Difference struct {
	Name string // the tensor's name
	// What says what differs: "only in A", "only in B", "dtype", "shape",
	// "sha256", "count" (the name occurs a different number of times), or
	// "unresolved" (an external tensor whose data was not given).
	What string
	A, B string // the two files' values, where they have one
}

// String returns the difference as one line.
func (d Difference) String() string {
	if d.A == "" && d.B == "" {
		return fmt.Sprintf("%s: %s", d.Name, d.What)
	}
	return fmt.Sprintf("%s: %s %s != %s", d.Name, d.What, d.A, d.B)
}

// TensorSum is what Check compares of a tensor.
type TensorSum struct {
	Name   string
	DType  string
	Shape  []int64
	SHA256 string // hex; empty for an unresolved external tensor
}

// Sums opens the model at path (linking a program to the .ptd files in
// data), verifies it, and returns every tensor's name, dtype, shape and the
// SHA-256 of its bytes, in the file's tensor order.
func Sums(path string, data ...string) ([]TensorSum, error) {
	var opts []loader.Option
	if len(data) > 0 {
		if f, err := loader.SniffFile(path); err == nil && f.LinksData() {
			opts = append(opts, loader.WithData(data...))
		}
	}
	m, err := loader.Open(path, opts...)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	if _, err := m.Verify(); err != nil {
		return nil, err
	}
	out := make([]TensorSum, m.NumTensors())
	for i := range out {
		t := m.TensorAt(i)
		out[i] = TensorSum{Name: t.Name, DType: t.DType.String(), Shape: slices.Clone(t.Shape)}
		if t.Resolved() {
			sum, err := t.Data.SHA256()
			if err != nil {
				return nil, fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
			}
			out[i].SHA256 = hex.EncodeToString(sum[:])
		}
	}
	return out, nil
}

// Check proves that the models at a and b hold the same weights: the same
// tensor names, each with the same dtype, shape and SHA-256 of its bytes
// (a name that occurs several times is compared occurrence by occurrence).
// It returns every difference found, in name order; none means the
// weights are the same. data lists .ptd files linked to either file when it
// is a program.
func Check(a, b string, data ...string) ([]Difference, error) {
	sa, err := Sums(a, data...)
	if err != nil {
		return nil, err
	}
	sb, err := Sums(b, data...)
	if err != nil {
		return nil, err
	}
	return Compare(sa, sb), nil
}

// Compare compares two lists of tensor sums by name (see Check).
func Compare(a, b []TensorSum) []Difference {
	byName := func(s []TensorSum) map[string][]TensorSum {
		m := make(map[string][]TensorSum)
		for _, t := range s {
			m[t.Name] = append(m[t.Name], t)
		}
		return m
	}
	ma, mb := byName(a), byName(b)
	var names []string
	for n := range ma {
		names = append(names, n)
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var diffs []Difference
	for _, n := range names {
		ta, tb := ma[n], mb[n]
		switch {
		case len(tb) == 0:
			diffs = append(diffs, Difference{Name: n, What: "only in A"})
			continue
		case len(ta) == 0:
			diffs = append(diffs, Difference{Name: n, What: "only in B"})
			continue
		case len(ta) != len(tb):
			diffs = append(diffs, Difference{Name: n, What: "count", A: fmt.Sprint(len(ta)), B: fmt.Sprint(len(tb))})
		}
		for i := range min(len(ta), len(tb)) {
			x, y := ta[i], tb[i]
			if x.DType != y.DType {
				diffs = append(diffs, Difference{Name: n, What: "dtype", A: x.DType, B: y.DType})
			}
			if !slices.Equal(x.Shape, y.Shape) {
				diffs = append(diffs, Difference{Name: n, What: "shape", A: fmt.Sprint(x.Shape), B: fmt.Sprint(y.Shape)})
			}
			switch {
			case x.SHA256 == "" || y.SHA256 == "":
				if x.SHA256 != y.SHA256 {
					diffs = append(diffs, Difference{Name: n, What: "unresolved"})
				}
			case x.SHA256 != y.SHA256:
				diffs = append(diffs, Difference{Name: n, What: "sha256", A: x.SHA256, B: y.SHA256})
			}
		}
	}
	return diffs
}
