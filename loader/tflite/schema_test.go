package tflite_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSchemaIsLiteRTs: edgeload's TFLite schema (internal/schema/tflite.fbs
// and tflite_options.fbs, from which the verifier is generated) has every
// table, field id, wire type and union member of the schema LiteRT's
// Python package was built from, as internal/schema/tflite_upstream.py
// reads it, and tflite_options.fbs is what that script writes. It skips
// without python3 and ai_edge_litert, and fails then under CI=true.
func TestSchemaIsLiteRTs(t *testing.T) {
	liteRTPython(t)
	dir := filepath.Join("..", "..", "internal", "schema")
	script := filepath.Join(dir, "tflite_upstream.py")
	out, err := exec.Command("python3", script, "check", filepath.Join(dir, "tflite.fbs"), filepath.Join(dir, "tflite_options.fbs")).CombinedOutput()
	if err != nil {
		t.Fatalf("the schema differs from LiteRT's (%v):\n%s", err, out)
	}
	want, err := exec.Command("python3", script, "options").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "tflite_options.fbs"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("tflite_options.fbs is not what `python3 tflite_upstream.py options` writes: regenerate it, then `go generate` in internal/schema")
	}
}
