package mmapfile

import (
	"errors"
	"os"
	"runtime/debug"
	"testing"

	"github.com/edgeload/edgeload/internal/memstat"
	"github.com/edgeload/edgeload/platform"
)

// Opening a 1 GiB file must not raise resident memory: Open maps, it does
// not read.
func TestOpenRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	if _, err := memstat.RSS(); errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	const size = 1 << 30
	path := sparseFile(t, size, []byte("tail"))
	// Keep the Go heap still: no collection during the measurements, and
	// nothing left for the background scavenger to return to the OS.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// Under a user-mode emulator (qemu-user) the host process keeps
	// per-page bookkeeping for every guest mapping, so a bare mmap of the
	// file already costs RSS in proportion to its size. Measure that and
	// allow it: Open must cost no more than the mmap system call itself.
	var emuCost int64
	if e := memstat.Emulator(); e != "" {
		osf, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		debug.FreeOSMemory()
		before, _ := memstat.RSS()
		if b, err := platform.Map(osf, 0, size); err == nil {
			after, _ := memstat.RSS()
			emuCost = max(after-before, 0)
			platform.Unmap(b)
		}
		osf.Close()
		t.Logf("under %s a bare mmap of 1 GiB costs %d KiB of RSS", e, emuCost>>10)
	}
	for _, mode := range []Mode{ModeAuto, ModeWhole, ModeWindowed} {
		t.Run(mode.String(), func(t *testing.T) {
			debug.FreeOSMemory()
			before, err := memstat.RSS()
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			after, err := memstat.RSS()
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			t.Logf("%v: RSS %d -> %d (%+d bytes)", f.Mode(), before, after, after-before)
			if d := after - before; d > 1<<20+emuCost || d < -1<<20 {
				t.Errorf("opening a 1 GiB file changed RSS by %d bytes, want within 1 MiB", d)
			}
		})
	}
}
