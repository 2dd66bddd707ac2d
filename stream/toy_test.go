package stream

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/toyformat"
	"github.com/edgeload/edgeload/loader"
)

// TestToyFormat streams a model of a format registered by a test-only package: the
// stream follows the format's own use order (the toy's is reverse file
// order) and hands out each tensor's bytes.
func TestToyFormat(t *testing.T) {
	names := []string{"w0", "w1", "w2", "w3"}
	vals := [][]float32{make([]float32, 3000), make([]float32, 10), make([]float32, 5000), {7}}
	for i := range vals {
		for k := range vals[i] {
			vals[i][k] = float32(i*10000 + k)
		}
	}
	path := filepath.Join(t.TempDir(), "m.toy")
	if err := os.WriteFile(path, toyformat.Write(names, vals), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := New(context.Background(), m, WithBudget(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for {
		it, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, it.Name)
		i := slices.Index(names, it.Name)
		v, _, err := it.Data.Float32()
		if err != nil || !slices.Equal(v, vals[i]) {
			t.Errorf("%s: %d values (%v), want %d", it.Name, len(v), err, len(vals[i]))
		}
	}
	if want := []string{"w3", "w2", "w1", "w0"}; !slices.Equal(got, want) {
		t.Errorf("streamed %v, want %v", got, want)
	}
}
