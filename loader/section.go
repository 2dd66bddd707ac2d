package loader

import (
	"archive/zip"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"

	"github.com/edgeload/edgeload/loader/ptd"
	"github.com/edgeload/edgeload/mmapfile"
)

// ErrCompressed is returned (wrapped in an *fs.PathError naming
// "ARCHIVE!/ENTRY") by OpenZipEntry and ZipEntry for an entry stored
// compressed: a model is mapped in place or not at all.
var ErrCompressed = errors.New("zip entry is compressed")

// OpenFile opens the model in a file the caller has already opened, such
// as a descriptor another process passed (os.NewFile). The Model maps and
// reads through f but does not close it: f must stay open until the Model
// is closed.
func OpenFile(f *os.File, opts ...Option) (*Model, error) {
	c := collect(opts)
	mf, err := mmapfile.NewFile(f, c.mmap...)
	if err != nil {
		return nil, err
	}
	return newOwned(mf, mf.Name(), opts)
}

// OpenSection opens the model stored in the bytes [off, off+n) of the file
// at path, mapped in place (see [mmapfile.OpenSection]). The model reads as
// if the section were a file of its own: every offset it reports (tensors,
// segments, errors) is relative to off, Size is n, and a tensor or segment
// that claims bytes past n is an error even where the file has them.
func OpenSection(path string, off, n int64, opts ...Option) (*Model, error) {
	c := collect(opts)
	mf, err := mmapfile.OpenSection(path, off, n, c.mmap...)
	if err != nil {
		return nil, err
	}
	return newOwned(mf, path, opts)
}

// NewSection is OpenSection for a file the caller has already opened, with
// OpenFile's ownership (f stays open until the Model is closed, which does
// not close it). On Android, an AssetFileDescriptor's descriptor, start
// offset and length are f, off and n.
func NewSection(f *os.File, off, n int64, opts ...Option) (*Model, error) {
	c := collect(opts)
	mf, err := mmapfile.NewSection(f, off, n, c.mmap...)
	if err != nil {
		return nil, err
	}
	return newOwned(mf, mf.Name(), opts)
}

// OpenZipEntry opens the model stored as the named entry of the zip
// archive (or APK, JAR, AAR) at zipPath. The entry must be stored
// uncompressed: it is then mapped in place, as OpenSection does, with
// offsets relative to the entry's first byte. A compressed entry is an
// error wrapping ErrCompressed, never a silent copy; a missing entry wraps
// ErrNotFound. The Model's Name is "zipPath!/entryName".
func OpenZipEntry(zipPath, entryName string, opts ...Option) (*Model, error) {
	off, n, err := ZipEntry(zipPath, entryName)
	if err != nil {
		return nil, err
	}
	name := ArchivePath(zipPath, entryName)
	c := collect(opts)
	mf, err := mmapfile.OpenSection(zipPath, off, n, append(c.mmap[:len(c.mmap):len(c.mmap)], mmapfile.WithName(name))...)
	if err != nil {
		return nil, err
	}
	return newOwned(mf, name, opts)
}

// ArchivePath returns the name of an archive entry in the form the
// command accepts and OpenZipEntry reports: "zipPath!/entryName", the
// convention of Android's linker for libraries inside APKs.
func ArchivePath(zipPath, entryName string) string { return zipPath + "!/" + entryName }

// ZipEntry finds the named entry of the zip archive at zipPath with
// archive/zip and returns the byte range of its data in the archive. It
// fails with an error wrapping ErrNotFound when there is no such entry,
// and with one wrapping ErrCompressed, which says how to store it
// uncompressed, when the entry is compressed or encrypted.
func ZipEntry(zipPath, entryName string) (off, n int64, err error) {
	zf, err := os.Open(zipPath)
	if err != nil {
		return 0, 0, err
	}
	defer zf.Close()
	fi, err := zf.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	r, err := zip.NewReader(zf, size)
	if err != nil {
		return 0, 0, fmt.Errorf("loader: %s: %w", zipPath, err)
	}
	name := ArchivePath(zipPath, entryName)
	for _, f := range r.File {
		if f.Name != entryName {
			continue
		}
		if f.Flags&0x1 != 0 {
			return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (encrypted); %s", ErrCompressed, storeHint)}
		}
		if f.Method != zip.Store {
			method := "deflate"
			if f.Method != zip.Deflate {
				method = fmt.Sprintf("method %d", f.Method)
			}
			return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%s, %d bytes for %d); edgeload maps a model in place and does not copy it out: %s",
				ErrCompressed, method, f.CompressedSize64, f.UncompressedSize64, storeHint)}
		}
		if f.UncompressedSize64 != f.CompressedSize64 || f.UncompressedSize64 > math.MaxInt64 {
			return 0, 0, fmt.Errorf("loader: %s: stored entry with %d bytes stored for %d: %w", name, f.CompressedSize64, f.UncompressedSize64, ErrMalformed)
		}
		off, err := f.DataOffset()
		if err != nil {
			return 0, 0, fmt.Errorf("loader: %s: %w: reading the entry's local header: %w", name, ErrMalformed, err)
		}
		n := int64(f.UncompressedSize64)
		if off < 0 || off > size || n > size-off {
			return 0, 0, fmt.Errorf("loader: %s: %w: its %d bytes at offset %d run past the end of the %d-byte archive", name, ErrTruncated, n, off, size)
		}
		return off, n, nil
	}
	return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w: no such entry in the archive", ErrNotFound)}
}

// storeHint says how to keep a model uncompressed in an archive.
const storeHint = "store it uncompressed (zip -0, or noCompress in an Android build's androidResources)"

// WithDataZipEntry is WithData for a .ptd stored uncompressed in a zip
// archive (see OpenZipEntry); the Model closes it.
func WithDataZipEntry(zipPath, entryName string) Option {
	return func(c *config) { c.dataSrc = append(c.dataSrc, dataSource{path: zipPath, entry: entryName, zip: true}) }
}

// WithDataSection is WithData for a .ptd stored in the bytes [off, off+n)
// of the file at path (see OpenSection); the Model closes it.
func WithDataSection(path string, off, n int64) Option {
	return func(c *config) { c.dataSrc = append(c.dataSrc, dataSource{path: path, off: off, n: n}) }
}

// dataSource is a .ptd inside another file.
type dataSource struct {
	path, entry string
	zip         bool
	off, n      int64
}

// open maps and parses the .ptd.
func (s dataSource) open(mopts []mmapfile.Option) (*ptd.File, string, error) {
	name := s.path
	off, n := s.off, s.n
	if s.zip {
		name = ArchivePath(s.path, s.entry)
		var err error
		if off, n, err = ZipEntry(s.path, s.entry); err != nil {
			return nil, name, err
		}
	}
	mf, err := mmapfile.OpenSection(s.path, off, n, append(mopts[:len(mopts):len(mopts)], mmapfile.WithName(name))...)
	if err != nil {
		return nil, name, err
	}
	d, err := ptd.NewFile(mf)
	if err != nil {
		mf.Close()
		return nil, name, err
	}
	return d, name, nil
}
