package repack_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/repack"
)

// FuzzRepack repacks arbitrary bytes, seeded with the files of every
// format. Repack must never panic; when the input opens and verifies, the
// output must open, verify and hold the same tensors (names, dtypes,
// shapes, SHA-256), delegate blobs, named data and methods, also with its
// constants moved to a .ptd, and a failed repack leaves no file behind.
func FuzzRepack(f *testing.F) {
	var seeds [][]byte
	for _, sub := range []string{"pte", "ptd", "rten", "gguf", "safetensors", "tflite", "litertlm"} {
		seeds = append(seeds, hostile.RealSeeds(sub)...)
	}
	if b, err := os.ReadFile(filepath.Join(testmodels.Root(), "loader", "litertlm", "testdata", "builder.litertlm")); err == nil {
		seeds = append(seeds, b)
	}
	paths, _ := filepath.Glob(filepath.Join(testmodels.Root(), "testdata", "*"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && testmodels.IsModel(p) {
			seeds = append(seeds, b)
		}
	}
	for _, gen := range []func() ([]hostile.Seed, error){ptecheck.Generated, ptdcheck.Generated, rtencheck.Generated} {
		ss, err := gen()
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range ss {
			seeds = append(seeds, s.Data)
		}
	}
	for i, b := range seeds {
		if len(b) <= 1<<20 {
			f.Add(b, uint8(i%8), i%3 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, talign uint8, ext bool) {
		dir := t.TempDir()
		in := filepath.Join(dir, "in")
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := repack.Sums(in)
		if err != nil {
			// Repack must refuse what does not verify, and leave nothing.
			if _, err := repack.Repack(in, filepath.Join(dir, "out"), repack.Options{Align: 16}); err == nil {
				t.Fatal("Repack accepted a file that does not verify")
			}
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Fatalf("%d files left in the directory", len(es)-1)
			}
			return
		}
		for _, w := range want {
			// Linking the output to the new .ptd alone fails for an
			// external tensor of the input whose data was not given.
			ext = ext && w.SHA256 != ""
		}
		// Upgrade (ignored for anything but an RTen V1 model) on every
		// other seed: V1 is then rewritten as V2, or copied as it is.
		opts := repack.Options{Align: 16, TensorAlign: []int64{0, 16, 32, 64}[talign%4], Upgrade: talign&4 == 0}
		var data2 []string
		if ext {
			opts.Externalize = filepath.Join(dir, "out.ptd")
			data2 = []string{opts.Externalize}
		}
		out := filepath.Join(dir, "out")
		if _, err := repack.Repack(in, out, opts); err != nil {
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Fatalf("Repack failed (%v) and left %d files", err, len(es)-1)
			}
			// A valid file may still be refused (an RTen V1 model with a
			// field the rewrite does not know, an externalize of a
			// non-program, two constants under one name).
			return
		}
		got, err := repack.Sums(out, data2...)
		if err != nil {
			t.Fatalf("output does not verify: %v", err)
		}
		for _, d := range repack.Compare(want, got) {
			t.Errorf("%s", d)
		}
		checkBlobs(t, in, out)
	})
}
