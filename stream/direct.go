package stream

import (
	"cmp"
	"fmt"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
	"github.com/edgeload/edgeload/segment"
)

// direct is the direct reader: every file's direct-I/O descriptor and the
// buffer the streamed items are read into, used as a ring.
type direct struct {
	r     map[*mmapfile.File]*mmapfile.Direct
	align int64
	buf   []byte         // from platform.Alloc
	view  *mmapfile.File // buf, for the items' segments
	ring  ring
}

// openDirect opens every file of the items for direct reads.
func openDirect(items []Item) (*direct, error) {
	d := &direct{r: make(map[*mmapfile.File]*mmapfile.Direct), align: 1}
	for _, it := range items {
		f := it.Data.File()
		if d.r[f] != nil {
			continue
		}
		r, err := f.OpenDirect()
		if err != nil {
			d.close()
			return nil, err
		}
		d.r[f] = r
		d.align = max(d.align, int64(r.Align()))
	}
	return d, nil
}

// alloc allocates the buffer: room bytes, or fewer when one pass's
// streamed items take less.
func (d *direct) alloc(order []work, room int64) error {
	var sum int64
	for i := range order {
		if !order[i].retained {
			sum += order[i].cover
		}
	}
	n := min(room, sum) &^ (d.align - 1)
	if n <= 0 {
		return nil
	}
	if int64(int(n)) != n {
		return fmt.Errorf("a read buffer of %d bytes does not fit in the address space", n)
	}
	b, err := platform.Alloc(int(n))
	if err != nil {
		return err
	}
	d.buf, d.view, d.ring = b, mmapfile.NewBytes(b), ring{size: n}
	return nil
}

// read reads item w into the buffer at offset at and returns the view of
// its bytes there; an empty item (no room, at is -1) reads nothing and is
// its own empty view of the file, as the mapped reader hands it out.
func (d *direct) read(w *work, at int64) (segment.Segment, error) {
	if w.cover == 0 {
		return w.Data, nil
	}
	r := d.r[w.Data.File()]
	if testHookRead != nil {
		testHookRead("direct", w.Data.File(), w.Data.Offset(), w.Data.Len())
	}
	if _, err := r.Read(d.buf[at:at+w.cover], w.Data.Offset(), w.Data.Len()); err != nil {
		return segment.Segment{}, err
	}
	skew, _ := r.Cover(w.Data.Offset(), w.Data.Len())
	return segment.New(d.view, at+skew, w.Data.Len())
}

// close closes the descriptors and frees the buffer; a nil direct reader
// has nothing to close.
func (d *direct) close() error {
	if d == nil {
		return nil
	}
	var first error
	for _, r := range d.r {
		first = cmp.Or(first, r.Close())
	}
	d.r = nil
	if d.buf != nil {
		first = cmp.Or(first, platform.Unmap(d.buf))
		d.buf, d.view = nil, nil
	}
	return first
}

// ring hands out space of a buffer in order and takes it back in the same
// order.
type ring struct {
	size    int64
	live    [][2]int64 // [start, end) of every allocation, oldest first
	touched int64      // the end of the highest allocation so far
}

// alloc returns the offset of n free bytes, or false when they do not fit
// now. An allocation of 0 bytes takes none and returns -1.
func (r *ring) alloc(n int64) (int64, bool) {
	if n == 0 {
		return -1, true
	}
	// The free space is [head, size) and [0, tail) when the allocations do
	// not wrap, [head, tail) when they do or there are none.
	tail, head := r.size, int64(0)
	if len(r.live) > 0 {
		tail, head = r.live[0][0], r.live[len(r.live)-1][1]
	}
	var at int64
	switch {
	case head > tail && r.size-head >= n, head <= tail && tail-head >= n:
		at = head
	case head > tail && tail >= n:
		at = 0
	default:
		return 0, false
	}
	r.live = append(r.live, [2]int64{at, at + n})
	r.touched = max(r.touched, at+n)
	return at, true
}

// free takes back the oldest allocation.
func (r *ring) free() {
	r.live = r.live[1:]
	if len(r.live) == 0 {
		r.live = r.live[:0:0]
	}
}
