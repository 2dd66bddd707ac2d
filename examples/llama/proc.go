package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// procField returns the integer after "key:" in a /proc file, or -1 where
// the system has no such file (anything but Linux) or no such line.
func procField(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// readBytes returns the bytes the process has caused to be read from
// storage (page faults on the mapping included), or -1.
func readBytes() int64 { return procField("/proc/self/io", "read_bytes") }

// peakRSS returns the process's peak resident set in bytes, or -1.
func peakRSS() int64 {
	kb := procField("/proc/self/status", "VmHWM")
	if kb < 0 {
		return -1
	}
	return kb << 10
}
