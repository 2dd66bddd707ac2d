package region

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

func TestRead(t *testing.T) {
	data := make([]byte, Max+4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWhole))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := mmapfile.NewBytes(data)
	for _, c := range []struct {
		name    string
		f       *mmapfile.File
		off, n  int64
		wantBuf bool
	}{
		{"small from a file", f, 100, 5000, true},
		{"Max from a file", f, 0, Max, true},
		{"over Max from a file: in place", f, 0, Max + 1, false},
		{"in memory: in place", mem, 100, 5000, false},
	} {
		b, buf, err := Read(c.f, c.off, c.n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (buf != nil) != c.wantBuf {
			t.Errorf("%s: pooled buffer %v, want %v", c.name, buf != nil, c.wantBuf)
		}
		if !bytes.Equal(b, data[c.off:c.off+c.n]) || int64(cap(b)) != c.n {
			t.Errorf("%s: wrong bytes (len %d cap %d)", c.name, len(b), cap(b))
		}
		Put(buf)
	}
	// A buffer back from the pool holds the new read, whatever it held.
	_, buf1, _ := Read(f, 0, 3000)
	Put(buf1)
	b2, buf2, err := Read(f, 3000, 3000)
	if err != nil || !bytes.Equal(b2, data[3000:6000]) {
		t.Fatalf("second read: %v", err)
	}
	Put(buf2)
	// Past the end: the error, no buffer.
	if _, buf, err := Read(f, int64(len(data))-10, 100); err == nil || buf != nil {
		t.Errorf("read past the end = %v, buffer %v", err, buf != nil)
	}
}

func TestPutPoisons(t *testing.T) {
	if !poison {
		t.Skip("poisoning is on with -tags edgeload_checked")
	}
	s := []byte("metadata")
	Put(&s)
	if !bytes.Equal(s, bytes.Repeat([]byte{0xA5}, len(s))) {
		t.Errorf("Put left %q", s)
	}
}
