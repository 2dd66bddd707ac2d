// Package runtimes runs model files in the upstream runtimes (ExecuTorch's
// portable runtime, LiteRT, llama.cpp) through a small Python driver
// (driver.py beside this file), so that tests can prove that what
// `edgeload repack` writes is accepted and computes the same outputs as the
// original.
//
// The runtimes live in a Python virtual environment made from
// requirements-runtimes.txt at the repository root; .ci/run installs it and
// sets EDGELOAD_RUNTIMES_PYTHON to its interpreter. Where that variable is
// unset, Python skips the test with a message; under CI=true it fails it.
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
// dtype, shape and the SHA-256 of its bytes, anything else by its repr.
type Value struct {
	Kind   string    `json:"kind"`
	DType  string    `json:"dtype,omitempty"`
	Shape  []int64   `json:"shape,omitempty"`
	SHA256 string    `json:"sha256,omitempty"`
	Repr   string    `json:"repr,omitempty"`
	Head   []float64 `json:"head,omitempty"`
}

// Method is what running one method gave: its metadata as the runtime
// reports it, the digests of the fixed inputs, the outputs of each call
// (calls follow each other on one loaded program, so mutable state
// advances), or the runtime's error.
type Method struct {
	Meta    string    `json:"meta,omitempty"`
	Inputs  []string  `json:"inputs,omitempty"`
	Outputs [][]Value `json:"outputs,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// Run is the result of loading one program (or model) and running its
// methods.
type Run struct {
	Name      string            `json:"name"`
	LoadError string            `json:"load_error,omitempty"`
	Error     string            `json:"error,omitempty"`
	Methods   map[string]Method `json:"methods,omitempty"`
	Inputs    []string          `json:"inputs,omitempty"`
	Outputs   []Value           `json:"outputs,omitempty"`
}

// PTERun asks the driver to load Program (with the .ptd Data, if any) and
// run every method Iterations times on fixed inputs.
type PTERun struct {
	Name       string `json:"name"`
	Program    string `json:"program"`
	Data       string `json:"data,omitempty"`
	Iterations int    `json:"iterations,omitempty"`
}

// Ran reports the names of the methods that produced outputs.
func (r Run) Ran() []string {
	var n []string
	for name, m := range r.Methods {
		if m.Error == "" && len(m.Outputs) > 0 {
			n = append(n, name)
		}
	}
	sort.Strings(n)
	return n
}

// Compare lists every difference between two runs of the same model: load
// errors, the set of methods, each method's metadata, inputs, errors and the
// bytes of every output of every call. An empty list means the runtime saw
// the two files as the same program.
func Compare(want, got Run) []string {
	var d []string
	if want.LoadError != got.LoadError {
		d = append(d, fmt.Sprintf("load error: %q, want %q", got.LoadError, want.LoadError))
	}
	if want.Error != got.Error {
		d = append(d, fmt.Sprintf("error: %q, want %q", got.Error, want.Error))
	}
	if !reflect.DeepEqual(want.Inputs, got.Inputs) || !reflect.DeepEqual(want.Outputs, got.Outputs) {
		d = append(d, fmt.Sprintf("outputs %+v, want %+v", got.Outputs, want.Outputs))
	}
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
		case !reflect.DeepEqual(w.Inputs, g.Inputs):
			d = append(d, fmt.Sprintf("method %s: inputs differ", n))
		case !reflect.DeepEqual(w.Outputs, g.Outputs):
			d = append(d, fmt.Sprintf("method %s: outputs %+v, want %+v", n, g.Outputs, w.Outputs))
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
