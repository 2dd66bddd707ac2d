package rten_test

import (
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on every generated and real RTen
// model, V1 and V2.
func TestContract(t *testing.T) {
	root := testmodels.Root()
	files := []string{filepath.Join(root, "testdata", "tiny-v1.rten"), filepath.Join(root, "testdata", "tiny-v2.rten")}
	for _, p := range append(files, testmodels.Opening(t, "rten")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
