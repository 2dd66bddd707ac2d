// Package ptdcheck exercises every accessor and view of an opened .ptd
// file and makes the generated files the tests of loader/ptd sweep and
// fuzz. It imports loader/ptd and the layers below it.
package ptdcheck

import (
	"errors"
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/ptd"
)

// File exercises every accessor and view of an opened .ptd file: header,
// segments, named data (by key), tensors (by key, typed views).
func File(f *ptd.File) error {
	size := f.Size()
	h := f.Header()
	if h.FlatBufferLen() > size || h.Length < ptd.MinHeaderLength {
		return fmt.Errorf("ptd: header %+v accepted for a %d-byte file", h, size)
	}
	_, _, _, _ = f.Legacy(), f.Name(), f.Version(), f.TensorAlignment()
	if f.MappedFile() == nil || f.MappedFile().Len() != size {
		return errors.New("ptd: MappedFile/Size")
	}
	for i, s := range f.Segments() {
		if err := hostile.Segment(fmt.Sprintf("segment %d", i), s); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		if s.Offset() < int64(h.SegmentBaseOffset) {
			return fmt.Errorf("ptd: segment %d %v before the segment base %d", i, s, h.SegmentBaseOffset)
		}
	}
	check := func(e ptd.NamedData) error {
		if err := hostile.NamedData(e.NamedData, len(f.Segments())); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		if e.Layout != nil && (e.Layout.NBytes() > e.Data.Len() || !e.Layout.DType.Valid()) {
			return fmt.Errorf("ptd: %q: layout of %d bytes over %d", e.Key, e.Layout.NBytes(), e.Data.Len())
		}
		g, ok := f.Entry(e.Key)
		if !ok || g.Key != e.Key {
			return fmt.Errorf("ptd: Lookup(%q) = %q, %v", e.Key, g.Key, ok)
		}
		return nil
	}
	for _, e := range f.Entries() {
		if err := check(e); err != nil {
			return err
		}
	}
	for i := range f.Tensors() {
		tt := &f.Tensors()[i]
		if tt.Location != format.LocSegment {
			return fmt.Errorf("ptd: tensor %q location %v", tt.Name, tt.Location)
		}
		if err := hostile.Tensor(tt); err != nil {
			return fmt.Errorf("ptd: %w", err)
		}
		e, ok := f.Entry(tt.Name)
		if !ok || e.Layout == nil {
			return fmt.Errorf("ptd: tensor %q not found by Lookup", tt.Name)
		}
		if err := check(e); err != nil {
			return err
		}
	}
	return nil
}
