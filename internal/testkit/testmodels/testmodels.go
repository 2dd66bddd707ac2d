// Package testmodels gives tests the real model files in ../shared/models
// (next to the repository, never copied into it) and the values an
// independent reader computed for them (../shared/models/expected).
//
// Where the folder is absent (a user's machine), Dir skips the test with a
// message; under CI=true its absence fails the test instead.
package testmodels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Expected is the JSON an independent reader wrote for one model, in the
// shape of `edgeload inspect --json`.
type Expected struct {
	Format    string    `json:"format"`
	Legacy    bool      `json:"legacy"`
	FileSize  int64     `json:"file_size"`
	Segments  []Segment `json:"segments"`
	NamedData []Named   `json:"named_data"`
	Tensors   []Tensor  `json:"tensors"`
	ExitCode  int       `json:"expect_exit"`
	Error     string    `json:"oracle_error"`
}

// Segment is one entry of Expected.Segments.
type Segment struct {
	Index  int   `json:"index"`
	Offset int64 `json:"offset"`
	Size   int64 `json:"size"`
}

// Named is one entry of Expected.NamedData.
type Named struct {
	Key     string `json:"key"`
	Segment int    `json:"segment"`
	Offset  int64  `json:"offset"`
	Size    int64  `json:"size"`
}

// Tensor is one entry of Expected.Tensors. Offset is nil for an unresolved
// external tensor.
type Tensor struct {
	Name         string  `json:"name"`
	DType        string  `json:"dtype"`
	Shape        []int64 `json:"shape"`
	Location     string  `json:"location"`
	Offset       *int64  `json:"offset"`
	NBytes       int64   `json:"nbytes"`
	NameExplicit bool    `json:"name_explicit"`
	SHA256       string  `json:"sha256"`
}

// Root returns the repository root (the folder holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// Dir returns ../shared/models, skipping the test (or, under CI=true,
// failing it) when the folder is not there.
func Dir(tb testing.TB) string {
	tb.Helper()
	d := filepath.Join(Root(), "..", "shared", "models")
	if _, err := os.Stat(filepath.Join(d, "expected")); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("real models missing at %s (CI=true requires them): %v", d, err)
		}
		tb.Skipf("real models not found at %s: skipping (they live beside the repository, in ../shared/models)", d)
	}
	return d
}

// Files returns the paths of the real files in subfolder sub ("pte", "ptd"
// or "rten"), sorted.
func Files(tb testing.TB, sub string) []string {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(Dir(tb), sub, "*"))
	if err != nil || len(m) == 0 {
		tb.Fatalf("no model files in %s/%s: %v", Dir(tb), sub, err)
	}
	sort.Strings(m)
	return m
}

// Opening returns the real files of subfolder sub that open (see All),
// sorted.
func Opening(tb testing.TB, sub string) []string {
	tb.Helper()
	var out []string
	for _, p := range Files(tb, sub) {
		if strings.HasSuffix(p, ".bpte") || Load(tb, p).ExitCode == 0 {
			out = append(out, p)
		}
	}
	return out
}

// Formats are the folders of ../shared/models whose files All and Refused
// list.
var Formats = []string{"pte", "ptd", "rten", "gguf", "safetensors", "tflite"}

// All returns every real model file that opens: those the independent
// reader reads (expected exit 0), and the bundled programs, which it
// refuses and edgeload opens as the program they embed.
func All(tb testing.TB) []string {
	tb.Helper()
	var all []string
	for _, p := range every(tb) {
		if strings.HasSuffix(p, ".bpte") || Load(tb, p).ExitCode == 0 {
			all = append(all, p)
		}
	}
	return all
}

// Refused returns every real model file that must be refused (expected
// exit 1), bundled programs aside.
func Refused(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, p := range every(tb) {
		if !strings.HasSuffix(p, ".bpte") && Load(tb, p).ExitCode != 0 {
			out = append(out, p)
		}
	}
	return out
}

func every(tb testing.TB) []string {
	var all []string
	for _, sub := range Formats {
		all = append(all, Files(tb, sub)...)
	}
	return all
}

// Load returns the expected values for the model file at path.
func Load(tb testing.TB, path string) Expected {
	tb.Helper()
	name := filepath.Base(path)
	b, err := os.ReadFile(filepath.Join(Dir(tb), "expected", name+".json"))
	if err != nil {
		tb.Fatalf("expected values for %s: %v", name, err)
	}
	var e Expected
	if err := json.Unmarshal(b, &e); err != nil {
		tb.Fatalf("expected values for %s: %v", name, err)
	}
	return e
}

// Path returns the path of a named real file, e.g. Path(t, "pte/arduino-add.pte").
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	p := filepath.Join(Dir(tb), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("real model %s: %v", rel, err)
	}
	return p
}

// IsModel reports whether a file name looks like one of the model files.
func IsModel(name string) bool {
	for _, ext := range []string{".pte", ".ptd", ".rten", ".bpte", ".gguf", ".safetensors", ".tflite", ".litertlm"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
