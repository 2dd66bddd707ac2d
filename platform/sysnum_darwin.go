package platform

import "syscall"

// sysMincore is mincore's system call number. x/sys/unix deprecates its
// darwin SYS_* constants in favour of libSystem wrappers, but has no wrapper
// for mincore; the standard library's constant is the same number.
const sysMincore = syscall.SYS_MINCORE
