package sizeflag

import (
	"flag"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "64MiB": 64 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "512kib": 512 << 10,
		"2G": 2 << 30, "3 MiB": 3 << 20, "7B": 7, "1TiB": 1 << 40, "8388607TiB": 8388607 << 40,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "+1", "1.5GiB", "1XiB", "8388608TiB", "99999999999999999999", " 1", "1MiBs"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}

func TestValue(t *testing.T) {
	v := Value(5)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&v, "size", "")
	if err := fs.Parse([]string{"-size", "64MiB"}); err != nil || v != 64<<20 || v.String() != "67108864" {
		t.Fatalf("-size 64MiB: %d (%s), %v", v, v.String(), err)
	}
	if err := v.Set("12QiB"); err == nil || v != 64<<20 {
		t.Fatalf("Set(12QiB) = %v, value %d; want an error and the value kept", err, v)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"64MiB", "1GiB", "512KiB", "4096", "8388607TiB", "1.5G", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d", s, n)
		}
		if m, err := Parse(strconv.FormatInt(n, 10)); err != nil || m != n {
			t.Fatalf("Parse(%q) = %d, but %d reads back as %d, %v", s, n, n, m, err)
		}
	})
}
