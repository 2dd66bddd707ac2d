// Command benchtable turns `go test -bench` output into Markdown tables: the
// median of each metric over the -count runs, one benchmark family pivoted
// by two of its name keys. BENCHMARKS.md is made with it.
//
// Usage:
//
//	benchtable -bench Open -unit ns/op [-row file] [-col mode] [-ratio whole] FILE...
//
// Sub-benchmark names are key=value pairs (BenchmarkOpen/file=pte-1G/mode=whole);
// -row and -col name the keys for rows and columns (the other keys, if any,
// are appended to the row label). Values are medians, printed with a unit
// suffix (ns, µs, ms, s; B, KiB, MiB, GiB) and the run count when it is not
// the same everywhere. With -ratio C, each cell of another column is followed
// by its ratio to column C on the same row.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

type key struct{ name, unit string }

func main() {
	bench := flag.String("bench", "", "benchmark family, e.g. Open (required)")
	unit := flag.String("unit", "ns/op", "metric to show")
	rowKey := flag.String("row", "file", "name key for rows")
	colKey := flag.String("col", "mode", "name key for columns")
	ratio := flag.String("ratio", "", "column to show ratios against")
	flag.Parse()
	if *bench == "" {
		flag.Usage()
		os.Exit(2)
	}
	vals := map[key][]float64{}
	var order []string
	seen := map[string]bool{}
	read := func(r io.Reader) error {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
				continue
			}
			name := strings.TrimPrefix(f[0], "Benchmark")
			if i := strings.LastIndexByte(name, '-'); i > 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			for i := 2; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					continue
				}
				k := key{name, f[i+1]}
				vals[k] = append(vals[k], v)
			}
			if !seen[name] {
				seen[name] = true
				order = append(order, name)
			}
		}
		return sc.Err()
	}
	if flag.NArg() == 0 {
		if err := read(os.Stdin); err != nil {
			fatal(err)
		}
	}
	for _, p := range flag.Args() {
		f, err := os.Open(p)
		if err != nil {
			fatal(err)
		}
		err = read(f)
		f.Close()
		if err != nil {
			fatal(err)
		}
	}

	type cell struct {
		v float64
		n int
	}
	var rows, cols []string
	table := map[[2]string]cell{}
	for _, name := range order {
		parts := strings.Split(name, "/")
		if parts[0] != *bench {
			continue
		}
		var row, col string
		var rest []string
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(p, "=")
			switch {
			case ok && k == *rowKey:
				row = v
			case ok && k == *colKey:
				col = v
			default:
				rest = append(rest, p)
			}
		}
		if len(rest) > 0 {
			row = strings.TrimPrefix(row+" "+strings.Join(rest, " "), " ")
		}
		xs := vals[key{name, *unit}]
		if len(xs) == 0 {
			continue
		}
		if !slices.Contains(rows, row) {
			rows = append(rows, row)
		}
		if !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
		table[[2]string{row, col}] = cell{median(xs), len(xs)}
	}
	if len(rows) == 0 {
		fatal(fmt.Errorf("no %s results for %s", *unit, *bench))
	}
	fmt.Printf("| %s \\ %s (%s, median) |", *rowKey, *colKey, *unit)
	for _, c := range cols {
		fmt.Printf(" %s |", c)
	}
	fmt.Printf("\n|---|")
	for range cols {
		fmt.Printf("---:|")
	}
	fmt.Println()
	ns := map[int]int{}
	for _, c := range table {
		ns[c.n]++
	}
	for _, r := range rows {
		fmt.Printf("| %s |", r)
		base, hasBase := table[[2]string{r, *ratio}]
		for _, c := range cols {
			x, ok := table[[2]string{r, c}]
			if !ok {
				fmt.Printf(" — |")
				continue
			}
			s := format(x.v, *unit)
			if len(ns) > 1 {
				s += fmt.Sprintf(" (n=%d)", x.n)
			}
			if hasBase && c != *ratio && base.v != 0 {
				s += " (" + ratioString(x.v/base.v) + ")"
			}
			fmt.Printf(" %s |", s)
		}
		fmt.Println()
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func ratioString(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	default:
		return fmt.Sprintf("%.2f×", r)
	}
}

func format(v float64, unit string) string {
	switch {
	case unit == "ns/op" || strings.HasSuffix(unit, "-ns"):
		switch a := math.Abs(v); {
		case a >= 1e9:
			return fmt.Sprintf("%.2f s", v/1e9)
		case a >= 1e6:
			return fmt.Sprintf("%.2f ms", v/1e6)
		case a >= 1e3:
			return fmt.Sprintf("%.1f µs", v/1e3)
		default:
			return fmt.Sprintf("%.1f ns", v)
		}
	case unit == "B/op" || strings.HasSuffix(unit, "-B"):
		switch a := math.Abs(v); {
		case a >= 1<<30:
			return fmt.Sprintf("%.2f GiB", v/(1<<30))
		case a >= 1<<20:
			return fmt.Sprintf("%.1f MiB", v/(1<<20))
		case a >= 1<<10:
			return fmt.Sprintf("%.0f KiB", v/(1<<10))
		default:
			return fmt.Sprintf("%.0f B", v)
		}
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "benchtable:", err)
	os.Exit(1)
}
