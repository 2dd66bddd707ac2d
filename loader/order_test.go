package loader_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/loader/tflite"
)

// checkUseOrder checks the use orders of an opened model: method "" lists
// every tensor exactly once, each method of a program lists exactly its
// own tensors, and a method a .ptd or .rten file does not have is
// ErrNotFound.
func checkUseOrder(m *loader.Model) error {
	n := m.NumTensors()
	perm := func(order []int, want func(i int) bool, what string) error {
		seen := make([]bool, n)
		for _, i := range order {
			if i < 0 || i >= n || seen[i] || !want(i) {
				return fmt.Errorf("use order of %s: %v: index %d out of range, repeated or not the method's", what, order, i)
			}
			seen[i] = true
		}
		for i := range seen {
			if want(i) && !seen[i] {
				return fmt.Errorf("use order of %s: %v: tensor %d missing", what, order, i)
			}
		}
		return nil
	}
	order, err := m.UseOrder("")
	var fe *loader.FormatError
	if err != nil && (as[*pte.Program](m) != nil || as[*tflite.Model](m) != nil) && errors.As(err, &fe) {
		return nil // a program's instructions, a TFLite model's operators, may be verified when first read
	}
	if err != nil {
		return fmt.Errorf("use order: %w", err)
	}
	if err := perm(order, func(int) bool { return true }, "the model"); err != nil {
		return err
	}
	p := as[*pte.Program](m)
	if p == nil {
		if _, err := m.UseOrder("forward"); !errors.Is(err, loader.ErrNotFound) {
			return fmt.Errorf("use order of method forward in a %s file: %v, want ErrNotFound", m.Format(), err)
		}
		return nil
	}
	ts := p.Tensors()
	for _, meth := range p.Methods() {
		if meth.Name == "" {
			continue // "" asks for every method's order, checked above
		}
		order, err := m.UseOrder(meth.Name)
		if err != nil {
			return fmt.Errorf("use order of %q: %w", meth.Name, err)
		}
		if err := perm(order, func(i int) bool { return ts[i].Method == meth.Name }, fmt.Sprintf("method %q", meth.Name)); err != nil {
			return err
		}
	}
	return nil
}

func TestUseOrder(t *testing.T) {
	paths := []string{"tiny.pte", "tiny-external.pte", "tiny.ptd", "tiny-v1.rten", "tiny-v2.rten"}
	for _, name := range paths {
		t.Run(name, func(t *testing.T) {
			m, err := loader.Open(filepath.Join("..", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if err := checkUseOrder(m); err != nil {
				t.Error(err)
			}
			if _, err := m.UseOrder("no such method"); !errors.Is(err, loader.ErrNotFound) {
				t.Errorf("unknown method: %v, want ErrNotFound", err)
			}
			m.Close()
			if _, err := m.UseOrder(""); !errors.Is(err, loader.ErrClosed) {
				t.Errorf("after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// The model-level order is the format package's: real files through
// Open, and a .ptd in key order.
func TestUseOrderReal(t *testing.T) {
	for _, path := range testmodels.All(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m, err := loader.Open(path)
			if err != nil && strings.HasSuffix(path, ".bpte") {
				t.Skip(err) // a bundled program is not a model
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := checkUseOrder(m); err != nil {
				t.Fatal(err)
			}
			got, _ := m.UseOrder("")
			// The loader hands out the format's own order (each format's
			// tests derive it independently).
			want, _ := m.Impl().UseOrder("")
			if !slices.Equal(got, want) {
				t.Errorf("UseOrder = %v, want %v", got, want)
			}
		})
	}
}
