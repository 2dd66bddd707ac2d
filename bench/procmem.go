package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MapStat is what /proc/<pid>/smaps says about the mappings of one file.
type MapStat struct {
	// Maps is the number of mappings (VMAs) of the file: 1 for a whole-file
	// mapping, one per window in windowed mode.
	Maps int
	// Size is the mapped address space in bytes.
	Size int64
	// Rss is the number of bytes of the file resident in the process's page
	// tables (what touching faulted in and Release has not dropped).
	Rss int64
	// Pss is Rss with each page divided by the number of processes mapping
	// it: two processes sharing a model's pages see about half each.
	Pss int64
}

// Rollup is what /proc/<pid>/smaps_rollup (and status) say about a whole
// process, in bytes.
type Rollup struct {
	Rss, Pss, PssAnon, PssFile int64
	Anonymous                  int64
	// PeakRss is VmHWM from /proc/<pid>/status, the peak resident set.
	PeakRss int64
}

func procFile(pid int, name string) string {
	if pid <= 0 {
		return "/proc/self/" + name
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name
}

// kib parses the value of a "Key:   123 kB" line into bytes.
func kib(f [][]byte) (int64, bool) {
	if len(f) < 2 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	if len(f) >= 3 && string(f[2]) == "kB" {
		v *= 1024
	}
	return v, true
}

// ReadRollup returns the resident memory of process pid (0: this process)
// from /proc/<pid>/smaps_rollup and /proc/<pid>/status. It fails where
// /proc is absent.
func ReadRollup(pid int) (Rollup, error) {
	var r Rollup
	b, err := os.ReadFile(procFile(pid, "smaps_rollup"))
	if err != nil {
		return r, fmt.Errorf("bench: %w", err)
	}
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		v, ok := kib(f)
		if !ok {
			continue
		}
		switch string(f[0]) {
		case "Rss:":
			r.Rss = v
		case "Pss:":
			r.Pss = v
		case "Pss_Anon:":
			r.PssAnon = v
		case "Pss_File:":
			r.PssFile = v
		case "Anonymous:":
			r.Anonymous = v
		}
	}
	if b, err := os.ReadFile(procFile(pid, "status")); err == nil {
		for line := range bytes.Lines(b) {
			f := bytes.Fields(line)
			if v, ok := kib(f); ok && string(f[0]) == "VmHWM:" {
				r.PeakRss = v
			}
		}
	}
	if r.Rss == 0 {
		return r, errors.New("bench: no Rss in " + procFile(pid, "smaps_rollup"))
	}
	return r, nil
}

// ReadSmaps returns, for each of paths, the mappings of that file in process
// pid (0: this process) according to /proc/<pid>/smaps. Paths are compared
// after filepath.Abs. It fails where /proc is absent.
func ReadSmaps(pid int, paths ...string) ([]MapStat, error) {
	want := make(map[string]int, len(paths))
	for i, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		want[p] = i
	}
	out := make([]MapStat, len(paths))
	f, err := os.Open(procFile(pid, "smaps"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	cur := -1
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !bytes.HasSuffix(f[0], []byte(":")) && bytes.IndexByte(f[0], '-') > 0 {
			// A mapping header: start-end perms offset dev inode [path].
			cur = -1
			if len(f) >= 6 {
				p := string(bytes.Join(f[5:], []byte(" ")))
				p = strings.TrimSuffix(p, " (deleted)")
				if i, ok := want[p]; ok {
					cur = i
					out[i].Maps++
				}
			}
			continue
		}
		if cur < 0 {
			continue
		}
		v, ok := kib(f)
		if !ok {
			continue
		}
		switch string(f[0]) {
		case "Size:":
			out[cur].Size += v
		case "Rss:":
			out[cur].Rss += v
		case "Pss:":
			out[cur].Pss += v
		}
	}
	return out, sc.Err()
}

// SumMaps adds up the stats of several files.
func SumMaps(ms []MapStat) MapStat {
	var s MapStat
	for _, m := range ms {
		s.Maps += m.Maps
		s.Size += m.Size
		s.Rss += m.Rss
		s.Pss += m.Pss
	}
	return s
}

// ReadBytes returns how many bytes process pid (0: this process) has caused
// to be read from storage so far (read_bytes in /proc/<pid>/io; page faults
// and read-ahead included, page-cache hits not).
func ReadBytes(pid int) (int64, error) {
	b, err := os.ReadFile(procFile(pid, "io"))
	if err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("read_bytes:")); ok {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, errors.New("bench: no read_bytes in " + procFile(pid, "io"))
}
