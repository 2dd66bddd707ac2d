package pte_test

import (
	"os"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader/format"
	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// TestRegistrationOpenAllocs: the format registration (loader.Open's way
// in) opens a program of the real files with one allocation, the Program,
// once the pools are warm.
func TestRegistrationOpenAllocs(t *testing.T) {
	data, err := os.ReadFile(testmodels.Path(t, "pte/stories260k-qnn.pte"))
	if err != nil {
		t.Fatal(err)
	}
	mf, cfg := mmapfile.NewBytes(data), &format.Config{Head: data[:4096], Name: "stories"}
	n := testing.AllocsPerRun(100, func() {
		m, err := pte.Format.Open(mf, cfg)
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
	})
	if n != 1 {
		t.Errorf("Open allocates %v times, want 1 (the Program)", n)
	}
}
