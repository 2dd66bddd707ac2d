package pte

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/segment"
)

// ErrMismatch is wrapped by the error Link returns when a .ptd entry found
// by an external tensor's name does not agree with the tensor (dtype,
// sizes, dim order, too few bytes, or no tensor layout at all).
var ErrMismatch = errors.New("external tensor does not match its data")

// Link resolves the program's external tensors against the named data of
// the given .ptd files, by fully-qualified name; the first file holding a
// key wins. For each tensor the entry's layout must have the same dtype,
// sizes and dim order (an absent dim order means contiguous), and its bytes
// must hold at least numel × element size. A longer entry is accepted and
// the view is cut to the tensor's size: the layout already agrees, so the
// tensor's bytes are unambiguously the entry's first NBytes (legacy .ptd
// files and aligned writers may leave padding in an entry), which is also
// how ExecuTorch reads them.
//
// A resolved tensor gets Offset (the offset in the .ptd), Data (a view into
// the .ptd's mapping: the same bytes, not a copy) and DataFile (the .ptd's
// name). The .ptd files must stay open while those views are used; Close
// of the program does not close them.
//
// Link is all or nothing: if any external tensor that is still unresolved
// cannot be resolved, nothing changes and the error (an errors.Join of one
// error per tensor, each naming it) wraps format.ErrNotFound for a missing
// name and ErrMismatch for a disagreeing entry. Tensors resolved by an
// earlier Link stay as they are. Link must not run concurrently with other
// calls on the program.
func (p *Program) Link(files ...*ptd.File) error {
	if p.closed.Load() {
		return fmt.Errorf("pte: link %s: %w", p.name, format.ErrClosed)
	}
	type res struct {
		i    int
		off  int64
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
		r, err := resolve(t, files)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, res{i, r.Data.Offset(), r.Data, r.name})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, r := range done {
		t := &ts[r.i]
		t.Offset, t.Data, t.DataFile = r.off, r.data, r.file
	}
	p.linked = p.linked || len(done) > 0
	return nil
}

type resolved struct {
	Data segment.Segment
	name string
}

// resolve finds and checks the data of external tensor t.
func resolve(t *Tensor, files []*ptd.File) (resolved, error) {
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
		if l == nil {
			return resolved{}, mismatch(t, "%s is an opaque blob without a tensor layout", where())
		}
		if l.DType != t.DType {
			return resolved{}, mismatch(t, "dtype %s in the program, %s in %s", t.DType, l.DType, where())
		}
		if !equalSizes(t.Shape, l.Sizes) {
			return resolved{}, mismatch(t, "sizes %v in the program, %v in %s", t.Shape, l.Sizes, where())
		}
		if !equalDimOrder(t.DimOrder, l.DimOrder, len(t.Shape)) {
			return resolved{}, mismatch(t, "dim order %v in the program, %v in %s", t.DimOrder, l.DimOrder, where())
		}
		if nd.Data.Len() < t.NBytes {
			return resolved{}, mismatch(t, "needs %d bytes (numel × %d) but %s holds %d", t.NBytes, t.DType.Size(), where(), nd.Data.Len())
		}
		d, err := nd.Data.Sub(0, t.NBytes)
		if err != nil {
			return resolved{}, mismatch(t, "%s: %v", where(), err)
		}
		return resolved{Data: d, name: f.Name()}, nil
	}
	return resolved{}, &format.FormatError{Format: formatName, Field: "tensor " + quote(t.Name), Offset: -1,
		Msg: fmt.Sprintf("external tensor %q (method %s, value %d) is in none of the %d data files", t.Name, t.Method, t.Value, len(files)),
		Err: format.ErrNotFound}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func mismatch(t *Tensor, msg string, args ...any) error {
	return &format.FormatError{Format: formatName, Field: "tensor " + quote(t.Name), Offset: -1,
		Msg: fmt.Sprintf("external tensor %q: ", t.Name) + fmt.Sprintf(msg, args...), Err: ErrMismatch}
}

func equalSizes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// equalDimOrder compares two dim orders of n dimensions; nil (or empty)
// means contiguous 0..n-1.
func equalDimOrder(a, b []uint8, n int) bool {
	at := func(d []uint8, i int) int {
		if len(d) == 0 {
			return i
		}
		if i >= len(d) {
			return -1
		}
		return int(d[i])
	}
	if (len(a) != 0 && len(a) != n) || (len(b) != 0 && len(b) != n) {
		return false
	}
	for i := 0; i < n; i++ {
		if at(a, i) != at(b, i) {
			return false
		}
	}
	return true
}
