package segment

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/mmapfile"
)

// Touching a 64 MiB segment raises RSS by about 64 MiB, and Release brings
// it back to within 1 MiB of where it was.
func TestTouchReleaseRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	if _, err := memstat.RSS(); errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	const n = 64 << 20
	path := filepath.Join(t.TempDir(), "64m.bin")
	// Real bytes: the pages must be real page-cache pages, not holes.
	if err := os.WriteFile(path, bytes.Repeat(pattern(1<<16), (n+4096)>>16+1), 0o644); err != nil {
		t.Fatal(err)
	}
	// Keep the Go heap still: no collection during the measurements, and
	// nothing left for the background scavenger to return to the OS (either
	// could move RSS by more than the 1 MiB tolerance).
	defer debug.SetGCPercent(debug.SetGCPercent(-1))

	for _, mode := range []mmapfile.Mode{mmapfile.ModeWhole, mmapfile.ModeWindowed} {
		t.Run(mode.String(), func(t *testing.T) {
			f, err := mmapfile.Open(path, mmapfile.WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if !f.ZeroCopy() {
				t.Skip("no zero-copy mapping on this platform")
			}
			s, err := New(f, 4096, n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Bytes(); err != nil { // map the window, if any
				t.Fatal(err)
			}
			debug.FreeOSMemory()
			before := rss(t)
			if err := s.Touch(); err != nil {
				t.Fatal(err)
			}
			touched := rss(t)
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
			released := rss(t)
			t.Logf("RSS: before %d MiB, touched %+d KiB, released %+d KiB (%s)",
				before>>20, (touched-before)>>10, (released-before)>>10, emulated())
			if d := touched - before; d < n-(2<<20) || d > n+(4<<20) {
				t.Errorf("touching 64 MiB raised RSS by %d KiB, want about %d KiB", d>>10, n>>10)
			}
			if d := released - before; d > 1<<20 || d < -1<<20 {
				t.Errorf("after Release RSS is %+d KiB from before the touch, want within 1 MiB", d>>10)
			}
			// The view still works and faults the pages back in.
			if err := s.Touch(); err != nil {
				t.Fatal(err)
			}
			if d := rss(t) - before; d < n-(2<<20) {
				t.Errorf("touching after Release raised RSS by only %d KiB", d>>10)
			}
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func rss(t *testing.T) int64 {
	t.Helper()
	r, err := memstat.RSS()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func emulated() string {
	if e := memstat.Emulator(); e != "" {
		return "under " + e
	}
	return "native"
}
