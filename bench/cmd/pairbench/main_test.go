package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// With PAIRBENCH_FAKE=T set, the test binary is a serve command whose loads
// all take T nanoseconds, except every fifth block, which is 10× slower
// (a slow spell of the machine, which both commands' ratios must not see).
func TestMain(m *testing.M) {
	if v := os.Getenv("PAIRBENCH_FAKE"); v != "" {
		os.Exit(fake(v))
	}
	os.Exit(m.Run())
}

func fake(v string) int {
	t, err := strconv.Atoi(v)
	if err != nil {
		return 2
	}
	in := bufio.NewScanner(os.Stdin)
	for block := 0; in.Scan(); block++ {
		n, err := strconv.Atoi(in.Text())
		if err != nil {
			return 2
		}
		if os.Getenv("PAIRBENCH_SHORT") != "" {
			n-- // a broken server: one time too few
		}
		d := t
		if block%5 == 4 {
			d *= 10
		}
		fmt.Println(strings.TrimSpace(strings.Repeat(strconv.Itoa(d)+" ", n)))
	}
	return 0
}

func fakeCmd(t *testing.T, ns int) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"env", "PAIRBENCH_FAKE=" + strconv.Itoa(ns), exe}
}

// Two fake loaders, b twice as slow as a: every ratio is 2, a's times are
// its own, and no pair has b faster.
func TestCompare(t *testing.T) {
	res, err := compare(fakeCmd(t, 1000), fakeCmd(t, 2000), 3, 20, 7, 1)
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

	// Swapped, b is the faster in every pair.
	res, err = compare(fakeCmd(t, 2000), fakeCmd(t, 1000), 3, 20, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	near("swapped ratio_median", res.RatioMedian, 0.5)
	near("swapped b_faster_pairs", res.BFasterPairs, 1)
}

// A server that answers with the wrong number of times, or that is not
// there, is an error, not a result.
func TestCompareErrors(t *testing.T) {
	short := append([]string{"env", "PAIRBENCH_SHORT=1"}, fakeCmd(t, 1000)...)
	if _, err := compare(fakeCmd(t, 1000), short, 2, 3, 4, 0); err == nil || !strings.Contains(err.Error(), "3 times for 4 loads") {
		t.Errorf("short answers: err = %v", err)
	}
	if _, err := compare(fakeCmd(t, 1000), []string{"/nonexistent/loader"}, 2, 3, 4, 0); err == nil {
		t.Error("a missing command gave no error")
	}
	if _, err := compare(fakeCmd(t, 1000), []string{"false"}, 2, 3, 4, 0); err == nil {
		t.Error("a command that exits at once gave no error")
	}
}
