package segment

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"syscall"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/memstat"
	"github.com/edgeload/edgeload/mmapfile"
)

func TestNewAndSub(t *testing.T) {
	f := mmapfile.NewBytes(pattern(1000))
	for _, r := range [][2]int64{{-1, 1}, {0, -1}, {1000, 1}, {1001, 0}, {1, 1000}, {1, math.MaxInt64}, {math.MaxInt64, 1}, {math.MinInt64, 0}} {
		if _, err := New(f, r[0], r[1]); !errors.Is(err, ErrRange) {
			t.Errorf("New(%d, %d) = %v, want ErrRange", r[0], r[1], err)
		}
	}
	s, err := New(f, 100, 800)
	if err != nil || s.File() != f || s.Offset() != 100 || s.Len() != 800 {
		t.Fatalf("New(100, 800) = %v, %v", s, err)
	}
	for _, r := range [][2]int64{{-1, 1}, {0, 801}, {800, 1}, {801, 0}, {1, math.MaxInt64}, {math.MaxInt64, math.MaxInt64}} {
		if _, err := s.Sub(r[0], r[1]); !errors.Is(err, ErrRange) {
			t.Errorf("Sub(%d, %d) = %v, want ErrRange", r[0], r[1], err)
		}
	}
	sub, err := s.Sub(50, 700)
	if err != nil || sub.Offset() != 150 || sub.Len() != 700 {
		t.Fatalf("Sub(50, 700) = %v, %v", sub, err)
	}
	b, err := sub.Bytes()
	if err != nil || !bytes.Equal(b, pattern(1000)[150:850]) {
		t.Fatalf("Sub.Bytes: %v", err)
	}
	if e, err := s.Sub(800, 0); err != nil || e.Len() != 0 {
		t.Fatalf("Sub(Len, 0) = %v, %v", e, err)
	}
	if _, err := New(nil, 0, 1); !errors.Is(err, ErrRange) {
		t.Errorf("New(nil, 0, 1) = %v, want ErrRange", err)
	}
	if got := fmt.Sprint(sub); got != "[150:850]" {
		t.Errorf("String() = %q", got)
	}
}

// The zero Segment is empty and every operation on it is a harmless no-op.
func TestZeroSegment(t *testing.T) {
	var s Segment
	if s.Len() != 0 || s.Offset() != 0 || s.File() != nil {
		t.Fatal("zero segment is not empty")
	}
	if b, err := s.Bytes(); b != nil || err != nil {
		t.Fatalf("Bytes = %v, %v", b, err)
	}
	if v, c, err := s.Float32(); v != nil || c || err != nil {
		t.Fatalf("Float32 = %v, %v, %v", v, c, err)
	}
	for name, err := range map[string]error{
		"Prefetch": s.Prefetch(), "Release": s.Release(DropPageCache()), "Evict": s.Evict(),
		"Lock": s.Lock(true), "Unlock": s.Unlock(), "Touch": s.Touch(), "Advise": s.Advise(mmapfile.AdviceRandom),
		"Checksum": s.Checksum(sha256.New()),
	} {
		if err != nil {
			t.Errorf("%s = %v", name, err)
		}
	}
	if n, err := s.CopyTo(make([]byte, 10)); n != 0 || err != nil {
		t.Fatalf("CopyTo = %d, %v", n, err)
	}
	if r, tot, err := s.Resident(); r != 0 || tot != 0 || err != nil {
		t.Fatalf("Resident = %d/%d, %v", r, tot, err)
	}
	if sum, err := s.SHA256(); err != nil || sum != sha256.Sum256(nil) {
		t.Fatalf("SHA256 = %x, %v", sum, err)
	}
	if sub, err := s.Sub(0, 0); err != nil || sub != (Segment{}) {
		t.Fatalf("Sub(0, 0) = %v, %v", sub, err)
	}
	if _, err := s.Sub(0, 1); !errors.Is(err, ErrRange) {
		t.Fatalf("Sub(0, 1) = %v", err)
	}
}

// Bytes, CopyTo, Checksum and SHA256 agree with os.ReadFile at odd offsets.
func TestReadPaths(t *testing.T) {
	const size = 3<<20 + 12345 // more than the 1 MiB checksum chunk
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f, want, _ := openFile(t, pattern(size), m.opts...)
			for _, r := range [][2]int64{{0, size}, {128, size - 256}, {1, 1}, {size - 1, 1}, {4095, 1<<20 + 2}, {size, 0}} {
				s, err := New(f, r[0], r[1])
				if err != nil {
					t.Fatal(err)
				}
				w := want[r[0] : r[0]+r[1]]
				b, err := s.Bytes()
				if err != nil || !bytes.Equal(b, w) {
					t.Fatalf("Bytes%v: %v", r, err)
				}
				dst := make([]byte, r[1]+10)
				if n, err := s.CopyTo(dst); n != int(r[1]) || err != nil || !bytes.Equal(dst[:n], w) {
					t.Fatalf("CopyTo%v = %d, %v", r, n, err)
				}
				if r[1] > 10 {
					short := make([]byte, 10)
					if n, err := s.CopyTo(short); n != 10 || err != nil || !bytes.Equal(short, w[:10]) {
						t.Fatalf("CopyTo(short)%v = %d, %v", r, n, err)
					}
				}
				sum, err := s.SHA256()
				if err != nil || sum != sha256.Sum256(w) {
					t.Fatalf("SHA256%v: %v", r, err)
				}
				if err := s.Touch(); err != nil {
					t.Fatalf("Touch%v: %v", r, err)
				}
			}
		})
	}
}

