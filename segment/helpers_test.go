package segment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>10)
	}
	return b
}

// openFile writes b to a new file, opens it with opts and returns the file
// and os.ReadFile of it.
func openFile(t testing.TB, b []byte, opts ...mmapfile.Option) (*mmapfile.File, []byte, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mmapfile.Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, want, path
}

// modes are the Open options the segment tests run under.
var modes = []struct {
	name string
	opts []mmapfile.Option
}{
	{"whole", []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeWhole)}},
	{"windowed", []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeWindowed)}},
	{"copy", []mmapfile.Option{mmapfile.WithMode(mmapfile.ModeCopy)}},
}
