package writer_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

func ptdF32(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ptdSame checks that two opened files hold the same entries: keys, segment
// indices, layouts and bytes; and the same segment layout relative to the
// segment base.
func ptdSame(t *testing.T, got, want *ptd.File) {
	t.Helper()
	if got.Legacy() != want.Legacy() {
		t.Fatalf("Legacy %v, want %v", got.Legacy(), want.Legacy())
	}
	gs, ws := got.Segments(), want.Segments()
	if len(gs) != len(ws) {
		t.Fatalf("%d segments, want %d", len(gs), len(ws))
	}
	gb, wb := int64(got.Header().SegmentBaseOffset), int64(want.Header().SegmentBaseOffset)
	for i := range gs {
		if gs[i].Offset()-gb != ws[i].Offset()-wb || gs[i].Len() != ws[i].Len() {
			t.Errorf("segment %d: +%d len %d, want +%d len %d", i, gs[i].Offset()-gb, gs[i].Len(), ws[i].Offset()-wb, ws[i].Len())
		}
	}
	if got.Header().SegmentDataSize != want.Header().SegmentDataSize || got.Header().Length != want.Header().Length ||
		got.Header().FlatBufferOffset != want.Header().FlatBufferOffset {
		t.Errorf("header %+v, want %+v (apart from sizes and offsets)", got.Header(), want.Header())
	}
	if len(got.Entries()) != len(want.Entries()) || len(got.Tensors()) != len(want.Tensors()) {
		t.Fatalf("%d named / %d tensors, want %d / %d", len(got.Entries()), len(got.Tensors()), len(want.Entries()), len(want.Tensors()))
	}
	keys := func(f *ptd.File) []string {
		var k []string
		for _, e := range f.Entries() {
			k = append(k, e.Key)
		}
		for _, tt := range f.Tensors() {
			k = append(k, tt.Name)
		}
		return k
	}
	if !slices.Equal(keys(got), keys(want)) {
		t.Fatalf("keys %v, want %v", keys(got), keys(want))
	}
	for _, k := range keys(want) {
		g, _ := got.Entry(k)
		w, _ := want.Entry(k)
		gbytes, err1 := g.Data.Bytes()
		wbytes, err2 := w.Data.Bytes()
		if err1 != nil || err2 != nil || !bytes.Equal(gbytes, wbytes) {
			t.Errorf("%q: bytes %x, want %x (%v %v)", k, gbytes, wbytes, err1, err2)
		}
		if g.Segment != w.Segment || g.Data.Offset()-gb != w.Data.Offset()-wb {
			t.Errorf("%q: segment %d at +%d, want %d at +%d", k, g.Segment, g.Data.Offset()-gb, w.Segment, w.Data.Offset()-wb)
		}
		if (g.Layout == nil) != (w.Layout == nil) {
			t.Fatalf("%q: layout %v, want %v", k, g.Layout, w.Layout)
		}
		if g.Layout != nil && (g.Layout.DType != w.Layout.DType || !slices.Equal(g.Layout.Sizes, w.Layout.Sizes) ||
			!slices.Equal(g.Layout.DimOrder, w.Layout.DimOrder)) {
			t.Errorf("%q: layout %+v, want %+v", k, *g.Layout, *w.Layout)
		}
	}
}

// TestPTDMatchesRealAddmul writes the content of the real
// addmul-external.ptd and reads both back.
func TestPTDMatchesRealAddmul(t *testing.T) {
	real, err := ptd.NewFile(mapFile(t, testmodels.Path(t, "ptd/addmul-external.ptd")))
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	p := &writer.PTD{Alignment: 16, Entries: []writer.PTDEntry{
		{Key: "a", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}}, Data: ptdF32(3, 3, 3, 3)},
		{Key: "b", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{2, 2}}, Data: ptdF32(2, 2, 2, 2)},
	}}
	path := filepath.Join(t.TempDir(), "addmul.ptd")
	info, err := p.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := ptd.NewFile(mapFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	ptdSame(t, ours, real)
	if ours.Size() != info.FileSize || info.SegmentDataSize != 32 {
		t.Errorf("size %d, writer planned %d; segment data %d, want 32", ours.Size(), info.FileSize, info.SegmentDataSize)
	}
	// The sha256 the independent reader computed holds for our bytes too.
	exp := testmodels.Load(t, testmodels.Path(t, "ptd/addmul-external.ptd"))
	for i, tt := range ours.Tensors() {
		h, _ := tt.Data.SHA256()
		if hex.EncodeToString(h[:]) != exp.Tensors[i].SHA256 {
			t.Errorf("%s: sha256 differs from the real file's", tt.Name)
		}
	}
}

