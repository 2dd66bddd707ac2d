package stream

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/edgeload/edgeload/loader"
)

// readBytes returns the bytes this process has caused to be read from
// storage (/proc/self/io read_bytes).
func readBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		skipUnlessRequired(t, "no per-process I/O counts: %v", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("read_bytes: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	skipUnlessRequired(t, "/proc/self/io has no read_bytes")
	return 0
}

// A grain the next item shares with a released one is kept, not dropped
// and read again: the stream reads the file from storage once, also when
// the model is a section of a larger file.
func TestReadsOnce(t *testing.T) {
	sp := spec{sizes: sizes(400, 20000)}
	dir := t.TempDir()
	path := writeModel(t, dir, sp)
	model, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The same model after 12 MiB and 100 bytes of something else.
	const pad = 12<<20 + 100
	outer := filepath.Join(dir, "outer")
	if err := os.WriteFile(outer, append(make([]byte, pad), model...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syncFile(outer); err != nil {
		t.Fatal(err)
	}

	opens := map[string]func() (*loader.Model, bool){
		"file": func() (*loader.Model, bool) { return open(t, path) },
		"section": func() (*loader.Model, bool) {
			m, err := loader.Open(outer, loader.WithSection(pad, int64(len(model))))
			if err != nil {
				t.Fatal(err)
			}
			return prepare(t, m, outer)
		},
	}
	for _, c := range []struct {
		open   string
		budget int64
	}{{"file", 64 << 10}, {"file", 256 << 10}, {"section", 64 << 10}} {
		m, check := opens[c.open]()
		if !check {
			t.Skip("the page cache cannot be emptied here (prepare says why)")
		}
		budget := c.budget
		size := m.File().Len()
		before := readBytes(t)
		s, err := New(context.Background(), m, WithBudget(budget), WithDropCache())
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		read := readBytes(t) - before
		if read == 0 {
			skipUnlessRequired(t, "this file system's reads are not counted")
		}
		if read > size+s.grain {
			t.Errorf("%s, budget %d: read %d bytes from storage for a model of %d", c.open, budget, read, size)
		}
		t.Logf("%s, budget %d: read %d bytes from storage for a model of %d", c.open, budget, read, size)
	}
}

// Stats.CPU is the background goroutine's CPU time: more than nothing once
// it has read something, and no more than the whole process has used.
func TestCPU(t *testing.T) {
	sp := spec{sizes: sizes(100, 20000)}
	path := writeModel(t, t.TempDir(), sp)
	m, _ := open(t, path)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	s, err := New(context.Background(), m, WithBudget(256<<10), WithDropCache())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s, m, sp, false)
	st := s.Stats()
	s.Close()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	process := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	if st.CPU <= 0 || st.CPU > process || st.SystemCPU < 0 || st.SystemCPU > st.CPU {
		t.Fatalf("stream CPU %v (system %v), process CPU meanwhile %v", st.CPU, st.SystemCPU, process)
	}
	t.Logf("stream CPU %v (system %v) of the process's %v", st.CPU, st.SystemCPU, process)
}

// A passes stream reads its retained weights from storage once and the
// streamed ones once a pass, with either reader: the process's storage
// reads (/proc/self/io) are the stream's own count, and a retained set
// read again each pass would show.
func TestPassesReadFromStorage(t *testing.T) {
	sp := spec{sizes: sizes(200, 20000)}
	path := writeModel(t, t.TempDir(), sp)
	const passes = 4
	for _, r := range readers {
		t.Run(r.String(), func(t *testing.T) {
			m, check := open(t, path)
			if !check {
				t.Skip("the page cache cannot be emptied here (prepare says why)")
			}
			before := readBytes(t)
			s := newPasses(t, m, r, WithPasses(passes), WithBudget(3<<20), WithRetain(2<<20))
			for {
				if _, err := s.Next(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			read := readBytes(t) - before
			if read == 0 {
				skipUnlessRequired(t, "this file system's reads are not counted")
			}
			hist := s.Passes()
			st := s.Stats()
			streamed := hist[1].Read
			// Pass 0 reads the retained set and the streamed items; every
			// later pass the streamed items alone (a page or grain of
			// slack a pass for the file's metadata and folio edges).
			want := st.Retained + passes*streamed
			slack := int64(passes) * s.grain
			if read < want-st.Retained/2 || read > want+slack {
				t.Fatalf("read %d bytes from storage; the retained %d once and the streamed %d four times make %d", read, st.Retained, streamed, want)
			}
			for _, p := range hist[1:] {
				if p.Read != streamed {
					t.Fatalf("pass %d read %d bytes, pass 1 %d", p.Pass, p.Read, streamed)
				}
			}
			t.Logf("%s: read %d bytes from storage; retained %d, streamed %d a pass", r, read, st.Retained, streamed)
		})
	}
}
