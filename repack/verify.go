package repack

import (
	"errors"
	"fmt"
	"math"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/segment"
)

// verifyStructure makes, on an opened model, every check of loader.Verify
// except reading the bytes: every segment lies inside the file; every named
// data entry names a segment and lies inside it; every tensor has a valid
// dtype, NBytes = numel × element size and a view of exactly NBytes at its
// Offset, inside a segment of the file, the FlatBuffer region (inline) or a
// linked .ptd (resolved external); every instruction of every chain of
// every method decodes with its indices in range; every test suite of a
// bundle names a method and every test tensor's view matches it. A file
// truncated under the mapping is caught by the copy, which checks every
// count it copies.
func verifyStructure(m *loader.Model) error {
	var errs []error
	fail := func(format string, args ...any) {
		if len(errs) < 20 {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	mf := m.File()
	size := mf.Len()
	segs := m.Segments()
	for i, s := range segs {
		if s.File() != nil && s.File() != mf {
			fail("segment %d: view of another file", i)
			continue
		}
		if s.Offset() < 0 || s.Len() < 0 || s.Offset() > size || s.Len() > size-s.Offset() {
			fail("segment %d: [%d, +%d) is outside the %d-byte file", i, s.Offset(), s.Len(), size)
		}
	}
	named := m.NamedData()
	for i := range named {
		nd := &named[i]
		if nd.Segment < 0 || nd.Segment >= len(segs) {
			fail("named data %q: segment %d out of range (%d segments)", nd.Key, nd.Segment, len(segs))
			continue
		}
		if !within(nd.Data, segs[nd.Segment]) {
			fail("named data %q: [%d, +%d) is not inside segment %d", nd.Key, nd.Data.Offset(), nd.Data.Len(), nd.Segment)
		}
	}
	inline := flatBufferRegion(m)
	for i := range m.NumTensors() {
		t := m.TensorAt(i)
		if err := checkTensor(m, t, segs, inline); err != nil {
			fail("tensor %q: %w", t.Name, err)
		}
	}
	if p := m.Program(); p != nil {
		for _, meth := range p.Methods() {
			for c := range meth.Chains {
				if _, err := meth.Instructions(c); err != nil {
					fail("method %q: chain %d: %w", meth.Name, c, err)
				}
			}
		}
	}
	if b := m.Bundle(); b != nil {
		for _, s := range b.TestSuites() {
			if p := m.Program(); p != nil {
				if _, ok := p.Method(s.Method); !ok {
					fail("bundle: test suite for method %q, which the program does not have", s.Method)
				}
			}
		}
		for _, t := range b.Tensors() {
			_, nbytes, ok := format.Numel(t.Shape, t.DType, math.MaxInt64)
			switch {
			case !t.DType.Valid() || !ok || nbytes != t.NBytes:
				fail("bundle: test tensor %q: shape %v of %v does not give its %d bytes", t.Name, t.Shape, t.DType, t.NBytes)
			case t.Data.Offset() != t.Offset || t.Data.Len() != t.NBytes:
				fail("bundle: test tensor %q: view [%d, +%d) does not match offset %d and nbytes %d", t.Name, t.Data.Offset(), t.Data.Len(), t.Offset, t.NBytes)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("repack: %s: %w", m.Name(), errors.Join(errs...))
	}
	return nil
}

// checkTensor checks one tensor's description against its view.
func checkTensor(m *loader.Model, t *format.Tensor, segs []segment.Segment, inline segment.Segment) error {
	if t.Location == format.LocNone {
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
		in := false
		for _, s := range segs {
			if within(t.Data, s) {
				in = true
				break
			}
		}
		if t.Data.File() != m.File() || !in {
			return fmt.Errorf("%s data [%d, +%d) is not inside a segment of the file", t.Location, t.Offset, t.NBytes)
		}
	case format.LocInline:
		if t.Data.File() != m.File() || !within(t.Data, inline) {
			return fmt.Errorf("inline data [%d, +%d) is not inside the FlatBuffer region [%d, +%d)", t.Offset, t.NBytes, inline.Offset(), inline.Len())
		}
	case format.LocExternal:
		for _, d := range m.DataFiles() {
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
func flatBufferRegion(m *loader.Model) segment.Segment {
	var off, n int64
	switch {
	case m.Program() != nil:
		n = m.Program().Header().ProgramSize
	case m.DataFile() != nil:
		n = m.DataFile().Header().FlatBufferLen()
	case m.RTen() != nil:
		h := m.RTen().Header()
		off, n = h.ModelOffset, h.ModelLen
	}
	s, _ := segment.New(m.File(), off, n)
	return s
}

// within reports whether s lies inside outer (same file).
func within(s, outer segment.Segment) bool {
	return s.File() == outer.File() && s.Offset() >= outer.Offset() && s.Len() >= 0 &&
		s.Offset()-outer.Offset() <= outer.Len()-s.Len()
}
