package repack_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/repack"
)

// tiny is a small program of the committed fixtures.
const tiny = "../testdata/tiny.pte"

// listDir returns the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestBadInput(t *testing.T) {
	src, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	truncated := write("truncated.pte", src[:len(src)-10])
	unknown := write("unknown.bin", []byte("this is not a model file at all, nor RTen V1 either....."))
	good := write("good.pte", src)
	link := filepath.Join(dir, "link.pte")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.pte")
	if err := os.Link(good, hard); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)

	for _, tc := range []struct {
		name    string
		in, out string
		opts    repack.Options
		is      error
	}{
		{"truncated", truncated, filepath.Join(dir, "out1.pte"), repack.Options{}, loader.ErrTruncated},
		{"unknown format", unknown, filepath.Join(dir, "out2.pte"), repack.Options{}, loader.ErrUnknownFormat},
		{"missing directory", good, filepath.Join(dir, "no-such-dir", "out.pte"), repack.Options{}, os.ErrNotExist},
		{"ptd written, out in a missing directory", good, filepath.Join(dir, "no-such-dir", "out.pte"), repack.Options{Externalize: filepath.Join(dir, "w.ptd")}, os.ErrNotExist},
		{"out is in", good, good, repack.Options{}, repack.ErrSameFile},
		{"out is a symlink to in", good, link, repack.Options{}, repack.ErrSameFile},
		{"out is a hard link to in", good, hard, repack.Options{}, repack.ErrSameFile},
		{"externalize to in", good, filepath.Join(dir, "out3.pte"), repack.Options{Externalize: link}, repack.ErrSameFile},
		{"externalize of a ptd", "../testdata/tiny.ptd", filepath.Join(dir, "out4.ptd"), repack.Options{Externalize: filepath.Join(dir, "x.ptd")}, nil},
		{"bad align", good, filepath.Join(dir, "out5.pte"), repack.Options{Align: 3000}, nil},
		{"align too large", good, filepath.Join(dir, "out6.pte"), repack.Options{Align: 128 << 10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := repack.Repack(tc.in, tc.out, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
			if got := listDir(t, dir); !slices.Equal(got, before) {
				t.Errorf("files left behind: %v, want %v", got, before)
			}
		})
	}
	if got, _ := os.ReadFile(good); !slices.Equal(got, src) {
		t.Error("the input changed")
	}
}
