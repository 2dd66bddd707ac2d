package repack

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/segment"
)

// chunkSize is how many bytes of weights one write copies from the mapping.
const chunkSize = 1 << 20

// outputs are the temporary files of one Repack, renamed into place by
// commit or removed by abort, and the temporary directories that hold an
// output and the files beside it that it names (a sharded checkpoint's
// index and shards).
type outputs struct {
	files []*outFile
	dirs  []string
	perm  os.FileMode // the mode the files are created with (less the umask)
	sync  bool        // fsync before the rename
}

// outFile is a temporary file being written sequentially.
type outFile struct {
	f    *os.File
	tmp  string
	dst  string
	pos  int64
	done bool
	// link: the main output links it as a data file.
	link bool
	// writeback hands every writebackChunk bytes written to the kernel's
	// writeback; flushed is the end of the range last handed.
	writeback bool
	flushed   int64
}

// writebackChunk is how many written bytes are handed to the kernel's
// writeback at a time.
const writebackChunk = 16 << 20

// create opens a temporary file for dst: in dir, under dst's name, when
// dir is set (a directory from tempDir); else in dst's directory, with
// the permissions o.perm less the umask.
func (o *outputs) create(dst, dir string) (*outFile, error) {
	if err := checkDst(dst); err != nil {
		return nil, err
	}
	var f *os.File
	var err error
	if dir != "" {
		f, err = os.OpenFile(filepath.Join(dir, filepath.Base(dst)), os.O_RDWR|os.O_CREATE|os.O_EXCL, o.perm)
	} else {
		d, base := filepath.Split(dst)
		f, err = createTemp(cmp.Or(d, "."), "."+base+".repack-", o.perm)
	}
	if err != nil {
		return nil, fmt.Errorf("repack: %w", err)
	}
	of := &outFile{f: f, tmp: f.Name(), dst: dst, writeback: o.sync}
	o.files = append(o.files, of)
	return of, nil
}

// checkDst refuses a destination whose directory does not exist or that
// is a directory.
func checkDst(dst string) error {
	if _, err := os.Stat(cmp.Or(filepath.Dir(dst), ".")); err != nil {
		return fmt.Errorf("repack: %s: %w", dst, err)
	}
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		return fmt.Errorf("repack: %s is a directory", dst)
	}
	return nil
}

// tempDir creates a temporary directory beside dst, for dst and the files
// it names beside it.
func (o *outputs) tempDir(dst string) (string, error) {
	if err := checkDst(dst); err != nil {
		return "", err
	}
	d, base := filepath.Split(dst)
	dir, err := os.MkdirTemp(cmp.Or(d, "."), "."+base+".repack-")
	if err != nil {
		return "", fmt.Errorf("repack: %w", err)
	}
	o.dirs = append(o.dirs, dir)
	return dir, nil
}

// commit syncs (unless told not to) and closes every file, then renames
// them into place.
func (o *outputs) commit() error {
	for _, of := range o.files {
		if o.sync {
			if err := of.f.Sync(); err != nil {
				return fmt.Errorf("repack: %s: %w", of.dst, err)
			}
		}
		if err := of.f.Close(); err != nil {
			return fmt.Errorf("repack: %s: %w", of.dst, err)
		}
		of.done = true
	}
	for _, of := range o.files {
		if err := os.Rename(of.tmp, of.dst); err != nil {
			return fmt.Errorf("repack: %w", err)
		}
		of.tmp = ""
	}
	if o.sync {
		syncDirs(o.files)
	}
	o.removeDirs()
	return nil
}

// abort removes every temporary file not yet renamed, and the temporary
// directories.
func (o *outputs) abort() {
	for _, of := range o.files {
		if !of.done {
			of.f.Close()
			of.done = true
		}
		if of.tmp != "" {
			os.Remove(of.tmp)
			of.tmp = ""
		}
	}
	o.removeDirs()
}

// removeDirs removes the temporary directories, which the renames (or
// abort) emptied.
func (o *outputs) removeDirs() {
	for _, d := range o.dirs {
		os.Remove(d)
	}
	o.dirs = nil
}

// syncDirs syncs the directories the files were renamed into, best effort
// (not every system can sync a directory).
func syncDirs(files []*outFile) {
	seen := map[string]bool{}
	for _, of := range files {
		dir := filepath.Dir(of.dst)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
}

var zeros [MaxAlign]byte

// write appends b.
func (w *outFile) write(b []byte) error {
	n, err := w.f.Write(b)
	w.pos += int64(n)
	if err != nil {
		return fmt.Errorf("repack: %s: %w", w.dst, err)
	}
	w.kick()
	return nil
}

// kick hands the bytes written since the last call to the kernel's
// writeback, every writebackChunk bytes.
func (w *outFile) kick() {
	if w.writeback && w.pos-w.flushed >= writebackChunk {
		startWriteback(w.f, w.flushed, w.pos-w.flushed)
		w.flushed = w.pos
	}
}

// padTo appends zeros up to offset off.
func (w *outFile) padTo(off int64) error {
	if off < w.pos {
		return fmt.Errorf("repack: internal error: %s: writing at %d behind %d", w.dst, off, w.pos)
	}
	for w.pos < off {
		n := min(off-w.pos, int64(len(zeros)))
		if err := w.write(zeros[:n]); err != nil {
			return err
		}
	}
	return nil
}

// copySeg appends the bytes of s and reports them to r.progress as they
// are copied: with copy_file_range from the file s is a view of where the
// system has it (Linux), else chunk by chunk from the mapping.
func (w *outFile) copySeg(r *run, s segment.Segment) error {
	n := s.Len()
	var start int64
	if mf := s.File(); mf != nil && n > 0 && r.kernelCopy && mf.Fd() != ^uintptr(0) {
		base, _ := mf.Section()
		copied, ok, err := copyFile(r, w, mf.Fd(), base+s.Offset(), n)
		if err != nil {
			return fmt.Errorf("repack: copying %d bytes at %d of %s to %s: %w", n, s.Offset(), mf.Name(), w.dst, err)
		}
		if !ok {
			r.kernelCopy = false
		}
		start = copied
	}
	for off := start; off < n; off += chunkSize {
		c, err := s.Sub(off, min(chunkSize, n-off))
		if err != nil {
			return err
		}
		b, err := c.Bytes()
		if err != nil {
			return err
		}
		if err := w.write(b); err != nil {
			return err
		}
		r.progress(int64(len(b)))
	}
	return nil
}

// errShortCopy is returned when the input ends before a segment does (it
// shrank after it was opened).
var errShortCopy = fmt.Errorf("input file shrank while it was copied: %w", loader.ErrTruncated)

// errInternal reports a layout the writer got wrong.
var errInternal = errors.New("repack: internal error")

// createTemp creates a new file dir/prefix<random> with the given
// permissions (less the umask), failing rather than reusing a name.
func createTemp(dir, prefix string, perm os.FileMode) (*os.File, error) {
	var rnd [8]byte
	for range 100 {
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(dir, prefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("cannot create a temporary file in %s", dir)
}
