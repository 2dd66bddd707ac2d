package gguf_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
)

// seeds returns the real files of ../shared/models/gguf (none when the
// folder is absent, except under CI=true, where that fails), the
// generated files and the fixtures of testdata.
func seeds(tb testing.TB) []hostile.Seed {
	tb.Helper()
	var out []hostile.Seed
	dir := filepath.Join(testmodels.Root(), "..", "shared", "models", "gguf")
	if os.Getenv("CI") == "true" {
		testmodels.Dir(tb)
	}
	for _, d := range []string{dir, "testdata"} {
		m, _ := filepath.Glob(filepath.Join(d, "*.gguf"))
		sort.Strings(m)
		for _, p := range m {
			b, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, hostile.Seed{Name: filepath.Base(d) + "/" + filepath.Base(p), Data: b})
		}
	}
	return append(out, ggufcheck.Generated()...)
}

// maxFuzzSeed is the largest seed the fuzzing engine gets: minimising an
// input found from the 169 KB vocabulary fixture kept the worker busy for
// the whole run.
const maxFuzzSeed = 64 << 10

// FuzzOpen opens arbitrary bytes: a file that opens must pass every check
// of ggufcheck.File (views, metadata, use order, report, a rewrite that
// reads back the same); one that does not must give a gguf FormatError.
func FuzzOpen(f *testing.F) {
	for _, s := range seeds(f) {
		if hostile.Fuzzing() && len(s.Data) > maxFuzzSeed {
			continue
		}
		f.Add(s.Data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := open(b)
		if err != nil {
			if err := hostile.CheckError("gguf", err); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := ggufcheck.File(g); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSweep opens every truncation of the real, fixture and generated GGUF
// files and every single-byte mutation (0x00, 0xFF, low bit flipped) of
// their header region (up to the data section). Each must give a File
// that passes ggufcheck.File or a gguf *FormatError; no panic, no case
// over hostile.Timeout, no allocation over hostile.AllocFactor × size.
// Under qemu or -short it samples every 7th offset.
func TestSweep(t *testing.T) {
	hostile.Sweep(t, hostile.Target{Format: "gguf", Open: func(b []byte) (func() error, error) {
		f, err := open(b)
		if err != nil {
			return nil, err
		}
		return func() error {
			defer f.Close()
			return ggufcheck.File(f)
		}, nil
	}}, hostile.SweepFiles(t, "", seeds(t), ggufcheck.RegionEnd)...)
}
