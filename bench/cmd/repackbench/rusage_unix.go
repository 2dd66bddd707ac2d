//go:build unix

package main

import "syscall"

// maxRSS returns the process's peak resident set in bytes (Linux reports
// ru_maxrss in KiB; macOS in bytes).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * rssUnit
}
