package ptd_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// TestSparseOver4GiB opens a 6.5 GiB sparse .ptd whose segments lie beyond
// 4 GiB: 64-bit offsets survive, and Open touches no segment page.
func TestSparseOver4GiB(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("needs a 64-bit address space")
	}
	const (
		holeSize = 4<<30 + 12345
		bigElems = 1 << 29 // 2 GiB of float32
	)
	path := filepath.Join(t.TempDir(), "big.ptd")
	p := &writer.PTD{Alignment: 128, Entries: []writer.PTDEntry{
		{Key: "hole", Size: holeSize},
		{Key: "big", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{bigElems}}},
		{Key: "w", Layout: &writer.PTDLayout{ScalarType: writer.PTDScalarFloat32, Sizes: []int32{32, 32}},
			Fill: func(b []byte, off int64) {
				for i := 0; i+4 <= len(b); i += 4 {
					binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32((off+int64(i))/4)))
				}
			}},
	}}
	info, err := p.WriteFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != info.FileSize || fi.Size() < 6<<30 {
		t.Fatalf("file is %d bytes, writer planned %d", fi.Size(), info.FileSize)
	}
	if disk, ok := writer.DiskUsage(path); ok && disk > 1<<20 {
		t.Skipf("the file system does not keep the file sparse (%d bytes on disk)", disk)
	}

	rss0, rssErr := memstat.RSS()
	f, err := mapOpen(t, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rss1, _ := memstat.RSS()
	if emu := memstat.Emulator(); rssErr == nil && emu != "" {
		// qemu-user keeps its own page tables for the guest's mappings
		// (tens of MiB for a 6 GiB map), so the process's RSS says
		// nothing about the loader there; the mincore check below still
		// does.
		t.Logf("RSS before Open %d KiB, after %d KiB: not checked under %s", rss0>>10, rss1>>10, emu)
	} else if rssErr == nil {
		t.Logf("RSS before Open %d KiB, after %d KiB (delta %d KiB)", rss0>>10, rss1>>10, (rss1-rss0)>>10)
		if rss1-rss0 > 8<<20 {
			t.Errorf("Open of a %d-byte file grew RSS by %d bytes", fi.Size(), rss1-rss0)
		}
	}
	for _, key := range []string{"hole", "big"} {
		e, ok := f.Entry(key)
		if !ok {
			t.Fatalf("Lookup(%q) failed", key)
		}
		res, total, err := e.Data.Resident()
		if err != nil {
			t.Fatal(err)
		}
		if total < 1000 || res > 2 {
			t.Errorf("%q: %d of %d pages resident after Open, want ~0", key, res, total)
		}
	}
	big, _ := f.Entry("big")
	if big.Data.Offset() <= 4<<30 || big.Data.Len() != 4*bigElems || big.Layout.NBytes() != 4*bigElems {
		t.Errorf("big at %d, %d bytes", big.Data.Offset(), big.Data.Len())
	}
	w, _ := f.Entry("w")
	if w.Data.Offset() < 6<<30 || w.Data.Offset() != info.Entries[2].Offset {
		t.Errorf("w at %d, want %d (beyond 6 GiB)", w.Data.Offset(), info.Entries[2].Offset)
	}
	v, _, err := w.Data.Float32()
	if err != nil || len(v) != 1024 || v[0] != 0 || v[1023] != 1023 {
		t.Fatalf("w: %d values, %v", len(v), err)
	}
	ts := f.Tensors()
	if len(ts) != 2 || ts[0].Offset != big.Data.Offset() || ts[1].NBytes != 4096 {
		t.Errorf("tensors %+v", ts)
	}
	if h := f.Header(); h.SegmentBaseOffset+h.SegmentDataSize != uint64(fi.Size()) {
		t.Errorf("header %+v for a %d-byte file", h, fi.Size())
	}
}