// TestPTDMatchesRealLegacy writes the real legacy file's tensors in the
// 2025 layout and reads both back.
func TestPTDMatchesRealLegacy(t *testing.T) {
	real, err := ptd.NewFile(mapFile(t, testmodels.Path(t, "ptd/linear-legacy-2025.ptd")))
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	var entries []writer.PTDEntry
	for _, tt := range real.Tensors() {
		b, err := tt.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		sizes := make([]int32, len(tt.Shape))
		for i, s := range tt.Shape {
			sizes[i] = int32(s)
		}
		entries = append(entries, writer.PTDEntry{Key: tt.Name, Data: slices.Clone(b),
			Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: sizes, DimOrder: tt.DimOrder}})
	}
	// The real file's single segment ends 4 bytes after the bias (64 bytes).
	p := &writer.PTD{Legacy: true, Alignment: 16, OmitEmptyVectors: true, Entries: entries}
	b, err := p.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := ptd.NewFile(mmapfile.NewBytes(b))
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	if !ours.Legacy() || ours.TensorAlignment() != real.TensorAlignment() {
		t.Errorf("Legacy %v alignment %d, want true %d", ours.Legacy(), ours.TensorAlignment(), real.TensorAlignment())
	}
	// Segment sizes differ (upstream pads the segment to 64); compare the
	// entries.
	for _, tt := range real.Tensors() {
		g, ok := ours.Entry(tt.Name)
		gb, _ := g.Data.Bytes()
		wb, _ := tt.Data.Bytes()
		if !ok || !bytes.Equal(gb, wb) || g.Data.Offset()-int64(ours.Header().SegmentBaseOffset) != tt.Offset-int64(real.Header().SegmentBaseOffset) ||
			!slices.Equal(g.Layout.Sizes, tt.Shape) {
			t.Errorf("%s: %v %x at %d, want %x at %d", tt.Name, ok, gb, g.Data.Offset(), wb, tt.Offset)
		}
	}
	if len(ours.Entries()) != 0 {
		t.Errorf("named data %d, want 0", len(ours.Entries()))
	}
}

// TestPTDSparseAndStreaming: holes cost no disk, Fill streams in chunks with
// the right offsets, and WriteFile and Bytes agree.
func TestPTDSparseAndStreaming(t *testing.T) {
	fill := func(p []byte, off int64) {
		for i := range p {
			p[i] = byte((off + int64(i)) * 7 % 251)
		}
	}
	const odd = 3<<20 + 5 // crosses the 1 MiB chunk boundaries
	p := &writer.PTD{Alignment: 16384, Entries: []writer.PTDEntry{
		{Key: "hole", Size: 1 << 30},
		{Key: "filled", Size: odd, Fill: fill},
		{Key: "data", Data: []byte("tail")},
	}}
	path := filepath.Join(t.TempDir(), "sparse.ptd")
	info, err := p.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != info.FileSize || fi.Size() < 1<<30 {
		t.Fatalf("size %d, planned %d", fi.Size(), info.FileSize)
	}
	if disk, ok := writer.DiskUsage(path); ok && disk > 8<<20 {
		t.Errorf("a %d-byte file with a 1 GiB hole takes %d bytes on disk", fi.Size(), disk)
	}
	for i, s := range info.Segments {
		if (s[0]-int64(info.SegmentBaseOffset))%16384 != 0 {
			t.Errorf("segment %d at %d not 16384-aligned", i, s[0])
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, odd)
	fill(want, 0)
	got := make([]byte, odd)
	if _, err := f.ReadAt(got, info.Entries[1].Offset); err != nil || !bytes.Equal(got, want) {
		t.Errorf("filled entry differs from one Fill call over the whole range (%v)", err)
	}
	tail := make([]byte, 4)
	if _, err := f.ReadAt(tail, info.Entries[2].Offset); err != nil || string(tail) != "tail" {
		t.Errorf("data entry %q %v", tail, err)
	}

	// Bytes and WriteFile agree on a small file.
	small := &writer.PTD{Alignment: 128, Entries: []writer.PTDEntry{{Key: "x", Size: 300, Fill: fill}, {Key: "y", Data: []byte{1, 2}}}}
	mem, err := small.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(t.TempDir(), "small.ptd")
	if _, err := small.WriteFile(sp); err != nil {
		t.Fatal(err)
	}
	disk, _ := os.ReadFile(sp)
	var buf bytes.Buffer
	if _, err := small.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mem, disk) || !bytes.Equal(mem, buf.Bytes()) {
		t.Error("Bytes, WriteFile and WriteTo differ")
	}
}

func TestPTDWriterErrors(t *testing.T) {
	if _, err := (&writer.PTD{Entries: []writer.PTDEntry{{Key: "x", Size: 2, Data: []byte{1, 2, 3}}}}).Bytes(); err == nil {
		t.Error("3 data bytes for a 2-byte entry accepted")
	}
	if _, err := (&writer.PTD{Identifier: "FT1"}).Bytes(); err == nil {
		t.Error("3-byte identifier accepted")
	}
	if _, err := (&writer.PTD{Alignment: -4}).Bytes(); err == nil {
		t.Error("negative alignment accepted")
	}
}

// TestPTDHeaderLayout checks the header fields the writer emits against
// FORMATS.md §2: the FlatBuffer starts at 0, flatbuffer_offset is the
// padded header length, segments follow it aligned.
func TestPTDHeaderLayout(t *testing.T) {
	for _, hl := range []uint32{40, 44, 56, 200} {
		p := &writer.PTD{HeaderLength: hl, Alignment: 128, Entries: []writer.PTDEntry{{Key: "k", Data: []byte{9}}}}
		b, err := p.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		fbo, fbs, base := le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
		if string(b[4:8]) != "FT01" || string(b[8:12]) != "FH01" || le.Uint32(b[12:]) != hl {
			t.Errorf("hl %d: identifier %q magic %q length %d", hl, b[4:8], b[8:12], le.Uint32(b[12:]))
		}
		if fbo%16 != 0 || fbo < 8+uint64(hl) || fbo >= 8+uint64(hl)+16 {
			t.Errorf("hl %d: flatbuffer_offset %d is not 8+length padded to 16", hl, fbo)
		}
		if root := le.Uint32(b); uint64(root) < fbo || uint64(root) >= fbo+fbs {
			t.Errorf("hl %d: root table at %d outside the FlatBuffer body [%d,%d)", hl, root, fbo, fbo+fbs)
		}
		if base%128 != 0 || base < fbo+fbs || b[base] != 9 {
			t.Errorf("hl %d: segment base %d", hl, base)
		}
	}
}
