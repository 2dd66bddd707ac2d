package region

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/readcount"
	"github.com/edgeload/edgeload/mmapfile"
)

func TestRead(t *testing.T) {
	data := make([]byte, Max+4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := mmapfile.Open(path, mmapfile.WithMode(mmapfile.ModeWhole))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := mmapfile.NewBytes(data)
	for _, c := range []struct {
		name    string
		f       *mmapfile.File
		off, n  int64
		wantBuf bool
	}{
		{"small from a file", f, 100, 5000, true},
		{"Max from a file", f, 0, Max, true},
		{"over Max from a file: in place", f, 0, Max + 1, false},
		{"in memory: in place", mem, 100, 5000, false},
	} {
		b, buf, err := Read(c.f, c.off, c.n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (buf != nil) != c.wantBuf {
			t.Errorf("%s: pooled buffer %v, want %v", c.name, buf != nil, c.wantBuf)
		}
		if !bytes.Equal(b, data[c.off:c.off+c.n]) || int64(cap(b)) != c.n {
			t.Errorf("%s: wrong bytes (len %d cap %d)", c.name, len(b), cap(b))
		}
		Put(buf)
	}
	// A buffer back from the pool holds the new read, whatever it held.
	_, buf1, _ := Read(f, 0, 3000)
	Put(buf1)
	b2, buf2, err := Read(f, 3000, 3000)
	if err != nil || !bytes.Equal(b2, data[3000:6000]) {
		t.Fatalf("second read: %v", err)
	}
	Put(buf2)
	// Past the end: the error, no buffer.
	if _, buf, err := Read(f, int64(len(data))-10, 100); err == nil || buf != nil {
		t.Errorf("read past the end = %v, buffer %v", err, buf != nil)
	}
}

// Range reads only what Head did not: nothing for a range within the
// first HeadLen bytes, the rest for one that starts in them, all of it
// for one that starts after them; the bytes are the file's in each case.
func TestHeadRange(t *testing.T) {
	data := make([]byte, Max+2*HeadLen)
	for i := range data {
		data[i] = byte(i*13 + i>>8)
	}
	for _, c := range []struct {
		name     string
		off, n   int64
		reads    int  // ReadAt calls, Head's included
		inPlace  bool // no pooled buffer (over Max)
		sameBuf  int  // Head's buffer: 1 yes, 0 no, -1 either (back from the pool)
		fileSize int64
	}{
		{"within the head", 100, 2000, 1, false, 1, 0},
		{"the whole head", 0, HeadLen, 1, false, 1, 0},
		{"past the head", 0, 30000, 2, false, 1, 0},
		{"past a pooled buffer", 8, minBuf + 1000, 2, false, 0, 0}, // (the pool emptied first)
		{"after the head", HeadLen + 10, 100, 2, false, -1, 0},
		// (a File reading through a ReaderAt copies its views: a read)
		{"over Max", 0, Max + 1, 2, true, 0, 0},
		{"a file shorter than HeadLen", 10, 90, 1, false, 1, 1000},
	} {
		if c.sameBuf == 0 {
			// Empty the pool (and its victim cache), so that Head's buffer
			// is a new one of minBuf bytes.
			runtime.GC()
			runtime.GC()
		}
		size := int64(len(data))
		if c.fileSize > 0 {
			size = c.fileSize
		}
		cr := &readcount.ReaderAt{R: bytes.NewReader(data[:size])}
		mf := mmapfile.NewReaderAt(cr, size)
		head, hbuf, err := Head(mf, nil)
		if err != nil || int64(len(head)) != min(size, HeadLen) || !bytes.Equal(head, data[:len(head)]) {
			t.Fatalf("%s: Head: %d bytes, %v", c.name, len(head), err)
		}
		b, buf, err := Range(mf, head, hbuf, c.off, c.n)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(b, data[c.off:c.off+c.n]) || int64(cap(b)) != c.n {
			t.Errorf("%s: wrong bytes (len %d cap %d)", c.name, len(b), cap(b))
		}
		if cr.Reads != c.reads {
			t.Errorf("%s: %d reads, want %d", c.name, cr.Reads, c.reads)
		}
		if same := buf == hbuf; (buf == nil) != c.inPlace || c.sameBuf >= 0 && same != (c.sameBuf == 1) {
			t.Errorf("%s: buffer %p (Head's %p), want in place %v, Head's %d", c.name, buf, hbuf, c.inPlace, c.sameBuf)
		}
		Put(buf)
	}
	// In memory, both are views in place.
	mem := mmapfile.NewBytes(data)
	head, hbuf, _ := Head(mem, nil)
	if b, buf, err := Range(mem, head, hbuf, 5, 50000); err != nil || hbuf != nil || buf != nil || &b[0] != &data[5] {
		t.Errorf("in memory: Range not a view in place (%v)", err)
	}
	// Past the end of the file: the error, no buffer.
	mf := mmapfile.NewReaderAt(bytes.NewReader(data[:9000]), 9000)
	head, hbuf, _ = Head(mf, nil)
	if _, buf, err := Range(mf, head, hbuf, 100, 10000); err == nil || buf != nil {
		t.Errorf("range past the end = %v, buffer %v", err, buf != nil)
	}
}

// Head copies what the caller already read of the first page and reads
// only the rest.
func TestHeadKnown(t *testing.T) {
	data := make([]byte, 3*HeadLen)
	for i := range data {
		data[i] = byte(i*31 + 7)
	}
	for _, c := range []struct {
		name  string
		size  int64
		known int
		reads int
	}{
		{"nothing known", int64(len(data)), 0, 1},
		{"a sniffer's 8 bytes", int64(len(data)), 8, 1},
		{"the whole head", int64(len(data)), HeadLen, 0},
		{"more than the head", int64(len(data)), 2 * HeadLen, 0},
		{"a small file, whole", 100, 100, 0},
	} {
		cr := &readcount.ReaderAt{R: bytes.NewReader(data[:c.size])}
		mf := mmapfile.NewReaderAt(cr, c.size)
		known := bytes.Clone(data[:c.known])
		head, buf, err := Head(mf, known)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := min(c.size, HeadLen); !bytes.Equal(head, data[:want]) || int64(cap(head)) != want {
			t.Errorf("%s: %d bytes (cap %d), not the file's first %d", c.name, len(head), cap(head), want)
		}
		if len(head) > 0 && len(known) > 0 && &head[0] == &known[0] {
			t.Errorf("%s: the head is the caller's slice, not a copy", c.name)
		}
		if cr.Reads != c.reads {
			t.Errorf("%s: %d reads, want %d", c.name, cr.Reads, c.reads)
		}
		Put(buf)
	}
}
