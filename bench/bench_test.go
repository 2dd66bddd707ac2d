package bench_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/edgeload/edgeload/bench"
)

// TestPages checks the page arithmetic of TouchPages on views placed at
// known offsets from a page boundary.
func TestPages(t *testing.T) {
	const ps = 4096
	buf := make([]byte, 4*ps)
	// Offset of the first page boundary inside buf.
	base := int((ps - uintptr(unsafe.Pointer(&buf[0]))%ps) % ps)
	cases := []struct {
		off, n, want int
	}{
		{0, 1, 1},
		{0, ps, 1},
		{0, ps + 1, 2},
		{ps - 1, 2, 2},
		{ps - 100, ps, 2},
		{10, 2 * ps, 3},
		{0, 0, 0},
	}
	for _, c := range cases {
		v := buf[base+c.off : base+c.off+c.n]
		if got := bench.Pages([][]byte{v}, ps); got != c.want {
			t.Errorf("Pages(off %d, len %d) = %d, want %d", c.off, c.n, got, c.want)
		}
		bench.TouchPages([][]byte{v}, ps) // must not read out of range
	}
}

// TestLoadersAgree writes small versions of the benchmark files and checks
// that every loader, through loader.Open and through the format packages,
// sees the same tensors with the same bytes as the writer wrote, and that
// lookup by name finds them.
func TestLoadersAgree(t *testing.T) {
	dir := t.TempDir()
	files := &bench.Files{Dir: dir}
	specs := []bench.Spec{
		{Name: "p", Kind: bench.KindPTE, Tensors: 5, Dims: []int32{8, 24}, Real: true},
		{Name: "d", Kind: bench.KindPTD, Tensors: 3, Dims: []int32{16}, Real: true},
		{Name: "x", Kind: bench.KindPTEExternal, Tensors: 4, Dims: []int32{4, 4}, Real: true},
		{Name: "r", Kind: bench.KindRTen, Tensors: 3, Dims: []int32{2, 3, 4}, Real: true},
		{Name: "t", Kind: bench.KindTFLite, Tensors: 4, Dims: []int32{3, 8}, Real: true},
		{Name: "te", Kind: bench.KindTFLiteExternal, Tensors: 4, Dims: []int32{3, 8}, Real: true},
	}
	for _, s := range specs {
		path, data, err := files.Path(s)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		var ref [][]byte
		opens := []func(string, bench.Mode, string) (*bench.Model, error){bench.Open, bench.OpenPkg}
		if s.Ext() == ".tflite" {
			opens = opens[:1] // OpenPkg reads .pte, .ptd and .rten
		}
		for _, open := range opens {
			for _, mode := range bench.Modes {
				m, err := open(path, mode, data)
				if err != nil {
					t.Fatalf("%s %s: %v", s.Name, mode, err)
				}
				v, err := m.Views(nil)
				if err != nil {
					t.Fatalf("%s %s: views: %v", s.Name, mode, err)
				}
				if len(v) != s.Tensors || m.NumTensors() != s.Tensors {
					t.Fatalf("%s %s: %d views, %d tensors, want %d", s.Name, mode, len(v), m.NumTensors(), s.Tensors)
				}
				for i := range v {
					if int64(len(v[i])) != s.TensorBytes() || bytes.Count(v[i], []byte{0}) == len(v[i]) {
						t.Fatalf("%s %s: tensor %d: %d bytes, all zero: want %d real bytes", s.Name, mode, i, len(v[i]), s.TensorBytes())
					}
				}
				if ref == nil {
					ref = make([][]byte, len(v))
					for i := range v {
						ref[i] = bytes.Clone(v[i])
					}
				}
				for i, name := range m.Names() {
					if !bytes.Equal(v[i], ref[i]) {
						t.Errorf("%s %s: tensor %d differs from the first loader's", s.Name, mode, i)
					}
					seg, ok := m.Tensor(name)
					if b, err := seg.Bytes(); !ok || err != nil || !bytes.Equal(b, ref[i]) {
						t.Errorf("%s %s: Tensor(%q) = %v, %v: not tensor %d", s.Name, mode, name, ok, err, i)
					}
				}
				if err := m.Release(); err != nil {
					t.Errorf("%s %s: release: %v", s.Name, mode, err)
				}
				if err := m.Close(); err != nil {
					t.Errorf("%s %s: close: %v", s.Name, mode, err)
				}
			}
		}
		if err := bench.Floor(path); err != nil {
			t.Errorf("%s: floor: %v", s.Name, err)
		}
	}
	// A second Path reuses the file.
	st0, _ := os.Stat(filepath.Join(dir, "p.pte"))
	if _, _, err := files.Path(specs[0]); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(filepath.Join(dir, "p.pte"))
	if st0 == nil || st1 == nil || !st0.ModTime().Equal(st1.ModTime()) {
		t.Errorf("Path wrote the file again")
	}
}

// TestReadSmaps checks that the smaps reader finds a whole-file mapping of
// a model, once, and sees the pages touched.
func TestReadSmaps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/smaps is Linux's")
	}
	files := &bench.Files{Dir: t.TempDir()}
	s := bench.Spec{Name: "p", Kind: bench.KindPTE, Tensors: 4, Dims: []int32{64, 64}, Real: true}
	path, _, err := files.Path(s)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bench.Open(path, bench.ModeWhole, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	v, err := m.Views(nil)
	if err != nil {
		t.Fatal(err)
	}
	bench.TouchPages(v, 0)
	ms, err := bench.ReadSmaps(0, path)
	if err != nil {
		t.Skip("no smaps here: ", err)
	}
	if ms[0].Maps != 1 || ms[0].Size < s.DataBytes() {
		t.Errorf("smaps: %+v, want 1 mapping of at least %d bytes", ms[0], s.DataBytes())
	}
	if ms[0].Rss == 0 {
		// qemu-user shows its own view of the guest's mappings; the count
		// above is what matters there.
		t.Logf("smaps shows no resident pages of the touched mapping: %+v", ms[0])
	}
}
