package mmapfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/platform"
)

// A section shows only its own bytes: views and reads past its end fail
// (although the file goes on), and errors give offsets relative to it.
func TestSectionBounds(t *testing.T) {
	ps := int64(platform.PageSize())
	outer := pattern(int(5*ps + 999))
	path, _ := writeFile(t, outer)
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"whole", []Option{WithMode(ModeWhole)}},
		{"windowed", []Option{WithMode(ModeWindowed)}},
		{"memory", []Option{WithMode(ModeMemory)}},
		{"copy", []Option{WithMode(ModeCopy)}},
	} {
		for _, sec := range [][2]int64{{1, 10}, {ps - 1, ps + 2}, {ps, 2 * ps}, {2*ps + 333, 3*ps + 666 - 333}, {2*ps + 333, 0}} {
			off, n := sec[0], sec[1]
			t.Run(fmt.Sprintf("%s/%d+%d", c.name, off, n), func(t *testing.T) {
				f, err := Open(path, append(c.opts, WithSection(off, n))...)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if f.Len() != n {
					t.Fatalf("Len = %d, want %d", f.Len(), n)
				}
				if so, sn := f.Section(); so != off || sn != n || !f.IsSection() {
					t.Fatalf("Section() = %d, %d; IsSection %v", so, sn, f.IsSection())
				}
				v, err := f.View(0, n)
				if err != nil || !bytes.Equal(v, outer[off:off+n]) {
					t.Fatalf("View(0, %d): %v", n, err)
				}
				_, err = f.View(n, 1)
				if !errors.Is(err, ErrRange) {
					t.Fatalf("View(%d, 1) past the section = %v, want ErrRange", n, err)
				}
				if want := fmt.Sprintf("[off=%d n=1) len=%d", n, n); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not give the section-relative range %q", err, want)
				}
				if _, err := f.View(-1, 1); !errors.Is(err, ErrRange) {
					t.Fatalf("View(-1, 1) = %v", err)
				}
				p := make([]byte, 4)
				if m, err := f.ReadAt(p, n); m != 0 || err != io.EOF {
					t.Fatalf("ReadAt at the section's end = %d, %v", m, err)
				}
				if n > 0 {
					if m, err := f.ReadAt(p, n-1); m != 1 || err != io.EOF || p[0] != outer[off+n-1] {
						t.Fatalf("ReadAt over the section's end = %d, %v", m, err)
					}
				}
				for _, op := range []func() error{
					func() error { return f.Advise(n, 1, AdviceWillNeed) },
					func() error { return f.Release(n-min(n, 1), 2, true) },
					func() error { return f.Lock(0, n+1) },
					func() error { _, _, err := f.Resident(0, n+1); return err },
				} {
					if err := op(); !errors.Is(err, ErrRange) {
						t.Errorf("operation past the section: %v, want ErrRange", err)
					}
				}
			})
		}
	}
}

func TestSectionErrors(t *testing.T) {
	path, want := writeFile(t, pattern(1000))
	size := int64(len(want))
	for _, sec := range [][2]int64{{-1, 1}, {0, -1}, {0, size + 1}, {size, 1}, {size + 1, 0}, {1, size}, {1 << 62, 1 << 62}} {
		if f, err := Open(path, WithSection(sec[0], sec[1])); !errors.Is(err, ErrRange) {
			if err == nil {
				f.Close()
			}
			t.Errorf("WithSection(%d, %d) = %v, want ErrRange", sec[0], sec[1], err)
		}
	}
	if f, err := Open(path, WithSection(size, 0)); err != nil || f.Len() != 0 {
		t.Errorf("empty section at the end: %v", err)
	} else {
		f.Close()
	}
	if _, err := NewFile(nil); err == nil {
		t.Error("NewFile(nil) succeeded")
	}
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if _, err := NewFile(dir); err == nil {
		t.Error("NewFile of a directory succeeded")
	}
	if _, err := NewFile(dir, WithSection(0, 0)); err == nil {
		t.Error("NewFile of a directory succeeded")
	}
	if _, err := Open(path, WithSection(0, 1), WithPageSize(3)); err == nil {
		t.Error("Open with page size 3 succeeded")
	}
}

