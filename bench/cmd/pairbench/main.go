// Command pairbench compares two loaders' load times in one run, blocks of
// a few milliseconds apart, so that both see the same machine.
//
// Usage:
//
//	pairbench [-rounds R] [-pairs P] [-n N] [-warmup W] -a "CMD ARG..." -b "CMD ARG..."
//
// A shared or virtual machine can change speed from one second to the
// next: two loaders timed one after the other, each for a whole run, can
// each meet a different speed, and their medians then compare the speeds,
// not the loaders. And the process itself matters (where the kernel put its
// mappings, for one), so one process of each compares two processes as
// much as two loaders.
//
// So pairbench runs R rounds. Each starts both commands afresh and asks
// them in turn for W+P pairs of blocks of N loads, through the serve
// protocol of loadbench -serve and cxxload ... serve (write a count N and
// a newline; read one line of N load times in nanoseconds), alternating
// which goes first; the W warm-up pairs are discarded. It prints one JSON
// line:
//
//	{"a":..., "b":..., "rounds":R, "pairs":P, "n":N,
//	 "a_median_us":..., "a_min_us":..., "b_median_us":..., "b_min_us":...,
//	 "ratio_median":..., "ratio_min":...,
//	 "pair_ratio_p10":..., "pair_ratio_median":..., "pair_ratio_p90":...,
//	 "b_faster_pairs":..., "round_ratio_min":..., "round_ratio_max":...}
//
// where the medians and minima are over all of a loader's loads,
// ratio_median and ratio_min are b's over a's, pair_ratio_* are the
// percentiles of each pair's ratio of b's block median to a's,
// b_faster_pairs is the fraction of pairs in which b's block median was
// the lower, and round_ratio_* the range of the rounds' ratios of medians
// (run a command against itself to see how far apart two processes are).
// The commands are split at spaces (no quoting).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

type result struct {
	A               string  `json:"a"`
	B               string  `json:"b"`
	Rounds          int     `json:"rounds"`
	Pairs           int     `json:"pairs"`
	N               int     `json:"n"`
	AMedianUS       float64 `json:"a_median_us"`
	AMinUS          float64 `json:"a_min_us"`
	BMedianUS       float64 `json:"b_median_us"`
	BMinUS          float64 `json:"b_min_us"`
	RatioMedian     float64 `json:"ratio_median"`
	RatioMin        float64 `json:"ratio_min"`
	PairRatioP10    float64 `json:"pair_ratio_p10"`
	PairRatioMedian float64 `json:"pair_ratio_median"`
	PairRatioP90    float64 `json:"pair_ratio_p90"`
	BFasterPairs    float64 `json:"b_faster_pairs"`
	RoundRatioMin   float64 `json:"round_ratio_min"`
	RoundRatioMax   float64 `json:"round_ratio_max"`
}

func main() {
	rounds := flag.Int("rounds", 10, "rounds, each with a fresh process of both commands")
	pairs := flag.Int("pairs", 20, "pairs of blocks measured in a round")
	n := flag.Int("n", 100, "loads in a block")
	warmup := flag.Int("warmup", 5, "pairs run first and discarded")
	a := flag.String("a", "", "the first loader's serve command")
	b := flag.String("b", "", "the second loader's serve command")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: pairbench [-rounds R] [-pairs P] [-n N] [-warmup W] -a \"CMD ARG...\" -b \"CMD ARG...\"\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *a == "" || *b == "" || flag.NArg() != 0 || *rounds < 1 || *pairs < 1 || *n < 1 || *warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	res, err := compare(strings.Fields(*a), strings.Fields(*b), *rounds, *pairs, *n, *warmup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pairbench:", err)
		os.Exit(1)
	}
	res.A, res.B = *a, *b
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "pairbench:", err)
		os.Exit(1)
	}
}

// server is one running serve command.
type server struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func start(argv []string) (*server, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &server{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16)}, nil
}

