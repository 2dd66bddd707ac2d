//go:build !linux

package cgroup

// Emulated reports whether this process runs under a user-mode emulator;
// only Linux is checked.
func Emulated() (string, bool) { return "", false }
