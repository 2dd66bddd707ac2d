package ptd_test

import (
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on every generated and real .ptd.
func TestContract(t *testing.T) {
	root := testmodels.Root()
	files, _ := filepath.Glob(filepath.Join(root, "testdata", "executorch", "*.ptd"))
	files = append(files, filepath.Join(root, "testdata", "tiny.ptd"))
	for _, p := range append(files, testmodels.Opening(t, "ptd")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
