//go:build !(linux || darwin || dragonfly || freebsd || netbsd)

package platform

import (
	"errors"
	"fmt"
)

// Mincore reports which pages of b are resident in memory. Where [Map]
// copies into the heap (ZeroCopy false) every page is reported resident;
// on Unix systems without a usable mincore(2) (aix, solaris, openbsd) it
// returns an error wrapping [errors.ErrUnsupported].
func Mincore(b []byte, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	if !ZeroCopy {
		ps := PageSize()
		pages := (len(b)-1)/ps + 1
		if len(vec) < pages {
			return fmt.Errorf("platform: mincore: vec has %d bytes, need %d", len(vec), pages)
		}
		for i := range pages {
			vec[i] = 1
		}
		return nil
	}
	return fmt.Errorf("platform: mincore: %w", errors.ErrUnsupported)
}
