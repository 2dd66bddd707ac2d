package loader

import (
	"archive/zip"
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/edgeload/edgeload/mmapfile"
)

// ArchiveEntry is a file of a zip archive that holds models (a MediaPipe
// .task bundle, an APK), as ArchiveEntries lists it.
type ArchiveEntry struct {
	// Name is the entry's name: open it as ARCHIVE!/Name, or with
	// WithZipEntry(Name).
	Name string
	// Size is its uncompressed size in bytes.
	Size int64
	// Stored reports that it is stored uncompressed: only a stored entry
	// can be opened in place.
	Stored bool
	// Format is what a stored entry's first bytes sniff as (see Sniff),
	// Unknown for the others.
	Format Format
	// Archive reports that a stored entry is itself a zip archive (a
	// MediaPipe bundle nests task bundles): ARCHIVE!/ENTRY opens one level
	// only, so its models open once it is extracted.
	Archive bool
}

// ArchiveEntries lists the files of the zip archive in r (size bytes), in
// the order of its central directory, and sniffs the format of each
// stored one. It returns an error when r is not a zip archive. A zip may
// begin with bytes of its own before its first entry (a MediaPipe .task
// bundle pads each entry's data to 4 bytes, the first one too).
func ArchiveEntries(r io.ReaderAt, size int64) ([]ArchiveEntry, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, err
	}
	var out []ArchiveEntry
	head := make([]byte, SniffLen)
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		e := ArchiveEntry{Name: f.Name, Size: int64(min(f.UncompressedSize64, 1<<63-1)), Stored: f.Method == zip.Store}
		if off, err := f.DataOffset(); e.Stored && err == nil && f.CompressedSize64 == f.UncompressedSize64 {
			n := min(int64(len(head)), e.Size)
			if k, _ := r.ReadAt(head[:n], off); k == int(n) {
				e.Format = Sniff(head[:n])
			}
			if e.Format == Unknown && off <= size && e.Size <= size-off {
				_, err := zip.NewReader(io.NewSectionReader(r, off, e.Size), e.Size)
				e.Archive = err == nil
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// archiveHint says, for the unknown-format error of a file that is a zip
// archive, how to open the models stored in it; "" when mf is no zip.
func archiveHint(mf *mmapfile.File) string {
	entries, err := ArchiveEntries(mf, mf.Len())
	if err != nil {
		return ""
	}
	var models, nested []string
	for _, e := range entries {
		switch {
		case e.Format != Unknown:
			models = append(models, e.Name)
		case e.Archive:
			nested = append(nested, e.Name)
		}
	}
	name := cmp.Or(mf.Name(), "ARCHIVE")
	var hint string
	if len(models) == 0 {
		hint = fmt.Sprintf("it is a zip archive of %d files, none of them a stored model; a model stored uncompressed in a zip opens as ARCHIVE!/ENTRY (WithZipEntry)", len(entries))
	} else {
		hint = fmt.Sprintf("it is a zip archive holding %d stored models (%s): open one as ARCHIVE!/ENTRY, %s (WithZipEntry)",
			len(models), list(models), mmapfile.ArchivePath(name, models[0]))
	}
	if len(nested) > 0 {
		hint += fmt.Sprintf("; it also holds zip archives (%s), whose models open once they are extracted", list(nested))
	}
	return hint
}

// list joins the first three names, and counts the rest.
func list(names []string) string {
	s := strings.Join(names[:min(len(names), 3)], ", ")
	if len(names) > 3 {
		s += fmt.Sprintf(" and %d more", len(names)-3)
	}
	return s
}
