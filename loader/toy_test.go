package loader_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/toyformat"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format"
)

// TestToyFormat shows that a format registered from outside the module's
// format packages opens, verifies and orders through loader with nothing
// changed in loader.
func TestToyFormat(t *testing.T) {
	names := []string{"a", "b", "c"}
	vals := [][]float32{{1, 2}, {3}, {4, 5, 6}}
	path := filepath.Join(t.TempDir(), "m.toy")
	if err := os.WriteFile(path, toyformat.Write(names, vals), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := loader.SniffFile(path); err != nil || f != "toy" {
		t.Fatalf("SniffFile = %v, %v", f, err)
	}
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Format() != "toy" || m.NumTensors() != 3 {
		t.Fatalf("format %s, %d tensors", m.Format(), m.NumTensors())
	}
	for i, n := range names {
		tn, ok := m.Tensor(n)
		if !ok {
			t.Fatalf("%q not found", n)
		}
		got, _, err := tn.Data.Float32()
		if err != nil || !slices.Equal(got, vals[i]) {
			t.Errorf("%q = %v (%v), want %v", n, got, err, vals[i])
		}
	}
	if r, err := m.Verify(); err != nil || r.Tensors != 3 || r.BytesRead == 0 {
		t.Errorf("Verify = %+v, %v", r, err)
	}
	if o, err := m.UseOrder(""); err != nil || !slices.Equal(o, []int{2, 1, 0}) {
		t.Errorf("UseOrder = %v, %v; want [2 1 0]", o, err)
	}
	if _, err := loader.Open(path, loader.WithData(path)); err == nil {
		t.Error("data files accepted for a format that links none")
	}
	if _, err := m.Impl().(*toyformat.File); !err {
		t.Errorf("Impl is %T", m.Impl())
	}
	var fe *format.FormatError
	if _, err := loader.Open(writeFile(t, []byte("TOY1\xff\xff\xff\xff"))); !errors.As(err, &fe) || fe.Format != "toy" {
		t.Errorf("a bad toy file: %v", err)
	}
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
