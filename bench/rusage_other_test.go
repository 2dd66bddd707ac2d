//go:build !unix

package bench_test

// minflt returns -1: this system has no getrusage.
func minflt() int64 { return -1 }
