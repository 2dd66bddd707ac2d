//go:build !linux

package platform

// MemoryLimit returns the most memory this process may use; on this
// system it does not know (ok is false). On Linux it reads the memory
// cgroup's limit and the machine's memory.
func MemoryLimit() (n int64, ok bool) { return 0, false }

// ResidentSet returns the bytes of memory the process holds now; on this
// system it does not know (ok is false).
func ResidentSet() (int64, bool) { return 0, false }
