package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// FuzzCommand runs inspect (text and JSON), verify and resident on
// arbitrary file contents. Whatever the bytes, the command exits 0 with
// clean output or 1 with exactly one "edgeload: " line on stderr, and
// never panics (run has no recover: a panic fails the target).
func FuzzCommand(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(testmodels.Root(), "testdata", "*"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Size() <= hostile.MaxFuzzSeed && testmodels.IsModel(p) {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	for _, sub := range []string{"pte", "ptd", "rten"} {
		for _, b := range hostile.RealSeeds(sub) {
			f.Add(b)
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := os.CreateTemp(dir, "in-*")
		if err != nil {
			t.Fatal(err)
		}
		path := tf.Name()
		defer os.Remove(path)
		if _, err := tf.Write(data); err != nil {
			t.Fatal(err)
		}
		tf.Close()
		for _, args := range [][]string{
			{"inspect", "--json", "--sha256", path},
			{"inspect", path},
			{"verify", path},
			{"resident", path},
		} {
			code, out, errOut := runCmd(args...)
			switch code {
			case 0:
				if errOut != "" {
					t.Fatalf("%v: exit 0 with stderr %q", args, errOut)
				}
				if args[1] == "--json" && !json.Valid([]byte(out)) {
					t.Fatalf("%v: invalid JSON", args)
				}
			case 1:
				if !strings.HasPrefix(errOut, "edgeload: ") || strings.Count(errOut, "\n") != 1 {
					t.Fatalf("%v: stderr %q", args, errOut)
				}
				if args[0] != "verify" && out != "" {
					t.Fatalf("%v: exit 1 with stdout %q", args, out)
				}
			default:
				t.Fatalf("%v: exit %d", args, code)
			}
		}
	})
}
