package platform

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPUTime returns the CPU time, user and system, that the calling OS
// thread has used (getrusage RUSAGE_THREAD). A goroutine that wants its own
// must be locked to its thread (runtime.LockOSThread).
func ThreadCPUTime() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
