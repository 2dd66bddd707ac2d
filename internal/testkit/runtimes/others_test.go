package runtimes

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// modelCase is one model for a runtime that takes a single file (LiteRT,
// llama.cpp): cannot says why the runtime cannot run it (empty: it must).
type modelCase struct {
	file      string
	cannot    string
	vocabOnly bool // llama.cpp: load the vocabulary and tokenize
}

// cannotRepack reports whether repack's output says that edgeload cannot
// rewrite (or does not yet read) the file's format.
func cannotRepack(out string) bool {
	return CannotRewrite(out) || strings.Contains(out, "unknown file format")
}

// checkModels runs each model and its `edgeload repack --align 16KiB`
// output with the driver's command and requires the same outputs, bit for
// bit. A model whose format edgeload cannot rewrite yet is skipped with
// repack's message.
func checkModels(t *testing.T, py, command string, cases []modelCase) {
	dir := t.TempDir()
	var runs []map[string]any
	skip := map[string]string{}
	for _, c := range cases {
		name := filepath.Base(c.file)
		runs = append(runs, map[string]any{"name": name, "model": c.file, "vocab_only": c.vocabOnly})
		out := filepath.Join(dir, "align-"+name)
		msg, ok := Repack(t, "--align", "16KiB", c.file, out)
		switch {
		case ok:
			runs = append(runs, map[string]any{"name": name + "/align-16KiB", "model": out, "vocab_only": c.vocabOnly})
		case cannotRepack(msg):
			skip[name] = msg
		case c.cannot != "":
			// a file the runtime refuses, and edgeload too (a GGUF v1)
			skip[name] = "edgeload refuses it too: " + msg
		default:
			t.Errorf("%s: edgeload repack: %s", name, msg)
		}
	}
	var res struct{ Runs []Run }
	Driver(t, py, command, map[string]any{"runs": runs}, &res)
	by := map[string]Run{}
	for _, r := range res.Runs {
		by[r.Name] = r
	}
	for _, c := range cases {
		name := filepath.Base(c.file)
		t.Run(name, func(t *testing.T) {
			orig := by[name]
			if c.cannot != "" {
				if orig.Error == "" {
					t.Errorf("the runtime ran it; expected it not to: %s", c.cannot)
				}
				t.Logf("not run by the runtime: %s (%.120s)", c.cannot, orig.Error)
			} else if orig.Error != "" || len(orig.Outputs) == 0 {
				t.Fatalf("the original does not run: %q", orig.Error)
			}
			if msg, ok := skip[name]; ok {
				t.Skipf("not repacked: %s", msg)
			}
			got, ok := by[name+"/align-16KiB"]
			if !ok {
				t.Fatal("the repacked model was not run")
			}
			if c.cannot != "" {
				// the runtime refuses the copy as it refuses the original
				// (its message names the file, which differs)
				if got.Error == "" {
					t.Errorf("the runtime runs the repacked copy of a file it does not run")
				}
				return
			}
			if d := Compare(orig, got); len(d) > 0 {
				t.Errorf("repacked --align 16KiB: the runtime's results differ:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}

// TestLiteRT runs the real .tflite models in LiteRT's interpreter, and
// their repacked copies once edgeload can rewrite .tflite.
func TestLiteRT(t *testing.T) {
	py := Python(t)
	d := filepath.Join(testmodels.Dir(t), "tflite")
	f := func(n string) string { return filepath.Join(d, n) }
	checkModels(t, py, "tflite", []modelCase{
		{file: f("litert-group-norm-offset.tflite")},
		{file: f("litert-multi-subgraphs-while.tflite")},
		{file: f("litert-qwen-fc-int4.tflite")},
		{file: f("litert-sdpa-mqa-composite.tflite")},
		{file: f("micro-keyword-scrambled.tflite")},
		{file: f("support-mobilenet-v1-quant-metadata.tflite")},
		{file: f("litert-sparse-tensor.tflite"), cannot: "its only operator is the custom op FakeOp, which LiteRT does not register"},
		{file: f("micro-person-detect.tflite"), cannot: "LiteRT rejects its per-channel quantization (quantized_dimension 3 of a 1-channel scale list), which only tflite-micro accepts"},
	})
}

// TestLlamaCpp loads the real .gguf files in llama.cpp (a forward pass of
// the tiny Llama, tokenization with the vocabulary-only files), and their
// repacked copies once edgeload can rewrite .gguf.
func TestLlamaCpp(t *testing.T) {
	py := Python(t)
	d := filepath.Join(testmodels.Dir(t), "gguf")
	f := func(n string) string { return filepath.Join(d, n) }
	checkModels(t, py, "gguf", []modelCase{
		{file: f("llama2-tiny-random.gguf")},
		{file: f("vocab-llama-spm.gguf"), vocabOnly: true},
		{file: f("vocab-falcon-2023-v2.gguf"), vocabOnly: true},
		{file: f("devstral-slice-q4k-q6k.gguf"), cannot: "a 3-tensor slice of a model, not a loadable model"},
		{file: f("ratchet-all-value-types.gguf"), cannot: "no architecture: a metadata and tensor test file, not a model"},
		{file: f("vocab-llama-2023-v1.gguf"), vocabOnly: true, cannot: "GGUF v1, which llama.cpp rejects"},
	})
}
