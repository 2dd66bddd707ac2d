package pte

import (
	"sync"

	"github.com/edgeload/edgeload/mmapfile"
)

// The program region (the headers and the FlatBuffer) is metadata that Open
// reads once, whole, and that no view handed out points into (every tensor,
// segment and delegate blob is a segment of the file). When it is small,
// newProgram reads it with ReadAt (pread) into a buffer that Close hands
// back to a pool, instead of reading it through the mapping: from the page
// cache the copy costs less than the page faults would, and the mapping is
// then never touched, so munmap at Close has no page to tear down and no
// other CPU's TLB to flush (pte-4G, 1024 tensors, minima over 5,000 loads:
// pte.NewFile 32.5 -> 29.3 us, Close 15.2 -> 4.6-7.3 us). A larger region
// is read in place: copying it would cost more than its faults, and keep a
// heap copy of it. A File that holds its bytes in memory (NewBytes) is
// always read in place.

// maxReadRegion is the largest program region read into a buffer.
const maxReadRegion = 256 << 10

// minRegionBuf is the least a region buffer holds (a pooled buffer then
// serves most programs).
const minRegionBuf = 64 << 10

var regionPool sync.Pool // of *[]byte

// readRegion returns the first n bytes of mf, read into a pooled buffer
// (release it with putRegion) when mf is not in memory and n <= maxReadRegion,
// else viewed in place (buf nil).
func readRegion(mf *mmapfile.File, n int64) (b []byte, buf *[]byte, err error) {
	if mf.Mode() == mmapfile.ModeMemory || n > maxReadRegion {
		b, err = mf.View(0, n)
		return b, nil, err
	}
	buf, _ = regionPool.Get().(*[]byte)
	if buf == nil || int64(len(*buf)) < n {
		s := make([]byte, max(n, minRegionBuf))
		buf = &s
	}
	b = (*buf)[:n:n]
	if _, err := mf.ReadAt(b, 0); err != nil {
		return nil, nil, err
	}
	return b, buf, nil
}

// putRegion hands a buffer from readRegion back to the pool.
func putRegion(buf *[]byte) {
	if buf != nil {
		regionPool.Put(buf)
	}
}