func TestBytesNoAlloc(t *testing.T) {
	f, _, _ := openFile(t, pattern(100000), mmapfile.WithMode(mmapfile.ModeWhole))
	if !f.ZeroCopy() {
		t.Skip("no zero-copy mapping on this platform")
	}
	s, _ := New(f, 4096+128, 50000)
	if a := testing.AllocsPerRun(100, func() { _, _ = s.Bytes() }); a != 0 {
		t.Errorf("Bytes allocates %.1f times", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _, _ = s.Float32() }); a != 0 {
		t.Errorf("Float32 (aligned) allocates %.1f times", a)
	}
}

func TestLock(t *testing.T) {
	f, _, _ := openFile(t, pattern(64<<10))
	s, _ := New(f, 100, 30000)
	if err := s.Lock(false); err != nil {
		t.Fatalf("best-effort Lock = %v", err)
	}
	if err := s.Unlock(); err != nil {
		t.Fatalf("Unlock = %v", err)
	}
	if err := s.Lock(true); err != nil {
		if !isLockRefusal(err) {
			t.Fatalf("strict Lock = %v, want nil or a refusal", err)
		}
		t.Logf("strict Lock refused: %v", err)
	} else {
		_ = s.Unlock()
	}
	f.Close()
	if err := s.Lock(false); !errors.Is(err, ErrClosed) {
		t.Fatalf("best-effort Lock after Close = %v, want ErrClosed", err)
	}
}

func TestIsLockRefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{syscall.EPERM, true}, {fmt.Errorf("mlock: %w", syscall.ENOMEM), true}, {syscall.EAGAIN, true},
		{syscall.EINVAL, false}, {ErrClosed, false}, {errors.New("x"), false},
	} {
		if got := isLockRefusal(c.err); got != c.want {
			t.Errorf("isLockRefusal(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Resident counts pages, Touch faults them in, and Release with
// DropPageCache empties the page cache for the segment's inner pages.
func TestResidentReleasePrefetch(t *testing.T) {
	const size = 2 << 20
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			f, want, _ := openFile(t, pattern(size), m.opts...)
			if w, err := os.OpenFile(f.Name(), os.O_RDWR, 0); err != nil {
				t.Fatal(err)
			} else if err := errors.Join(w.Sync(), w.Close()); err != nil {
				t.Fatal(err)
			}
			s, _ := New(f, 0, size)
			ps := f.PageSize()
			if err := s.Release(DropPageCache()); err != nil {
				t.Fatal(err)
			}
			r0, tot, err := s.Resident()
			if err != nil || tot != size/ps {
				t.Fatalf("Resident = %d/%d, %v", r0, tot, err)
			}
			if err := s.Prefetch(); err != nil {
				t.Fatal(err)
			}
			if err := s.Touch(); err != nil {
				t.Fatal(err)
			}
			r1, _, _ := s.Resident()
			if err := s.Release(DropPageCache()); err != nil {
				t.Fatal(err)
			}
			r2, _, _ := s.Resident()
			t.Logf("resident: dropped %d, touched %d, released %d of %d", r0, r1, r2, tot)
			if f.Mode() == mmapfile.ModeCopy {
				if r1 != 0 {
					t.Fatalf("copy mode reports %d resident", r1)
				}
				return
			}
			if r1 != tot {
				t.Errorf("after Touch %d/%d resident", r1, tot)
			}
			if r0 > tot/2 || r2 > tot/2 {
				t.Errorf("after Release(DropPageCache) %d and %d of %d resident", r0, r2, tot)
			}
			if b, _ := s.Bytes(); !bytes.Equal(b, want) {
				t.Fatal("view changed after Release")
			}
		})
	}
}

// Release of a 128-byte-aligned segment drops the pages wholly inside it
// from the process and keeps those it shares with its neighbours (checked
// in the page tables through /proc/self/pagemap), and the view stays valid.
func TestReleaseKeepsNeighbours(t *testing.T) {
	if e := memstat.Emulator(); e != "" {
		t.Skip("pagemap shows host addresses under " + e)
	}
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			f, want, _ := openFile(t, pattern(1<<20), m.opts...)
			if !f.ZeroCopy() {
				t.Skip("no zero-copy mapping on this platform")
			}
			ps := int64(f.PageSize())
			all, _ := New(f, 0, f.Len())
			view, _ := all.Bytes()
			if err := all.Touch(); err != nil {
				t.Fatal(err)
			}
			present := func() []bool {
				p, err := memstat.Present(view[:8*ps])
				if errors.Is(err, errors.ErrUnsupported) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			for i, p := range present() {
				if !p {
					t.Fatalf("page %d not present after Touch", i)
				}
			}
			s, _ := New(f, ps+128, 4*ps) // covers pages 1..5, wholly contains 2..4
			if err := s.Release(); err != nil {
				t.Fatal(err)
			}
			for i, p := range present() {
				if wantDropped := i >= 2 && i <= 4; p == wantDropped {
					t.Errorf("page %d: present=%v after Release, want dropped=%v", i, p, wantDropped)
				}
			}
			if !bytes.Equal(view, want) {
				t.Fatal("view changed after Release")
			}
			for i, p := range present()[:8] {
				if !p {
					t.Errorf("page %d not faulted back in by reading the view", i)
				}
			}
		})
	}
}
