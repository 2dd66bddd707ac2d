package mmapfile

import (
	"errors"
	"os"
	"runtime/debug"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
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

// ReadAt reads through the descriptor: the pages it reads are not mapped
// into the process afterwards (pagemap), while reading the same bytes
// through a view maps them. The second half shows the probe sees a mapped
// page at all.
func TestReadAtMapsNoPage(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	if e := memstat.Emulator(); e != "" {
		t.Skipf("pagemap shows host pages, not the guest's, under %s", e)
	}
	const size = 1 << 20
	path, want := writeFile(t, pattern(size))
	f, err := Open(path, WithMode(ModeWhole))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps := int64(f.PageSize())
	got := make([]byte, 3*ps)
	if _, err := f.ReadAt(got, 5*ps); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want[5*ps:8*ps]) {
		t.Fatal("ReadAt read the wrong bytes")
	}
	v, err := f.View(5*ps, 3*ps)
	if err != nil {
		t.Fatal(err)
	}
	present := func() int {
		t.Helper()
		n, err := memstat.PresentPages(v)
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := present(); n != 0 {
		t.Fatalf("%d of the 3 pages ReadAt read are mapped into the process, want 0", n)
	}
	if string(v) != string(got) { // reads through the mapping
		t.Fatal("the view differs from ReadAt")
	}
	if n := present(); n == 0 {
		t.Fatal("no page is mapped after reading the view: the probe sees nothing")
	}
}
