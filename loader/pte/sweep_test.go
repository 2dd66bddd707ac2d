package pte_test

import (
	"testing"

	"github.com/edgeload/edgeload/mmapfile"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/internal/testkit/hostile/ptecheck"
	"github.com/edgeload/edgeload/loader/pte"
)

// TestSweep opens every truncation of the small real and generated
// programs (of the large one: truncations inside the header and FlatBuffer
// region, and a sample past it) and every single-byte mutation (0x00,
// 0xFF, low bit flipped) of their header and FlatBuffer region
// (sampled for regions over hostile.MaxRegionOffsets bytes). Each must give
// a Program that passes ptecheck.Program (every accessor and view) or a pte
// *FormatError; no panic, no case over hostile.Timeout, no allocation over
// hostile.AllocFactor × size; and a case that opens and checks its
// methods must pass a full verification (pte.CheckVerified). Under qemu or
// -short it samples every 7th offset.
func TestSweep(t *testing.T) {
	gen, err := ptecheck.Generated()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Sweep(t, hostile.Target{Format: "pte", Open: func(b []byte) (func() error, error) {
		p, err := pte.NewFile(mmapfile.NewBytes(b))
		if cerr := pte.CheckVerified(b, p, err); cerr != nil {
			t.Error(cerr)
		}
		if err != nil {
			return nil, err
		}
		return func() error {
			defer p.Close()
			return ptecheck.Program(p)
		}, nil
	}}, hostile.SweepFiles(t, "pte", gen, ptecheck.RegionEnd)...)
}
