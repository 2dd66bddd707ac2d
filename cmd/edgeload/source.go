package main

import (
	"fmt"

	"github.com/edgeload/edgeload/loader"
	"github.com/edgeload/edgeload/mmapfile"
)

// openModel opens a FILE argument (a file or ARCHIVE!/ENTRY, see
// mmapfile.OpenPath) with the --data files (each a file or ARCHIVE!/ENTRY).
func openModel(path string, data []string) (*loader.Model, error) {
	maps := make([]*mmapfile.File, 0, len(data)+1)
	for _, p := range append(data[:len(data):len(data)], path) {
		mf, err := mmapfile.OpenPath(p)
		if err != nil {
			for _, m := range maps {
				m.Close()
			}
			if len(maps) < len(data) {
				err = fmt.Errorf("data file %s: %w", p, err)
			}
			return nil, err
		}
		maps = append(maps, mf)
	}
	return loader.New(maps[len(data)], loader.WithDataFiles(maps[:len(data)]...))
}

// sniffPath sniffs a FILE argument (see loader.Sniff); an archive entry
// that cannot be located sniffs as Unknown, and opening it then says why.
func sniffPath(path string) (loader.Format, error) {
	if _, _, ok := mmapfile.SplitArchivePath(path); !ok {
		return loader.SniffFile(path)
	}
	mf, err := mmapfile.OpenPath(path)
	if err != nil {
		return loader.Unknown, err
	}
	defer mf.Close()
	head := make([]byte, min(mf.Len(), 4096))
	k, _ := mf.ReadAt(head, 0)
	return loader.Sniff(head[:k]), nil
}
