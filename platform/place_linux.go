package platform

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Where large mappings go (Linux, 64-bit).
//
// The kernel puts a mapping just below the lowest mapping above it, so that
// a large mapping shares an upper-level page-table region (1 GiB with 4 KiB
// pages) with its neighbour. Unmapping it then walks that region's page
// table, up to 512 entries at each end, even when none of its own pages was
// touched. Mapping and unmapping an untouched 4 GiB file costs 6.9-7.9 µs
// where the kernel puts it in a test binary, 8.2-8.6 µs with a neighbour's
// touched page in its last 1 GiB region, and 4.6-5.2 µs on a 1 GiB boundary
// with the rest of its last region free (BenchmarkMapUnmap; the median of
// loadbench's Close phase went from 5.9-9.6 to 3.7 µs). Map therefore asks (a
// hint, not MAP_FIXED) for mappings of largeMap bytes or more to go there:
// below the address where the kernel put a probe mapping, by at least
// placeGap, on a placeAlign boundary. The probe's address carries the
// kernel's address-space randomization, so the hint does too. Where the
// range is taken the kernel ignores the hint and places the mapping as
// usual.
const (
	largeMap   = 1 << 30
	placeAlign = 1 << 30
	placeGap   = 1 << 30
)

// probe is where the kernel placed a one-page mapping, once per process
// (0: the probe failed or addresses are 32 bits: no hints).
var probe = sync.OnceValue(func() uintptr {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return 0 // 32 bits: no room to spare, and no 1 GiB mappings
	}
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(PageSize()), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return 0
	}
	unix.MunmapPtr(p, uintptr(PageSize()))
	return uintptr(p)
})

// mapHint returns the address to ask for a mapping of length bytes, or nil
// for the kernel's choice.
func mapHint(length int) unsafe.Pointer {
	if length < largeMap {
		return nil
	}
	top := probe()
	need := uint64(length) + placeGap + placeAlign
	if top == 0 || uint64(top) < need {
		return nil
	}
	h := (top - uintptr(length) - placeGap) &^ (placeAlign - 1)
	// An address outside Go's memory, which the kernel takes as a number
	// (and the garbage collector ignores): reinterpreted, not converted,
	// as vet wants for a uintptr that never was a Go pointer.
	return *(*unsafe.Pointer)(unsafe.Pointer(&h))
}
