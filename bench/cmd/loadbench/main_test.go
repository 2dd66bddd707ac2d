package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A run on a generated 64-tensor program prints one JSON line whose
// numbers hang together: a view per tensor, and per-phase minima that add
// up to no more than the fastest whole load (each load is the sum of its
// phases).
func TestRun(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir, false, []string{"pte-64M"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pte-64M-sparse.pte")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if err := flag.CommandLine.Parse([]string{path}); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	err = run(20, "first", "whole", "", 1, false, false, "", false)
	os.Stdout = stdout
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	var res result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Tensors != 64 || res.Iters != 20 || res.MinUS <= 0 || res.MedianUS < res.MinUS {
		t.Fatalf("result %+v", res)
	}
	sum := 0.0
	for _, name := range []string{"open", "views", "touch", "close"} {
		lo, mid := res.PhaseMinUS[name], res.PhaseMedianUS[name]
		if lo <= 0 || mid < lo {
			t.Errorf("phase %s: min %v, median %v", name, lo, mid)
		}
		sum += lo
	}
	if sum > res.MinUS+0.01 {
		t.Errorf("phase minima add up to %.3f us, more than the fastest load's %.3f", sum, res.MinUS)
	}
}
