//go:build linux || dragonfly || freebsd || netbsd

package platform

import "golang.org/x/sys/unix"

// sysMincore is mincore's system call number (x/sys/unix has no wrapper).
const sysMincore = unix.SYS_MINCORE
