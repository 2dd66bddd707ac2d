package memstat

import (
	"errors"
	"os"
	"runtime"
	"testing"
)

func TestRSS(t *testing.T) {
	rss, err := RSS()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 {
		t.Fatalf("RSS() = %d, want > 0", rss)
	}
	// Touching 16 MiB of fresh heap must show up.
	b := make([]byte, 16<<20)
	for i := range b {
		if i%1024 == 0 {
			b[i] = 1
		}
	}
	after, err := RSS()
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	if after-rss < 12<<20 {
		t.Fatalf("RSS grew by %d bytes after touching 16 MiB, want >= 12 MiB", after-rss)
	}
	s, _ := Read()
	t.Logf("%+v emulator=%q", s, Emulator())
}

func TestParse(t *testing.T) {
	s, ok := parse([]byte("Name: x\nVmRSS:\t  100 kB\nRssAnon:\t 40 kB\nRssFile:  50 kB\nRssShmem: 10 kB\n"), "VmRSS:", "RssAnon:", "RssFile:", "RssShmem:")
	if !ok || s != (Stat{Rss: 102400, RssAnon: 40960, RssFile: 51200, RssShm: 10240}) {
		t.Fatalf("parse = %+v, %v", s, ok)
	}
	if _, ok := parse([]byte("Pss: 1 kB\n"), "Rss:", "", "", ""); ok {
		t.Fatal("parse found Rss in a text without it")
	}
}

func TestPresent(t *testing.T) {
	if Emulator() != "" {
		t.Skip("pagemap addresses are host addresses under", Emulator())
	}
	ps := os.Getpagesize()
	b := make([]byte, 8*ps)
	for i := 0; i < len(b); i += ps {
		b[i] = 1
	}
	p, err := Present(b[ps : 3*ps])
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(p) < 2 || len(p) > 3 {
		t.Fatalf("Present of 2 pages returned %d entries", len(p))
	}
	for i, v := range p {
		if !v {
			t.Errorf("page %d of a touched buffer not present", i)
		}
	}
	if n, err := PresentPages(b[ps : 3*ps]); err != nil || n != len(p) {
		t.Errorf("PresentPages = %d, %v; want %d", n, err, len(p))
	}
	runtime.KeepAlive(b)
}
