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
	// TestTensors counts the test tensors of a bundled program, checked
	// and read.
	TestTensors int
}

// Verify checks the model beyond what Open already did and reads every byte
// of every segment and tensor, fault-safe: a file truncated under the
// mapping gives an error wrapping ErrTruncated instead of a crash (SIGBUS).
//
// The structural checks, on top of Open's: every method's instructions (a
// program's; see pte.Program.VerifyMethods); every segment lies inside the
// file; every tensor has a valid dtype, NBytes = numel × element size, and,
// when it has data, a view of exactly NBytes bytes at its Offset, inside a
// segment of the file for "segment" and "mutable" tensors, inside the
// FlatBuffer region for "inline" ones, and inside a linked .ptd for resolved
// external ones; every named data entry names a segment and lies inside it.
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
	size := m.mf.Len()
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

	for i, s := range m.segments {
		r.Segments++
		if s.File() != nil && s.File() != m.mf {
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
		if nd.Segment < 0 || nd.Segment >= len(m.segments) {
			fail("named data %q: segment %d out of range (%d segments)", nd.Key, nd.Segment, len(m.segments))
			continue
		}
		if !within(nd.Data, m.segments[nd.Segment]) {
			fail("named data %q: [%d, +%d) is not inside segment %d", nd.Key, nd.Data.Offset(), nd.Data.Len(), nd.Segment)
		}
	}

	inline := m.flatBufferRegion()
	for i := 0; i < m.NumTensors(); i++ {
		t := m.TensorAt(i)
		r.Tensors++
		if err := m.verifyTensor(t, inline); err != nil {
			fail("tensor %q: %w", t.Name, err)
			continue
		}
		if t.Location == format.LocExternal && !t.Resolved() {
			r.Unresolved++
			continue
		}
		if !readBytes || (t.Data.File() == m.mf && m.inSegment(t.Data)) {
			continue // not read (Check), or read with its segment
		}
		read(t.Data, fmt.Sprintf("tensor %q", t.Name))
	}
	if m.prog != nil {
		// The instructions Open leaves to each method's first use.
		if err := m.prog.VerifyMethods(); err != nil {
			fail("%w", err)
		}
	}
	m.verifyBundle(&r, fail, func(t *format.Tensor) {
		if readBytes {
			read(t.Data, fmt.Sprintf("bundle: test tensor %q", t.Name))
		}
	})
	return r, errors.Join(errs...)
}

// verifyTensor checks one tensor's description against its view.
func (m *Model) verifyTensor(t *format.Tensor, inline segment.Segment) error {
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
	_, nbytes, ok := format.Numel(t.Shape, t.DType, math.MaxInt64)
	if !ok || nbytes != t.NBytes {
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
	switch t.Location {
	case format.LocSegment, format.LocMutable:
		if t.Data.File() != m.mf || !m.inSegment(t.Data) {
			return fmt.Errorf("%s data [%d, +%d) is not inside a segment of the file", t.Location, t.Offset, t.NBytes)
		}
	case format.LocInline:
		if t.Data.File() != m.mf || !within(t.Data, inline) {
			return fmt.Errorf("inline data [%d, +%d) is not inside the FlatBuffer region [%d, +%d)", t.Offset, t.NBytes, inline.Offset(), inline.Len())
		}
	case format.LocExternal:
		for _, d := range m.data {
			if t.Data.File() == d.MappedFile() {
				if t.DataFile != d.Name() {
					return fmt.Errorf("data file is %q, but the view is of %q", t.DataFile, d.Name())
				}
				return nil
			}
		}
		return fmt.Errorf("resolved external tensor's view is not of a linked data file")
	}
	return nil
}

// flatBufferRegion returns the part of the file the FlatBuffer occupies,
// where inline tensor data lives.
func (m *Model) flatBufferRegion() segment.Segment {
	var off, n int64
	switch {
	case m.prog != nil:
		n = m.prog.Header().ProgramSize
	case m.ptd != nil:
		n = m.ptd.Header().FlatBufferLen()
	case m.rt != nil:
		h := m.rt.Header()
		off, n = h.ModelOffset, h.ModelLen
	}
	s, _ := segment.New(m.mf, off, n)
	return s
}

// inSegment reports whether s lies inside one of the model's segments.
func (m *Model) inSegment(s segment.Segment) bool {
	for _, seg := range m.segments {
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
	if m.mf.Len() == 0 {
		return 0, 0, nil
	}
	return m.mf.Resident(0, m.mf.Len())
}

// PageSize returns the page size the mapping uses for residency and
// release.
func (m *Model) PageSize() int { return m.mf.PageSize() }

// Mode returns how the file is mapped.
func (m *Model) Mode() mmapfile.Mode { return m.mf.Mode() }
