package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/edgeload/edgeload/internal/testkit/testmodels"
	"github.com/edgeload/edgeload/loader"
)

// VerifyWith, with the progress hook verify draws from, reads and counts
// what Verify does, on every fixture and real file, and reports its bytes
// in order up to what it read.
func TestVerifyWithProgress(t *testing.T) {
	paths, _ := filepath.Glob(fixture("*"))
	paths = append(paths, testmodels.All(t)...)
	keys, _ := writeManyKeys(t, 300)
	paths = append(paths, keys)
	checked := 0
	for _, path := range paths {
		var opts []loader.Option
		if filepath.Base(path) == "tiny-external.pte" {
			opts = append(opts, loader.WithData(fixture("tiny.ptd")))
		}
		m, err := loader.Open(path, opts...)
		if err != nil {
			continue // a file the loader refuses: nothing to verify
		}
		want, werr := m.Verify()
		calls, last := 0, int64(-1)
		got, gerr := m.VerifyWith(loader.VerifyOptions{Progress: func(done, total int64) {
			calls++
			if done < last || done > total {
				t.Errorf("%s: progress %d of %d after %d", path, done, total, last)
			}
			last = done
		}})
		m.Close()
		checked++
		if (werr == nil) != (gerr == nil) || got != want {
			t.Errorf("%s: VerifyWith %+v, %v; Verify %+v, %v", path, got, gerr, want, werr)
		}
		if calls == 0 || last != got.BytesRead {
			t.Errorf("%s: %d progress calls, the last at %d of %d bytes read", path, calls, last, got.BytesRead)
		}
	}
	if checked < 6 {
		t.Errorf("only %d of %d files opened", checked, len(paths))
	}
	t.Logf("%d files", checked)
}

// A file truncated under the mapping fails VerifyWith as it fails Verify.
func TestVerifyWithTruncated(t *testing.T) {
	path, _ := writeManyKeys(t, 300)
	m, err := loader.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	_, werr := m.Verify()
	_, gerr := m.VerifyWith(loader.VerifyOptions{Progress: func(int64, int64) {}})
	if werr == nil || gerr == nil || !strings.Contains(gerr.Error(), "reading") {
		t.Errorf("truncated: VerifyWith %v; Verify %v", gerr, werr)
	}
}

// fakeClock advances by step each time it is read.
func fakeClock(step time.Duration) func() time.Time {
	now := time.Unix(1e9, 0)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// verifyWith runs verify with stderr taken for a terminal (or not) and a
// clock that advances step at each reading.
func verifyWith(t *testing.T, tty bool, step time.Duration, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	oldTerm, oldClock := terminal, clock
	t.Cleanup(func() { terminal, clock = oldTerm, oldClock })
	terminal = func(io.Writer) bool { return tty }
	clock = fakeClock(step)
	var o, e bytes.Buffer
	code = run(append([]string{"verify"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// On a terminal, verify draws one progress line, redrawn in place (a
// carriage return and erase-line before each drawing) once it has run a
// second, at most every 100 ms, and erases it at the end; stdout is as
// without it. Nothing is drawn for a run under a second, nor when stderr
// is not a terminal.
func TestVerifyProgress(t *testing.T) {
	path, _ := writeManyKeys(t, 2000)
	_, plain, _ := runCmd("verify", path)

	// 10 ms a reading: 2,000 segments take about 20 s.
	code, out, errOut := verifyWith(t, true, 10*time.Millisecond, path)
	if code != 0 || out != plain {
		t.Fatalf("exit %d, stdout %q; want %q", code, out, plain)
	}
	draws := strings.Split(errOut, "\r\x1b[K")
	if draws[0] != "" || draws[len(draws)-1] != "" {
		t.Fatalf("stderr does not start with a redraw and end erased: %q", errOut)
	}
	draws = draws[1 : len(draws)-1]
	line := regexp.MustCompile(`^edgeload: verify keys2000\.ptd: \d+(\.\d)? [KM]?i?B of \d+(\.\d)? [KM]?i?B \((\d+)%\)$`)
	// About 19 s of drawings, one every 100 ms (the clock is read once
	// more per drawing than per chunk).
	if len(draws) < 50 || len(draws) > 200 {
		t.Errorf("%d drawings, want about 95", len(draws))
	}
	lastPct := -1
	for _, d := range draws {
		mm := line.FindStringSubmatch(d)
		if mm == nil {
			t.Fatalf("drawing %q", d)
		}
		var pct int
		for _, c := range mm[3] {
			pct = pct*10 + int(c-'0')
		}
		if pct < lastPct || pct > 100 {
			t.Errorf("percentage %d after %d", pct, lastPct)
		}
		lastPct = pct
	}
	if lastPct < 90 {
		t.Errorf("the last drawing says %d%%", lastPct)
	}

	// A quick run draws nothing, and a run that is not on a terminal
	// draws nothing.
	if code, out, errOut := verifyWith(t, true, 0, path); code != 0 || out != plain || errOut != "" {
		t.Errorf("quick run: exit %d %q %q", code, out, errOut)
	}
	if code, out, errOut := verifyWith(t, false, time.Second, path); code != 0 || out != plain || errOut != "" {
		t.Errorf("not a terminal: exit %d %q %q", code, out, errOut)
	}
	// A failing file on a terminal: the line is erased before FAIL.
	bad := filepath.Join(t.TempDir(), "bad.pte")
	b, _ := os.ReadFile(fixture("tiny.pte"))
	os.WriteFile(bad, b[:700], 0o644)
	code, out, errOut = verifyWith(t, true, 10*time.Millisecond, path, bad)
	if code != 1 || !strings.Contains(out, "FAIL  "+bad) || !strings.HasSuffix(errOut, "\r\x1b[Kedgeload: 1 of 2 files failed verification\n") {
		t.Errorf("with a failing file: exit %d, %q, %q", code, out, errOut[max(0, len(errOut)-200):])
	}
}
