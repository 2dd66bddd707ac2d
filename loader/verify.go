package loader

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/segment"
)

// VerifyReport says what Verify checked and read.
type VerifyReport struct {
	Tensors   int   // tensors checked
	Segments  int   // segments checked
	Named     int   // named data entries checked
	BytesRead int64 // bytes read through the views
	// Unresolved counts external tensors without data (a program opened
	// without the .ptd files that hold them); they are checked but not read.
	Unresolved int
	// TestTensors counts the tensors a model carries besides its own (a
	// bundled program's test tensors: format.AuxTensors), checked and read.
	TestTensors int
}

// Verify checks the model beyond what Open already did and reads every byte
// of every segment and tensor, fault-safe: a file truncated under the
// mapping gives an error wrapping ErrTruncated instead of a crash (SIGBUS).
//
// The structural checks, on top of Open's: the format's own (Check: a
// program's method instructions); every segment lies inside the file;
// every tensor has a valid dtype, NBytes as its shape and dtype give
// (unless the bytes are a sparse or variable-size encoding), and, when it
// has data, a view of exactly NBytes bytes at its Offset, inside a segment
// for "segment" and "mutable" tensors, inside the file for "inline" ones
// and inside a linked data file for resolved external ones; every named
// data entry names a segment and lies inside it.
//
// All problems found are returned, joined; the report counts what was
// checked either way.
func (m *Model) Verify() (VerifyReport, error) {
	return m.verify(true)
}

// Check makes every check of Verify but reads no byte of the weights: for a
// caller that reads them anyway (a copy that checks its counts) or that must
// not fault them in.
func (m *Model) Check() error {
	_, err := m.verify(false)
	return err
}

// verify checks the model and, with readBytes, reads every byte (Verify).
func (m *Model) verify(readBytes bool) (VerifyReport, error) {
	var r VerifyReport
	if m.closed.Load() {
		return r, ErrClosed
	}
	var errs []error
	fail := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	mf := m.File()
	size := mf.Len()
	h := crc32.NewIEEE()
	// read reads s through the checksum; its callers test readBytes first,
	// so Check formats no name.
	read := func(s segment.Segment, what string) {
		if err := s.Checksum(h); err != nil {
			fail("%s: reading %d bytes at offset %d: %w", what, s.Len(), s.Offset(), err)
			return
		}
		r.BytesRead += s.Len()
	}

	segs := m.Segments()
	for i, s := range segs {
		r.Segments++
		if s.File() != nil && s.File() != mf {
			fail("segment %d: view of another file", i)
			continue
		}
		if s.Offset() < 0 || s.Len() < 0 || s.Offset() > size || s.Len() > size-s.Offset() {
			fail("segment %d: [%d, +%d) is outside the %d-byte file", i, s.Offset(), s.Len(), size)
			continue
		}
		if readBytes {
			read(s, fmt.Sprintf("segment %d", i))
		}
	}

	named := m.NamedData()
	for i := range named {
		nd := &named[i]
		r.Named++
		if nd.Segment == -1 {
			if nd.Data.File() != mf || nd.Data.Offset() < 0 || nd.Data.Offset() > size-nd.Data.Len() {
				fail("named data %q: [%d, +%d) is not inside the %d-byte file", nd.Key, nd.Data.Offset(), nd.Data.Len(), size)
			}
			continue
		}
		if nd.Segment < 0 || nd.Segment >= len(segs) {
			fail("named data %q: segment %d out of range (%d segments)", nd.Key, nd.Segment, len(segs))
			continue
		}
		if !within(nd.Data, segs[nd.Segment]) {
			fail("named data %q: [%d, +%d) is not inside segment %d", nd.Key, nd.Data.Offset(), nd.Data.Len(), nd.Segment)
		}
	}

	for i := 0; i < m.NumTensors(); i++ {
		t := m.TensorAt(i)
		r.Tensors++
		if err := m.verifyTensor(t, segs); err != nil {
			fail("tensor %q: %w", t.Name, err)
			continue
		}
		if t.Location == format.LocExternal && !t.Resolved() {
			r.Unresolved++
			continue
		}
		if !readBytes || (t.Data.File() == mf && inSegment(t.Data, segs)) {
			continue // not read (Check), or read with its segment
		}
		read(t.Data, fmt.Sprintf("tensor %q", t.Name))
	}
	// What Open leaves to first use (a program's instructions).
	if err := m.impl.Check(); err != nil {
		fail("%w", err)
	}
	if aux, ok := m.impl.(format.AuxTensors); ok {
		for _, t := range aux.AuxTensors() {
			r.TestTensors++
			_, nbytes, ok := format.Numel(t.Shape, t.DType, math.MaxInt64)
			switch {
			case !t.DType.Valid() || !ok || nbytes != t.NBytes:
				fail("test tensor %q: shape %v of %v does not give its %d bytes", t.Name, t.Shape, t.DType, t.NBytes)
			case t.Data.Offset() != t.Offset || t.Data.Len() != t.NBytes:
				fail("test tensor %q: view [%d, +%d) does not match offset %d and nbytes %d", t.Name, t.Data.Offset(), t.Data.Len(), t.Offset, t.NBytes)
			case readBytes:
				read(t.Data, fmt.Sprintf("test tensor %q", t.Name))
			}
		}
	}
	return r, errors.Join(errs...)
}

