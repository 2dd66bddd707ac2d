package pte_test

import (
	"testing"

	"github.com/edgeload/edgeload/loader/pte"
	"github.com/edgeload/edgeload/mmapfile"
)

// mapOpen maps path with mmapfile.Open (mopts choose the mode), closes the
// mapping when the test ends, and opens it with pte.NewFile.
func mapOpen(t testing.TB, path string, mopts []mmapfile.Option, opts ...pte.Option) (*pte.Program, error) {
	t.Helper()
	mf, err := mmapfile.Open(path, mopts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mf.Close() })
	return pte.NewFile(mf, opts...)
}
