package mmapfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/platform"
)

// pattern returns n bytes that differ from page to page and byte to byte.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + i>>10)
	}
	return b
}

// writeFile writes b to a new file and returns its path and os.ReadFile of it.
func writeFile(t testing.TB, b []byte) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, want
}

// sparseFile creates a file of the given size that is a hole except for its
// last page, which holds tail; it writes only len(tail) bytes.
func sparseFile(t testing.TB, size int64, tail []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sparse.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(tail, size-int64(len(tail))); err != nil {
		t.Fatal(err)
	}
	return path
}

// opener opens a file of the given contents in one configuration.
type opener struct {
	name string
	open func(t *testing.T, path string, want []byte) *File
}

func openers() []opener {
	ps := platform.PageSize()
	withOpts := func(opts ...Option) func(t *testing.T, path string, _ []byte) *File {
		return func(t *testing.T, path string, _ []byte) *File {
			f, err := Open(path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	os := []opener{
		{"auto", withOpts()},
		{"whole", withOpts(WithMode(ModeWhole))},
		{"windowed", withOpts(WithMode(ModeWindowed))},
		{"auto-budget0", withOpts(WithBudget(0))},
		{"memory", withOpts(WithMode(ModeMemory))},
		{"copy", withOpts(WithMode(ModeCopy))},
		{"bytes", func(_ *testing.T, _ string, want []byte) *File { return NewBytes(bytes.Clone(want)) }},
		{"readerat", func(_ *testing.T, _ string, want []byte) *File {
			return NewReaderAt(bytes.NewReader(want), int64(len(want)))
		}},
	}
	for _, big := range []int{16 << 10, 64 << 10} {
		if big%ps == 0 && big != ps {
			os = append(os,
				opener{fmt.Sprintf("whole-ps%dk", big>>10), withOpts(WithMode(ModeWhole), WithPageSize(big))},
				opener{fmt.Sprintf("windowed-ps%dk", big>>10), withOpts(WithMode(ModeWindowed), WithPageSize(big))},
				opener{fmt.Sprintf("section-whole-ps%dk", big>>10), inSection(big+333, false, WithMode(ModeWhole), WithPageSize(big))},
				opener{fmt.Sprintf("section-windowed-ps%dk", big>>10), inSection(3*big+1, false, WithMode(ModeWindowed), WithPageSize(big))})
		}
	}
	os = append(os,
		opener{"newfile", func(t *testing.T, path string, _ []byte) *File {
			osf, err := osOpen(t, path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := NewFile(osf)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}},
		opener{"section-whole", inSection(ps+333, false, WithMode(ModeWhole))},
		opener{"section-windowed", inSection(2*ps-1, false, WithMode(ModeWindowed))},
		opener{"section-memory", inSection(7, false, WithMode(ModeMemory))},
		opener{"section-copy", inSection(ps+1, false, WithMode(ModeCopy))},
		opener{"section-aligned", inSection(ps, false)},
		opener{"newsection", inSection(ps+77, true)},
	)
	return os
}

// inSection returns an opener that writes the contents into a larger file,
// after prefix bytes and before a few more, and opens them as a section
// (through NewFile when fd is set, else Open, with WithSection).
func inSection(prefix int, fd bool, opts ...Option) func(t *testing.T, path string, want []byte) *File {
	return func(t *testing.T, _ string, want []byte) *File {
		t.Helper()
		b := slices.Repeat([]byte{0xEE}, prefix)
		b = append(b, want...)
		b = append(b, slices.Repeat([]byte{0xDD}, 1001)...)
		path := filepath.Join(t.TempDir(), "outer.bin")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var f *File
		var err error
		if fd {
			osf, oerr := osOpen(t, path)
			if oerr != nil {
				t.Fatal(oerr)
			}
			f, err = NewFile(osf, append(opts, WithSection(int64(prefix), int64(len(want))))...)
		} else {
			f, err = Open(path, append(opts, WithSection(int64(prefix), int64(len(want))))...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
}

// osOpen opens path and closes it when the test ends.
func osOpen(t *testing.T, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err == nil {
		t.Cleanup(func() { f.Close() })
	}
	return f, err
}

// ranges returns odd offsets and lengths inside a file of n bytes.
func ranges(n int64, ps int64) [][2]int64 {
	r := [][2]int64{{0, n}, {0, 0}, {n, 0}, {0, min(1, n)}, {n - min(1, n), min(1, n)}}
	for _, off := range []int64{1, 7, 127, 128, 129, ps - 1, ps, ps + 1, 2*ps - 128, 3*ps + 5, n / 2, n - 129} {
		for _, l := range []int64{0, 1, 3, 128, 255, ps - 1, ps, ps + 1, 2*ps + 17, n} {
			if off >= 0 && l >= 0 && off <= n && l <= n-off {
				r = append(r, [2]int64{off, l})
			}
		}
	}
	return r
}

// Views and ReadAt must return exactly what os.ReadFile does, for odd sizes
// and offsets, in every mode and page size.
func TestRoundTrip(t *testing.T) {
	ps := int64(platform.PageSize())
	sizes := []int{0, 1, 127, 4095, 4097, int(ps) - 1, int(ps), int(ps) + 1, 3*int(ps) + 129, 65536*2 + 999}
	for _, size := range sizes {
		path, want := writeFile(t, pattern(size))
		for _, o := range openers() {
			t.Run(fmt.Sprintf("%d/%s", size, o.name), func(t *testing.T) {
				f := o.open(t, path, want)
				defer f.Close()
				if f.Len() != int64(size) {
					t.Fatalf("Len() = %d, want %d", f.Len(), size)
				}
				for _, r := range ranges(int64(size), ps) {
					off, n := r[0], r[1]
					v, err := f.View(off, n)
					if err != nil {
						t.Fatalf("View(%d, %d): %v", off, n, err)
					}
					if int64(len(v)) != n || !bytes.Equal(v, want[off:off+n]) {
						t.Fatalf("View(%d, %d) differs from os.ReadFile", off, n)
					}
					if cap(v) != len(v) {
						t.Fatalf("View(%d, %d): cap %d != len %d (appending would write into the mapping)", off, n, cap(v), len(v))
					}
					p := make([]byte, n)
					m, err := f.ReadAt(p, off)
					if m != int(n) || err != nil || !bytes.Equal(p, want[off:off+n]) {
						t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", n, off, m, err)
					}
				}
				// ReadAt past the end follows io.ReaderAt.
				p := make([]byte, 10)
				if m, err := f.ReadAt(p, int64(size)-3); size >= 3 && (m != 3 || err != io.EOF || !bytes.Equal(p[:3], want[size-3:])) {
					t.Fatalf("ReadAt over the end = %d, %v; want 3, io.EOF", m, err)
				}
				if m, err := f.ReadAt(p, int64(size)); m != 0 || err != io.EOF {
					t.Fatalf("ReadAt at the end = %d, %v; want 0, io.EOF", m, err)
				}
				if m, err := f.ReadAt(p, int64(size)+100); m != 0 || err != io.EOF {
					t.Fatalf("ReadAt past the end = %d, %v; want 0, io.EOF", m, err)
				}
				// The whole file through io.SectionReader.
				all, err := io.ReadAll(io.NewSectionReader(f, 0, f.Len()))
				if err != nil || !bytes.Equal(all, want) {
					t.Fatalf("ReadAll: %v", err)
				}
			})
		}
	}
}

func TestRangeErrors(t *testing.T) {
	path, want := writeFile(t, pattern(10000))
	size := int64(len(want))
	for _, o := range openers() {
		t.Run(o.name, func(t *testing.T) {
			f := o.open(t, path, want)
			defer f.Close()
			for _, r := range [][2]int64{
				{-1, 1}, {0, -1}, {size, 1}, {size + 1, 0}, {1, size}, {1, math.MaxInt64},
				{math.MaxInt64, 1}, {math.MaxInt64, math.MaxInt64}, {math.MinInt64, 10}, {10, math.MinInt64},
			} {
				if _, err := f.View(r[0], r[1]); !errors.Is(err, ErrRange) {
					t.Errorf("View(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				} else if want := fmt.Sprintf("off=%d n=%d) len=%d", r[0], r[1], size); !bytes.Contains([]byte(err.Error()), []byte(want)) {
					t.Errorf("View(%d, %d) error %q does not name the range", r[0], r[1], err)
				}
				if err := f.Advise(r[0], r[1], AdviceWillNeed); !errors.Is(err, ErrRange) {
					t.Errorf("Advise(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				}
				if err := f.Release(r[0], r[1], true); !errors.Is(err, ErrRange) {
					t.Errorf("Release(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				}
				if _, _, err := f.Resident(r[0], r[1]); !errors.Is(err, ErrRange) {
					t.Errorf("Resident(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				}
				if err := f.Lock(r[0], r[1]); !errors.Is(err, ErrRange) {
					t.Errorf("Lock(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				}
				if err := f.Evict(r[0], r[1]); !errors.Is(err, ErrRange) {
					t.Errorf("Evict(%d, %d) = %v, want ErrRange", r[0], r[1], err)
				}
			}
			if _, err := f.ReadAt(make([]byte, 1), -1); !errors.Is(err, ErrRange) {
				t.Errorf("ReadAt(-1) = %v, want ErrRange", err)
			}
			if v, err := f.View(size, 0); err != nil || len(v) != 0 {
				t.Errorf("View(Len, 0) = %d bytes, %v; want empty, nil", len(v), err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	path, _ := writeFile(t, pattern(100))
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("Open(directory) succeeded")
	}
	ps := platform.PageSize()
	for _, bad := range []int{ps / 2, ps + 1, 3 * ps, -ps} {
		if _, err := Open(path, WithPageSize(bad)); err == nil {
			t.Errorf("Open with page size %d succeeded", bad)
		}
	}
	if _, err := Open(path, WithMode(Mode(42))); err == nil {
		t.Error("Open with an invalid mode succeeded")
	}
	f, err := Open(path, WithPageSize(4*ps))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.PageSize() != 4*ps {
		t.Errorf("PageSize() = %d, want %d", f.PageSize(), 4*ps)
	}
}

func TestModeAndAccessors(t *testing.T) {
	path, want := writeFile(t, pattern(5000))
	whole, windowed := ModeWhole, ModeWindowed
	if !platform.ZeroCopy {
		whole, windowed = ModeCopy, ModeCopy
	}
	for _, c := range []struct {
		opts     []Option
		mode     Mode
		zeroCopy bool
	}{
		{nil, whole, platform.ZeroCopy},
		{[]Option{WithBudget(4999)}, windowed, platform.ZeroCopy},
		{[]Option{WithBudget(5000)}, whole, platform.ZeroCopy},
		{[]Option{WithMode(ModeWindowed)}, windowed, platform.ZeroCopy},
		{[]Option{WithMode(ModeMemory)}, ModeMemory, true},
		{[]Option{WithMode(ModeCopy)}, ModeCopy, false},
	} {
		f, err := Open(path, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if f.Mode() != c.mode || f.ZeroCopy() != c.zeroCopy || f.Name() != path || f.Fd() == ^uintptr(0) {
			t.Errorf("%v: mode %v zero-copy %v name %q", c.opts, f.Mode(), f.ZeroCopy(), f.Name())
		}
		f.Close()
		if f.Fd() != ^uintptr(0) {
			t.Errorf("Fd() after Close = %d", f.Fd())
		}
	}
	if DefaultBudget != math.MaxInt64 && DefaultBudget != 1<<30 {
		t.Errorf("DefaultBudget = %d", DefaultBudget)
	}
	if unsafe.Sizeof(uintptr(0)) == 4 && DefaultBudget != 1<<30 {
		t.Errorf("DefaultBudget on 32-bit = %d, want 1 GiB", DefaultBudget)
	}
	b := NewBytes(want)
	if b.Mode() != ModeMemory || !b.ZeroCopy() || b.Fd() != ^uintptr(0) || b.Name() != "" {
		t.Errorf("NewBytes: mode %v", b.Mode())
	}
	r := NewReaderAt(bytes.NewReader(want), int64(len(want)))
	if r.Mode() != ModeCopy || r.ZeroCopy() {
		t.Errorf("NewReaderAt: mode %v zero-copy %v", r.Mode(), r.ZeroCopy())
	}
	for m, s := range map[Mode]string{ModeAuto: "auto", ModeWhole: "whole", ModeWindowed: "windowed", ModeMemory: "memory", ModeCopy: "copy", Mode(9): "Mode(9)"} {
		if m.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(m), m.String(), s)
		}
	}
}

func TestEmptyFile(t *testing.T) {
	path, _ := writeFile(t, nil)
	for _, o := range openers() {
		f := o.open(t, path, nil)
		if f.Len() != 0 {
			t.Fatalf("%s: Len = %d", o.name, f.Len())
		}
		if v, err := f.View(0, 0); err != nil || len(v) != 0 {
			t.Fatalf("%s: View(0,0) = %v, %v", o.name, v, err)
		}
		if r, tot, err := f.Resident(0, 0); r != 0 || tot != 0 || err != nil {
			t.Fatalf("%s: Resident = %d/%d, %v", o.name, r, tot, err)
		}
		if err := f.Release(0, 0, true); err != nil {
			t.Fatalf("%s: Release: %v", o.name, err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("%s: Close: %v", o.name, err)
		}
	}
}

func TestClose(t *testing.T) {
	path, want := writeFile(t, pattern(3*platform.PageSize()+5))
	for _, o := range openers() {
		t.Run(o.name, func(t *testing.T) {
			f := o.open(t, path, want)
			if _, err := f.View(1, 100); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := f.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			checks := map[string]error{}
			_, checks["View"] = f.View(0, 1)
			_, checks["ReadAt"] = f.ReadAt(make([]byte, 1), 0)
			checks["Advise"] = f.Advise(0, 1, AdviceWillNeed)
			checks["Release"] = f.Release(0, 1, true)
			checks["Evict"] = f.Evict(0, 1)
			checks["Lock"] = f.Lock(0, 1)
			checks["Unlock"] = f.Unlock(0, 1)
			_, _, checks["Resident"] = f.Resident(0, 1)
			for name, err := range checks {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Close = %v, want ErrClosed", name, err)
				}
			}
			if f.Len() != int64(len(want)) {
				t.Errorf("Len after Close = %d", f.Len())
			}
		})
	}
}

// A repeated View of the same range in windowed mode neither maps again nor
// allocates; a View inside a mapped window reuses it; Evict unmaps.
func TestWindowCache(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	ps := int64(platform.PageSize())
	path, want := writeFile(t, pattern(int(8*ps)+77))
	f, err := Open(path, WithMode(ModeWindowed))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	windows := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		seen := map[*window]bool{}
		for _, w := range f.wins {
			seen[w] = true
		}
		return len(seen)
	}
	if windows() != 0 {
		t.Fatal("Open mapped a window")
	}
	v1, err := f.View(ps+128, 2*ps)
	if err != nil {
		t.Fatal(err)
	}
	v2, _ := f.View(ps+128, 2*ps)
	if &v1[0] != &v2[0] || windows() != 1 {
		t.Fatalf("repeat View mapped again (%d windows)", windows())
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = f.View(ps+128, 2*ps) }); a != 0 {
		t.Errorf("repeat View allocates %.1f times", a)
	}
	// Inside the first window (its cover is [ps, 4ps)).
	v3, _ := f.View(2*ps, 10)
	if windows() != 1 || !bytes.Equal(v3, want[2*ps:2*ps+10]) {
		t.Fatalf("View inside a window mapped a new one (%d windows)", windows())
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = f.View(2*ps, 10) }); a != 0 {
		t.Errorf("View inside a window allocates %.1f times", a)
	}
	if _, err := f.View(6*ps, ps+77); err != nil {
		t.Fatal(err)
	}
	if windows() != 2 {
		t.Fatalf("%d windows, want 2", windows())
	}
	// Evicting a range that does not contain a whole window unmaps nothing.
	if err := f.Evict(ps+128, 10); err != nil || windows() != 2 {
		t.Fatalf("Evict of a small range: %v, %d windows", err, windows())
	}
	if err := f.Evict(ps, 3*ps); err != nil || windows() != 1 {
		t.Fatalf("Evict of the first window: %v, %d windows", err, windows())
	}
	// Views are re-created on demand after Evict.
	v4, err := f.View(ps+128, 2*ps)
	if err != nil || !bytes.Equal(v4, want[ps+128:3*ps+128]) || windows() != 2 {
		t.Fatalf("View after Evict: %v, %d windows", err, windows())
	}
	if err := f.Evict(0, f.Len()); err != nil || windows() != 0 {
		t.Fatalf("Evict all: %v, %d windows", err, windows())
	}
}

// In whole mode View is a slice of the one mapping and allocates nothing.
func TestViewWholeNoAlloc(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	path, _ := writeFile(t, pattern(100000))
	f, err := Open(path, WithMode(ModeWhole))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v0, _ := f.View(0, 1)
	v1, _ := f.View(4099, 1000)
	if uintptr(unsafe.Pointer(&v1[0]))-uintptr(unsafe.Pointer(&v0[0])) != 4099 {
		t.Fatal("views are not slices of one mapping")
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = f.View(4099, 1000) }); a != 0 {
		t.Errorf("View allocates %.1f times", a)
	}
	p := make([]byte, 512)
	if a := testing.AllocsPerRun(100, func() { _, _ = f.ReadAt(p, 777) }); a != 0 {
		t.Errorf("ReadAt allocates %.1f times", a)
	}
}

// Advice, release, lock and residency in every mode and page size: the
// calls succeed, contents never change, and residency totals count pages of
// the File's page size.
func TestAdviseReleaseResident(t *testing.T) {
	ps := platform.PageSize()
	path, want := writeFile(t, pattern(300*1024+333))
	for _, o := range openers() {
		t.Run(o.name, func(t *testing.T) {
			f := o.open(t, path, want)
			defer f.Close()
			fps := int64(f.PageSize())
			if fps%int64(ps) != 0 {
				t.Fatalf("PageSize %d", fps)
			}
			off, n := int64(128), f.Len()-256
			v, err := f.View(off, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []Advice{AdviceNormal, AdviceSequential, AdviceRandom, AdviceHugePage, AdviceWillNeed, AdvicePopulateRead, AdviceDontNeed} {
				if err := f.Advise(off, n, a); err != nil {
					t.Errorf("Advise(%v): %v", a, err)
				}
			}
			if err := f.Lock(off, 10); err != nil {
				t.Logf("Lock refused (allowed): %v", err)
			} else if err := f.Unlock(off, 10); err != nil {
				t.Errorf("Unlock: %v", err)
			}
			var sink byte
			_ = Guard(func() { sink = v[0] + v[len(v)-1] })
			_ = sink
			r, tot, err := f.Resident(off, n)
			if err != nil {
				t.Fatalf("Resident: %v", err)
			}
			base, _ := f.Section() // pages are the file's, not the section's
			wantTot := int((pageCeil(base+off+n, fps) - pageFloor(base+off, fps)) / fps)
			if tot != wantTot || r < 0 || r > tot {
				t.Fatalf("Resident = %d/%d, want total %d", r, tot, wantTot)
			}
			switch f.Mode() {
			case ModeMemory:
				if r != tot {
					t.Errorf("memory mode: %d/%d resident", r, tot)
				}
			case ModeCopy:
				if r != 0 {
					t.Errorf("copy mode: %d/%d resident", r, tot)
				}
			}
			for _, drop := range []bool{false, true} {
				if err := f.Release(off, n, drop); err != nil {
					t.Errorf("Release(drop=%v): %v", drop, err)
				}
			}
			if !bytes.Equal(v, want[off:off+n]) {
				t.Fatal("view changed after Release")
			}
			if err := f.Evict(0, f.Len()); err != nil {
				t.Errorf("Evict: %v", err)
			}
		})
	}
}

// A whole-file Release with dropCache empties the page cache of the range
// (checked with mincore), and reading faults the pages back in.
func TestReleaseDropsCache(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	const size = 4 << 20
	path, want := writeFile(t, pattern(size))
	for _, mode := range []Mode{ModeWhole, ModeWindowed} {
		t.Run(mode.String(), func(t *testing.T) {
			f, err := Open(path, WithMode(mode))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			syncFile(t, path) // dirty pages cannot be dropped
			v, _ := f.View(0, size)
			var sum byte
			for i := 0; i < size; i += 512 {
				sum += v[i]
			}
			r, tot, err := f.Resident(0, size)
			if err != nil {
				t.Fatal(err)
			}
			if r != tot {
				t.Fatalf("after reading: %d/%d pages resident", r, tot)
			}
			if err := f.Release(0, size, true); err != nil {
				t.Fatal(err)
			}
			r2, _, err := f.Resident(0, size)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("resident after Release(dropCache): %d/%d", r2, tot)
			if r2 > tot/2 {
				t.Errorf("after Release(dropCache): %d/%d pages still resident", r2, tot)
			}
			if !bytes.Equal(v, want) {
				t.Fatal("view changed after Release")
			}
			if r3, _, _ := f.Resident(0, size); r3 != tot {
				t.Errorf("after reading again: %d/%d resident", r3, tot)
			}
		})
	}
}

// WillNeed reads a section's own pages, not those at the same offsets from
// the start of its file, and refuses a range outside the section.
func TestWillNeedSection(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	const pad, size = 1<<20 + 100, 1 << 20
	path, _ := writeFile(t, pattern(pad+size))
	syncFile(t, path)
	w, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := platform.FadviseDontNeed(w, 0, 0); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, WithSection(pad, size))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r, _, err := f.Resident(0, size); err != nil || r != 0 {
		t.Skipf("the page cache keeps %d pages after fadvise DONTNEED (%v)", r, err)
	}
	if err := f.WillNeed(0, size); err != nil {
		t.Fatal(err)
	}
	// The reads complete in the background; mincore counts a page once
	// its read has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		r, tot, err := f.Resident(0, size)
		if err == nil && r == tot {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("after WillNeed: %d/%d pages of the section resident (%v)", r, tot, err)
		}
	}
	if err := f.WillNeed(size-10, 20); !errors.Is(err, ErrRange) {
		t.Errorf("WillNeed past the section's end: %v, want ErrRange", err)
	}
}

// A 4 GiB sparse file opens in O(1) and its last page reads back, in whole
// and windowed mode. On 32-bit systems whole mode must refuse, not wrap.
func TestSparse4GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const size = 4 << 30
	tail := []byte("the last bytes of a 4 GiB file")
	path := sparseFile(t, size, tail)
	small, _ := writeFile(t, pattern(4096))

	openTime := func(p string, opts ...Option) time.Duration {
		best := time.Hour
		for range 5 {
			start := time.Now()
			f, err := Open(p, opts...)
			d := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			best = min(best, d)
		}
		return best
	}
	for _, mode := range []Mode{ModeWhole, ModeWindowed, ModeAuto} {
		t.Run(mode.String(), func(t *testing.T) {
			f, err := Open(path, WithMode(mode))
			if mode == ModeWhole && unsafe.Sizeof(uintptr(0)) == 4 && platform.ZeroCopy {
				if !errors.Is(err, ErrRange) {
					t.Fatalf("whole-file map of 4 GiB on 32-bit: %v, want ErrRange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			t.Logf("mode %v", f.Mode())
			if f.Len() != size {
				t.Fatalf("Len = %d", f.Len())
			}
			ps := int64(f.PageSize())
			v, err := f.View(size-ps, ps)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(v[ps-int64(len(tail)):], tail) || v[0] != 0 {
				t.Fatal("last page differs")
			}
			p := make([]byte, len(tail)+10)
			if n, err := f.ReadAt(p, size-int64(len(p))); n != len(p) || err != nil || !bytes.Equal(p[10:], tail) {
				t.Fatalf("ReadAt of the last bytes = %d, %v", n, err)
			}
			if _, err := f.View(size-1, 2); !errors.Is(err, ErrRange) {
				t.Fatalf("View over the end: %v", err)
			}
			if r, tot, err := f.Resident(size-ps, ps); err != nil || tot != 1 || r != 1 {
				t.Fatalf("Resident(last page) = %d/%d, %v", r, tot, err)
			}
			if err := f.Release(size-ps, ps, false); err != nil {
				t.Fatal(err)
			}
		})
	}
	big, smallT := openTime(path), openTime(small)
	t.Logf("Open: 4 GiB %v, 4 KiB %v", big, smallT)
	limit := 20*smallT + 5*time.Millisecond
	if e := memstat.Emulator(); e != "" && platform.ZeroCopy {
		// qemu-user does per-page bookkeeping for every guest mmap, so the
		// system call itself costs time in proportion to the size: allow
		// what a bare Map of the file costs under the emulator.
		osf, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer osf.Close()
		bare := time.Hour
		// On 32-bit the whole file cannot be mapped (Open maps windows).
		if sz := int64(size); sz <= math.MaxInt {
			for range 3 {
				start := time.Now()
				b, err := platform.Map(osf, 0, int(sz))
				if err != nil {
					break
				}
				bare = min(bare, time.Since(start))
				platform.Unmap(b)
			}
		}
		if bare < time.Hour {
			t.Logf("under %s a bare mmap of 4 GiB takes %v", e, bare)
			limit += 4 * bare
		}
	}
	if big > limit {
		t.Errorf("opening 4 GiB took %v, 4 KiB %v: not O(1)", big, smallT)
	}
}

// TestWindowIndex checks the sorted window index that replaced a scan of
// every window: views inside a mapped window reuse it whatever the order
// of mapping, ranges across windows map anew, forWindows visits exactly
// the windows that meet a range, and Evict drops windows from the index.
func TestWindowIndex(t *testing.T) {
	if !platform.ZeroCopy {
		t.Skip("no mappings on this platform")
	}
	ps := int64(platform.PageSize())
	const pages = 64
	path, want := writeFile(t, pattern(int(pages*ps)))
	f, err := Open(path, WithMode(ModeWindowed))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !slices.IsSortedFunc(f.byStart, func(a, b *window) int { return cmp.Compare(a.start, b.start) }) {
			t.Fatal("window index out of order")
		}
		return len(f.byStart)
	}
	// Two-page windows at even pages, mapped in a scrambled order.
	for i := int64(0); i < pages/2; i++ {
		p := (i * 7) % (pages / 2) * 2
		if _, err := f.View(p*ps, 2*ps); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(); n != pages/2 {
		t.Fatalf("%d windows after %d distinct views", n, pages/2)
	}
	// Views inside a window: no new mapping, right bytes.
	for p := int64(0); p < pages; p++ {
		b, err := f.View(p*ps+5, ps-10)
		if err != nil || !bytes.Equal(b, want[p*ps+5:(p+1)*ps-5]) {
			t.Fatalf("view in page %d: %v", p, err)
		}
	}
	if n := count(); n != pages/2 {
		t.Fatalf("%d windows after views inside them, want %d", n, pages/2)
	}
	// Across two windows: one new window.
	if b, err := f.View(3*ps, 2*ps); err != nil || !bytes.Equal(b, want[3*ps:5*ps]) {
		t.Fatalf("view across windows: %v", err)
	}
	if n := count(); n != pages/2+1 {
		t.Fatalf("%d windows after a view across two, want %d", n, pages/2+1)
	}
	// forWindows over pages [3, 5): windows [2,4), [3,5), [4,6).
	met := 0
	if err := f.forWindows(3*ps, 5*ps, func([]byte) error { met++; return nil }); err != nil || met != 3 {
		t.Fatalf("forWindows met %d windows (%v), want 3", met, err)
	}
	// Evict pages [0, 8): windows [0,2), [2,4), [4,6), [6,8), [3,5) go.
	if err := f.Evict(0, 8*ps); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != pages/2+1-5 {
		t.Fatalf("%d windows after Evict, want %d", n, pages/2+1-5)
	}
	if b, err := f.View(ps, 10); err != nil || !bytes.Equal(b, want[ps:ps+10]) {
		t.Fatalf("view after Evict: %v", err)
	}
}

// A nil *File has the empty view only: the zero segment.Segment's Bytes
// goes through it.
func TestNilFileView(t *testing.T) {
	var f *File
	if b, err := f.View(0, 0); b != nil || err != nil {
		t.Errorf("nil File View(0, 0) = %v, %v; want nil, nil", b, err)
	}
	for _, r := range [][2]int64{{0, 1}, {1, 0}, {-1, 0}} {
		if _, err := f.View(r[0], r[1]); !errors.Is(err, ErrRange) {
			t.Errorf("nil File View(%d, %d) = %v, want ErrRange", r[0], r[1], err)
		}
	}
}

// syncFile writes the named file's dirty pages to storage.
func syncFile(t *testing.T, path string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}