// verifyTensor checks one tensor's description against its view.
func (m *Model) verifyTensor(t *format.Tensor, segs []segment.Segment) error {
	if t.Location == format.LocNone {
		// declared without data (an RTen constant with neither inline data
		// nor a data_offset, which rten.Open warns about); its dtype may be
		// unknown too
		if t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("tensor without data has a %d-byte view", t.Data.Len())
		}
		return nil
	}
	if !t.DType.Valid() {
		return fmt.Errorf("invalid dtype %v", t.DType)
	}
	if _, nbytes, ok := format.Numel(t.Shape, t.DType, math.MaxInt64); !t.Sparse && t.DType != format.String && (!ok || nbytes != t.NBytes) {
		return fmt.Errorf("shape %v of %v needs %d bytes (ok=%v), but NBytes is %d", t.Shape, t.DType, nbytes, ok, t.NBytes)
	}
	switch t.Location {
	case format.LocSegment, format.LocMutable, format.LocInline, format.LocExternal:
	default:
		return fmt.Errorf("location %v: no data", t.Location)
	}
	if t.Location == format.LocExternal && !t.Resolved() {
		if t.Data.Len() != 0 || t.Data.File() != nil {
			return fmt.Errorf("unresolved external tensor with a %d-byte view", t.Data.Len())
		}
		return nil
	}
	if t.Data.Offset() != t.Offset || t.Data.Len() != t.NBytes {
		return fmt.Errorf("view [%d, +%d) does not match offset %d and nbytes %d", t.Data.Offset(), t.Data.Len(), t.Offset, t.NBytes)
	}
	if t.NBytes == 0 {
		return nil
	}
	mf := m.File()
	switch t.Location {
	case format.LocSegment, format.LocMutable:
		if t.Data.File() != mf || !inSegment(t.Data, segs) {
			return fmt.Errorf("%s data [%d, +%d) is not inside a segment of the file", t.Location, t.Offset, t.NBytes)
		}
	case format.LocInline:
		if t.Data.File() != mf || t.Offset < 0 || t.Offset > mf.Len()-t.NBytes {
			return fmt.Errorf("inline data [%d, +%d) is not inside the %d-byte file", t.Offset, t.NBytes, mf.Len())
		}
	case format.LocExternal:
		for _, d := range m.data {
			if t.Data.File() == d.MappedFile() {
				return nil
			}
		}
		return fmt.Errorf("resolved external tensor's view is not of a linked data file")
	}
	return nil
}

// inSegment reports whether s lies inside one of segs.
func inSegment(s segment.Segment, segs []segment.Segment) bool {
	for _, seg := range segs {
		if within(s, seg) {
			return true
		}
	}
	return false
}

// within reports whether s lies inside outer (same file).
func within(s, outer segment.Segment) bool {
	return s.File() == outer.File() && s.Offset() >= outer.Offset() && s.Len() >= 0 &&
		s.Offset()-outer.Offset() <= outer.Len()-s.Len()
}

// Resident reports how many of the file's pages are in memory (the page
// cache, for a mapped file) and how many pages it has; see
// [mmapfile.File.Resident].
func (m *Model) Resident() (resident, total int, err error) {
	mf := m.File()
	if mf.Len() == 0 {
		return 0, 0, nil
	}
	return mf.Resident(0, mf.Len())
}

// PageSize returns the page size the mapping uses for residency and
// release.
func (m *Model) PageSize() int { return m.File().PageSize() }

// Mode returns how the file is mapped.
func (m *Model) Mode() mmapfile.Mode { return m.File().Mode() }
