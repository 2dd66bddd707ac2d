package platform

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPUTime returns the CPU time the calling OS thread has used in user
// space and in the kernel (getrusage RUSAGE_THREAD). A goroutine that wants
// its own must be locked to its thread (runtime.LockOSThread).
func ThreadCPUTime() (user, system time.Duration, ok bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
