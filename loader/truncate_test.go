package loader_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// versionedPTE is a program with four 64 KiB float32 constants whose bytes
// depend on version, so that two versions of "the same model" differ in
// every tensor.
func versionedPTE(version byte) *writer.PTE {
	var ts []writer.PTETensor
	for i := 0; i < 4; i++ {
		i := i
		ts = append(ts, writer.PTETensor{
			Kind: writer.PTEConstant, ScalarType: writer.PTEFloat32, Sizes: []int32{128, 128},
			Name: fmt.Sprintf("layer%d.weight", i),
			Fill: func(p []byte, off int64) {
				for j := range p {
					p[j] = byte(off+int64(j)) ^ version ^ byte(i*37)
				}
			},
		})
	}
	return &writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}
}

// mappedModes are the mapping modes whose views point into a mapping of
// the file (ModeCopy and ModeMemory views cannot fault).
var mappedModes = []mmapfile.Mode{mmapfile.ModeWhole, mmapfile.ModeWindowed}

func digests(t *testing.T, m *loader.Model) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for _, tn := range m.Tensors() {
		sum, err := tn.Data.SHA256()
		if err != nil {
			t.Fatalf("%s: %v", tn.Name, err)
		}
		out[tn.Name] = sum
	}
	return out
}

// TestTruncatedWhileMapped truncates a model file on disk while it is open:
// the fault-safe reads (SHA256, Checksum, CopyTo, Touch, Verify) of a tensor
// past the new end return an error wrapping ErrTruncated, the process
// survives, and tensors still inside the file read correctly.
func TestTruncatedWhileMapped(t *testing.T) {
	for _, mode := range mappedModes {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.pte")
			info, err := versionedPTE(1).WriteFile(path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !m.File().ZeroCopy() {
				t.Skipf("no mapping on this platform (%v)", m.Mode())
			}
			before := digests(t, m)
			ts := m.Tensors()
			// Cut the file in the middle of the third tensor.
			cut := ts[2].Offset + ts[2].NBytes/2
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: file of %d bytes truncated to %d while mapped", mode, info.FileSize, cut)
			for i := range ts {
				tn := &ts[i]
				inside := tn.Offset+tn.NBytes <= cut
				sum, err := tn.Data.SHA256()
				if inside {
					if err != nil || sum != before[tn.Name] {
						t.Errorf("%s (inside the file): SHA256 = %x, %v", tn.Name, sum[:4], err)
					}
					continue
				}
				if !errors.Is(err, loader.ErrTruncated) {
					t.Errorf("%s: SHA256 = %v, want ErrTruncated", tn.Name, err)
				}
				if err := tn.Data.Checksum(sha256.New()); !errors.Is(err, loader.ErrTruncated) {
					t.Errorf("%s: Checksum = %v, want ErrTruncated", tn.Name, err)
				}
				if n, err := tn.Data.CopyTo(make([]byte, tn.NBytes)); !errors.Is(err, loader.ErrTruncated) {
					t.Errorf("%s: CopyTo = %d, %v, want ErrTruncated", tn.Name, n, err)
				}
				if err := tn.Data.Touch(); !errors.Is(err, loader.ErrTruncated) {
					t.Errorf("%s: Touch = %v, want ErrTruncated", tn.Name, err)
				}
				t.Logf("%s: %v", tn.Name, err)
			}
			if _, err := m.Verify(); !errors.Is(err, loader.ErrTruncated) {
				t.Errorf("Verify = %v, want ErrTruncated", err)
			}
		})
	}
}

// viewSink keeps the reads of TestViewFaultsAfterTruncation from being
// optimised away.
var viewSink byte

