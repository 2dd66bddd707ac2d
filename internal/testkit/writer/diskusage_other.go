//go:build !unix

package writer

// DiskUsage reports ok == false: this system does not report allocated
// blocks through os.Stat.
func DiskUsage(path string) (n int64, ok bool) { return 0, false }
