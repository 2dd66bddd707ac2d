package pte

import (
	"errors"
	"fmt"
	"slices"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/segment"
)

// ErrMismatch is wrapped by the error Link returns when a .ptd entry found
// by an external tensor's name does not agree with the tensor (dtype,
// sizes, dim order, too few bytes, or no tensor layout at all).
var ErrMismatch = errors.New("external tensor does not match its data")

// Link resolves the program's external tensors by fully-qualified name
// against the named data of the given .ptd files (the first file holding a
// key wins). An entry must have the tensor's dtype, sizes and dim order
// (absent means contiguous) and at least its NBytes, the tensor's view
// being the entry's first NBytes. A resolved tensor gets Offset, Data (a
// view into the .ptd, which must stay open while it is used) and DataFile.
//
// Link is all or nothing: if a still-unresolved tensor cannot be resolved,
// nothing changes and the error (an errors.Join of one per tensor) wraps
// format.ErrNotFound for a missing name and ErrMismatch for a disagreeing
// entry. Link must not run concurrently with other calls on the program.
func (p *Program) Link(files ...*ptd.File) error {
	if p.closed.Load() {
		return fmt.Errorf("pte: link %s: %w", p.name, format.ErrClosed)
	}
	type res struct {
		i    int
		data segment.Segment
		file string
	}
	var done []res
	var errs []error
	ts := p.all()
	for i := range ts {
		t := &ts[i]
		if t.Location != format.LocExternal || t.Offset >= 0 {
			continue
		}
		data, file, err := resolve(t, files)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, res{i, data, file})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, r := range done {
		t := &ts[r.i]
		t.Offset, t.Data, t.DataFile = r.data.Offset(), r.data, r.file
	}
	p.linked = p.linked || len(done) > 0
	return nil
}

// resolve finds and checks the data of external tensor t, and the name of
// the file that holds it.
func resolve(t *Tensor, files []*ptd.File) (segment.Segment, string, error) {
	for _, f := range files {
		if f == nil {
			continue
		}
		nd, ok := f.Entry(t.Name)
		if !ok {
			continue
		}
		where := func() string { return fmt.Sprintf("key %q of %s", t.Name, f.Name()) } // errors only
		l := nd.Layout
		var err error
		switch {
		case l == nil:
			err = mismatch(t, "%s is an opaque blob without a tensor layout", where())
		case l.DType != t.DType:
			err = mismatch(t, "dtype %s in the program, %s in %s", t.DType, l.DType, where())
		case !slices.Equal(t.Shape, l.Sizes):
			err = mismatch(t, "sizes %v in the program, %v in %s", t.Shape, l.Sizes, where())
		case !equalDimOrder(t.DimOrder, l.DimOrder, len(t.Shape)):
			err = mismatch(t, "dim order %v in the program, %v in %s", t.DimOrder, l.DimOrder, where())
		case nd.Data.Len() < t.NBytes:
			err = mismatch(t, "needs %d bytes (numel × %d) but %s holds %d", t.NBytes, t.DType.Size(), where(), nd.Data.Len())
		}
		if err != nil {
			return segment.Segment{}, "", err
		}
		d, err := nd.Data.Sub(0, t.NBytes)
		if err != nil {
			return segment.Segment{}, "", mismatch(t, "%s: %v", where(), err)
		}
		return d, f.Name(), nil
	}
	return segment.Segment{}, "", linkError(t, format.ErrNotFound, "external tensor %q (method %s, value %d) is in none of the %d data files", t.Name, t.Method, t.Value, len(files))
}

// mismatch is the error of an external tensor whose entry disagrees.
func mismatch(t *Tensor, msg string, args ...any) error {
	return linkError(t, ErrMismatch, "external tensor %q: "+msg, append([]any{t.Name}, args...)...)
}

// linkError is the error of external tensor t, wrapping err.
func linkError(t *Tensor, err error, msg string, args ...any) error {
	return &format.FormatError{Format: formatName, Field: fmt.Sprintf("tensor %q", t.Name), Offset: -1, Msg: fmt.Sprintf(msg, args...), Err: err}
}

// equalDimOrder compares two dim orders of n dimensions; empty means
// contiguous 0..n-1.
func equalDimOrder(a, b []uint8, n int) bool {
	if len(a) != 0 && len(a) != n || len(b) != 0 && len(b) != n {
		return false
	}
	for i := range n {
		x, y := i, i
		if len(a) > 0 {
			x = int(a[i])
		}
		if len(b) > 0 {
			y = int(b[i])
		}
		if x != y {
			return false
		}
	}
	return true
}
