//go:build unix

package bench_test

import "syscall"

// minflt returns the process's minor page faults so far (getrusage).
func minflt() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return int64(ru.Minflt)
}
