//go:build (aix || darwin || dragonfly || freebsd || netbsd || openbsd || solaris) && !linux

package platform

import "unsafe"

// mapHint returns nil: the kernel places every mapping (place_linux.go
// says why Linux gets a hint for large ones).
func mapHint(int) unsafe.Pointer { return nil }
