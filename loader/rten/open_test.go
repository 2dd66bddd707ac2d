package rten_test

import (
	"testing"

	"github.com/edgeload/edgeload/loader/rten"
	"github.com/edgeload/edgeload/mmapfile"
)

// mapOpen maps path with mmapfile.Open (mopts choose the mode), closes the
// mapping when the test ends, and opens it with rten.NewFile.
func mapOpen(t testing.TB, path string, mopts []mmapfile.Option, opts ...rten.Option) (*rten.Model, error) {
	t.Helper()
	mf, err := mmapfile.Open(path, mopts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { mf.Close() })
	return rten.NewFile(mf, opts...)
}
