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
// touched. Mapping and unmapping an untouched 4 GiB file costs 8.7-10.0 µs
// with a neighbour's touched page in its last 1 GiB region and 5.0-5.8 µs
// on a 1 GiB boundary with the rest of that region free (BenchmarkMapUnmap;
// where the kernel puts it in the test binary: 5.8-6.5 µs). In loadbench's
// loads of a 4 GiB program the median of the Close phase (munmap, close)
// went from 5.1-9.6 to 3.7-6.1 µs (bench/results/2026-11-22-session15).
// Map therefore asks (a hint, not MAP_FIXED) for mappings of largeMap bytes
// or more to go there: on a placeAlign boundary, below a range of
// probeSize bytes the kernel found free for a probe mapping (too large for
// the holes between the mappings at the top of the address space, as a
// one-page probe is not, so below them all), which stays free above the
// mapping as its gap. The probe's address carries the kernel's
// address-space randomization, so the hint does too. Where the range has
// been taken since, the kernel ignores the hint and places the mapping as
// usual.
const (
	largeMap   = 1 << 30
	placeAlign = 1 << 30
	// probeSize is the gap: the mapping's last 1 GiB region stays free
	// above it even when mappings of up to 1 GiB are later put at the top
	// of the probed range. (Not larger: qemu-user keeps 6 MB of page
	// flags per GiB ever mapped, probes too, and they count in the RSS
	// that tests measure under it.)
	probeSize = 2 << 30
)

// probe returns the bottom of the range the kernel chose for a probeSize
// mapping, once per process (0: no hints, as with 32-bit addresses, or
// where the reservation fails, as under an address-space limit).
var probe = sync.OnceValue(func() uintptr {
	if unsafe.Sizeof(uintptr(0)) < 8 {
		return 0 // 32 bits: no room to spare, and no 1 GiB mappings
	}
	// PROT_NONE and MAP_NORESERVE: address space only, no memory, and
	// unmapped at once.
	p, err := unix.MmapPtr(-1, 0, nil, probeSize, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return 0
	}
	unix.MunmapPtr(p, probeSize)
	return uintptr(p)
})

// mapHint returns the address to ask for a mapping of length bytes, or nil
// for the kernel's choice.
func mapHint(length int) unsafe.Pointer {
	if length < largeMap {
		return nil
	}
	below := probe()
	if below < uintptr(length)+placeAlign { // (0 included)
		return nil
	}
	return address((below - uintptr(length)) &^ (placeAlign - 1))
}

// address returns a, an address outside Go's memory that the kernel takes
// as a number (and the garbage collector ignores), as the unsafe.Pointer
// x/sys/unix wants: reinterpreted, not converted, as vet wants for a
// uintptr that never was a Go pointer.
func address(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }
