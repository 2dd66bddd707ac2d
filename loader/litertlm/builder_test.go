package litertlm_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/tflitegen"
	"github.com/edgeload/edgeload/loader/litertlm"
	"github.com/edgeload/edgeload/loader/tflite"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestWriteSample writes testdata/sample.tflite, the model
// testdata/gen_builder.py packs with Google's builder, when
// EDGELOAD_WRITE_FIXTURES=1; otherwise it checks the committed one is
// what the generator writes.
func TestWriteSample(t *testing.T) {
	b := tflitegen.Sample(false).Bytes()
	p := filepath.Join("testdata", "sample.tflite")
	if os.Getenv("EDGELOAD_WRITE_FIXTURES") == "1" {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("%s is not the generator's sample (%v): run EDGELOAD_WRITE_FIXTURES=1 go test -run TestWriteSample, then testdata/gen_builder.py", p, err)
	}
}

// TestBuilderFile opens a container written by Google's LiteRT-LM builder
// (testdata/gen_builder.py): its TFLite section opens in place, at a 16 KiB
// boundary, with the tensors of the model the builder was given, and the
// tokenizer and binary sections are named data holding the bytes given.
func TestBuilderFile(t *testing.T) {
	mf, err := mmapfile.Open(filepath.Join("testdata", "builder.litertlm"))
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	m, err := litertlm.NewFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sample, err := tflite.NewFile(mmapfile.NewBytes(tflitegen.Sample(false).Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var models int
	for _, s := range m.Sections() {
		if s.Data.Offset()%(16<<10) != 0 {
			t.Errorf("section %v at %d, not on 16 KiB", s.Type, s.Data.Offset())
		}
		if s.Model != nil {
			models++
		}
	}
	if models != 1 || m.NumTensors() != sample.NumTensors() || m.NumTensors() == 0 {
		t.Fatalf("%d model sections, %d tensors; the sample has %d", models, m.NumTensors(), sample.NumTensors())
	}
	for i := range m.NumTensors() {
		got, want := m.TensorAt(i), sample.TensorAt(i)
		gb, err1 := got.Data.Bytes()
		wb, err2 := want.Data.Bytes()
		if got.Name != want.Name || got.DType != want.DType || !bytes.Equal(gb, wb) || err1 != nil || err2 != nil {
			t.Errorf("tensor %d: %q %v %x, want %q %v %x", i, got.Name, got.DType, gb, want.Name, want.DType, wb)
		}
	}
	tok, _ := os.ReadFile(filepath.Join("testdata", "tokenizer.bin"))
	extra, _ := os.ReadFile(filepath.Join("testdata", "extra.bin"))
	found := map[string]bool{}
	for _, nd := range m.NamedData() {
		b, err := nd.Data.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(b, tok):
			found["tokenizer"] = true
		case bytes.Equal(b, extra):
			found["extra"] = true
		}
	}
	if !found["tokenizer"] || !found["extra"] {
		t.Errorf("named data %+v: the tokenizer and the binary data not both found", m.NamedData())
	}
}
