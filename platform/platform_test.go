package platform

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestPageSize(t *testing.T) {
	ps := PageSize()
	if ps <= 0 || ps&(ps-1) != 0 {
		t.Fatalf("PageSize() = %d, want a positive power of two", ps)
	}
	if ps != os.Getpagesize() {
		t.Fatalf("PageSize() = %d, os.Getpagesize() = %d", ps, os.Getpagesize())
	}
	t.Logf("page size %d, zero-copy %v", ps, ZeroCopy)
}

func TestAdviceString(t *testing.T) {
	for a, want := range map[Advice]string{
		AdviceNormal: "Normal", AdviceRandom: "Random", AdviceSequential: "Sequential",
		AdviceWillNeed: "WillNeed", AdviceDontNeed: "DontNeed", AdviceHugePage: "HugePage",
		AdvicePopulateRead: "PopulateRead", Advice(99): "Advice(99)",
	} {
		if got := a.String(); got != want {
			t.Errorf("Advice(%d).String() = %q, want %q", int(a), got, want)
		}
	}
}

// tempFile writes n bytes of a pattern to a new file and returns it open.
func tempFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>12)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, want
}

func TestMapRoundTrip(t *testing.T) {
	ps := PageSize()
	f, want := tempFile(t, 3*ps+123)
	for _, tc := range []struct {
		off    int64
		length int
	}{{0, len(want)}, {int64(ps), 2*ps + 123}, {int64(2 * ps), 5}, {0, 1}, {int64(3 * ps), 123}} {
		b, err := Map(f, tc.off, tc.length)
		if err != nil {
			t.Fatalf("Map(%d, %d): %v", tc.off, tc.length, err)
		}
		if len(b) != tc.length || cap(b) != tc.length {
			t.Fatalf("Map(%d, %d): len %d cap %d", tc.off, tc.length, len(b), cap(b))
		}
		if !bytes.Equal(b, want[tc.off:tc.off+int64(tc.length)]) {
			t.Fatalf("Map(%d, %d): contents differ", tc.off, tc.length)
		}
		if err := Unmap(b); err != nil {
			t.Fatalf("Unmap: %v", err)
		}
	}
	if b, err := Map(f, 0, 0); err != nil || b != nil {
		t.Fatalf("Map(0, 0) = %v, %v; want nil, nil", b, err)
	}
	if err := Unmap(nil); err != nil {
		t.Fatalf("Unmap(nil): %v", err)
	}
	if _, err := Map(f, -int64(ps), 1); err == nil {
		t.Fatal("Map with a negative offset succeeded")
	}
	if _, err := Map(f, 0, -1); err == nil {
		t.Fatal("Map with a negative length succeeded")
	}
	if ZeroCopy {
		if _, err := Map(f, 128, 1); !errors.Is(err, errUnaligned) {
			t.Fatalf("Map at an unaligned offset: %v, want errUnaligned", err)
		}
	}
}

func TestAdviceLockMincore(t *testing.T) {
	if !ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	ps := PageSize()
	const pages = 8
	f, want := tempFile(t, pages*ps)
	b, err := Map(f, 0, len(want))
	if err != nil {
		t.Fatal(err)
	}
	defer Unmap(b)
	for _, a := range []Advice{AdviceNormal, AdviceRandom, AdviceSequential, AdviceWillNeed, AdviceHugePage, AdvicePopulateRead, AdviceDontNeed} {
		if err := Madvise(b, a); err != nil {
			t.Errorf("Madvise(%v): %v", a, err)
		}
	}
	if err := Madvise(nil, AdviceWillNeed); err != nil {
		t.Errorf("Madvise(nil): %v", err)
	}
	if err := Madvise(b, Advice(1000)); err != nil {
		t.Errorf("Madvise(unknown advice) = %v, want a no-op", err)
	}
	// After PopulateRead every page must be resident.
	if err := Madvise(b, AdvicePopulateRead); err != nil {
		t.Fatal(err)
	}
	_ = b[len(b)-1] + b[0]
	vec := make([]byte, pages)
	if err := Mincore(b, vec); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Errorf("page %d not resident after PopulateRead and a read", i)
		}
	}
	if err := Mincore(b, vec[:pages-1]); err == nil {
		t.Error("Mincore with a short vector succeeded")
	}
	if err := Mincore(b[1:], vec); err == nil {
		t.Error("Mincore of an unaligned address succeeded")
	}
	if !bytes.Equal(b, want) {
		t.Fatal("contents changed after advice")
	}
	if err := Mlock(b[:ps]); err != nil {
		t.Logf("Mlock refused (allowed): %v", err)
	} else if err := Munlock(b[:ps]); err != nil {
		t.Errorf("Munlock: %v", err)
	}
	if err := FadviseDontNeed(f, 0, int64(len(want))); err != nil {
		t.Errorf("FadviseDontNeed: %v", err)
	}
	if !bytes.Equal(b, want) {
		t.Fatal("contents changed after DontNeed")
	}
}

func TestOpenFile(t *testing.T) {
	f, want := tempFile(t, 5000)
	g, size, regular, err := OpenFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if size != int64(len(want)) || !regular || g.Name() != f.Name() {
		t.Fatalf("OpenFile = size %d, regular %v, name %q; want %d, true, %q", size, regular, g.Name(), len(want), f.Name())
	}
	got := make([]byte, len(want))
	if _, err := g.ReadAt(got, 0); err != nil || string(got) != string(want) {
		t.Fatalf("ReadAt through the opened file: %v", err)
	}
	// As io.ReaderAt: a read across the end is short with io.EOF, one
	// past it reads nothing, a negative offset is an error.
	tail := make([]byte, 100)
	if n, err := g.ReadAt(tail, int64(len(want))-40); n != 40 || err != io.EOF || string(tail[:40]) != string(want[len(want)-40:]) {
		t.Fatalf("ReadAt across the end = %d, %v; want 40, EOF", n, err)
	}
	if n, err := g.ReadAt(tail, int64(len(want))+1); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt past the end = %d, %v; want 0, EOF", n, err)
	}
	if _, err := g.ReadAt(tail, -1); err == nil {
		t.Fatal("ReadAt at -1 succeeded")
	}
	if n, err := g.Size(); n != int64(len(want)) || err != nil {
		t.Fatalf("Size = %d, %v", n, err)
	}
	m, err := Map(g, 0, len(want))
	if err != nil || string(m) != string(want) {
		t.Fatalf("Map through the opened file: %v", err)
	}
	if err := Unmap(m); err != nil {
		t.Fatal(err)
	}
	if _, _, regular, err := OpenFile(t.TempDir()); err != nil || regular {
		t.Fatalf("a directory: regular %v, err %v; want false, nil", regular, err)
	}
	if _, _, _, err := OpenFile(f.Name() + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v, want ErrNotExist", err)
	}
}
