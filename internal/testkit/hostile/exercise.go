package hostile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// Segment reads every byte of s through each path a caller has: the
// zero-copy view, SHA256, Checksum, CopyTo, Touch, Resident, the sub-range
// arithmetic, and checks that they agree and that s lies inside its file.
// what names s in the error.
func Segment(what string, s segment.Segment) error {
	if s.File() == nil {
		if s.Len() != 0 {
			return fmt.Errorf("%s: a segment without a file has length %d", what, s.Len())
		}
		return nil
	}
	if err := SegmentBounds(what, s); err != nil {
		return err
	}
	b, _ := s.Bytes()
	sum, err := s.SHA256()
	if err != nil {
		return fmt.Errorf("%s: SHA256: %w", what, err)
	}
	// Comparing with the view's own digest doubles the cost: do it for
	// segments up to 64 KiB; the CRC comparison below covers the read path
	// SHA256 shares (Checksum) for larger ones.
	if len(b) <= 64<<10 && sum != sha256.Sum256(b) {
		return fmt.Errorf("%s: SHA256 disagrees with the view", what)
	}
	h := crc32.NewIEEE()
	if err := s.Checksum(h); err != nil {
		return fmt.Errorf("%s: Checksum: %w", what, err)
	}
	if h.Sum32() != crc32.ChecksumIEEE(b) {
		return fmt.Errorf("%s: Checksum disagrees with the view", what)
	}
	var buf [64]byte
	head := buf[:min(len(b), len(buf))]
	if n, err := s.CopyTo(head); err != nil || n != len(head) || !bytes.Equal(head, b[:n]) {
		return fmt.Errorf("%s: CopyTo = %d, %v", what, n, err)
	}
	if err := s.Touch(); err != nil {
		return fmt.Errorf("%s: Touch: %w", what, err)
	}
	if _, _, err := s.Resident(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%s: Resident: %w", what, err)
	}
	if whole, err := s.Sub(0, s.Len()); err != nil || whole != s {
		return fmt.Errorf("%s: Sub(0, Len) = %v, %v", what, whole, err)
	}
	if _, err := s.Sub(s.Len(), 1); err == nil {
		return fmt.Errorf("%s: Sub past the end succeeded", what)
	}
	_ = s.String()
	return nil
}

// SegmentBounds checks that s lies inside its file and that its zero-copy
// view has s.Len() bytes: the part of Segment that differs from one view to
// the next, without the paths (digests, copies, sub-ranges) that read the
// same bytes again.
func SegmentBounds(what string, s segment.Segment) error {
	if s.File() == nil {
		if s.Len() != 0 {
			return fmt.Errorf("%s: a segment without a file has length %d", what, s.Len())
		}
		return nil
	}
	size := s.File().Len()
	if s.Offset() < 0 || s.Len() < 0 || s.Offset() > size || s.Len() > size-s.Offset() {
		return fmt.Errorf("%s: segment %v outside its %d-byte file", what, s, size)
	}
	b, err := s.Bytes()
	if err != nil {
		return fmt.Errorf("%s: Bytes: %w", what, err)
	}
	if int64(len(b)) != s.Len() {
		return fmt.Errorf("%s: Bytes returned %d bytes of a %d-byte segment", what, len(b), s.Len())
	}
	return nil
}

// fullViews is how many tensors of a file the exercisers read through
// every path of Segment; the views of the others get SegmentBounds. A
// hostile file may hold tens of thousands of tensors sharing one view: the
// exerciser's own digests and messages for each would count against the
// file's allocation bound (hostile.AllocFactor) as if the loader had made
// them.
const fullViews = 256

// tensorWhat names a tensor in an exerciser's error. It is a string
// concatenation rather than fmt.Sprintf, which would allocate its
// arguments for every tensor of a file.
func tensorWhat(name string) string { return "tensor " + strconv.Quote(name) }

// Tensor checks a tensor's description against itself (dtype, shape,
// NBytes, offset, view) and reads its data through Segment and through the
// typed view its dtype calls for. An unresolved tensor must have no data.
func Tensor(t *format.Tensor) error {
	return tensor(t, true)
}

