package pte_test

import (
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/hostile"
	"github.com/edgeload/edgeload/loader/pte"
)

// TestSweep opens every truncation of the small real and generated
// programs (of the large one: truncations inside the header and FlatBuffer
// region, and a sample past it) and every single-byte mutation (0x00,
// 0xFF, low bit flipped) of their header and FlatBuffer region
// (sampled for regions over hostile.MaxRegionOffsets bytes). Each must give
// a Program that passes hostile.PTE (every accessor and view) or a pte
// *FormatError; no panic, no case over hostile.Timeout, no allocation over
// hostile.AllocFactor × size; and every case must agree with a full
// generic verification (pte.CheckFastPath). The values are read on three
// goroutines, however small the plan. Under qemu or -short it samples every 7th
// offset.
func TestSweep(t *testing.T) {
	gen, err := hostile.GeneratedPTE()
	if err != nil {
		t.Fatal(err)
	}
	hostile.Sweep(t, hostile.Target{Format: "pte", Open: func(b []byte) (func() error, error) {
		// Every case on three workers (however small its plan), so that
		// the parallel reading meets every bound too; that it matches the
		// in-order reading is TestParallelMutationsSameAsInOrder's and
		// FuzzOpen's to check.
		p, err := pte.NewBytes(b, pte.WithWorkers(3), pte.WithPerWorker(1))
		if cerr := pte.CheckFastPath(b, err); cerr != nil {
			t.Errorf("fast path: %v", cerr)
		}
		if err != nil {
			return nil, err
		}
		return func() error {
			defer p.Close()
			return hostile.PTE(p)
		}, nil
	}}, hostile.SweepFiles(t, "pte", gen)...)
}
