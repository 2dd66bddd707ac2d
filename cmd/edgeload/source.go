package main

import (
	"fmt"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// splitArchive splits a FILE argument of the form ARCHIVE!/ENTRY
// (mmapfile.SplitArchivePath).
func splitArchive(arg string) (archive, entry string, ok bool) {
	return mmapfile.SplitArchivePath(arg)
}

// openMapped maps a FILE argument: a file, or an entry stored in a zip
// archive (ARCHIVE!/ENTRY).
func openMapped(path string) (*mmapfile.File, error) { return mmapfile.OpenPath(path) }

// openModel opens a FILE argument (a file or ARCHIVE!/ENTRY) with the
// --data files (each a file or ARCHIVE!/ENTRY).
func openModel(path string, data []string) (*loader.Model, error) {
	var maps []*mmapfile.File
	for _, d := range data {
		mf, err := openMapped(d)
		if err != nil {
			for _, m := range maps {
				m.Close()
			}
			return nil, fmt.Errorf("data file %s: %w", d, err)
		}
		maps = append(maps, mf)
	}
	mf, err := openMapped(path)
	if err != nil {
		for _, m := range maps {
			m.Close()
		}
		return nil, err
	}
	return loader.New(mf, loader.WithDataFiles(maps...))
}

// sniffPath sniffs a FILE argument (see loader.Sniff); an archive entry
// that cannot be located sniffs as Unknown, and opening it then says why.
func sniffPath(path string) (loader.Format, error) {
	if _, _, ok := splitArchive(path); !ok {
		return loader.SniffFile(path)
	}
	mf, err := openMapped(path)
	if err != nil {
		return loader.Unknown, err
	}
	defer mf.Close()
	head := make([]byte, min(mf.Len(), 4096))
	k, _ := mf.ReadAt(head, 0)
	return loader.Sniff(head[:k]), nil
}