// tensor is Tensor; with full false, its data gets only the bounds and
// view checks of SegmentBounds (see fullViews).
func tensor(t *format.Tensor, full bool) error {
	what := tensorWhat(t.Name)
	_ = t.DType.String()
	_ = t.Location.String()
	if t.Location == format.LocNone {
		// declared without data (an RTen constant with neither inline data
		// nor a data_offset): its dtype may be unknown too
		if t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("%s: no location but view %v at offset %d", what, t.Data, t.Offset)
		}
		return nil
	}
	if !t.DType.Valid() {
		return fmt.Errorf("%s: invalid dtype %v", what, t.DType)
	}
	if t.Shape == nil {
		return fmt.Errorf("%s: nil shape", what)
	}
	if t.DimOrder != nil {
		if len(t.DimOrder) != len(t.Shape) {
			return fmt.Errorf("%s: dim order %v for %d dims", what, t.DimOrder, len(t.Shape))
		}
		seen := make([]bool, len(t.DimOrder))
		for _, d := range t.DimOrder {
			if int(d) >= len(seen) || seen[d] {
				return fmt.Errorf("%s: dim order %v is not a permutation", what, t.DimOrder)
			}
			seen[d] = true
		}
	}
	numel, nbytes, ok := numelOf(t)
	if !ok || nbytes != t.NBytes {
		return fmt.Errorf("%s: shape %v of %v is %d bytes (ok %v), NBytes says %d", what, t.Shape, t.DType, nbytes, ok, t.NBytes)
	}
	if !t.Resolved() {
		if t.Location != format.LocExternal || t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("%s: unresolved %v tensor with view %v", what, t.Location, t.Data)
		}
		return nil
	}
	if t.Data.File() == nil && t.NBytes > 0 {
		return fmt.Errorf("%s: resolved, %d bytes, but no view", what, t.NBytes)
	}
	if t.Data.Len() != t.NBytes || (t.Data.File() != nil && t.Data.Offset() != t.Offset) {
		return fmt.Errorf("%s: view %v, want [%d, +%d)", what, t.Data, t.Offset, t.NBytes)
	}
	check := Segment
	if !full {
		check = SegmentBounds
	}
	if err := check(what, t.Data); err != nil {
		return err
	}
	n, err := typedView(t)
	if err != nil {
		return fmt.Errorf("%s: typed view: %w", what, err)
	}
	if n != numel {
		return fmt.Errorf("%s: typed view has %d elements, want %d", what, n, numel)
	}
	return nil
}

// numelOf is format.Numel with no bound but int64.
func numelOf(t *format.Tensor) (numel, nbytes int64, ok bool) {
	return format.Numel(t.Shape, t.DType, math.MaxInt64)
}

// typedView reads t's data as the Go type its dtype maps to and returns the
// number of elements. A bool tensor whose bytes are not all 0 or 1 gives an
// error from the view that is accepted here (the file is valid; its data is
// not a bool array) unless it is a fault.
func typedView(t *format.Tensor) (int64, error) {
	s := t.Data
	var n int
	var err error
	switch t.DType {
	case format.Float32:
		n, err = viewLen(s.Float32)
	case format.Float64:
		n, err = viewLen(s.Float64)
	case format.Float16, format.BFloat16, format.Uint16, format.Bits16:
		n, err = viewLen(s.Uint16)
	case format.Int8, format.QInt8:
		n, err = viewLen(s.Int8)
	case format.Int16:
		n, err = viewLen(s.Int16)
	case format.Int32, format.QInt32:
		n, err = viewLen(s.Int32)
	case format.Int64:
		n, err = viewLen(s.Int64)
	case format.Uint32:
		n, err = viewLen(s.Uint32)
	case format.Uint64:
		n, err = viewLen(s.Uint64)
	case format.Bool:
		n, err = viewLen(s.Bool)
		if err != nil && !errors.Is(err, format.ErrTruncated) {
			return t.NBytes, nil // not a fault: the bytes are not 0/1
		}
	default: // uint8, quint8, quint4x2, quint2x4, float8 variants
		n, err = viewLen(s.Uint8)
	}
	if err != nil {
		return 0, err
	}
	if s.Len() == 0 {
		// a zero-length view yields nil; numel may still be 0 only
		return 0, nil
	}
	return int64(n), nil
}

// viewLen returns the length of the typed view that view makes.
func viewLen[T any](view func() ([]T, bool, error)) (int, error) {
	v, _, err := view()
	return len(v), err
}

// FileTensor is Tensor for the i-th tensor of a file: the first
// fullViews tensors get every check, the others the bounds and view checks
// of SegmentBounds for their data.
func FileTensor(t *format.Tensor, i int) error {
	return tensor(t, i < fullViews)
}

// NamedData checks a named-data entry's view.
func NamedData(nd format.NamedData, nseg int) error {
	what := fmt.Sprintf("named data %q", nd.Key)
	if nd.Segment < -1 || nd.Segment >= nseg {
		return fmt.Errorf("%s: segment %d of %d", what, nd.Segment, nseg)
	}
	return Segment(what, nd.Data)
}

// SameView reports whether a and b are the same range of the same file.
func SameView(a, b segment.Segment) bool {
	return a.File() == b.File() && a.Offset() == b.Offset() && a.Len() == b.Len()
}
