package segment

import (
	"errors"
	"syscall"
)

// isLockRefusal reports whether err is one of the refusals a best-effort
// Lock ignores: EPERM, ENOMEM or EAGAIN.
func isLockRefusal(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	return errno == syscall.EPERM || errno == syscall.ENOMEM || errno == syscall.EAGAIN
}
