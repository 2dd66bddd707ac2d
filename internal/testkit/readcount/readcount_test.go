package readcount

import (
	"strings"
	"testing"
)

func TestReaderAt(t *testing.T) {
	c := &ReaderAt{R: strings.NewReader("abcdef")}
	p := make([]byte, 3)
	for i, want := range []string{"abc", "cde"} {
		if n, err := c.ReadAt(p, int64(2*i)); err != nil || string(p[:n]) != want {
			t.Fatalf("read %d = %q, %v; want %q", i, p[:n], err, want)
		}
	}
	if c.Reads != 2 {
		t.Errorf("Reads = %d, want 2", c.Reads)
	}
}
