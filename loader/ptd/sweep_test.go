package ptd_test

import (
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptdcheck"
	"github.com/edgeload/edgeload/loader/ptd"
)

// TestSweep opens every truncation of the real and generated .ptd files and
// every single-byte mutation (0x00, 0xFF, low bit flipped) of
// their header and FlatBuffer region. Each must give a File that passes
// ptdcheck.File (every accessor and view) or a ptd *FormatError; no panic,
// no case over hostile.Timeout, no allocation over hostile.AllocFactor ×
// size. Under qemu or -short it samples every 7th offset.
func TestSweep(t *testing.T) {
	gen, err := ptdcheck.Generated()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Sweep(t, hostile.Target{Format: "ptd", Open: func(b []byte) (func() error, error) {
		f, err := ptd.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			return nil, err
		}
		return func() error {
			defer f.Close()
			return ptdcheck.File(f)
		}, nil
	}}, hostile.SweepFiles(t, "ptd", gen, ptdcheck.RegionEnd)...)
}
