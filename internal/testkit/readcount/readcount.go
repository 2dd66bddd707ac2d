// Package readcount counts the reads made through an io.ReaderAt: tests
// open a model through one (mmapfile.NewReaderAt, loader.NewReaderAt) to
// check how many reads, each a system call on a file, Open makes.
package readcount

import "io"

// ReaderAt is an io.ReaderAt that counts the calls to its ReadAt.
type ReaderAt struct {
	R     io.ReaderAt
	Reads int
}

// ReadAt reads from R and counts the call.
func (c *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.Reads++
	return c.R.ReadAt(p, off)
}
