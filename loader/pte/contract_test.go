package pte_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on every generated and real
// program, with and without the .ptd files that hold its external tensors.
func TestContract(t *testing.T) {
	root := testmodels.Root()
	gen, _ := filepath.Glob(filepath.Join(root, "testdata", "executorch", "*.pte"))
	files := append([]string{filepath.Join(root, "testdata", "tiny.pte"), filepath.Join(root, "testdata", "tiny-external.pte")}, gen...)
	for _, p := range testmodels.Opening(t, "pte") {
		if strings.HasSuffix(p, ".pte") {
			files = append(files, p)
		}
	}
	data := map[string]string{
		"tiny-external.pte":   filepath.Join(root, "testdata", "tiny.ptd"),
		"mlp-external.pte":    filepath.Join(root, "testdata", "executorch", "mlp-external.ptd"),
		"lora-base.pte":       filepath.Join(root, "testdata", "executorch", "lora-foundation.ptd"),
		"lora-adapted.pte":    filepath.Join(root, "testdata", "executorch", "lora-foundation.ptd"),
		"addmul-external.pte": testmodels.Path(t, "ptd/addmul-external.ptd"),
		"linear-external.pte": testmodels.Path(t, "ptd/linear-legacy-2025.ptd"),
	}
	for _, p := range files {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
		if d, ok := data[filepath.Base(p)]; ok {
			if err := formattest.TestFile(p, loader.WithData(d)); err != nil {
				t.Errorf("with %s: %v", filepath.Base(d), err)
			}
		}
	}
}
