package tflite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/format/formattest"
)

// TestContract runs the conformance kit on the generated sample, in both
// buffer layouts, on the TFLite model of litertlm's fixtures and on every
// real model.
func TestContract(t *testing.T) {
	files := []string{"../litertlm/testdata/sample.tflite"}
	for _, ext := range []bool{false, true} {
		p := filepath.Join(t.TempDir(), "sample.tflite")
		if err := os.WriteFile(p, tflitegen.Sample(ext).Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	for _, p := range append(files, testmodels.Opening(t, "tflite")...) {
		if err := formattest.TestFile(p); err != nil {
			t.Error(err)
		}
	}
}
