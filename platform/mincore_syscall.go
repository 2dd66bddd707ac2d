//go:build linux || darwin || dragonfly || freebsd || netbsd

package platform

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mincore reports which pages of b are resident in memory: vec[i]&1 is set
// when the i-th page is. b must start on a page boundary and vec must hold at
// least one byte per page (len(b) rounded up to [PageSize]).
//
// x/sys/unix has no wrapper, so this is the raw mincore(2) system call. On
// Linux, for a file mapping, "resident" means present in the page cache
// (the kernel reports page-cache state for files the caller may write, and
// only mapped pages otherwise), so it can differ from the process's RSS.
func Mincore(b []byte, vec []byte) error {
	if len(b) == 0 {
		return nil
	}
	ps := PageSize()
	pages := (len(b)-1)/ps + 1
	if len(vec) < pages {
		return fmt.Errorf("platform: mincore: vec has %d bytes, need %d", len(vec), pages)
	}
	_, _, e := unix.Syscall(sysMincore,
		uintptr(unsafe.Pointer(unsafe.SliceData(b))),
		uintptr(len(b)),
		uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if e != 0 {
		return fmt.Errorf("platform: mincore: %w", e)
	}
	return nil
}
