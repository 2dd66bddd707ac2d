package loader_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// bigOff is where the last tensor of TestLargerThanAddressSpace's files
// starts: past 4 GiB, so that on a 32-bit system only windows reach it.
const bigOff int64 = 4<<30 + 4096

// sparseModel writes head at 0 and the 1,024 float32 values 0, 1, 2, ...
// at dataAt, leaving a hole between them (no disk space).
func sparseModel(t *testing.T, name string, head []byte, dataAt int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tail := make([]byte, 4096)
	for i := range 1024 {
		binary.LittleEndian.PutUint32(tail[4*i:], uint32(i))
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tail, dataAt); err != nil {
		t.Skipf("no room for a sparse file past 4 GiB here: %v", err)
	}
	return p
}

// ggufBig is a GGUF file with a 1,024-float tensor "first" at the start of
// its data section and "last" past 4 GiB.
func ggufBig(t *testing.T) (string, int64) {
	le := binary.LittleEndian
	str := func(b []byte, s string) []byte { return append(le.AppendUint64(b, uint64(len(s))), s...) }
	h := le.AppendUint64(le.AppendUint64(le.AppendUint32([]byte("GGUF"), 3), 2), 0)
	var data int64
	for _, pass := range []int{0, 1} {
		b := slices.Clone(h)
		for i, name := range []string{"first", "last"} {
			b = str(b, name)
			b = le.AppendUint32(b, 1)
			b = le.AppendUint64(b, 1024)
			b = le.AppendUint32(b, 0) // f32
			off := int64(0)
			if i == 1 {
				off = bigOff - data
			}
			b = le.AppendUint64(b, uint64(off))
		}
		data = (int64(len(b)) + 31) / 32 * 32
		if pass == 1 {
			return sparseModel(t, "big.gguf", b, bigOff), bigOff
		}
	}
	panic("unreachable")
}

// safetensorsBig is a safetensors file whose tensor "last" starts past 4
// GiB, after a tensor "first" that fills the hole.
func safetensorsBig(t *testing.T) (string, int64) {
	js := fmt.Sprintf(`{"first":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]},"last":{"dtype":"F32","shape":[1024],"data_offsets":[%d,%d]}}`,
		bigOff, bigOff, bigOff, bigOff+4096)
	for len(js)%8 != 0 {
		js += " "
	}
	head := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	head = append(head, js...)
	at := int64(len(head)) + bigOff
	return sparseModel(t, "big.safetensors", head, at), at
}

// TestLargerThanAddressSpace opens models whose last tensor lies past 4
// GiB, in windowed mode (what a 32-bit system chooses for them: CI runs
// this natively as linux/386) and as the system chooses, and reads that
// tensor through a zero-copy view.
func TestLargerThanAddressSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("writes sparse files past 4 GiB")
	}
	modes := []mmapfile.Mode{mmapfile.ModeWindowed, mmapfile.ModeAuto}
	if emu := memstat.Emulator(); emu == "qemu-arm" {
		// qemu-arm 7.2 maps a 32-bit guest's mmap2 file offsets past 4
		// GiB from the wrong place (native linux/386, whose x/sys/unix
		// mmap is the same code, reads them right): only the copying
		// mode is checked here.
		t.Logf("under %s: checking the copying mode only", emu)
		modes = []mmapfile.Mode{mmapfile.ModeCopy}
	}
	for name, mk := range map[string]func(*testing.T) (string, int64){"gguf": ggufBig, "safetensors": safetensorsBig} {
		t.Run(name, func(t *testing.T) {
			path, at := mk(t)
			for _, mode := range modes {
				m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
				if err != nil {
					t.Fatalf("%v: %v", mode, err)
				}
				if m.Size() <= 4<<30 || (mode == mmapfile.ModeWindowed) != (m.Mode() == mmapfile.ModeWindowed) && mode != mmapfile.ModeAuto {
					t.Errorf("%v: size %d, mode %v", mode, m.Size(), m.Mode())
				}
				last, ok := m.Tensor("last")
				if !ok || last.Offset != at {
					t.Fatalf("%v: last at %v, want %d", mode, last, at)
				}
				b, err := last.Data.Bytes()
				if err != nil || len(b) != 4096 || binary.LittleEndian.Uint32(b[4*7:]) != 7 || binary.LittleEndian.Uint32(b[4*1023:]) != 1023 {
					t.Errorf("%v: last = %d bytes (%v), not the values written", mode, len(b), err)
				}
				if err := m.Check(); err != nil {
					t.Errorf("%v: Check: %v", mode, err)
				}
				m.Close()
			}
		})
	}
}
