package stream

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// bigOff is where the weights of TestPassesLargerThanAddressSpace's model
// start: past 4 GiB, so that a 32-bit process reaches them only through
// windows (or direct reads).
const bigOff int64 = 4<<30 + 4096

// bigGGUF writes a sparse GGUF file whose tensor "hole" fills 4 GiB and
// whose n tensors "w.K" of 64 KiB (values K*100000 + i as uint32) lie past
// it, and returns its path.
func bigGGUF(t *testing.T, n int) string {
	le := binary.LittleEndian
	str := func(b []byte, s string) []byte { return append(le.AppendUint64(b, uint64(len(s))), s...) }
	b := le.AppendUint64(le.AppendUint64(le.AppendUint32([]byte("GGUF"), 3), uint64(n+1)), 0)
	b = str(b, "hole")
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, uint64(bigOff))
	b = le.AppendUint32(b, 24) // i8
	b = le.AppendUint64(b, 0)
	for k := range n {
		b = str(b, "w."+string(rune('a'+k)))
		b = le.AppendUint32(b, 1)
		b = le.AppendUint64(b, 16384)
		b = le.AppendUint32(b, 0) // f32
		b = le.AppendUint64(b, uint64(bigOff+int64(k)*65536))
	}
	data := (int64(len(b)) + 31) / 32 * 32
	path := filepath.Join(t.TempDir(), "big.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, 65536)
	for k := range n {
		for i := range 16384 {
			le.PutUint32(w[4*i:], uint32(k*100000+i))
		}
		if _, err := f.WriteAt(w, data+bigOff+int64(k)*65536); err != nil {
			t.Skipf("no room for a sparse file past 4 GiB here: %v", err)
		}
	}
	return path
}

// A model larger than the address space decodes pass after pass: in
// windowed mode on a 32-bit system (CI runs this as linux/386), with either
// reader, every pass hands out the weights past 4 GiB with their bytes.
func TestPassesLargerThanAddressSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a sparse file past 4 GiB")
	}
	if emu := memstat.Emulator(); emu == "qemu-arm" {
		// qemu-arm 7.2 maps a 32-bit guest's file offsets past 4 GiB from
		// the wrong place; CI runs this test natively as linux/386.
		t.Skipf("under %s, whose mmap2 past 4 GiB maps the wrong place", emu)
	}
	const n = 12
	path := bigGGUF(t, n)
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWindowed)))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.Size() <= 4<<30 {
				t.Fatalf("size %d", m.Size())
			}
			var order []int
			for k := range n {
				i, ok := m.Impl().Lookup("w." + string(rune('a'+k)))
				if !ok {
					t.Fatal("no tensor w.", k)
				}
				order = append(order, i)
			}
			s := newPasses(t, m, r, WithOrder(order), WithPasses(3), WithBudget(512<<10), WithRetain(160<<10))
			var kept []bool
			for p := range 3 {
				for k := range n {
					it, err := s.Next()
					if err != nil {
						t.Fatalf("pass %d, weight %d: %v", p, k, err)
					}
					b, err := it.Data.Bytes()
					if err != nil || len(b) != 65536 || binary.LittleEndian.Uint32(b) != uint32(k*100000) || binary.LittleEndian.Uint32(b[65532:]) != uint32(k*100000+16383) {
						t.Fatalf("pass %d, %s: %d bytes (%v), not the values written", p, it.Name, len(b), err)
					}
					if p == 0 {
						kept = append(kept, it.Retained)
					}
				}
			}
			if !slices.Contains(kept, true) || !slices.Contains(kept, false) {
				t.Fatalf("retained %v: want some of each", kept)
			}
		})
	}
}
