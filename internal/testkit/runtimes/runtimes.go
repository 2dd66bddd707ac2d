// Package runtimes runs model files in the upstream runtimes (ExecuTorch's
// portable runtime, LiteRT, llama.cpp) through a small Python driver
// (driver.py beside this file), so that tests can prove that what
// `edgeload repack` writes is accepted and computes the same outputs as the
// original on several input sets, that `repack --check` finds it the same
// (Check), and that copies broken on purpose (FlipWeight, PerturbWeights,
// CopyBroken) are caught by one or the other.
//
// The runtimes live in a Python virtual environment made from
// requirements-runtimes.txt at the repository root, which install.sh beside
// this file installs; .ci/run runs it and sets EDGELOAD_RUNTIMES_PYTHON to
// its interpreter. Where that variable is unset, Python skips the test with
// a message; under CI=true it fails it.
package runtimes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// EnvPython names the environment variable that holds the interpreter of
// the runtimes' virtual environment.
const EnvPython = "EDGELOAD_RUNTIMES_PYTHON"

// Python returns the interpreter of the runtimes' virtual environment. It
// skips the test when EnvPython is unset or names no file, or when the test
// runs for another architecture than amd64 (the CI runs arm builds under
// qemu, where the host's Python cannot be started); under CI=true an unset
// or broken EnvPython on amd64 fails the test instead.
func Python(tb testing.TB) string {
	tb.Helper()
	if runtime.GOARCH != "amd64" {
		tb.Skipf("runtime checks run on linux/amd64 only (this is %s/%s)", runtime.GOOS, runtime.GOARCH)
	}
	p := os.Getenv(EnvPython)
	msg := ""
	if p == "" {
		msg = EnvPython + " is not set"
	} else if _, err := os.Stat(p); err != nil {
		msg = fmt.Sprintf("%s=%s: %v", EnvPython, p, err)
	}
	if msg != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("upstream runtimes missing (CI=true requires them; .ci/run installs them): %s", msg)
		}
		tb.Skipf("upstream runtimes not installed: %s; skipping (see docs/RUNTIMES.md to install them)", msg)
	}
	return p
}

// Value is one output of a method as the driver reports it: a tensor by
// dtype, shape and the SHA-256 of its bytes (and its first values, which
// say how it differs), anything else by its repr.
type Value struct {
	Kind   string  `json:"kind"`
	DType  string  `json:"dtype,omitempty"`
	Shape  []int64 `json:"shape,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`
	Repr   string  `json:"repr,omitempty"`
	Head   []any   `json:"head,omitempty"` // the first values, for the logs
}

// InputSet is what one input set gave: the digests of its inputs (for a
// tokenizer, the text) and the outputs of each call on it (calls follow each
// other on one loaded program, so mutable state advances).
type InputSet struct {
	Inputs  []string  `json:"inputs,omitempty"`
	Outputs [][]Value `json:"outputs,omitempty"`
}

// Method is what running one method gave: its metadata as the runtime
// reports it and what each input set gave, or the runtime's error.
type Method struct {
	Meta  string     `json:"meta,omitempty"`
	Sets  []InputSet `json:"sets,omitempty"`
	Error string     `json:"error,omitempty"`
}

// Run is the result of loading one program (or model) and running its
// methods (a program) or itself (a model) on each input set.
type Run struct {
	Name      string            `json:"name"`
	LoadError string            `json:"load_error,omitempty"`
	Error     string            `json:"error,omitempty"`
	Methods   map[string]Method `json:"methods,omitempty"`
	Sets      []InputSet        `json:"sets,omitempty"`
	// Log is the end of the runtime's own log (its standard output and
	// error) when the run failed somewhere; Compare ignores it.
	Log string `json:"log,omitempty"`
}

// Seeds are the seeds of the input sets every model runs on: the driver
// makes each set's inputs from its seed, deterministically.
var Seeds = []int{1, 2, 3}

// PTERun asks the driver to load Program (with the .ptd Data, if any) and
// run every method Iterations times on each input set of Seeds.
type PTERun struct {
	Name       string `json:"name"`
	Program    string `json:"program"`
	Data       string `json:"data,omitempty"`
	Iterations int    `json:"iterations,omitempty"`
	Seeds      []int  `json:"seeds,omitempty"`
}

// Ran reports the names of the methods that produced outputs (for a
// model, its name if it did).
func (r Run) Ran() []string {
	var n []string
	for name, m := range r.Methods {
		if m.Error == "" && hasOutputs(m.Sets) {
			n = append(n, name)
		}
	}
	if r.Methods == nil && r.Error == "" && r.LoadError == "" && hasOutputs(r.Sets) {
		n = append(n, r.Name)
	}
	sort.Strings(n)
	return n
}

func hasOutputs(sets []InputSet) bool {
	for _, s := range sets {
		if len(s.Outputs) > 0 {
			return true
		}
	}
	return false
}

