package ptn_test

import (
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on every generated package and
// the ones ExecuTorch wrote (testdata/real).
func TestContract(t *testing.T) {
	files, _ := filepath.Glob("testdata/real/*.ptn")
	for _, p := range append(files, "testdata/tiny.ptn") {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
