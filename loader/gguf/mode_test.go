package gguf_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/gguf"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestModes opens the fixtures in windowed mode with 64 KiB pages and
// through a ReaderAt (copy mode): the same tensors and metadata as whole
// mode.
func TestModes(t *testing.T) {
	m, _ := filepath.Glob("testdata/*.gguf")
	for _, p := range m {
		whole, err := mmapfile.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer whole.Close()
		want, err := gguf.NewFile(whole)
		if err != nil {
			continue // the refused fixture
		}
		win, err := mmapfile.Open(p, mmapfile.WithMode(mmapfile.ModeWindowed), mmapfile.WithPageSize(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer win.Close()
		raw, _ := os.ReadFile(p)
		for _, mf := range []*mmapfile.File{win, mmapfile.NewReaderAt(bytesReaderAt(raw), int64(len(raw)))} {
			f, err := gguf.NewFile(mf)
			if err != nil {
				t.Fatalf("%s in %v mode: %v", p, mf.Mode(), err)
			}
			if err := ggufcheck.File(f); err != nil {
				t.Errorf("%s in %v mode: %v", p, mf.Mode(), err)
			}
			if err := ggufcheck.Same(want, f, want.Alignment()); err != nil || len(f.KVs()) != len(want.KVs()) {
				t.Errorf("%s in %v mode differs: %v", p, mf.Mode(), err)
			}
		}
	}
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, os.ErrNotExist
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, os.ErrNotExist
	}
	return n, nil
}

// TestRegistration: the registration sniffs GGUF and opens a format.Model.
func TestRegistration(t *testing.T) {
	data := ggufcheck.Generated()[0].Data
	if gguf.Format.Name != "gguf" || !gguf.Format.Sniff(data[:8]) || gguf.Format.Sniff([]byte("GGU")) || gguf.Format.Sniff([]byte("PK\x03\x04")) {
		t.Error("Sniff")
	}
	m, err := gguf.Format.Open(mmapfile.NewBytes(data), &format.Config{})
	if err != nil || m.NumTensors() == 0 {
		t.Fatalf("Open: %v", err)
	}
	if _, ok := m.(format.Reporter); !ok {
		t.Error("not a Reporter")
	}
	if m, err := gguf.Format.Open(mmapfile.NewBytes(data[:10]), &format.Config{}); err == nil || m != nil {
		t.Errorf("Open of 10 bytes = %v, %v", m, err)
	}
}

// TestRewriteLarge rewrites a sparse 1 GiB file (one 1 GiB f32 tensor of
// zeros; the heap does not depend on the size) and checks that the heap grew by little more than the copy
// buffer. Skipped with -short and on 32-bit systems.
func TestRewriteLarge(t *testing.T) {
	if testing.Short() || runtime.GOARCH == "arm" || runtime.GOARCH == "386" {
		t.Skip("-short or 32-bit")
	}
	var b ggufcheck.Builder
	b.KV("general.architecture", ggufcheck.Str("llama"))
	b.Add(ggufcheck.Tensor{Name: "token_embd.weight", Type: 0, NE: []uint64{1 << 20, 1 << 8}})
	head := b.Bytes()
	size := b.DataStart + 1<<30
	p := filepath.Join(t.TempDir(), "big.gguf")
	if err := os.WriteFile(p, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	f := openFile(t, p)
	if f.TensorAt(0).NBytes != 1<<30 {
		t.Fatalf("nbytes %d", f.TensorAt(0).NBytes)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var w countWriter
	n, err := f.WriteAligned(&w, 4096)
	runtime.ReadMemStats(&after)
	if err != nil || n != 4096+1<<30 || int64(w) != n {
		t.Fatalf("wrote %d (%d), %v", n, w, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Errorf("rewriting 1 GiB allocated %d bytes", grew)
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
