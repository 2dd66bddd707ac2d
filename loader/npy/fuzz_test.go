package npy_test

import (
	"github.com/edgeload/edgeload/loader/format"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/npy"
	"github.com/edgeload/edgeload/mmapfile"
)

// FuzzOpen: any bytes give a File whose views lie in the file and read,
// or a *format.FormatError with a sentinel; never a panic.
func FuzzOpen(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.npy")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := npy.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			if cerr := hostile.CheckError("npy", err); cerr != nil {
				t.Fatal(cerr)
			}
			return
		}
		tn := file.TensorAt(0)
		if err := hostile.Tensor(tn); err != nil {
			t.Fatal(err)
		}
		if got, err := tn.Data.Bytes(); err != nil || int64(len(got)) != tn.NBytes || tn.Offset+tn.NBytes != int64(len(b)) {
			t.Fatalf("data [%d, +%d) of %d bytes: %v", tn.Offset, tn.NBytes, len(b), err)
		}
		if l, err := file.Relayout(format.RelayoutOptions{Align: 64}); err != nil || l.Pieces[0].Offset%64 != 0 {
			t.Fatalf("Relayout: %+v, %v", l, err)
		}
	})
}
