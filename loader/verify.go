package loader

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

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
// of every segment, tensor and named data entry, fault-safe: a file truncated under the
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
	return m.VerifyWith(VerifyOptions{})
}

// VerifyOptions configures VerifyWith.
type VerifyOptions struct {
	// Progress, if not nil, is called before the first read and after
	// each chunk (at most 4 MiB) with the bytes read so far and the total
	// the call reads.
	Progress func(read, total int64)
}

// VerifyWith is Verify with options: a progress report for a caller that
// shows how far a long verification (a large model read cold from flash)
// has come.
func (m *Model) VerifyWith(o VerifyOptions) (VerifyReport, error) {
	return m.verify(true, o.Progress)
}

// Check makes every check of Verify but reads no byte of the weights: for a
// caller that reads them anyway (a copy that checks its counts) or that must
// not fault them in.
func (m *Model) Check() error {
	_, err := m.verify(false, nil)
	return err
}

// verifyChunk is how many bytes Verify reads between progress reports.
const verifyChunk = 4 << 20

// verify checks the model and, with readBytes, reads every byte (Verify):
// first every check, listing what to read, then the reads.
func (m *Model) verify(readBytes bool, progress func(read, total int64)) (VerifyReport, error) {
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
	type read struct {
		s    segment.Segment
		what func() string // formatted only on a failure
	}
	var reads []read

	segs := m.Segments()
	files := m.files()
	for i, s := range segs {
		r.Segments++
		if s.File() != nil && !slices.Contains(files, s.File()) {
			fail("segment %d: view of another file", i)
			continue
		}
		if n := s.File().Len(); s.Offset() < 0 || s.Len() < 0 || s.Offset() > n || s.Len() > n-s.Offset() {
			fail("segment %d: [%d, +%d) is outside the %d-byte file", i, s.Offset(), s.Len(), n)
			continue
		}
		reads = append(reads, read{s, func() string { return fmt.Sprintf("segment %d", i) }})
	}
	index := newSegIndex(segs)

	named := m.NamedData()
	for i := range named {
		nd := &named[i]
		r.Named++
		if nd.Segment == -1 {
			if nd.Data.File() != mf || nd.Data.Offset() < 0 || nd.Data.Offset() > size-nd.Data.Len() {
				fail("named data %q: [%d, +%d) is not inside the %d-byte file", nd.Key, nd.Data.Offset(), nd.Data.Len(), size)
				continue
			}
			reads = append(reads, read{nd.Data, func() string { return fmt.Sprintf("named data %q", nd.Key) }})
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
		if err := m.verifyTensor(t, index); err != nil {
			fail("tensor %q: %w", t.Name, err)
			continue
		}
		if t.Location == format.LocExternal && !t.Resolved() {
			r.Unresolved++
			continue
		}
		if index.contains(t.Data) {
			continue // read with its segment
		}
		reads = append(reads, read{t.Data, func() string { return fmt.Sprintf("tensor %q", t.Name) }})
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
			default:
				reads = append(reads, read{t.Data, func() string { return fmt.Sprintf("test tensor %q", t.Name) }})
			}
		}
	}
	if !readBytes {
		return r, errors.Join(errs...)
	}

	var total int64
	for _, rd := range reads {
		total = addCapped(total, rd.s.Len())
	}
	if progress != nil {
		progress(0, total)
	}
	h := crc32.NewIEEE()
	for _, rd := range reads {
		for off := int64(0); off < rd.s.Len(); off += verifyChunk {
			c, err := rd.s.Sub(off, min(verifyChunk, rd.s.Len()-off))
			if err == nil {
				err = c.Checksum(h)
			}
			if err != nil {
				fail("%s: reading %d bytes at offset %d: %w", rd.what(), rd.s.Len(), rd.s.Offset(), err)
				break
			}
			r.BytesRead += c.Len()
			if progress != nil {
				progress(r.BytesRead, total)
			}
		}
	}
	return r, errors.Join(errs...)
}

// addCapped returns a+b, or MaxInt64 if that overflows.
func addCapped(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// files returns the mappings the model's own views may point into.
func (m *Model) files() []*mmapfile.File {
	if mf, ok := m.impl.(format.MultiFile); ok {
		return append([]*mmapfile.File{m.File()}, mf.Files()...)
	}
	return []*mmapfile.File{m.File()}
}

// verifyTensor checks one tensor's description against its view.
func (m *Model) verifyTensor(t *format.Tensor, index segIndex) error {
	if t.Location == format.LocNone {
		// declared without data (an RTen constant with neither inline data
		// nor a data_offset, which rten.NewFile warns about); its dtype may be
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
		if !index.contains(t.Data) {
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

// segIndex answers in O(log n) whether a range lies inside one of a
// model's segments: per file, the segments sorted by offset, with the
// largest end of each prefix.
type segIndex map[*mmapfile.File]*sortedSegs

type sortedSegs struct {
	starts []int64 // sorted
	maxEnd []int64 // the largest end of the segments starting at or before starts[i]
}

func newSegIndex(segs []segment.Segment) segIndex {
	sorted := slices.Clone(segs)
	slices.SortFunc(sorted, func(a, b segment.Segment) int { return cmp.Compare(a.Offset(), b.Offset()) })
	x := segIndex{}
	for _, s := range sorted {
		f := x[s.File()]
		if f == nil {
			f = &sortedSegs{}
			x[s.File()] = f
		}
		end := addCapped(s.Offset(), s.Len())
		if n := len(f.maxEnd); n > 0 {
			end = max(end, f.maxEnd[n-1])
		}
		f.starts = append(f.starts, s.Offset())
		f.maxEnd = append(f.maxEnd, end)
	}
	return x
}

// contains reports whether s lies inside one of the segments: one of its
// file that starts at or before s and ends at or after its end.
func (x segIndex) contains(s segment.Segment) bool {
	f := x[s.File()]
	if f == nil || s.Len() < 0 || s.Offset() < 0 {
		return false
	}
	i, found := slices.BinarySearch(f.starts, s.Offset())
	if found {
		for i+1 < len(f.starts) && f.starts[i+1] == s.Offset() {
			i++
		}
	} else {
		i--
	}
	return i >= 0 && f.maxEnd[i] >= addCapped(s.Offset(), s.Len())
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
