package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/runtimes"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// llamaCppTolerance bounds the difference between a logit of this forward
// pass and llama.cpp's, relative to the largest logit of that position (see
// TestLlamaCpp for why this value).
const llamaCppTolerance = 0.03

// cppRun is what testdata/llamacpp.py reports.
type cppRun struct {
	Tokens []int `json:"tokens"`
	Rows   int   `json:"rows"`
	Vocab  int   `json:"vocab"`
}

// runLlamaCpp decodes greedily in llama.cpp and returns its tokens and the
// logits of every position.
func runLlamaCpp(t *testing.T, python, model string, ids []int, n int) ([]int, [][]float32) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "logits.bin")
	var run cppRun
	runScript(t, python, "llamacpp.py", map[string]any{"model": model, "ids": ids, "n": n, "logits": out}, &run)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*run.Rows*run.Vocab {
		t.Fatalf("llama.cpp logits: %d bytes, want %d rows of %d", len(raw), run.Rows, run.Vocab)
	}
	logits := make([][]float32, run.Rows)
	for r := range logits {
		logits[r] = make([]float32, run.Vocab)
		for i := range logits[r] {
			logits[r][i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*run.Vocab+i):]))
		}
	}
	return run.Tokens, logits
}

// runScript runs testdata/NAME with job as its JSON input and decodes its
// JSON output into out.
func runScript(t *testing.T, python, name string, job, out any) {
	t.Helper()
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", name))
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("%s: output is not JSON: %v\n%s\n%s", name, err, stdout.String(), stderr.String())
	}
}

// generatedModels writes the models of testdata/genmodel.py into a
// temporary folder with the runtimes' gguf-py.
func generatedModels(t *testing.T, python string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(python, filepath.Join("testdata", "genmodel.py"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("genmodel.py: %v\n%s", err, out)
	}
	return dir
}

// TestLlamaCpp compares this forward pass with llama.cpp on the real
// random-weight llama2 model and on two generated models that hold every
// supported weight type (testdata/genmodel.py).
//
// llama.cpp decodes 32 tokens greedily. This pass then runs the same token
// sequence (teacher forcing, so that one step's tie cannot derail the steps
// after it): every logit must be within llamaCppTolerance of llama.cpp's,
// relative to the largest logit of its position, and the greedy token of
// every step must be llama.cpp's, except at a step whose two best logits in
// llama.cpp are closer than twice the tolerance (a tie at this precision,
// which the test logs). The pass decoding freely, with the weights streamed
// or read from the mapping, must give llama.cpp's tokens up to the first
// such tie, and logits bit-identical to the teacher-forced run.
//
// The tolerance: both passes quantize activations as ggml's x86 CPU code
// does, so they agree to float rounding until a rounding difference (an
// order of summation) flips one quantized activation value; from there they
// may differ by up to the size of the activation quantization error itself.
// The generated models keep that error small against the logits (their
// blocks add little to the residual stream), and the tolerance sits above
// the whole error (this pass against itself without any activation
// quantization) and below what a wrong RoPE pairing, frequency base or
// factors, GQA head mapping, epsilon, activation function, attention span or
// quant layout changes. The commit that set it gives the measurements.
func TestLlamaCpp(t *testing.T) {
	python := runtimes.Python(t)
	gen := generatedModels(t, python)
	models := map[string]string{
		"llama2-tiny-random": testmodels.Path(t, "gguf/llama2-tiny-random.gguf"),
		"llama-types":        filepath.Join(gen, "llama-types.gguf"),
		"llama-tied":         filepath.Join(gen, "llama-tied.gguf"),
	}
	prompt := []int{1, 15, 4, 100, 7}
	const n = 32
	for name, path := range models {
		t.Run(name, func(t *testing.T) {
			want, wantLogits := runLlamaCpp(t, python, path, prompt, n)
			if len(want) != n || len(wantLogits) != len(prompt)+n-1 {
				t.Fatalf("llama.cpp gave %d tokens and %d rows of logits", len(want), len(wantLogits))
			}
			ctx := context.Background()
			o := options{model: path, ids: append(append([]int(nil), prompt...), want[:n-1]...), n: 1, budget: 4 << 20, mode: "mmap", threads: 2}
			forced, err := generate(ctx, o, true)
			if err != nil {
				t.Fatal(err)
			}
			worst, at, ties, minMargin := 0.0, 0, 0, math.Inf(1)
			firstTie := n
			for p, w := range wantLogits {
				scale, diff := 0.0, 0.0
				for i, v := range w {
					scale = max(scale, math.Abs(float64(v)))
					diff = max(diff, math.Abs(float64(forced.logits[p][i]-v)))
				}
				if diff/scale > worst {
					worst, at = diff/scale, p
				}
				s := p - (len(prompt) - 1) // the generation step p's logits choose
				if s < 0 {
					continue
				}
				margin := float64(topGap(w)) / scale
				minMargin = min(minMargin, margin)
				if got := argmax(forced.logits[p]); got != want[s] {
					if margin >= 2*llamaCppTolerance {
						t.Errorf("step %d: token %d, llama.cpp %d (its margin %.3g of the largest logit)", s, got, want[s], margin)
					} else {
						t.Logf("step %d: token %d, llama.cpp %d: a tie at this precision (margin %.3g)", s, got, want[s], margin)
						ties++
						firstTie = min(firstTie, s)
					}
				}
			}
			t.Logf("largest logit difference from llama.cpp: %.3g of the largest logit (position %d); %d ties; llama.cpp's smallest margin %.3g", worst, at, ties, minMargin)
			if worst > llamaCppTolerance {
				t.Errorf("logits differ from llama.cpp's by %.3g of the largest logit at position %d (tolerance %g)", worst, at, llamaCppTolerance)
			}

			for _, mode := range []string{"schedule", "mmap"} {
				o := options{model: path, ids: prompt, n: n, budget: 4 << 20, mode: mode, threads: 2}
				free, err := generate(ctx, o, true)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(free.tokens[:firstTie], want[:firstTie]) {
					t.Errorf("%s: greedy tokens %v, llama.cpp %v", mode, free.tokens, want)
				}
				for p := range len(prompt) + firstTie - 1 {
					if !slices.Equal(free.logits[p], forced.logits[p]) {
						t.Errorf("%s: the logits of position %d differ from those of the same tokens run before", mode, p)
						break
					}
				}
			}
		})
	}
}

// topGap returns the difference between the two largest values.
func topGap(v []float32) float32 {
	a, b := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, x := range v {
		if x > a {
			a, b = x, a
		} else if x > b {
			b = x
		}
	}
	return a - b
}
