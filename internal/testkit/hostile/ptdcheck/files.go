package ptdcheck

import (
	"fmt"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// RegionEnd returns the end of the header and FlatBuffer region of a
// valid .ptd file (the part a sweep mutates): its flatbuffer_offset +
// flatbuffer_size.
func RegionEnd(b []byte) (int64, error) {
	f, err := ptd.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Header().FlatBufferLen(), nil
}

// Generated returns writer-made .ptd files: current and legacy layouts,
// opaque blobs, shared segments, a long header, an untrimmed root vtable.
func Generated() ([]hostile.Seed, error) {
	lay := func(st int8, s ...int32) *writer.PTDLayout { return &writer.PTDLayout{ScalarType: st, Sizes: s} }
	ws := []struct {
		name string
		w    *writer.PTD
	}{
		{"tiny.ptd", writer.TinyPTD()},
		{"mixed.ptd", &writer.PTD{Alignment: 128, HeaderLength: 56, Entries: []writer.PTDEntry{
			{Key: "a", Layout: lay(writer.PTDScalarFloat32, 2, 2), Data: hostile.F32(3, 3, 3, 3)},
			{Key: "b", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarInt8, Sizes: []int32{3, 1}, DimOrder: []uint8{1, 0}}, Data: []byte{1, 2, 3}},
			{Key: "s", SegmentRef: 1},
			{Key: "blob", Data: []byte("opaque")},
			{Key: "d", Layout: lay(writer.PTDScalarFloat64, 1), Data: make([]byte, 8)},
		}}},
		{"padded.ptd", &writer.PTD{RootVTablePad: 2, Entries: []writer.PTDEntry{{Key: "x", Layout: lay(writer.PTDScalarFloat32, 1), Size: 16}}}},
		{"legacy.ptd", &writer.PTD{Legacy: true, Entries: []writer.PTDEntry{
			{Key: "w", Layout: lay(writer.PTDScalarFloat32, 3, 3), Data: hostile.F32(1, 2, 3, 4, 5, 6, 7, 8, 9)},
			{Key: "bias", Layout: lay(writer.PTDScalarFloat32, 3), Data: hostile.F32(1, 2, 3)},
			{Key: "nd", Data: []byte("blob")},
		}}},
		{"legacy-sparse.ptd", &writer.PTD{Legacy: true, OmitEmptyVectors: true, Entries: []writer.PTDEntry{{Key: "t", Layout: lay(writer.PTDScalarInt64, 2)}}}},
		{"empty.ptd", &writer.PTD{}},
	}
	var out []hostile.Seed
	for _, w := range ws {
		b, err := w.w.Bytes()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		out = append(out, hostile.Seed{Name: w.name, Data: b})
	}
	return out, nil
}
