//go:build linux

package platform

import "golang.org/x/sys/unix"

// populateRead is MADV_POPULATE_READ (Linux 5.14); a variable so that tests
// can make the kernel reject it and exercise the WillNeed fallback.
var populateRead = unix.MADV_POPULATE_READ

// madvConst maps a to the kernel's MADV_* value; ok is false when the
// system has no equivalent and the advice is to be ignored.
func madvConst(a Advice) (adv int, ok bool) {
	switch a {
	case AdviceNormal:
		return unix.MADV_NORMAL, true
	case AdviceRandom:
		return unix.MADV_RANDOM, true
	case AdviceSequential:
		return unix.MADV_SEQUENTIAL, true
	case AdviceWillNeed:
		return unix.MADV_WILLNEED, true
	case AdviceDontNeed:
		return unix.MADV_DONTNEED, true
	case AdviceHugePage:
		return unix.MADV_HUGEPAGE, true
	case AdvicePopulateRead:
		return populateRead, true
	}
	return 0, false
}
