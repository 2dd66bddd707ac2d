package gguf_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on every generated GGUF file that
// opens (align1.gguf is refused) and every real one.
func TestContract(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.gguf")
	files = slices.DeleteFunc(files, func(p string) bool { return filepath.Base(p) == "align1.gguf" })
	for _, p := range append(files, testmodels.Opening(t, "gguf")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
