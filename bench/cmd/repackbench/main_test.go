package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/edgeload/edgeload/internal/testkit/writer"
	"github.com/edgeload/edgeload/repack"
)

// TestRun runs the benchmark on a 24 MiB program and checks its figures
// for sense: one time per round for each of cp, cp+fsync, repack, synced
// repack and verify; the ratios the medians of both sides give; a Go heap
// peak measured (above 0) and far below the file's size, as repack
// copies the weights without holding them; and no output left behind.
func TestRun(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("no cp:", err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "model.pte")
	ts := make([]writer.PTETensor, 12)
	for i := range ts {
		ts[i] = writer.PTETensor{ScalarType: writer.PTEFloat32, Sizes: []int32{512, 1024},
			Fill: func(p []byte, off int64) {
				for k := range p {
					p[k] = byte(int64(i) + (off+int64(k))*7)
				}
			}}
	}
	info, err := (&writer.PTE{Methods: []writer.PTEMethod{{Name: "forward", Tensors: ts}}}).WriteFile(in)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 3
	var out bytes.Buffer
	if err := run(&out, in, "", rounds, repack.Options{Align: 4096}); err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	t.Logf("%s", out.String())
	if res.Size != info.FileSize || res.Rounds != rounds || res.Align != 4096 {
		t.Errorf("size %d rounds %d align %d, want %d %d 4096", res.Size, res.Rounds, res.Align, info.FileSize, rounds)
	}
	for name, v := range map[string][]float64{"cp": res.CP, "cp+fsync": res.CPFsync, "repack": res.Repack, "repack --sync": res.Sync, "verify": res.Verify} {
		if len(v) != rounds || slices.ContainsFunc(v, func(d float64) bool { return !(d > 0) }) {
			t.Errorf("%s times %v, want %d positive times", name, v, rounds)
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	if want := med(res.Repack) / med(res.CP); !near(res.Ratio, want) {
		t.Errorf("ratio_median %v, want median repack / median cp = %v", res.Ratio, want)
	}
	if want := med(res.Sync) / med(res.CPFsync); !near(res.RatioSync, want) {
		t.Errorf("ratio_sync_median %v, want median synced repack / median cp+fsync = %v", res.RatioSync, want)
	}
	if res.HeapPeak == 0 || res.HeapPeak > uint64(info.FileSize)/4 {
		t.Errorf("heap peak %d bytes for a %d-byte file: not measured, or in proportion to the file", res.HeapPeak, info.FileSize)
	}
	if res.MaxRSS <= 0 {
		t.Errorf("maxrss %d", res.MaxRSS)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("%d files left in %s", len(es), dir)
	}
}

// med is the median, computed here rather than by the code under test.
func med(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
