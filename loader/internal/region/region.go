// Package region reads the metadata region of a model file (headers and
// FlatBuffer) for a format package.
//
// The region is read once, at Open, and no view handed out points into it.
// A small region is read with ReadAt into a pooled buffer, so that the
// mapping is never touched and Close has no page to tear down; a larger one,
// or one of a File in memory, is read in place. A format package reads its
// first bytes with Head and its region with Range, which reads only what
// Head did not.
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

// get returns a buffer of at least n bytes, from the pool when it has one.
func get(n int64) *[]byte {
	buf, _ := pool.Get().(*[]byte)
	if buf == nil || int64(len(*buf)) < n {
		s := make([]byte, max(n, minBuf))
		buf = &s
	}
	return buf
}

// Read returns the n bytes of mf at off: read with ReadAt into a pooled
// buffer when mf is not in memory and n <= Max (buf; hand it back with Put
// once nothing reads b), else viewed in place (buf nil).
func Read(mf *mmapfile.File, off, n int64) (b []byte, buf *[]byte, err error) {
	if mf.Mode() == mmapfile.ModeMemory || n < 0 || n > Max {
		b, err = mf.View(off, n)
		return b, nil, err
	}
	buf = get(n)
	b = (*buf)[:n:n]
	if _, err := mf.ReadAt(b, off); err != nil {
		Put(buf)
		return nil, nil, err
	}
	return b, buf, nil
}

// HeadLen is how many bytes Head reads: enough for every header, and for
// a small model's whole region, in one system call, and no more than the
// first page the headers are on (which the kernel reads whole anyway), so
// that Open reads no byte of the weights that follow a small region.
const HeadLen = 4 << 10

// Head returns the first min(HeadLen, mf.Len()) bytes of mf, as Read does:
// a format package parses its header from them and passes them to Range
// for its region, which then reads only what they do not cover (for a
// small region nothing). known, if not empty, is what the caller already
// read of them (a format sniffer's read: the file's first bytes): they
// are copied, and only the rest is read.
func Head(mf *mmapfile.File, known []byte) (head []byte, buf *[]byte, err error) {
	n := min(mf.Len(), HeadLen)
	k := min(int64(len(known)), n)
	if k == 0 || mf.Mode() == mmapfile.ModeMemory {
		return Read(mf, 0, n)
	}
	buf = get(n)
	copy(*buf, known[:k])
	if k < n {
		if _, err := mf.ReadAt((*buf)[k:n], k); err != nil {
			Put(buf)
			return nil, nil, err
		}
	}
	return (*buf)[:n:n], buf, nil
}

// Range returns the n bytes of mf at off, as Read does, given head and
// buf from Head (which it takes over: the caller puts only the buffer
// Range returns). What head covers is not read again: a range within it is
// a slice of its buffer, one that starts within it is completed in place
// (in a larger buffer when buf is too small).
func Range(mf *mmapfile.File, head []byte, buf *[]byte, off, n int64) ([]byte, *[]byte, error) {
	h := int64(len(head))
	switch {
	case buf == nil || off < 0 || n < 0 || off > h || off+n > Max:
		// In memory, not starting within the head, or too large to read.
		Put(buf)
		return Read(mf, off, n)
	case off+n <= h:
		return (*buf)[off : off+n : off+n], buf, nil
	}
	if int64(len(*buf)) < off+n {
		small := buf
		buf = get(off + n)
		copy(*buf, head)
		Put(small)
	}
	if _, err := mf.ReadAt((*buf)[h:off+n], h); err != nil {
		Put(buf)
		return nil, nil, err
	}
	return (*buf)[off : off+n : off+n], buf, nil
}

// Put hands a buffer from Read back to the pool; nil is ignored.
func Put(buf *[]byte) {
	if buf == nil {
		return
	}
	pool.Put(buf)
}
