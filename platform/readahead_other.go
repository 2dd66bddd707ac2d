//go:build !linux

package platform

// ReadAhead returns the kernel's readahead window for f's device; this
// system does not say, so ok is false.
func ReadAhead(f File) (n int64, ok bool) { return 0, false }
