//go:build linux

package pte_test

import (
	"os"
	"syscall"
)

// guarded returns a copy of b placed against a page that cannot be read:
// the page after its last byte when atEnd, else the page before its first.
// A read outside b then faults instead of reading whatever lies there.
// The function returned unmaps it.
func guarded(b []byte, atEnd bool) ([]byte, func()) {
	page := os.Getpagesize()
	body := (len(b) + page - 1) / page * page
	m, err := syscall.Mmap(-1, 0, body+2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(m[:page], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(m[page+body:], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	start := page
	if atEnd {
		start = page + body - len(b)
	}
	g := m[start : start+len(b) : start+len(b)]
	copy(g, b)
	return g, func() {
		if err := syscall.Munmap(m); err != nil {
			panic(err)
		}
	}
}
