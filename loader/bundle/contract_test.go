package bundle_test

import (
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on the generated and the real
// bundled program.
func TestContract(t *testing.T) {
	for _, p := range []string{filepath.Join(testmodels.Root(), "testdata", "tiny.bpte"), testmodels.Path(t, "pte/bundled-program.bpte")} {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