// InputsMatter reports whether the input sets gave different outputs in a
// method that ran (or the model), and how many input sets there were. A
// run whose sets all gave the same outputs computes something its inputs
// do not change (a constant, or outputs that saturate).
func (r Run) InputsMatter() (bool, int) {
	differ := func(sets []InputSet) bool {
		for _, s := range sets[min(1, len(sets)):] {
			if !reflect.DeepEqual(s.Outputs, sets[0].Outputs) {
				return true
			}
		}
		return false
	}
	if r.Methods == nil {
		return differ(r.Sets), len(r.Sets)
	}
	n := 0
	for _, name := range r.Ran() {
		n = max(n, len(r.Methods[name].Sets))
		if differ(r.Methods[name].Sets) {
			return true, n
		}
	}
	return false, n
}

// Why says why a run failed: its errors and the lines of the runtime's
// log that name an error, or the log's last lines if none does.
func (r Run) Why() string {
	var w []string
	for _, e := range []string{r.LoadError, r.Error} {
		if e != "" && !slices.Contains(w, e) {
			w = append(w, e)
		}
	}
	var named []string
	lines := strings.Split(strings.TrimSpace(r.Log), "\n")
	for _, l := range lines {
		if ll := strings.ToLower(l); strings.Contains(ll, "error") || strings.Contains(ll, "fail") || strings.Contains(ll, "invalid") {
			named = append(named, strings.TrimSpace(l))
		}
	}
	if len(named) == 0 && r.Log != "" {
		named = lines[max(0, len(lines)-5):]
	}
	if len(named) > 0 {
		w = append(w, "runtime log: "+strings.Join(named[max(0, len(named)-8):], " | "))
	}
	return strings.Join(w, "; ")
}

// Compare lists every difference between two runs of the same model: load
// errors, the set of methods, each method's metadata, inputs, errors and the
// bytes of every output of every call on every input set. An empty list
// means the runtime saw the two files as the same program.
func Compare(want, got Run) []string {
	var d []string
	if want.LoadError != got.LoadError {
		d = append(d, fmt.Sprintf("load error: %q, want %q", got.LoadError, want.LoadError))
	}
	if want.Error != got.Error {
		d = append(d, fmt.Sprintf("error: %q, want %q", got.Error, want.Error))
	}
	d = append(d, compareSets("", want.Sets, got.Sets)...)
	names := map[string]bool{}
	for n := range want.Methods {
		names[n] = true
	}
	for n := range got.Methods {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		w, okw := want.Methods[n]
		g, okg := got.Methods[n]
		switch {
		case !okg:
			d = append(d, "method "+n+" missing")
		case !okw:
			d = append(d, "method "+n+" not in the original")
		case w.Error != g.Error:
			d = append(d, fmt.Sprintf("method %s: error %q, want %q", n, g.Error, w.Error))
		case w.Meta != g.Meta:
			d = append(d, fmt.Sprintf("method %s: metadata %s, want %s", n, g.Meta, w.Meta))
		default:
			d = append(d, compareSets("method "+n+": ", w.Sets, g.Sets)...)
		}
	}
	return d
}

// compareSets compares the input sets of two runs, set by set.
func compareSets(prefix string, want, got []InputSet) []string {
	if len(want) != len(got) {
		return []string{fmt.Sprintf("%s%d input sets, want %d", prefix, len(got), len(want))}
	}
	var d []string
	for i := range want {
		switch {
		case !reflect.DeepEqual(want[i].Inputs, got[i].Inputs):
			d = append(d, fmt.Sprintf("%sinput set %d: inputs differ", prefix, i))
		case !reflect.DeepEqual(want[i].Outputs, got[i].Outputs):
			d = append(d, fmt.Sprintf("%sinput set %d: outputs %+v, want %+v", prefix, i, got[i].Outputs, want[i].Outputs))
		}
	}
	return d
}

// Driver runs driver.py COMMAND with job as its JSON input and decodes its
// JSON result into out. The runtimes' log (standard error) is shown only
// when the driver fails.
func Driver(tb testing.TB, python, command string, job, out any) {
	tb.Helper()
	in, err := json.Marshal(job)
	if err != nil {
		tb.Fatal(err)
	}
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.Command(python, filepath.Join(filepath.Dir(file), "driver.py"), command)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("driver %s: %v\n%s", command, err, tail(stderr.String(), 4000))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		tb.Fatalf("driver %s: result is not JSON: %v\n%s\n%s", command, err, tail(stdout.String(), 2000), tail(stderr.String(), 2000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// Edgeload returns the path of the edgeload command, built from this
// repository once per test binary into a temporary folder. Cleanup removes
// the folder; call it from TestMain after m.Run.
func Edgeload(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "edgeload-runtimes-")
		if buildErr != nil {
			return
		}
		// go test puts its own toolchain's bin first in PATH.
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "edgeload"), "./cmd/edgeload")
		cmd.Dir = testmodels.Root()
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		tb.Fatalf("go build ./cmd/edgeload: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "edgeload")
}

// Cleanup removes what Edgeload built.
func Cleanup() {
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
}

// Repack runs `edgeload repack ARGS...` and returns its combined output and
// whether it succeeded.
func Repack(tb testing.TB, args ...string) (string, bool) {
	tb.Helper()
	out, err := exec.Command(Edgeload(tb), append([]string{"repack"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// CannotRewrite reports whether repack output says that edgeload cannot
// rewrite the input's format (the message of repack.Repack for a format
// without a writer).
func CannotRewrite(out string) bool {
	return strings.Contains(out, "edgeload cannot rewrite")
}
