package mmapfile

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
)

// ErrCompressed is returned (wrapped in an *fs.PathError naming
// "ARCHIVE!/ENTRY") for a zip entry stored compressed: a model is mapped in
// place or not at all.
var ErrCompressed = errors.New("zip entry is compressed")

// WithSection makes the File the bytes [off, off+n) of the file: Len is
// n, every offset given to or reported by its methods is relative to off,
// and nothing outside the section can be viewed or read through it. The
// mapping starts at the page boundary below off (see [File.Section]);
// bytes outside the section that share its first or last page are mapped
// but never handed out, and Release never drops such a shared page. Open
// fails with an error wrapping ErrRange when the section does not lie
// inside the file. On Android, an AssetFileDescriptor's start offset and
// length are off and n.
func WithSection(off, n int64) Option {
	return func(c *config) { c.section, c.off, c.n, c.entry = true, off, n, "" }
}

// WithZipEntry makes the File the data of the named entry of the zip
// archive (APK, JAR, AAR) being opened, as a section (see WithSection),
// named "ARCHIVE!/ENTRY" unless WithName says otherwise. The entry must be
// stored uncompressed: a compressed or encrypted one is an error wrapping
// ErrCompressed that says how to store it, a missing one an error wrapping
// fs.ErrNotExist.
func WithZipEntry(name string) Option {
	return func(c *config) { c.section, c.entry = true, name }
}

// locate resolves a zip entry to its section of the archive r (size bytes).
func (c *config) locate(r io.ReaderAt, path string, size int64) error {
	if c.entry == "" {
		return nil
	}
	off, n, err := ZipEntry(r, size, path, c.entry)
	if err != nil {
		return err
	}
	c.off, c.n = off, n
	if c.name == "" {
		c.name = ArchivePath(path, c.entry)
	}
	return nil
}

// ArchivePath returns the name of an archive entry in the form the command
// accepts and WithZipEntry reports: "zipPath!/entryName", the convention
// of Android's linker for libraries inside APKs.
func ArchivePath(zipPath, entryName string) string { return zipPath + archiveSep + entryName }

// archiveSep separates an archive's path from an entry's name.
const archiveSep = "!/"

// SplitArchivePath splits a path of the form ARCHIVE!/ENTRY (ArchivePath's
// form). A path that names an existing file is a file, "!/" or not;
// otherwise the archive is the first prefix before a "!/" that is an
// existing regular file.
func SplitArchivePath(path string) (archive, entry string, ok bool) {
	if !strings.Contains(path, archiveSep) {
		return "", "", false
	}
	if _, err := os.Stat(path); err == nil {
		return "", "", false
	}
	for i := 0; ; {
		j := strings.Index(path[i:], archiveSep)
		if j < 0 {
			return "", "", false
		}
		i += j
		if fi, err := os.Stat(path[:i]); err == nil && fi.Mode().IsRegular() {
			return path[:i], path[i+len(archiveSep):], true
		}
		i += len(archiveSep)
	}
}

// OpenPath opens path with Open, or, when it has the form ARCHIVE!/ENTRY
// (SplitArchivePath), the entry stored in that archive (WithZipEntry).
func OpenPath(path string, opts ...Option) (*File, error) {
	if a, e, ok := SplitArchivePath(path); ok {
		return Open(a, append(opts[:len(opts):len(opts)], WithZipEntry(e))...)
	}
	return Open(path, opts...)
}

// ZipEntry finds the named entry of the zip archive r (size bytes, named
// zipPath in errors) with archive/zip and returns the byte range of its
// data. It fails with an error wrapping fs.ErrNotExist when there is no
// such entry, and with one wrapping ErrCompressed, which says how to store
// it uncompressed, when the entry is compressed or encrypted.
func ZipEntry(r io.ReaderAt, size int64, zipPath, entryName string) (off, n int64, err error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return 0, 0, fmt.Errorf("mmapfile: %s: %w", zipPath, err)
	}
	name := ArchivePath(zipPath, entryName)
	for _, f := range zr.File {
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
			return 0, 0, fmt.Errorf("mmapfile: %s: %w: stored entry with %d bytes stored for %d", name, zip.ErrFormat, f.CompressedSize64, f.UncompressedSize64)
		}
		off, err := f.DataOffset()
		if err != nil {
			return 0, 0, fmt.Errorf("mmapfile: %s: %w: reading the entry's local header: %w", name, zip.ErrFormat, err)
		}
		n := int64(f.UncompressedSize64)
		if off < 0 || off > size || n > size-off {
			return 0, 0, fmt.Errorf("mmapfile: %s: %w: its %d bytes at offset %d run past the end of the %d-byte archive", name, ErrTruncated, n, off, size)
		}
		return off, n, nil
	}
	return 0, 0, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w: no such entry in the archive", fs.ErrNotExist)}
}

// storeHint says how to keep a model uncompressed in an archive.
const storeHint = "store it uncompressed (zip -0, or noCompress in an Android build's androidResources)"
