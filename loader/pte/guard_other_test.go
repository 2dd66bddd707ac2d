//go:build !linux

package pte_test

import "bytes"

// guarded returns a copy of b (elsewhere than Linux, without the
// unreadable pages guard_linux_test.go places around it).
func guarded(b []byte, atEnd bool) ([]byte, func()) { return bytes.Clone(b), func() {} }
