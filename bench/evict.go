package bench

import (
	"errors"
	"fmt"
	"os"

	"github.com/edgeload/edgeload/mmapfile"
	"github.com/edgeload/edgeload/platform"
)

// ErrFadvise marks an Evict error from posix_fadvise itself, as opposed to
// opening or mapping the file.
var ErrFadvise = errors.New("bench: cannot drop the page cache")

// Evict drops the file at path from the page cache (posix_fadvise
// DONTNEED, after an fsync, since a freshly written file's dirty pages
// cannot be dropped) and returns what is still cached: resident, the bytes
// of the file's pages in the page cache, and share, the fraction of its
// pages they are (mincore). Pages that some process maps stay cached. On
// systems without fadvise dropping does nothing (see
// platform.FadviseDontNeed), and where mincore is missing Evict returns its
// error.
func Evict(path string) (resident int64, share float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	f.Sync() // a failed sync shows as pages left resident
	if err := platform.FadviseDontNeed(f, 0, 0); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrFadvise, err)
	}
	m, err := mmapfile.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	r, total, err := m.Resident(0, m.Len())
	if err != nil || total == 0 {
		return 0, 0, err
	}
	return int64(r) * int64(m.PageSize()), float64(r) / float64(total), nil
}
