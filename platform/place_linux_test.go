package platform

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
)

// A mapping of largeMap bytes or more goes where mapHint asks, on a
// placeAlign boundary below the probed range; a second one while the first
// is mapped goes where the kernel puts it; smaller ones get no hint. The
// file is sparse: nothing is read. Under qemu-user, whose own allocator
// places the guest's mappings (and may not take a hint the kernel would),
// only that both mappings work is checked.
func TestMapPlacement(t *testing.T) {
	if mapHint(largeMap-PageSize()) != nil {
		t.Fatal("a mapping smaller than largeMap got a hint")
	}
	if unsafe.Sizeof(uintptr(0)) < 8 {
		if mapHint(largeMap) != nil {
			t.Fatal("a hint with 32-bit addresses")
		}
		return
	}
	below := probe()
	if below == 0 {
		t.Fatal("the probe mapping failed")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "large"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = largeMap + largeMap/2
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	of := func(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
	first, err := Map(f, 0, size)
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(first)
	h := uintptr(mapHint(size))
	if emu := memstat.Emulator(); emu != "" {
		t.Logf("under %s: mapped at %#x, hint %#x (not checked)", emu, of(first), h)
	} else if at := of(first); at != h || at%placeAlign != 0 || at+size > below {
		t.Fatalf("mapped at %#x, hint %#x, probed range from %#x: want the hint, on a %#x boundary, below that range", at, h, below, uint64(placeAlign))
	}
	second, err := Map(f, 0, size)
	if err != nil {
		t.Fatalf("a second mapping while the first is mapped: %v", err)
	}
	defer Unmap(second)
	if of(second) == of(first) {
		t.Fatal("two mappings at one address")
	}
}

// BenchmarkMapUnmap maps and unmaps a sparse file, touching nothing:
//
//	place=kernel: where the kernel puts it (mmap without a hint), next to
//	              whatever this test binary mapped last;
//	place=shared: half-way into a 1 GiB region, with a touched page of
//	              another mapping a little above it, in the same region
//	              (the case Map avoids: a page table shared with a
//	              neighbour);
//	place=Map:    where Map puts it (from 1 GiB up, away from other
//	              mappings: place_linux.go).
func BenchmarkMapUnmap(b *testing.B) {
	for _, size := range []int64{64 << 20, 1 << 30, 4 << 30} {
		if unsafe.Sizeof(uintptr(0)) < 8 && size >= 1<<30 {
			continue
		}
		f, err := os.Create(filepath.Join(b.TempDir(), "sparse"))
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			b.Fatal(err)
		}
		loop := func(b *testing.B, hint uintptr) {
			for b.Loop() {
				p, err := unix.MmapPtr(int(f.Fd()), 0, address(hint), uintptr(size), unix.PROT_READ, unix.MAP_SHARED)
				if err != nil {
					b.Fatal(err)
				}
				if hint != 0 && uintptr(p) != hint {
					b.Fatalf("mapped at %#x, not at the hint %#x", uintptr(p), hint)
				}
				if err := unix.MunmapPtr(p, uintptr(size)); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Run(fmt.Sprintf("size=%dM/place=kernel", size>>20), func(b *testing.B) { loop(b, 0) })
		b.Run(fmt.Sprintf("size=%dM/place=shared", size>>20), func(b *testing.B) {
			below := probe()
			if below == 0 {
				b.Skip("no probe address (32-bit)")
			}
			// 4 MiB above the mapping's end, in the same 1 GiB region
			// (not right above it: a kernel that aligns file mappings
			// for huge pages takes a hint only if 2 MiB more is free).
			at := (below-uintptr(size)-2*placeAlign)&^(placeAlign-1) + placeAlign/2
			nb := at + uintptr(size) + 4<<20
			p, err := unix.MmapPtr(-1, 0, address(nb), uintptr(PageSize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE)
			if err != nil {
				b.Fatalf("the neighbour at %#x: %v", nb, err)
			}
			defer unix.MunmapPtr(p, uintptr(PageSize()))
			if uintptr(p) != nb {
				b.Fatalf("the neighbour went to %#x, not %#x (a kernel without MAP_FIXED_NOREPLACE)", uintptr(p), nb)
			}
			*(*byte)(p) = 1
			loop(b, at)
		})
		b.Run(fmt.Sprintf("size=%dM/place=Map", size>>20), func(b *testing.B) {
			for b.Loop() {
				m, err := Map(f, 0, int(size))
				if err != nil {
					b.Fatal(err)
				}
				if err := Unmap(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		f.Close()
	}
}
