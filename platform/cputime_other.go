//go:build !linux

package platform

import "time"

// ThreadCPUTime returns the CPU time the calling OS thread has used in user
// space and in the kernel; this system does not say, so ok is false.
func ThreadCPUTime() (user, system time.Duration, ok bool) { return 0, 0, false }
