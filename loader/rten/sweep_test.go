package rten_test

import (
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/rtencheck"
	"github.com/edgeload/edgeload/loader/rten"
)

// TestSweep opens every truncation of the small real and generated RTen
// files (of the large ones: truncations inside the header and FlatBuffer
// region, and a sample past it) and every single-byte mutation (0x00,
// 0xFF, low bit flipped) of their header and FlatBuffer region
// (sampled for regions over hostile.MaxRegionOffsets bytes). Each must give
// a Model that passes rtencheck.Model (every accessor and view) or an rten
// *FormatError; no panic, no case over hostile.Timeout, no allocation over
// hostile.AllocFactor × size. Under qemu or -short it samples every 7th
// offset.
func TestSweep(t *testing.T) {
	gen, err := rtencheck.Generated()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Sweep(t, hostile.Target{Format: "rten", Open: func(b []byte) (func() error, error) {
		m, err := rten.NewFile(mmapfile.NewBytes(b))
		if err != nil {
			return nil, err
		}
		return func() error {
			defer m.Close()
			return rtencheck.Model(m)
		}, nil
	}}, hostile.SweepFiles(t, "rten", gen, rtencheck.RegionEnd)...)
}
