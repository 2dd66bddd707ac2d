package loader_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/ziptest"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// BenchmarkOpenIn compares opening tiny.pte as a file, as a section of a
// larger file, as a stored zip entry and through an open *os.File: the
// cost a section adds to Open (the zip entry's includes reading the
// archive's central directory).
func BenchmarkOpenIn(b *testing.B) {
	model, err := os.ReadFile("../testdata/tiny.pte")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	plain := filepath.Join(dir, "tiny.pte")
	outer := filepath.Join(dir, "outer.bin")
	zp := filepath.Join(dir, "app.apk")
	archive, _, err := ziptest.Model(model)
	if err != nil {
		b.Fatal(err)
	}
	for p, data := range map[string][]byte{plain: model, outer: slices.Concat(make([]byte, 4097), model), zp: archive} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f, err := os.Open(plain)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for name, open := range map[string]func() (*loader.Model, error){
		"file":     func() (*loader.Model, error) { return loader.Open(plain) },
		"section":  func() (*loader.Model, error) { return loader.Open(outer, loader.WithSection(4097, int64(len(model)))) },
		"zipentry": func() (*loader.Model, error) { return loader.Open(zp, loader.WithZipEntry(ziptest.Stored)) },
		"osfile": func() (*loader.Model, error) {
			mf, err := mmapfile.NewFile(f)
			if err != nil {
				return nil, err
			}
			return loader.New(mf)
		},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := open()
				if err != nil {
					b.Fatal(err)
				}
				m.Close()
			}
		})
	}
}
