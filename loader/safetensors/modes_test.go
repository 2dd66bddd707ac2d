package safetensors_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/safetensors"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestModes opens the same file mapped whole, through windows, copied
// from a ReaderAt and as a section of a larger file, through NewFile and
// through Format.Open with the head a sniffer read: the same tensors and
// bytes each time.
func TestModes(t *testing.T) {
	ts := genTensors(5)
	b := writeBytes(t, ts, []safetensors.Meta{{Key: "k", Value: "v"}}, 64)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	os.WriteFile(path, b, 0o644)
	wrapped := filepath.Join(dir, "wrapped.bin")
	os.WriteFile(wrapped, append(append([]byte("prefix-bytes"), b...), "suffix"...), 0o644)

	opens := map[string]func() (*mmapfile.File, error){
		"whole":    func() (*mmapfile.File, error) { return mmapfile.Open(path) },
		"windowed": func() (*mmapfile.File, error) { return mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWindowed)) },
		"copy":     func() (*mmapfile.File, error) { return mmapfile.NewReaderAt(bytes.NewReader(b), int64(len(b))), nil },
		"section":  func() (*mmapfile.File, error) { return mmapfile.Open(wrapped, mmapfile.WithSection(12, int64(len(b)))) },
	}
	for name, openMF := range opens {
		for _, viaFormat := range []bool{false, true} {
			mf, err := openMF()
			if err != nil {
				t.Fatal(err)
			}
			var m format.Model
			if viaFormat {
				m, err = safetensors.Format.Open(mf, &format.Config{Head: b[:min(len(b), 100)], Name: path})
			} else {
				m, err = safetensors.NewFile(mf)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, g := range ts {
				i, ok := m.Lookup(g.name)
				if !ok {
					t.Fatalf("%s: %q missing", name, g.name)
				}
				got, err := m.TensorData(i).Bytes()
				if err != nil || !bytes.Equal(got, g.data) {
					t.Errorf("%s: %q: %x, %v", name, g.name, got, err)
				}
			}
			m.Close()
			mf.Close()
		}
	}
}
