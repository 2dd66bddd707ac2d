package main

import (
	"encoding/json"
	"hash/crc32"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
)

// streamFill is the pattern of tensor i's bytes in the stream test model.
func streamFill(i int, p []byte, off int64) {
	for k := range p {
		o := off + int64(k)
		p[k] = byte(int64(i)*31 + o*5 + o>>11)
	}
}

// TestStream streams a writer-made model (no instructions, so the use order
// is value order) under a budget smaller than one tensor and checks the
// CRC-32C of all bytes against the one computed from the pattern.
func TestStream(t *testing.T) {
	sizes := []int64{100000, 3000, 250000, 17}
	ts := make([]writer.PTETensor, len(sizes))
	want := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var total int64
	for i, n := range sizes {
		ts[i] = writer.PTETensor{Kind: writer.PTEConstant, ScalarType: writer.PTEUint8, Sizes: []int32{int32(n)},
			Fill: func(p []byte, off int64) { streamFill(i, p, off) }}
		b := make([]byte, n)
		streamFill(i, b, 0)
		want.Write(b)
		total += n
	}
	path := filepath.Join(t.TempDir(), "m.pte")
	if _, err := (&writer.PTE{TensorAlignment: 16, Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("stream", "--json", "--budget", "64KiB", "--drop-cache", path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r streamReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Tensors != len(sizes) || r.Bytes != total || r.Budget != 64<<10 || r.PeakBytes > r.Budget || r.PeakBytes == 0 {
		t.Fatalf("report %+v", r)
	}
	if w := strconv.FormatUint(uint64(want.Sum32())|1<<32, 16)[1:]; r.Checksum != w {
		t.Fatalf("crc32c %s, want %s", r.Checksum, w)
	}
	code, out, errOut = runCmd("stream", path)
	if code != 0 || !strings.Contains(out, "4 tensors") || !strings.Contains(out, "64 MiB budget") {
		t.Fatalf("exit %d: %q %q", code, out, errOut)
	}
	if code, _, errOut := runCmd("stream", "--method", "nope", path); code != exitInvalid {
		t.Fatalf("unknown method: exit %d", code)
	} else {
		checkFailLine(t, errOut)
	}
	for _, args := range [][]string{{"stream"}, {"stream", "--budget", "12QiB", path}, {"stream", path, path}} {
		if code, _, _ := runCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "64MiB": 64 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "512kib": 512 << 10,
		"2G": 2 << 30, "3 MiB": 3 << 20, "7B": 7, "1TiB": 1 << 40, "8388607TiB": 8388607 << 40,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5GiB", "1XiB", "8388608TiB", "99999999999999999999", " 1", "1MiBs"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64MiB", "1GiB", "512KiB", "4096", "8388607TiB", "1.5G", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("parseSize(%q) = %d", s, n)
		}
		if m, err := parseSize(strconv.FormatInt(n, 10)); err != nil || m != n {
			t.Fatalf("parseSize(%q) = %d, but %d reads back as %d, %v", s, n, n, m, err)
		}
	})
}