// block asks s for n loads and returns their times in nanoseconds.
func (s *server) block(n int) ([]float64, error) {
	if _, err := fmt.Fprintf(s.in, "%d\n", n); err != nil {
		return nil, fmt.Errorf("%s: %w", s.cmd.Path, err)
	}
	line, err := s.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("%s: no answer: %w", s.cmd.Path, err)
	}
	f := strings.Fields(line)
	if len(f) != n {
		return nil, fmt.Errorf("%s: %d times for %d loads", s.cmd.Path, len(f), n)
	}
	t := make([]float64, n)
	for i, v := range f {
		if t[i], err = strconv.ParseFloat(v, 64); err != nil || t[i] <= 0 {
			return nil, fmt.Errorf("%s: bad time %q", s.cmd.Path, v)
		}
	}
	return t, nil
}

func (s *server) stop() error {
	s.in.Close()
	return s.cmd.Wait()
}

// compare runs rounds rounds, each with a fresh process of a and of b, of
// warmup+pairs pairs of blocks of n loads, a first in even pairs and b
// first in odd ones, and summarises the measured ones.
func compare(a, b []string, rounds, pairs, n, warmup int) (res result, err error) {
	if len(a) == 0 || len(b) == 0 {
		return res, errors.New("empty command")
	}
	var all [2][]float64
	ratios := make([]float64, 0, rounds*pairs)
	res.RoundRatioMin, res.RoundRatioMax = math.Inf(1), math.Inf(-1)
	for range rounds {
		var t [2][]float64
		if t, ratios, err = round(a, b, pairs, n, warmup, ratios); err != nil {
			return res, err
		}
		r := median(t[1]) / median(t[0])
		res.RoundRatioMin, res.RoundRatioMax = min(res.RoundRatioMin, r), max(res.RoundRatioMax, r)
		all[0], all[1] = append(all[0], t[0]...), append(all[1], t[1]...)
	}
	res.Rounds, res.Pairs, res.N = rounds, pairs, n
	res.AMedianUS, res.AMinUS = median(all[0])/1e3, slices.Min(all[0])/1e3
	res.BMedianUS, res.BMinUS = median(all[1])/1e3, slices.Min(all[1])/1e3
	res.RatioMedian, res.RatioMin = res.BMedianUS/res.AMedianUS, res.BMinUS/res.AMinUS
	slices.Sort(ratios)
	res.PairRatioP10, res.PairRatioMedian, res.PairRatioP90 = ratios[len(ratios)/10], median(ratios), ratios[len(ratios)*9/10]
	faster := 0
	for _, r := range ratios {
		if r < 1 {
			faster++
		}
	}
	res.BFasterPairs = float64(faster) / float64(len(ratios))
	return res, nil
}

// round is one round of compare: it returns the load times of a and b and
// appends each measured pair's ratio to ratios.
func round(a, b []string, pairs, n, warmup int, ratios []float64) (all [2][]float64, _ []float64, err error) {
	sa, err := start(a)
	if err != nil {
		return all, ratios, err
	}
	sb, err := start(b)
	if err != nil {
		sa.stop()
		return all, ratios, err
	}
	defer func() {
		ea, eb := sa.stop(), sb.stop()
		if err == nil {
			err = errors.Join(ea, eb)
		}
	}()
	for p := range warmup + pairs {
		var med [2]float64
		for k := range 2 {
			i := k ^ p&1 // which server goes k-th in this pair
			t, err := [2]*server{sa, sb}[i].block(n)
			if err != nil {
				return all, ratios, err
			}
			if p < warmup {
				continue
			}
			all[i] = append(all[i], t...)
			med[i] = median(t)
		}
		if p >= warmup {
			ratios = append(ratios, med[1]/med[0])
		}
	}
	return all, ratios, nil
}

// median returns the median of t, sorting it.
func median(t []float64) float64 {
	slices.Sort(t)
	m := len(t) / 2
	if len(t)%2 == 0 {
		return (t[m-1] + t[m]) / 2
	}
	return t[m]
}
