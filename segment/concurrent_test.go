package segment

import (
	"bytes"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

// 32 goroutines read segments (views, copies, checksums, typed views) while
// another releases, drops the page cache and prefetches the same pages.
// Every read must see the file's bytes; run with -race.
func TestConcurrentReadRelease(t *testing.T) {
	const (
		size    = 2 << 20
		readers = 32
		iters   = 40
	)
	for _, m := range modes[:2] {
		t.Run(m.name, func(t *testing.T) {
			f, want, _ := openFile(t, pattern(size), m.opts...)
			all, _ := New(f, 0, size)
			// 128-byte-aligned tensors of assorted sizes, as in real files.
			var segs []Segment
			for off := int64(0); off+128 <= size; {
				n := min(int64(128*(1+len(segs)%97)), size-off)
				s, err := New(f, off, n)
				if err != nil {
					t.Fatal(err)
				}
				segs = append(segs, s)
				off += (n + 127) &^ 127
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the releaser
				defer wg.Done()
				for i := 0; !stop.Load(); i++ {
					var err error
					switch i % 5 {
					case 0:
						err = all.Release()
					case 1:
						err = all.Release(DropPageCache())
					case 2:
						err = all.Prefetch()
					case 3:
						err = segs[i%len(segs)].Release()
					case 4:
						_, _, err = all.Resident()
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
			var rwg sync.WaitGroup
			for r := range readers {
				rwg.Add(1)
				go func() {
					defer rwg.Done()
					buf := make([]byte, 128*97)
					for i := range iters {
						s := segs[(r*7919+i*104729)%len(segs)]
						w := want[s.Offset() : s.Offset()+s.Len()]
						b, err := s.Bytes()
						if err != nil || !bytes.Equal(b, w) {
							t.Errorf("reader %d: Bytes of %v differ (%v)", r, s, err)
							return
						}
						if n, err := s.CopyTo(buf); err != nil || !bytes.Equal(buf[:n], w) {
							t.Errorf("reader %d: CopyTo of %v differs (%v)", r, s, err)
							return
						}
						if sum, err := s.SHA256(); err != nil || sum != sha256.Sum256(w) {
							t.Errorf("reader %d: SHA256 of %v differs (%v)", r, s, err)
							return
						}
						if v, _, err := s.Uint16(); err != nil || len(v) != len(w)/2 || (len(v) > 0 && v[0] != uint16(w[0])|uint16(w[1])<<8) {
							t.Errorf("reader %d: Uint16 of %v differs (%v)", r, s, err)
							return
						}
					}
				}()
			}
			rwg.Wait()
			stop.Store(true)
			wg.Wait()
			if sum, err := all.SHA256(); err != nil || sum != sha256.Sum256(want) {
				t.Fatalf("SHA256 of the whole file after the run: %v", err)
			}
		})
	}
}

// Concurrent Views in windowed mode map each window once.
func TestConcurrentWindows(t *testing.T) {
	f, want, _ := openFile(t, pattern(1<<20), mmapfile.WithMode(mmapfile.ModeWindowed))
	var wg sync.WaitGroup
	for r := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 64 {
				off := int64((r+i)%64) * 16384
				s, _ := New(f, off+128, 8192)
				b, err := s.Bytes()
				if err != nil || !bytes.Equal(b, want[off+128:off+128+8192]) {
					t.Errorf("View at %d: %v", off+128, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