// NewFile borrows the caller's file: Close leaves it open.
func TestNewFileBorrows(t *testing.T) {
	path, want := writeFile(t, pattern(10000))
	osf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer osf.Close()
	f, err := NewFile(osf)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name() != path || f.Len() != int64(len(want)) || f.IsSection() || f.Fd() != osf.Fd() {
		t.Fatalf("Name %q Len %d IsSection %v", f.Name(), f.Len(), f.IsSection())
	}
	if v, err := f.View(100, 200); err != nil || !bytes.Equal(v, want[100:300]) {
		t.Fatalf("View: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 10)
	if _, err := osf.ReadAt(p, 0); err != nil || !bytes.Equal(p, want[:10]) {
		t.Fatalf("the caller's file after Close: %v", err)
	}
}

// Release in a section never drops a page the section shares with the
// bytes before or after it; a section that ends at the end of the file owns
// its last page.
func TestSectionInnerPages(t *testing.T) {
	for _, ps := range []int64{4 << 10, 16 << 10, 64 << 10} {
		f := &File{ps: ps, base: ps + 100, size: 3 * ps, atEOF: false}
		s, e := f.innerPages(0, f.size)
		if s != 2*ps || e != 4*ps {
			t.Errorf("ps %d: inner pages of a mid-file section = [%d,%d), want [%d,%d)", ps, s, e, 2*ps, 4*ps)
		}
		f.atEOF = true
		s, e = f.innerPages(0, f.size)
		if s != 2*ps || e != 5*ps {
			t.Errorf("ps %d: inner pages of a section at the end = [%d,%d), want [%d,%d)", ps, s, e, 2*ps, 5*ps)
		}
		f = &File{ps: ps, base: 2 * ps, size: ps, atEOF: false}
		if s, e := f.innerPages(0, ps); s != 2*ps || e != 3*ps {
			t.Errorf("ps %d: an aligned section's page = [%d,%d)", ps, s, e)
		}
	}
}

// A section near the end of a 4 GiB sparse file opens in windowed mode and
// reads back on every architecture, 32-bit included, and whole mode of a
// small section far into the file works where the address space allows.
func TestSectionFarOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	size := int64(4<<30 + 12345)
	if unsafe.Sizeof(uintptr(0)) == 4 && memstat.Emulator() != "" {
		// qemu-user's 32-bit ARM mmap2 returns zeros for file offsets at
		// or past 4 GiB (pread reads them fine): stay past 2 GiB, below 4.
		size = 3<<30 + 12345
	}
	tail := []byte("a model stored at the end of a large archive")
	path := sparseFile(t, size, tail)
	off := size - int64(len(tail))
	for _, mode := range []Mode{ModeAuto, ModeWhole, ModeWindowed} {
		f, err := Open(path, WithSection(off-3, int64(len(tail))+3), WithMode(mode))
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		v, err := f.View(3, int64(len(tail)))
		if err != nil || !bytes.Equal(v, tail) {
			t.Fatalf("%v: View: %v", mode, err)
		}
		if r, tot, err := f.Resident(0, f.Len()); err != nil || tot < 1 || r > tot {
			t.Fatalf("%v: Resident = %d/%d, %v", mode, r, tot, err)
		}
		if err := f.Release(0, f.Len(), true); err != nil {
			t.Fatalf("%v: Release: %v", mode, err)
		}
		f.Close()
	}
	// A section larger than 2 GiB: whole mode refuses on 32-bit, windowed
	// mode works.
	f, err := Open(path, WithSection(1, size-1), WithMode(ModeWhole))
	if unsafe.Sizeof(uintptr(0)) == 4 && platform.ZeroCopy {
		if !errors.Is(err, ErrRange) {
			t.Fatalf("whole 4 GiB section on 32-bit: %v", err)
		}
	} else if err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	f, err = Open(path, WithSection(1, size-1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if v, err := f.View(size-1-int64(len(tail)), int64(len(tail))); err != nil || !bytes.Equal(v, tail) {
		t.Fatalf("auto: View of the tail: %v", err)
	}
}

// Sub is a section of a section: offsets relative to its own start,
// nothing outside it readable, in every mode; WithName names it.
func TestSub(t *testing.T) {
	ps := int64(platform.PageSize())
	outer := pattern(int(4*ps + 321))
	path, _ := writeFile(t, outer)
	for _, o := range openers() {
		t.Run(o.name, func(t *testing.T) {
			f := o.open(t, path, outer)
			defer f.Close()
			for _, r := range [][2]int64{{0, f.Len()}, {1, 10}, {ps + 7, 2*ps + 3}, {f.Len(), 0}} {
				off, n := r[0], r[1]
				s, err := f.Sub(off, n, WithName("inner"))
				if err != nil {
					t.Fatalf("Sub(%d, %d): %v", off, n, err)
				}
				if s.Len() != n || s.Name() != "inner" || s.Mode() != f.Mode() {
					t.Fatalf("Sub(%d, %d): Len %d name %q mode %v (parent %v)", off, n, s.Len(), s.Name(), s.Mode(), f.Mode())
				}
				if v, err := s.View(0, n); err != nil || !bytes.Equal(v, outer[off:off+n]) {
					t.Fatalf("Sub(%d, %d).View: %v", off, n, err)
				}
				if _, err := s.View(n, 1); !errors.Is(err, ErrRange) {
					t.Fatalf("Sub(%d, %d).View past its end: %v", off, n, err)
				}
				if err := s.Release(0, n, false); err != nil {
					t.Fatalf("Release: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.Sub(1, f.Len()); !errors.Is(err, ErrRange) {
				t.Fatalf("Sub past the end: %v", err)
			}
			// The parent still reads after its Sub closed.
			if v, err := f.View(0, 1); err != nil || v[0] != outer[0] {
				t.Fatalf("parent after Sub.Close: %v", err)
			}
		})
	}
}
