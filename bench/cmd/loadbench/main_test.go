package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	err = run(20, "first", "whole", "", 1, false, false, false, "", false)
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

// -serve answers each count with that many positive load times, one line
// each, and stops at the end of its input.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir, false, []string{"pte-64M"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "pte-64M-sparse.pte")
	if err := flag.CommandLine.Parse([]string{path}); err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(inW, "3\n2\n")
	inW.Close()
	stdin, stdout := os.Stdin, os.Stdout
	os.Stdin, os.Stdout = inR, outW
	err = run(1, "none", "whole", "", 1, false, false, true, "", false)
	os.Stdin, os.Stdout = stdin, stdout
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(outR)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 counts: %q", len(lines), out)
	}
	for i, want := range []int{3, 2} {
		f := strings.Fields(lines[i])
		if len(f) != want {
			t.Errorf("line %d: %d times, want %d", i, len(f), want)
		}
		for _, v := range f {
			if ns, err := strconv.ParseInt(v, 10, 64); err != nil || ns <= 0 {
				t.Errorf("line %d: time %q", i, v)
			}
		}
	}
}
