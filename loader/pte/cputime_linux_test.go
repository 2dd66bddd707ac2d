package pte

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time the calling thread has used, in
// nanoseconds (0 where it cannot be read): on a busy machine a loop's CPU
// time, unlike its wall time, leaves out the time others ran.
func threadCPU() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return ts.Nano()
}
