package iobench

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/pppfwd/pppfwd/internal/plotfile"
)

// latencySide is one measured side's probes: its name, its rounds
// pooled, and how to find its copy in a round.
type latencySide struct {
	name   string
	pooled *Latency
	round  func(Round) *Latency
}

// latencySides are r's measured sides that carry latency probes, in a
// fixed order: kernel, pppfwd, floor.
func (r *Result) latencySides() []latencySide {
	var out []latencySide
	if r.Kernel != nil && r.Kernel.Latency != nil {
		out = append(out, latencySide{"kernel", r.Kernel.Latency, func(x Round) *Latency { return x.KernelLatency }})
	}
	if r.PPPFWD.Latency != nil {
		out = append(out, latencySide{"pppfwd", r.PPPFWD.Latency, func(x Round) *Latency { return x.PPPFWDLatency }})
	}
	if r.Floor != nil && r.Floor.Latency != nil {
		out = append(out, latencySide{"floor", r.Floor.Latency, func(x Round) *Latency { return x.FloorLatency }})
	}
	return out
}

// WriteLatencyCSV writes every latency probe of r (Options.Latency), one
// row each: the side (kernel, pppfwd, floor; kernel-interleaved and
// pppfwd-interleaved for Options.Interleave's series, round 1), the round
// (from 1), the probe's number in its round (from 1, in the order sent:
// one every 2 ms, in an interleaved series one every 4 ms a side) and its
// delay in µs, empty for a probe lost. The order keeps what the
// percentiles hide: whether the slow probes of a round come together.
func (r *Result) WriteLatencyCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"side", "round", "probe", "delay_us"}); err != nil {
		return err
	}
	series := func(side string, round int, l *Latency) error {
		for i, d := range l.series {
			v := ""
			if d >= 0 {
				v = strconv.FormatFloat(float64(d.Nanoseconds())/1e3, 'f', 3, 64)
			}
			if err := cw.Write([]string{side, strconv.Itoa(round), strconv.Itoa(i + 1), v}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range r.latencySides() {
		for ri, rd := range r.Rounds {
			if l := s.round(rd); l != nil {
				if err := series(s.name, ri+1, l); err != nil {
					return err
				}
			}
		}
	}
	if il := r.Interleaved; il != nil {
		if err := series("kernel-interleaved", 1, il.Kernel); err != nil {
			return err
		}
		if err := series("pppfwd-interleaved", 1, il.PPPFWD); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// PlotLatency writes the pooled delay distribution of each side of r as
// a complementary CDF (the share of probes slower than a delay, on a log
// scale, so the tail that decides p99 is drawn as large as the body) into
// dir as io-latency.png and io-latency.svg, and returns the files. It
// needs r as Run returned it: the probe series are not in the JSON.
func PlotLatency(r *Result, dir string) ([]string, error) {
	sides := r.latencySides()
	if len(sides) == 0 && r.Interleaved == nil {
		return nil, fmt.Errorf("iobench: no latency probes to plot")
	}
	p := plot.New()
	n := 0
	for _, s := range sides {
		n = max(n, s.pooled.Probes)
	}
	p.Title.Text = fmt.Sprintf("One-way delay, idle line (%s, %d B, %d probes a side", r.Backend, r.Size, n)
	if r.Awake {
		p.Title.Text += ", awake"
	}
	p.Title.Text += ")"
	p.X.Label.Text = "delay (µs)"
	p.Y.Label.Text = "share of probes slower"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, decadeTicks{1, 2, 5}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, decadeTicks{1}
	// The curves run from the top left to the bottom right: the top
	// right is free for the legend.
	p.Legend.Top = true
	colors := map[string]color.Color{
		"kernel": color.RGBA{R: 200, G: 60, B: 40, A: 255},
		"pppfwd": color.RGBA{R: 30, G: 90, B: 200, A: 255},
		"floor":  color.RGBA{R: 40, G: 150, B: 60, A: 255},
	}
	type curve struct {
		label  string
		l      *Latency
		c      color.Color
		dashed bool
	}
	var curves []curve
	for _, s := range sides {
		curves = append(curves, curve{s.name, s.pooled, colors[s.name], false})
	}
	if il := r.Interleaved; il != nil {
		curves = append(curves, curve{"kernel, in turn", il.Kernel, colors["kernel"], true},
			curve{"pppfwd, in turn", il.PPPFWD, colors["pppfwd"], true})
	}
	drawn := 0
	for _, cv := range curves {
		pts := ccdf(cv.l)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = cv.c
		l.Width = vg.Points(1.5)
		if cv.dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s: p50 %.0f, p99 %.0f µs", cv.label, cv.l.P50Us, cv.l.P99Us), l)
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("iobench: no latency probe arrived")
	}
	return plotfile.Save(p, 16*vg.Centimeter, 10*vg.Centimeter, dir, "io-latency")
}

// ccdfTail is how many of the slowest samples ccdf always keeps as
// points, and ccdfBody about how many it keeps of the others.
const ccdfTail, ccdfBody = 200, 400

// ccdf is l's arrived probes as (delay µs, share of probes slower or as
// slow), from the fastest to the slowest: the share runs from 1 down to
// 1/n, never 0, so a log scale can hold it. The slowest ccdfTail samples
// are one point each, the body is thinned to about ccdfBody points.
func ccdf(l *Latency) plotter.XYs {
	sorted := l.arrived()
	n := len(sorted)
	if n == 0 {
		return nil
	}
	step := max(1, (n-ccdfTail)/ccdfBody)
	var pts plotter.XYs
	for i, d := range sorted {
		if i%step != 0 && i < n-ccdfTail {
			continue
		}
		pts = append(pts, plotter.XY{X: max(float64(d.Nanoseconds())/1e3, 0.001), Y: float64(n-i) / float64(n)})
	}
	return pts
}

// decadeTicks marks m×10^k for each m in it and every k in the axis's
// range, labelled as plain numbers (0.001, 20, 5000), which log axes
// of delays and shares read better in than powers of ten.
type decadeTicks []float64

// Ticks implements plot.Ticker.
func (dt decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	if lo <= 0 || hi <= lo {
		return ts
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range dt {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ts
}