// TestViewFaultsAfterTruncation shows what a zero-copy view does when its
// file shrinks under it: reading it raises SIGBUS, which kills the process
// unless the reading goroutine runs under debug.SetPanicOnFault (as the
// fault-safe reads do), where it becomes a runtime panic. Views are only
// valid while the file keeps its size: see docs/SAFETY.md.
func TestViewFaultsAfterTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.pte")
	if _, err := versionedPTE(1).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWhole)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.File().ZeroCopy() {
		t.Skip("no mapping on this platform")
	}
	last := m.Tensors()[len(m.Tensors())-1]
	view, err := last.Data.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, last.Offset-int64(m.PageSize())); err != nil {
		t.Fatal(err)
	}
	done := make(chan any)
	go func() {
		defer func() { done <- recover() }()
		debug.SetPanicOnFault(true)
		for i := 0; i < len(view); i += 4096 {
			viewSink ^= view[i]
		}
	}()
	r := <-done
	// A memory fault under SetPanicOnFault panics with a runtime.Error
	// that has an Addr method (the faulting address); qemu-user delivers
	// SIGBUS without an address, and the runtime reports it as a nil
	// dereference.
	re, ok := r.(runtime.Error)
	if !ok || !strings.Contains(re.Error(), "invalid memory address") && !strings.Contains(re.Error(), "fault") {
		t.Fatalf("reading a view past the new end of the file: recovered %v (%T), want a memory fault", r, r)
	}
	if a, ok := r.(interface{ Addr() uintptr }); ok {
		t.Logf("reading the view faulted: %v (address %#x)", re, a.Addr())
	} else {
		t.Logf("reading the view faulted: %v (no address: %s)", re, memstat.Emulator())
	}
}

// TestReplaceByRename updates a model the safe way, by writing the new
// version to a temporary file and renaming it over the old path: a Model
// opened before keeps reading the old version (its mapping holds the old
// file), a fresh Open sees the new one.
func TestReplaceByRename(t *testing.T) {
	for _, mode := range mappedModes {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "model.pte")
			if _, err := versionedPTE(1).WriteFile(path); err != nil {
				t.Fatal(err)
			}
			old, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			before := digests(t, old)

			// The update: write the new version beside, then rename.
			tmp := filepath.Join(dir, ".model.pte.tmp")
			v2 := versionedPTE(2)
			v2.Methods[0].Tensors = append(v2.Methods[0].Tensors, writer.PTETensor{
				Kind: writer.PTEConstant, ScalarType: writer.PTEInt8, Sizes: []int32{3}, Name: "new", Data: []byte{1, 2, 3}})
			if _, err := v2.WriteFile(tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}

			if got := digests(t, old); !equalDigests(got, before) {
				t.Error("the open model's tensors changed across the rename")
			}
			if _, err := old.Verify(); err != nil {
				t.Errorf("Verify of the open model after the rename: %v", err)
			}
			fresh, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mode)))
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			after := digests(t, fresh)
			if _, ok := after["new"]; !ok || len(after) != len(before)+1 {
				t.Fatalf("fresh Open sees %d tensors, want the new version's %d", len(after), len(before)+1)
			}
			for name, sum := range before {
				if after[name] == sum {
					t.Errorf("%s: fresh Open reads the old bytes", name)
				}
			}
		})
	}
}

// TestRewriteInPlace shows why a model must not be rewritten in place
// while it is open: the views of a shared mapping see the new bytes at
// once, without any error (and, while the file is shorter than before,
// fault). Only the rename of TestReplaceByRename is safe.
func TestRewriteInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.pte")
	if _, err := versionedPTE(1).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(path, loader.WithMmapOptions(mmapfile.WithMode(mmapfile.ModeWhole)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.File().ZeroCopy() {
		t.Skip("no mapping on this platform")
	}
	before := digests(t, m)
	b, err := versionedPTE(2).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil { // O_TRUNC, then write: in place
		t.Fatal(err)
	}
	after := digests(t, m)
	changed := 0
	for name, sum := range before {
		if after[name] != sum {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("an in-place rewrite did not show through the open model's views (not a shared mapping?)")
	}
	t.Logf("in-place rewrite: %d of %d tensors of the open model silently changed", changed, len(before))
	if !bytes.Equal(b[:8], mustBytes(t, m)) {
		t.Error("the open model's header view does not show the rewritten bytes")
	}
}

func mustBytes(t *testing.T, m *loader.Model) []byte {
	t.Helper()
	v, err := m.File().View(0, 8)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func equalDigests(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
