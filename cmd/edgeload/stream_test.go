package main

import (
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/internal/testkit/ziptest"
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
	// The same model as an entry of a zip archive.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	archive, _, err := ziptest.Model(b)
	if err != nil {
		t.Fatal(err)
	}
	zp := writeTemp(t, t.TempDir(), "app.apk", archive)
	code, out, errOut = runCmd("stream", "--json", "--budget", "64KiB", zp+"!/"+ziptest.Stored)
	if code != 0 || errOut != "" {
		t.Fatalf("the zip entry: exit %d: %s", code, errOut)
	}
	var rz streamReport
	if err := json.Unmarshal([]byte(out), &rz); err != nil {
		t.Fatal(err)
	}
	if rz.Tensors != r.Tensors || rz.Bytes != r.Bytes || rz.Checksum != r.Checksum {
		t.Fatalf("the zip entry: report %+v, the file's %+v", rz, r)
	}
	for _, args := range [][]string{{"stream"}, {"stream", "--budget", "12QiB", path}, {"stream", "--budget", "0", path}, {"stream", path, path}} {
		if code, _, _ := runCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestStreamPasses streams a model pass after pass: every pass checksums
// what the pattern gives, each has its statistics, and a later pass reads
// no more than what is not retained.
func TestStreamPasses(t *testing.T) {
	sizes := []int64{100000, 3000, 250000, 17, 180000, 90000, 200000, 150000}
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
	wantCRC := strconv.FormatUint(uint64(want.Sum32())|1<<32, 16)[1:]
	for _, reader := range []string{"mapped", "direct"} {
		code, out, errOut := runCmd("stream", "--json", "--passes", "3", "--retain", "200KiB", "--budget", "768KiB", "--reader", reader, path)
		if code != 0 || errOut != "" {
			if reader == "direct" && strings.Contains(errOut, "unsupported") {
				continue
			}
			t.Fatalf("%s: exit %d: %s", reader, code, errOut)
		}
		var r streamReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Passes != 3 || len(r.PassStats) != 3 || r.Checksum != wantCRC || r.Bytes != 3*total || r.Reader != reader || r.Order != "use" {
			t.Fatalf("%s: report %+v, want 3 passes of %d bytes, crc32c %s", reader, r, total, wantCRC)
		}
		if r.Retained == 0 || r.Retained > 200<<10 || r.PeakBytes > r.Budget {
			t.Fatalf("%s: retained %d, peak %d of a budget of %d", reader, r.Retained, r.PeakBytes, r.Budget)
		}
		for _, p := range r.PassStats[1:] {
			if p.Bytes != total || p.ReadBytes == 0 || p.ReadBytes >= r.PassStats[0].ReadBytes {
				t.Fatalf("%s: pass %d read %d bytes, pass 0 %d: %+v", reader, p.Pass, p.ReadBytes, r.PassStats[0].ReadBytes, r.PassStats)
			}
		}
	}
	code, out, errOut := runCmd("stream", "--passes", "2", "--retain", "auto", path)
	if code != 0 || !strings.Contains(out, "pass 1:") || !strings.Contains(out, "× 2 passes") {
		t.Fatalf("text: exit %d: %q %q", code, out, errOut)
	}
	// A budget that cannot hold the largest weight whole names it.
	code, _, errOut = runCmd("stream", "--passes", "2", "--budget", "128KiB", path)
	if code != exitInvalid || !strings.Contains(errOut, "forward/values/2") || !strings.Contains(errOut, "128 KiB") {
		t.Fatalf("small budget: exit %d: %q", code, errOut)
	}
	checkFailLine(t, errOut)
	for _, args := range [][]string{{"stream", "--passes", "0", path}, {"stream", "--retain", "lots", path}, {"stream", "--reader", "fast", path}} {
		if code, _, _ := runCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
}
