package safetensors_test

import (
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on the generated sharded
// checkpoint, its first shard and every real safetensors file that opens.
func TestContract(t *testing.T) {
	files := []string{"testdata/sharded/model.safetensors.index.json", "testdata/sharded/model-00001-of-00004.safetensors"}
	for _, p := range append(files, testmodels.Opening(t, "safetensors")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
