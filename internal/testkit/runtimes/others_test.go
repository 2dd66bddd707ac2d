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

// checkModels runs each model, its `edgeload repack --align 16KiB` output
// and that output broken (breakages) with the driver's command,
// on every input set of Seeds. The repacked file must give the same outputs,
// bit for bit, and repack --check must find no difference from the
// original; each broken copy must be caught (checkBreakage). A model whose
// format edgeload cannot rewrite fails under CI=true and is skipped with
// repack's message elsewhere.
func checkModels(t *testing.T, py, command string, cases []modelCase) {
	dir := t.TempDir()
	var runs []map[string]any
	add := func(name, file string, c modelCase) {
		runs = append(runs, map[string]any{"name": name, "model": file, "vocab_only": c.vocabOnly, "seeds": Seeds})
	}
	vars := map[string][]variant{}
	refused := map[string]string{}
	for _, c := range cases {
		name := filepath.Base(c.file)
		add(name, c.file, c)
		out := filepath.Join(dir, "align-"+name)
		msg, ok := Repack(t, "--align", "16KiB", c.file, out)
		if !ok {
			refused[name] = msg
			continue
		}
		vs := []variant{{name: "align-16KiB", file: File{Path: out}}}
		vs = append(vs, breakages(t, dir, File{Path: out})...)
		for _, v := range vs {
			add(name+"/"+v.name, v.file.Path, c)
		}
		vars[name] = vs
	}
	var res struct{ Runs []Run }
	Driver(t, py, command, map[string]any{"runs": runs}, &res)
	by := map[string]Run{}
	for _, r := range res.Runs {
		by[r.Name] = r
	}
	flips := map[string]caught{}
	ran := map[string]bool{}
	for _, c := range cases {
		name := filepath.Base(c.file)
		t.Run(name, func(t *testing.T) {
			orig := by[name]
			if c.cannot != "" {
				if orig.Error == "" {
					t.Errorf("the runtime ran it; expected it not to: %s", c.cannot)
				}
				if command == "gguf" && orig.Log == "" {
					// llama.cpp logs why and raises a bare "Failed to load"
					t.Errorf("llama.cpp's log of its refusal was not captured (%s)", orig.Why())
				}
				t.Logf("not run by the runtime: %s (%s)", c.cannot, clip(orig.Why(), 300))
			} else if len(orig.Ran()) == 0 {
				t.Fatalf("the original does not run: %s", orig.Why())
			}
			ran[name] = len(orig.Ran()) > 0
			s := subject{file: File{Path: c.file}, orig: orig, runs: map[string]Run{}, cannot: c.cannot}
			logInputs(t, s)
			if msg, ok := refused[name]; ok {
				switch {
				case cannotRepack(msg):
					notRepacked(t, msg)
				case c.cannot != "":
					// a file the runtime refuses, and edgeload too (a GGUF v1)
					t.Logf("edgeload refuses it too: %s", msg)
					return
				default:
					t.Fatalf("edgeload repack: %s", msg)
				}
			}
			for _, v := range vars[name] {
				s.runs[v.name] = by[name+"/"+v.name]
			}
			var probe caught
			probed := false
			for _, v := range vars[name] {
				t.Run(v.name, func(t *testing.T) {
					if v.flip != nil {
						if got := checkBreakage(t, s, v); v.probe {
							flips[name], probe, probed = got, got, true
						}
						return
					}
					if c.cannot != "" {
						// the runtime refuses the copy as it refuses the
						// original (its message names the file, which differs)
						if d := CheckSays(s.file, v.file); d != "" {
							t.Errorf("repack --check %s against the original: %s", v.file.Path, d)
						}
						if got := s.runs[v.name]; got.Error == "" {
							t.Errorf("the runtime runs the repacked copy of a file it does not run")
						}
						t.Skipf("the runtime refuses it as it refuses the original (%s); repack --check: no difference", c.cannot)
					}
					checkVariant(t, s, v)
				})
			}
			logWeights(t, s, probe, probed)
		})
	}
	requireRuntimeCatches(t, flips, ran)
}

// TestLiteRT runs the real .tflite models in LiteRT's interpreter, with
// their repacked copies.
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
// the tiny Llama, tokenization with the vocabulary-only files), with their
// repacked copies.
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
