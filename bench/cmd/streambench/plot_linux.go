//go:build linux

package main

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotSVG draws resident bytes against time for the given runs, with the
// stream's budget and the cgroup limit as horizontal lines.
func plotSVG(path string, rs []result, budget, limit int64) error {
	p := plot.New()
	p.Title.Text = "weight pages resident (mincore), page cache cold, " + sizeStr(limit) + " cgroup"
	p.X.Label.Text = "seconds"
	p.Y.Label.Text = "MiB resident"
	colors := []color.Color{color.RGBA{R: 200, A: 255}, color.RGBA{B: 200, A: 255}, color.RGBA{G: 150, A: 255}}
	var end float64
	for k, r := range rs {
		xy := make(plotter.XYs, len(r.series))
		for i, s := range r.series {
			xy[i].X, xy[i].Y = s.t.Seconds(), float64(s.b)/(1<<20)
			end = max(end, xy[i].X)
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = colors[k%len(colors)]
		l.Width = vg.Points(1)
		p.Add(l)
		p.Legend.Add(r.name, l)
	}
	for _, h := range []struct {
		name string
		v    int64
		c    color.Color
	}{{"budget " + sizeStr(budget), budget, color.Black}, {"cgroup limit", limit, color.Gray{Y: 150}}} {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: float64(h.v) / (1 << 20)}, {X: end, Y: float64(h.v) / (1 << 20)}})
		if err != nil {
			return err
		}
		l.Color = h.c
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(h.name, l)
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p.Save(8*vg.Inch, 4*vg.Inch, path)
}
