package loader_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ggufcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/internal/testkit/loadercheck"
	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/loader/bundle"
	"github.com/edgeload/edgeload/mmapfile"
)

// fuzzSeeds returns every real file of every format (read from
// ../shared/models at test time, when it is there), the committed fixtures
// of testdata/ and the writer-made files of internal/testkit/hostile.
func fuzzSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, sub := range append(testmodels.Formats, "litertlm") {
		out = append(out, hostile.RealSeeds(sub)...)
	}
	paths, _ := filepath.Glob(filepath.Join(testmodels.Root(), "testdata", "*"))
	for _, p := range paths {
		if !testmodels.IsModel(p) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, b)
		}
	}
	for _, gen := range []func() ([]hostile.Seed, error){ptecheck.Generated, ptdcheck.Generated, rtencheck.Generated} {
		seeds, err := gen()
		if err != nil {
			tb.Fatal(err)
		}
		for _, s := range seeds {
			out = append(out, s.Data)
		}
	}
	for _, s := range ggufcheck.Generated() {
		out = append(out, s.Data)
	}
	return out
}

// FuzzOpen opens arbitrary bytes with format sniffing. It must never
// panic; an error wraps a sentinel and names the format (or, for bytes of
// no format, the formats tried); when Open succeeds the sniffed format is
// the one opened, every accessor and view of the model and of its format's
// own value works (loadercheck.Model), every use order lists each tensor once,
// Verify (which re-checks every range and reads every byte) accepts it,
// and the copying ReaderAt form agrees.
func FuzzOpen(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := loader.New(mmapfile.NewBytes(data))
		if err != nil {
			if m != nil {
				t.Fatal("non-nil model with an error")
			}
			want := ""
			if s := loader.Sniff(data); s != loader.Unknown && s != "bpte" {
				want = s.String() // a bundle's errors may be its program's (pte)
			}
			if bad := hostile.CheckError(want, err); bad != nil {
				t.Fatal(bad)
			}
			return
		}
		defer m.Close()
		size := int64(len(data))
		switch s := loader.Sniff(data); {
		case s == loader.Unknown && m.Format() != "rten":
			t.Fatalf("unknown bytes opened as %s", m.Format())
		case s == "bpte":
			if _, ok := loader.As[*bundle.Program](m); m.Format() != "bpte" || !ok {
				t.Fatalf("a bundled program opened as %s (a %T)", m.Format(), m.Impl())
			}
			_, size = as[*bundle.Program](m).Bundle.ProgramSection()
		case s != loader.Unknown && s != m.Format():
			t.Fatalf("sniffed %s, opened as %s", s, m.Format())
		}
		if m.Size() != size {
			t.Fatalf("size %d, want %d", m.Size(), size)
		}
		if err := loadercheck.Model(m); err != nil {
			t.Fatal(err)
		}
		if err := checkUseOrder(m); err != nil {
			t.Fatal(err)
		}
		if len(data) > 256<<10 {
			return // the copies of a multi-megabyte real file would slow the campaign tenfold
		}
		r, err := loader.New(mmapfile.NewReaderAt(bytes.NewReader(data), int64(len(data))))
		if err != nil {
			t.Fatalf("NewBytes accepted what NewReaderAt refused: %v", err)
		}
		defer r.Close()
		if r.Format() != m.Format() || len(r.Tensors()) != len(m.Tensors()) || len(r.Segments()) != len(m.Segments()) {
			t.Fatal("NewReaderAt and NewBytes disagree")
		}
		if err := loadercheck.Model(r); err != nil {
			t.Fatalf("NewReaderAt: %v", err)
		}
	})
}
