//go:build linux

package main

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// byLimit returns the median per-token time of the runs of one decoder at
// one limit, with the runs (every round).
func byLimit(all []run, name string, limit int64) (float64, []run) {
	var ms []float64
	var rs []run
	for _, r := range all {
		if r.Name == name && r.Limit == limit {
			rs = append(rs, r)
			if r.Outcome == "ok" {
				ms = append(ms, r.perToken())
			}
		}
	}
	return median(ms), rs
}

// ioFloor returns the milliseconds a pass must spend reading what (a) does
// not retain at the cold sequential bandwidth bw (bytes per second).
func ioFloor(size, retained int64, bw float64) float64 {
	return float64(size-retained) / bw * 1000
}

// report prints the table the round's issue asks for.
func report(w io.Writer, c config, size int64, all []run, bws []float64) {
	bw := median(bws)
	compute, _ := byLimit(all, "compute-only", 0)
	fmt.Fprintf(w, "\ncold sequential read (dd iflag=direct, median of %d): %.0f MB/s; compute-only (model resident, no limit): %.1f ms/token\n\n", len(bws), bw/1e6, compute)
	fmt.Fprintln(w, "ms per token: the median of the passes after the first, median over the rounds; wall: the whole run, page cache cold, with loading")
	fmt.Fprintln(w)
	a0 := "schedule/" + c.readers[0]
	others := ""
	for _, r := range c.readers[1:] {
		others += " | (a) with the " + r + " reader"
	}
	fmt.Fprintf(w, "| limit | (a) schedule, %s reader%s | (b) mmap, no schedule | (c) llama.cpp | compute-only | I/O floor | (a) ÷ max(floors) | (b) ÷ (a) | (c) ÷ (a) | retained | cgroup peak (a) / (b) / (c) | OOM kills | (a), (b), compute-only tokens |\n", c.readers[0], others)
	fmt.Fprintln(w, "|---|---:|"+strings.Repeat("---:|", len(c.readers)-1)+"---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	var refTokens []int
	for _, r := range all {
		if r.Name == "compute-only" && r.Outcome == "ok" {
			refTokens = r.Tokens
			break
		}
	}
	for _, p := range c.limits {
		limit := size * int64(p) / 100
		a, ar := byLimit(all, a0, limit)
		extra := ""
		var xr []run
		for _, r := range c.readers[1:] {
			v, rs := byLimit(all, "schedule/"+r, limit)
			extra += " | " + msStr(v)
			xr = append(xr, rs...)
		}
		b, br := byLimit(all, "mmap", limit)
		cc, cr := byLimit(all, "llama.cpp", limit)
		var retained []float64
		for _, r := range ar {
			retained = append(retained, float64(r.Retained))
		}
		ret := int64(median(retained))
		floor := ioFloor(size, ret, bw)
		peaks := func(rs []run) (int64, int64) {
			var p, o int64
			for _, r := range rs {
				p = max(p, r.CgPeak)
				o += max(r.OOMs, 0)
			}
			return p, o
		}
		pa, oa := peaks(ar)
		pb, ob := peaks(br)
		pc, oc := peaks(cr)
		same := "identical"
		for _, r := range append(append(slices.Clone(ar), br...), xr...) {
			if r.Outcome == "ok" && !slices.Equal(r.Tokens, refTokens) {
				same = "DIFFER"
			}
		}
		ratio := func(x, y float64) string {
			if x == 0 || y == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", x/y)
		}
		fmt.Fprintf(w, "| %d%% (%s) | %.0f%s | %.0f | %s | %.0f | %.0f | %s | %s | %s | %s | %s / %s / %s | %d / %d / %d | %s |\n",
			p, sizeStr(limit), a, extra, b, msStr(cc), compute, floor, ratio(a, max(compute, floor)), ratio(b, a), ratio(cc, a), sizeStr(ret),
			sizeStr(pa), sizeStr(pb), sizeStr(pc), oa, ob, oc, same)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | limit | budget | ms/token | passes (ms) | wall | read a pass | stall | cgroup peak | outcome |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|---:|---:|---:|---:|---|")
	for _, r := range all {
		fmt.Fprintf(w, "| %s | %s | %s | %.1f | %s | %.1f s | %s | %.2f s | %s | %s |\n", r.Name, sizeStr(r.Limit), sizeStr(r.Budget), r.perToken(), passList(r.PassMS), r.Wall,
			sizeStr(r.ReadPass), r.Stall, sizeStr(r.CgPeak), r.Outcome)
	}
	fmt.Fprintf(w, "\ntokens (compute-only): %v\n", refTokens)
	for _, r := range all {
		if r.Name == "llama.cpp" && r.Outcome == "ok" {
			fmt.Fprintf(w, "tokens (llama.cpp, limit %s): %v\n", sizeStr(r.Limit), r.Tokens)
		}
	}
}

func msStr(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func passList(ms []float64) string {
	s := ""
	for i, v := range ms {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.0f", v)
	}
	return s
}

// plotSVG draws per-token time against the limit for (a), (b), (c) and the
// floors.
func plotSVG(path string, c config, size int64, all []run, bw float64) error {
	p := plot.New()
	p.Title.Text = "decode time per token against the memory limit, page cache cold"
	p.X.Label.Text = "cgroup memory limit, % of the model file (" + sizeStr(size) + ")"
	p.Y.Label.Text = "ms per token"
	compute, _ := byLimit(all, "compute-only", 0)
	type line struct {
		name string
		c    color.Color
	}
	series := []line{{"schedule/" + c.readers[0], color.RGBA{G: 140, A: 255}}}
	labels := map[string]string{"schedule/" + c.readers[0]: "(a) edgeload pass schedule (" + c.readers[0] + " reader)", "mmap": "(b) same forward pass, mmap, no schedule", "llama.cpp": "(c) llama.cpp (mmap)"}
	for _, r := range c.readers[1:] {
		series = append(series, line{"schedule/" + r, color.RGBA{G: 200, B: 120, A: 255}})
		labels["schedule/"+r] = "(a) with the " + r + " reader"
	}
	series = append(series, line{"mmap", color.RGBA{R: 200, A: 255}}, line{"llama.cpp", color.RGBA{B: 200, A: 255}})
	var floor plotter.XYs
	for _, s := range series {
		var xy plotter.XYs
		for _, pc := range c.limits {
			limit := size * int64(pc) / 100
			v, rs := byLimit(all, s.name, limit)
			if v > 0 {
				xy = append(xy, plotter.XY{X: float64(pc), Y: v})
			}
			if s.name == "schedule/"+c.readers[0] {
				var retained []float64
				for _, r := range rs {
					retained = append(retained, float64(r.Retained))
				}
				floor = append(floor, plotter.XY{X: float64(pc), Y: max(compute, ioFloor(size, int64(median(retained)), bw))})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = s.c, s.c
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(labels[s.name], l, pts)
	}
	if len(floor) > 0 {
		l, err := plotter.NewLine(floor)
		if err != nil {
			return err
		}
		l.Color = color.Black
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("floor: max(compute-only, I/O floor)", l)
		cl, err := plotter.NewLine(plotter.XYs{{X: float64(c.limits[0]), Y: compute}, {X: float64(c.limits[len(c.limits)-1]), Y: compute}})
		if err != nil {
			return err
		}
		cl.Color = color.Gray{Y: 150}
		cl.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(cl)
		p.Legend.Add("compute-only", cl)
	}
	p.Legend.Left = true // below the lines: every run takes longer than compute-only
	p.Y.Min = 0
	return p.Save(8*vg.Inch, 4.5*vg.Inch, path)
}
