package litertlm_test

import (
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on the generated and the real
// LiteRT-LM container.
func TestContract(t *testing.T) {
	for _, p := range append([]string{"testdata/builder.litertlm"}, testmodels.Files(t, "litertlm")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
