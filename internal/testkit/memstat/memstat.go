// Package memstat measures the resident memory of the current process, for
// tests and benchmarks that check what mapping, touching and releasing a
// file cost.
//
// On Linux it reads /proc/self/smaps_rollup (falling back to
// /proc/self/status): Rss counts every page mapped into the process,
// anonymous and file-backed, which is what a zero-copy loader must keep
// small. Elsewhere it returns an error wrapping errors.ErrUnsupported.
package memstat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"
)

// Stat is a breakdown of the process's resident memory, in bytes.
type Stat struct {
	Rss     int64 // all resident pages mapped by the process
	RssAnon int64 // anonymous (heap, stacks)
	RssFile int64 // file-backed (mappings of files, including model files)
	RssShm  int64 // shared memory (tmpfs files, which is where /tmp may live)
}

// RSS returns the resident set size of the current process in bytes.
func RSS() (int64, error) {
	s, err := Read()
	return s.Rss, err
}

// Read returns the process's resident memory, broken down where the
// system reports it.
func Read() (Stat, error) {
	if runtime.GOOS != "linux" && runtime.GOOS != "android" {
		return Stat{}, fmt.Errorf("memstat: %w on %s", errors.ErrUnsupported, runtime.GOOS)
	}
	if b, err := os.ReadFile("/proc/self/smaps_rollup"); err == nil {
		if s, ok := parse(b, "Rss:", "Anonymous:", "", ""); ok {
			// smaps_rollup has no file/shmem split of Rss; take it from status.
			if st, err := os.ReadFile("/proc/self/status"); err == nil {
				if t, ok := parse(st, "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:"); ok {
					s.RssFile, s.RssShm = t.RssFile, t.RssShm
				}
			}
			return s, nil
		}
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Stat{}, fmt.Errorf("memstat: %w", err)
	}
	s, ok := parse(b, "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:")
	if !ok {
		return Stat{}, errors.New("memstat: no VmRSS in /proc/self/status")
	}
	return s, nil
}

// parse extracts "Key:   123 kB" lines; ok reports whether rssKey was found.
func parse(b []byte, rssKey, anonKey, fileKey, shmKey string) (s Stat, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		if len(f) >= 3 && string(f[2]) == "kB" {
			v *= 1024
		}
		switch string(f[0]) {
		case rssKey:
			s.Rss, ok = v, true
		case anonKey:
			s.RssAnon = v
		case fileKey:
			s.RssFile = v
		case shmKey:
			s.RssShm = v
		}
	}
	return s, ok
}

// Emulator returns the name of the user-mode emulator (such as
// "qemu-aarch64") the process runs under, or "" when it runs natively.
//
// qemu-user rewrites /proc/self/maps to show the guest's view, but not
// /proc/thread-self/maps, which still lists the emulator's own executable
// mapping; /proc/self/comm is the fallback. Under an emulator, RSS reflects
// the emulator's host process and madvise/mincore are translated, so tests
// that measure memory must take that into account.
func Emulator() string {
	if runtime.GOOS != "linux" && runtime.GOOS != "android" {
		return ""
	}
	if b, err := os.ReadFile("/proc/thread-self/maps"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := bytes.Fields(sc.Bytes())
			if len(f) < 6 || !bytes.Contains(f[1], []byte("x")) {
				continue
			}
			path := f[len(f)-1]
			base := path[bytes.LastIndexByte(path, '/')+1:]
			if bytes.HasPrefix(base, []byte("qemu-")) {
				return string(base)
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/comm"); err == nil {
		if c := string(bytes.TrimSpace(b)); len(c) > 5 && c[:5] == "qemu-" {
			return c
		}
	}
	return ""
}

// Present reports, for each page of the memory b spans (from the page that
// holds b[0] to the page that holds its last byte), whether that page is
// present in the process's page tables, from /proc/self/pagemap. Unlike
// mincore, which reports page-cache residency for file mappings, this is
// what counts in the process's RSS: madvise DONTNEED clears it.
//
// It is meaningless under a user-mode emulator (see [Emulator]), whose guest
// addresses are not host addresses.
func Present(b []byte) ([]bool, error) {
	if runtime.GOOS != "linux" && runtime.GOOS != "android" {
		return nil, fmt.Errorf("memstat: pagemap: %w on %s", errors.ErrUnsupported, runtime.GOOS)
	}
	if len(b) == 0 {
		return nil, nil
	}
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) / ps
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b)) - 1) / ps
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, fmt.Errorf("memstat: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 8*(end-start+1))
	if _, err := f.ReadAt(buf, int64(start)*8); err != nil {
		return nil, fmt.Errorf("memstat: read pagemap: %w", err)
	}
	out := make([]bool, end-start+1)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0
	}
	return out, nil
}

// PresentPages returns how many of the pages b spans are present in the
// process's page tables (Present).
func PresentPages(b []byte) (int, error) {
	present, err := Present(b)
	n := 0
	for _, ok := range present {
		if ok {
			n++
		}
	}
	return n, err
}
