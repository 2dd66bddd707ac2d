//go:build aix || darwin || dragonfly || freebsd || netbsd || openbsd || solaris

package platform

import "golang.org/x/sys/unix"

// madvConst maps a to the kernel's MADV_* value; ok is false when the
// system has no equivalent and the advice is to be ignored. These systems
// have no MADV_POPULATE_READ (WillNeed is used) and no MADV_HUGEPAGE.
func madvConst(a Advice) (adv int, ok bool) {
	switch a {
	case AdviceNormal:
		return unix.MADV_NORMAL, true
	case AdviceRandom:
		return unix.MADV_RANDOM, true
	case AdviceSequential:
		return unix.MADV_SEQUENTIAL, true
	case AdviceWillNeed, AdvicePopulateRead:
		return unix.MADV_WILLNEED, true
	case AdviceDontNeed:
		return unix.MADV_DONTNEED, true
	}
	return 0, false
}
