package platform

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// A mapping of largeMap bytes or more goes where mapHint asks, on a
// placeAlign boundary at least placeGap below the probe; a second one while
// the first is mapped goes where the kernel puts it; smaller ones get no
// hint. The file is sparse: nothing is read.
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
	top := probe()
	if top == 0 {
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
	if at := of(first); at != h || at%placeAlign != 0 || at+size > top-placeGap {
		t.Fatalf("mapped at %#x, hint %#x, probe %#x: want the hint, on a %#x boundary, %#x below the probe", at, h, top, placeAlign, placeGap)
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
