package npy_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/format/formattest"
	"github.com/edgeload/edgeload/loader/npy"
	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/repack"
)

// expected is testdata/expected.json: what NumPy's reader says of each
// file make.py wrote with np.save.
type expected struct {
	Version string  `json:"version"`
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offset  int64   `json:"offset"`
	NBytes  int64   `json:"nbytes"`
	SHA256  string  `json:"sha256"`
	Refused string  `json:"refused"`
}

func loadExpected(t *testing.T) map[string]expected {
	t.Helper()
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp map[string]expected
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

func open(t *testing.T, path string) (*npy.File, error) {
	t.Helper()
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	return npy.NewFile(mf)
}

// TestReal opens every file np.save wrote and compares it with NumPy's
// reader; the arrays this package does not read are refused, saying why.
func TestReal(t *testing.T) {
	for name, e := range loadExpected(t) {
		f, err := open(t, filepath.Join("testdata", name))
		if e.Refused != "" {
			if !errors.Is(err, format.ErrUnsupportedVersion) || !strings.Contains(err.Error(), e.Refused) {
				t.Errorf("%s: %v; want an ErrUnsupportedVersion saying %q", name, err, e.Refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		tn := f.TensorAt(0)
		major, minor := f.Version()
		if tn.DType.String() != e.DType || !slices.Equal(tn.Shape, e.Shape) || tn.Offset != e.Offset || tn.NBytes != e.NBytes ||
			fmt.Sprintf("%d.%d", major, minor) != e.Version {
			t.Errorf("%s: %v %v at %d, %d bytes, version %d.%d; want %s %v at %d, %d bytes, version %s",
				name, tn.DType, tn.Shape, tn.Offset, tn.NBytes, major, minor, e.DType, e.Shape, e.Offset, e.NBytes, e.Version)
		}
		if sum, err := tn.Data.SHA256(); err != nil || hex.EncodeToString(sum[:]) != e.SHA256 {
			t.Errorf("%s: SHA-256 %x (%v), want %s", name, sum, err, e.SHA256)
		}
		if s := f.Segments(); len(s) != 1 || s[0].Offset() != e.Offset || s[0].Len() != e.NBytes {
			t.Errorf("%s: segments %v", name, s)
		}
		if i, ok := f.Lookup(npy.TensorName); !ok || i != 0 {
			t.Errorf("%s: Lookup(%q) = %d, %v", name, npy.TensorName, i, ok)
		}
	}
}

// TestContract runs the conformance kit on every file that opens.
func TestContract(t *testing.T) {
	for name, e := range loadExpected(t) {
		if e.Refused == "" {
			if err := formattest.TestFile(filepath.Join("testdata", name)); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestRepack realigns files with package repack, which knows nothing of
// .npy, and checks the copy holds the same array (repack.Check), its data
// on the boundary, and loads in NumPy to the same bytes. An alignment
// whose header np.load would refuse is refused.
func TestRepack(t *testing.T) {
	exp := loadExpected(t)
	dir := t.TempDir()
	var outs []string
	for _, name := range []string{"f32.npy", "f32-v3.npy", "i64-empty.npy", "f64-scalar.npy"} {
		in, out := filepath.Join("testdata", name), filepath.Join(dir, name)
		if _, err := repack.Repack(in, out, repack.Options{Align: 16 << 10}); err == nil || !strings.Contains(err.Error(), "np.load reads by default") {
			t.Errorf("%s: repack to 16 KiB: %v, want a refusal", name, err)
		}
		if _, err := repack.Repack(in, out, repack.Options{Align: 8 << 10}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff, err := repack.Check(in, out); err != nil || len(diff) != 0 {
			t.Errorf("%s: repacked, %v differ (%v)", name, diff, err)
		}
		f, err := open(t, out)
		if err != nil {
			t.Fatalf("%s repacked: %v", name, err)
		}
		if off := f.TensorAt(0).Offset; off%(8<<10) != 0 {
			t.Errorf("%s repacked: data at %d", name, off)
		}
		outs = append(outs, out)
	}
	if err := exec.Command("python3", "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with numpy is required under CI=true: %v", err)
		}
		t.Skipf("python3 with numpy not available: %v", err)
	}
	script := `import hashlib, sys, numpy as np
for p in sys.argv[1:]:
    a = np.load(p)
    print(a.dtype.name, list(a.shape), hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())`
	got, err := exec.Command("python3", append([]string{"-c", script}, outs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("np.load of the repacked files: %v\n%s", err, got)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(got)), "\n") {
		e := exp[filepath.Base(outs[i])]
		if want := fmt.Sprintf("%s %v %s", e.DType, strings.ReplaceAll(fmt.Sprint(e.Shape), " ", ", "), e.SHA256); line != want {
			t.Errorf("%s repacked: NumPy reads %s, want %s", filepath.Base(outs[i]), line, want)
		}
	}
}

// TestMalformed: changes to a valid file give the error that says what is
// wrong, with its sentinel.
func TestMalformed(t *testing.T) {
	good, err := os.ReadFile("testdata/f32.npy")
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(slices.Clone(good)) }
	for _, c := range []struct {
		name     string
		b        []byte
		sentinel error
		msg      string
	}{
		{"a byte after the data", append(slices.Clone(good), 0), format.ErrMalformed, "1 bytes follow the array's 48"},
		{"the last byte cut", good[:len(good)-1], format.ErrTruncated, "needs 48 bytes, and 47 follow"},
		{"version 4.0", edit(func(b []byte) []byte { b[6] = 4; return b }), format.ErrUnsupportedVersion, "version 4.0"},
		{"header past the end", edit(func(b []byte) []byte { b[9] = 1; return b }), format.ErrTruncated, "runs past the end"},
		{"a shape too large", edit(func(b []byte) []byte { return []byte(strings.Replace(string(b), "(3, 4)", "(3, 9)", 1)) }), format.ErrTruncated, "needs 108 bytes"},
		{"no magic", edit(func(b []byte) []byte { b[1] = 'n'; return b }), format.ErrMalformed, "magic"},
		{"a short file", good[:9], format.ErrTruncated, "10-byte preamble"},
	} {
		_, err := npy.NewFile(mmapfile.NewBytes(c.b))
		var fe *format.FormatError
		if !errors.As(err, &fe) || fe.Format != "npy" || !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v; want a FormatError wrapping %v saying %q", c.name, err, c.sentinel, c.msg)
		}
	}
}
