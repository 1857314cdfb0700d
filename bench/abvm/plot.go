package abvm

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pppfwd/pppfwd/internal/plotfile"
)

// Plot writes the report's figures into dir as PNG and SVG and returns
// the files written: delivered against offered load for both paths, each
// vCPU's busy share per step, and the round trip under load (p50 and
// p99, shaped too when measured); with a TCP step also its goodput
// (ab-tcp, ab-tcp-shaped) and the round trip during it (ab-tcp-latency),
// per transfer.
func Plot(r *Report, dir string) ([]string, error) {
	var files []string
	save := func(p *plot.Plot, name string) error {
		fs, err := plotfile.Save(p, 16*vg.Centimeter, 10*vg.Centimeter, dir, name)
		files = append(files, fs...)
		return err
	}
	paths := []struct {
		name string
		p    *Path
		c    color.Color
	}{{"kernel", &r.Kernel, color.RGBA{R: 200, G: 60, B: 40, A: 255}}, {"pppfwd", &r.PPPFWD, color.RGBA{R: 30, G: 90, B: 200, A: 255}}}
	sub := fmt.Sprintf("%d B, load %s, %d %ss, median of %d runs", r.Size, r.Direction, r.VCPUs, r.coreName(), r.Runs)
	dirs := 2.0
	if r.Direction == "down" || r.Direction == "up" {
		dirs = 1
	}
	if r.Emulated {
		sub += ", TCG"
	}

	// Delivered against offered.
	p := plot.New()
	p.Title.Text = "Delivered vs offered load (" + sub + ")"
	p.X.Label.Text = "offered frames/s (all directions)"
	p.Y.Label.Text = "delivered frames/s"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	for _, e := range paths {
		if err := addLine(p, e.name, e.c, nil, e.p.Steps, func(s Step) (float64, float64) { return dirs * s.OfferedPPS, s.PPS }); err != nil {
			return nil, err
		}
	}
	if err := save(p, "ab-delivered"); err != nil {
		return nil, err
	}

	// Per-core busy share.
	p = plot.New()
	p.Title.Text = r.coreName() + " busy share per step (" + sub + ")"
	p.X.Label.Text = "offered frames/s (all directions)"
	p.Y.Label.Text = "busy share"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Legend.Top, p.Legend.Left = true, true
	dashes := [][]vg.Length{nil, {vg.Points(4), vg.Points(3)}, {vg.Points(1), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}}
	for _, e := range paths {
		n := 0
		for _, s := range e.p.Steps {
			n = max(n, len(s.PerCoreBusy))
		}
		for c := 0; c < n; c++ {
			c := c
			err := addLine(p, fmt.Sprintf("%s cpu%d", e.name, c), e.c, dashes[c%len(dashes)], e.p.Steps, func(s Step) (float64, float64) {
				if c < len(s.PerCoreBusy) {
					return dirs * s.OfferedPPS, s.PerCoreBusy[c]
				}
				return dirs * s.OfferedPPS, math.NaN()
			})
			if err != nil {
				return nil, err
			}
		}
	}
	if err := save(p, "ab-cores"); err != nil {
		return nil, err
	}

	// Round trip under load.
	p = plot.New()
	p.Title.Text = "Round trip under load (" + sub + ")"
	p.X.Label.Text = "offered frames/s (all directions)"
	p.Y.Label.Text = "round trip, ms"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	for _, e := range paths {
		for _, v := range []struct {
			what  string
			steps []Step
			dash  []vg.Length
		}{{"", e.p.Steps, nil}, {" shaped", e.p.ShapedSteps, []vg.Length{vg.Points(4), vg.Points(3)}}} {
			if len(v.steps) == 0 {
				continue
			}
			if err := addLine(p, e.name+v.what+" p99", e.c, v.dash, v.steps, func(s Step) (float64, float64) {
				return dirs * s.OfferedPPS, positive(s.LatencyP99Ms)
			}); err != nil {
				return nil, err
			}
			if err := addLine(p, e.name+v.what+" p50", lighter(e.c), v.dash, v.steps, func(s Step) (float64, float64) {
				return dirs * s.OfferedPPS, positive(s.LatencyP50Ms)
			}); err != nil {
				return nil, err
			}
		}
	}
	if err := save(p, "ab-latency"); err != nil {
		return nil, err
	}
	if len(r.Kernel.TCP) == 0 && len(r.PPPFWD.TCP) == 0 {
		return files, nil
	}

	// TCP: one group of bars per transfer; the goodput unshaped and
	// shaped in figures of their own (their scales differ by the shaper).
	keys, labels := tcpGroups(r)
	value := func(ts []TCP, k tcpKey, get func(TCP) float64) float64 {
		for _, t := range ts {
			if t.key() == k {
				return get(t)
			}
		}
		return 0
	}
	type bar struct {
		name string
		c    color.Color
		ts   []TCP
		get  func(TCP) float64
	}
	bars := func(p *plot.Plot, bs []bar, shaped func(bool) bool) error {
		var ks []tcpKey
		var ls []string
		for i, k := range keys {
			if shaped(k.shaped) {
				ks, ls = append(ks, k), append(ls, labels[i])
			}
		}
		w := vg.Points(float64(min(60/len(bs), 14)))
		for i, b := range bs {
			var vs plotter.Values
			for _, k := range ks {
				vs = append(vs, value(b.ts, k, b.get))
			}
			bc, err := plotter.NewBarChart(vs, w)
			if err != nil {
				return err
			}
			bc.Color, bc.LineStyle.Width = b.c, 0
			bc.Offset = w * vg.Length(float64(i)-float64(len(bs)-1)/2)
			p.Add(bc)
			p.Legend.Add(b.name, bc)
		}
		p.NominalX(ls...)
		p.Legend.Top = true
		p.X.Label.Text = "transfer: direction, parallel streams"
		p.Y.Min = 0
		return nil
	}
	tsub := fmt.Sprintf("iperf3 %.0f s, median of %d runs", r.TCPSeconds, r.Runs)
	if r.Emulated {
		tsub += ", TCG"
	}
	for _, f := range []struct {
		name, what string
		shaped     bool
	}{{"ab-tcp", "", false}, {"ab-tcp-shaped", fmt.Sprintf(", shaped at %.1f Mbit/s", float64(r.ShapeBps)/1e6), true}} {
		n := 0
		for _, k := range keys {
			if k.shaped == f.shaped {
				n++
			}
		}
		if n == 0 {
			continue
		}
		p = plot.New()
		p.Title.Text = "TCP goodput (" + tsub + f.what + ")"
		p.Y.Label.Text = "goodput, Mbit/s"
		var gb []bar
		for _, e := range paths {
			gb = append(gb, bar{e.name, e.c, e.p.TCP, func(t TCP) float64 { return t.Mbps }})
		}
		if err := bars(p, gb, func(s bool) bool { return s == f.shaped }); err != nil {
			return nil, err
		}
		if err := save(p, f.name); err != nil {
			return nil, err
		}
	}
	p = plot.New()
	p.Title.Text = "Round trip under TCP load (" + tsub + ")"
	p.Y.Label.Text = "round trip, ms"
	var lb []bar
	for _, e := range paths {
		lb = append(lb, bar{e.name + " p99", e.c, e.p.TCP, func(t TCP) float64 { return t.LatencyP99Ms }},
			bar{e.name + " p50", lighter(e.c), e.p.TCP, func(t TCP) float64 { return t.LatencyP50Ms }})
	}
	if err := bars(p, lb, func(bool) bool { return true }); err != nil {
		return nil, err
	}
	if err := save(p, "ab-tcp-latency"); err != nil {
		return nil, err
	}
	return files, nil
}

// positive maps values a log axis cannot show to NaN (not drawn).
func positive(v float64) float64 {
	if v <= 0 {
		return math.NaN()
	}
	return v
}

func lighter(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.RGBA{R: uint8((r>>8 + 255) / 2), G: uint8((g>>8 + 255) / 2), B: uint8((b>>8 + 255) / 2), A: 255}
}

// addLine adds a line with points of steps (xy per step; NaN points are
// left out).
func addLine(p *plot.Plot, name string, c color.Color, dash []vg.Length, steps []Step, xy func(Step) (float64, float64)) error {
	var pts plotter.XYs
	for _, s := range steps {
		x, y := xy(s)
		if math.IsNaN(x) || math.IsNaN(y) || x <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: y})
	}
	if len(pts) == 0 {
		return nil
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes = c, dash
	sc.Color, sc.Shape = c, draw.CircleGlyph{}
	p.Add(l, sc)
	p.Legend.Add(name, l, sc)
	return nil
}
