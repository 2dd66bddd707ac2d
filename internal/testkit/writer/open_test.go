package writer_test

import (
	"testing"

	"github.com/edgeload/edgeload/mmapfile"
)

// mapFile maps path with mmapfile.Open and closes the mapping when the
// test ends.
func mapFile(t testing.TB, path string) *mmapfile.File {
	t.Helper()
	mf, err := mmapfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mf.Close() })
	return mf
}
