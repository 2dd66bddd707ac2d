//go:build !unix

package bench

import (
	"fmt"
	"os"
)

// Floor reads the first byte of the file: on this system there is no mmap
// to measure, so it opens, reads and closes.
func Floor(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.Read(b[:]); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	Sink += b[0]
	return nil
}
