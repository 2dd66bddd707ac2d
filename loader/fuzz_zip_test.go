package loader_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/mmapfile"
)

// FuzzZipEntry opens the stored entry of arbitrary zip archives, seeded
// with every fuzz seed of FuzzOpen wrapped in an archive (stored and
// deflated, at an odd offset). It must never panic; an error is a zip
// error, a refused compressed entry, or what the model's bytes give; a
// model that opens reads exactly as the entry's bytes opened alone.
func FuzzZipEntry(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		if len(b) > 256<<10 {
			continue
		}
		archive, _, err := ziptest.Model(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(archive)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := os.CreateTemp(dir, "*.zip")
		if err != nil {
			t.Fatal(err)
		}
		path := tf.Name()
		defer os.Remove(path)
		_, err = tf.Write(data)
		tf.Close()
		if err != nil {
			t.Fatal(err)
		}
		m, err := loader.Open(path, loader.WithZipEntry(ziptest.Stored))
		if err != nil {
			if m != nil {
				t.Fatal("non-nil model with an error")
			}
			for _, s := range []error{zip.ErrFormat, zip.ErrAlgorithm, io.ErrUnexpectedEOF, io.EOF, loader.ErrCompressed, fs.ErrNotExist} {
				if errors.Is(err, s) {
					return
				}
			}
			if bad := hostile.CheckError("", err); bad != nil {
				t.Fatal(bad)
			}
			return
		}
		defer m.Close()
		off, n := m.File().Section()
		if b, ok := loader.As[*bundle.Program](m); ok {
			off, n = b.Bundle.File().Section()
		}
		if off < 0 || n < 0 || off+n > int64(len(data)) {
			t.Fatalf("section [%d +%d) of %d bytes", off, n, len(data))
		}
		if err := loadercheck.Model(m); err != nil {
			t.Fatal(err)
		}
		alone, err := loader.New(mmapfile.NewBytes(bytes.Clone(data[off : off+n])))
		if err != nil {
			t.Fatalf("the entry opened, its bytes alone do not: %v", err)
		}
		defer alone.Close()
		if alone.Format() != m.Format() || alone.NumTensors() != m.NumTensors() || len(alone.Segments()) != len(m.Segments()) {
			t.Fatal("the entry and its bytes alone disagree")
		}
		for i := 0; i < m.NumTensors(); i++ {
			if a, b := alone.TensorAt(i), m.TensorAt(i); a.Offset != b.Offset || a.NBytes != b.NBytes || a.Name != b.Name {
				t.Fatalf("tensor %d: %q at %d, alone %q at %d", i, b.Name, b.Offset, a.Name, a.Offset)
			}
		}
		_ = filepath.Base(path)
	})
}
