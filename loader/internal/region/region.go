// Package region reads the metadata region of a model file (headers and
// FlatBuffer) for a format package.
//
// The region is read once, whole, at Open, and no view handed out points
// into it: every tensor, segment and blob is a segment of the file. So when
// it is small it is read with ReadAt (pread) into a pooled buffer instead of
// through the mapping: from the page cache the copy costs less than the page
// faults would, and the mapping is then never touched, so munmap at Close
// has no page to tear down and no other CPU's TLB to flush (BENCHMARKS.md,
// session 8: Open and Close of a 1024-tensor .pte both faster). A larger
// region is read in place: copying it would
// cost more than its faults, and keep a heap copy of it. A File that holds
// its bytes in memory (mmapfile.NewBytes) is always read in place.
//
// Built with -tags edgeload_checked (CI runs the format packages' tests and
// fuzz targets so), Put fills a buffer with 0xA5 before pooling it, so that
// a reader that kept part of it reads garbage its tests see.
package region

import (
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
)

// Max is the largest region read into a buffer.
const Max = 256 << 10

// minBuf is the least a buffer holds (a pooled buffer then serves most
// programs).
const minBuf = 64 << 10

var pool sync.Pool // of *[]byte

// Read returns the n bytes of mf at off: read with ReadAt into a pooled
// buffer when mf is not in memory and n <= Max (buf; hand it back with Put
// once nothing reads b), else viewed in place (buf nil).
func Read(mf *mmapfile.File, off, n int64) (b []byte, buf *[]byte, err error) {
	if mf.Mode() == mmapfile.ModeMemory || n < 0 || n > Max {
		b, err = mf.View(off, n)
		return b, nil, err
	}
	buf, _ = pool.Get().(*[]byte)
	if buf == nil || int64(len(*buf)) < n {
		s := make([]byte, max(n, minBuf))
		buf = &s
	}
	b = (*buf)[:n:n]
	if _, err := mf.ReadAt(b, off); err != nil {
		Put(buf)
		return nil, nil, err
	}
	return b, buf, nil
}

// Put hands a buffer from Read back to the pool; nil is ignored.
func Put(buf *[]byte) {
	if buf == nil {
		return
	}
	if poison {
		for i := range *buf {
			(*buf)[i] = 0xA5
		}
	}
	pool.Put(buf)
}
