//go:build !linux

package platform

import "time"

// ThreadCPUTime returns the CPU time the calling OS thread has used; this
// system does not say, so ok is false.
func ThreadCPUTime() (d time.Duration, ok bool) { return 0, false }
