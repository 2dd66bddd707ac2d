package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeProg is a serve command in sh (the test binary cannot run itself as
// one: under qemu it is not a host executable; and awk may read its input
// in blocks, waiting for more): every load of a block takes $1
// nanoseconds, except in every fifth block, which is 10× slower (a slow
// spell of the machine, which the ratios must not see); with $2 = 1 it
// answers each count with one time too few. Each block appends $3 (the
// loader's name) to the file $4, so that a test sees the order of turns.
const fakeProg = `b=0
while read n; do
	b=$((b + 1)); d=$1
	if [ $((b % 5)) -eq 0 ]; then d=$((d * 10)); fi
	s=""; i=$2
	while [ "$i" -lt "$n" ]; do s="$s${s:+ }$d"; i=$((i + 1)); done
	echo "$3" >>"$4"
	echo "$s"
done`

func fakeCmd(t *testing.T, ns int, name, log string) []string {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to play the loaders")
	}
	return []string{"sh", "-c", fakeProg, "fake", strconv.Itoa(ns), "0", name, log}
}

// Two fake loaders, b twice as slow as a: every ratio is 2, a's times are
// its own, and no pair has b faster.
func TestCompare(t *testing.T) {
	log := filepath.Join(t.TempDir(), "turns")
	res, err := compare(fakeCmd(t, 1000, "a", log), fakeCmd(t, 2000, "b", log), 3, 20, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds != 3 || res.Pairs != 20 || res.N != 7 {
		t.Errorf("rounds %d, pairs %d, n %d", res.Rounds, res.Pairs, res.N)
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("a_min_us", res.AMinUS, 1)
	near("b_min_us", res.BMinUS, 2)
	near("a_median_us", res.AMedianUS, 1)
	near("b_median_us", res.BMedianUS, 2)
	near("ratio_median", res.RatioMedian, 2)
	near("ratio_min", res.RatioMin, 2)
	near("pair_ratio_p10", res.PairRatioP10, 2)
	near("pair_ratio_median", res.PairRatioMedian, 2)
	near("pair_ratio_p90", res.PairRatioP90, 2)
	near("b_faster_pairs", res.BFasterPairs, 0)
	near("round_ratio_min", res.RoundRatioMin, 2)
	near("round_ratio_max", res.RoundRatioMax, 2)
	// Turns: in each round's 21 pairs (1 warm-up), a goes first in even
	// pairs and b in odd ones.
	turns, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(strings.Repeat("a\nb\nb\na\n", 10)+"a\nb\n", 3)
	if string(turns) != want {
		t.Errorf("turns:\n%s\nwant:\n%s", turns, want)
	}

	// Swapped, b is the faster in every pair.
	res, err = compare(fakeCmd(t, 2000, "a", os.DevNull), fakeCmd(t, 1000, "b", os.DevNull), 3, 20, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	near("swapped ratio_median", res.RatioMedian, 0.5)
	near("swapped b_faster_pairs", res.BFasterPairs, 1)
}

// A server that answers with the wrong number of times, or that is not
// there, is an error, not a result.
func TestCompareErrors(t *testing.T) {
	short := fakeCmd(t, 1000, "b", os.DevNull)
	short[5] = "1"
	if _, err := compare(fakeCmd(t, 1000, "a", os.DevNull), short, 2, 3, 4, 0); err == nil || !strings.Contains(err.Error(), "3 times for 4 loads") {
		t.Errorf("short answers: err = %v", err)
	}
	if _, err := compare(fakeCmd(t, 1000, "a", os.DevNull), []string{"/nonexistent/loader"}, 2, 3, 4, 0); err == nil {
		t.Error("a missing command gave no error")
	}
	if _, err := compare(fakeCmd(t, 1000, "a", os.DevNull), []string{"false"}, 2, 3, 4, 0); err == nil {
		t.Error("a command that exits at once gave no error")
	}
}
