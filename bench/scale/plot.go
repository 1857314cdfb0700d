package scale

import (
	"errors"
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/plotfile"
)

// Plot file names (without extension), each written as PNG and SVG.
const (
	PlotMpps  = "scale-mpps"
	PlotNsPkt = "scale-nspkt"
	PlotCPU   = "scale-cpu"
	PlotModel = "scale-model"
	// PlotStages: the reference configuration's ns per packet by stage
	// against workers (with stage costs only).
	PlotStages = "scale-stages"
	// PlotSpeedup: Point.Speedup against workers, beside linear scaling
	// (where the sweep has 1-worker points).
	PlotSpeedup = "scale-speedup"
)

// Plot writes the report's figures into dir as PNG and SVG and returns
// the files written: Mpps and CPU ns/pkt against workers (one line per
// configuration), each thread's CPU split into steering, work and off-CPU
// time for the reference configuration (64 B, the flow count nearest
// 10000, the first steering mode), and, with a model, its predictions
// against cores beside the measured points and the 1 and 2.5 GbE line
// rates.
func Plot(r *Report, dir string) ([]string, error) {
	gs := groups(r.Points)
	ok := false
	for _, p := range r.Points {
		ok = ok || p.OK()
	}
	if !ok {
		return nil, errors.New("no measured point to plot")
	}
	var files []string
	save := func(p *plot.Plot, name string) error {
		fs, err := plotfile.Save(p, 18*vg.Centimeter, 11*vg.Centimeter, dir, name)
		files = append(files, fs...)
		return err
	}
	steers := map[string]bool{}
	maxW := 1
	for _, p := range r.Points {
		steers[p.Steer] = true
		maxW = max(maxW, p.Workers)
	}
	sub := fmt.Sprintf("%d CPUs", r.Machine.CPUs)
	if r.Machine.ClockGHz > 0 {
		sub += fmt.Sprintf(" at %.2f GHz", r.Machine.ClockGHz)
	}

	for _, fig := range []struct {
		name, title, y string
		v              func(*Point) float64
	}{
		{PlotMpps, "Packet rate against workers (" + sub + ")", "Mpps (both directions)", func(p *Point) float64 { return p.Mpps }},
		{PlotNsPkt, "CPU time per packet against workers (" + sub + ")", "CPU ns/pkt (all threads)", func(p *Point) float64 { return p.CPUNsPerPkt }},
	} {
		p := workersPlot(fig.title, fig.y, maxW)
		for i, g := range gs {
			var pts plotter.XYs
			for _, pt := range g.points {
				if pt.OK() {
					pts = append(pts, plotter.XY{X: float64(pt.Workers), Y: fig.v(pt)})
				}
			}
			if err := addLine(p, g.label(len(steers) > 1), i, pts); err != nil {
				return nil, err
			}
		}
		legendBeside(p, len(gs), maxW)
		if err := save(p, fig.name); err != nil {
			return nil, err
		}
	}

	if p, err := speedupPlot(gs, sub, maxW, len(steers) > 1); err != nil {
		return nil, err
	} else if p != nil {
		if err := save(p, PlotSpeedup); err != nil {
			return nil, err
		}
	}

	ref := reference(gs)
	if ref != nil {
		p, err := cpuPlot(ref)
		if err != nil {
			return nil, err
		}
		if err := save(p, PlotCPU); err != nil {
			return nil, err
		}
	}

	if ref != nil && ref.hasStages() {
		p, err := stagesPlot(ref)
		if err != nil {
			return nil, err
		}
		if err := save(p, PlotStages); err != nil {
			return nil, err
		}
	}

	if r.Model != nil && len(r.Model.Fits) > 0 {
		fit := &r.Model.Fits[0]
		for i := range r.Model.Fits {
			f := &r.Model.Fits[i]
			if ref != nil && f.Flows == ref.flows && f.Size == ref.size && f.Steer == ref.steer {
				fit = f
			}
		}
		p, err := modelPlot(r, fit, gs)
		if err != nil {
			return nil, err
		}
		if err := save(p, PlotModel); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// workersPlot is an empty figure of a value against workers 1..maxW,
// from 0 up, its legend top left (legendBeside may move it).
func workersPlot(title, y string, maxW int) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "workers"
	p.Y.Label.Text = y
	p.X.Min, p.X.Max, p.Y.Min = 0.5, float64(maxW)+0.5, 0
	p.X.Tick.Marker = intTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	return p
}

// speedupPlot draws each configuration's speedup over its 1-worker point
// against workers, with the line of linear scaling; nil when no point
// has a speedup.
func speedupPlot(gs []*group, sub string, maxW int, steerInLabel bool) (*plot.Plot, error) {
	p := workersPlot("Speedup over 1 worker, median of paired rounds ("+sub+")", "speedup", maxW)
	drawn := false
	for i, g := range gs {
		var pts plotter.XYs
		for _, pt := range g.points {
			if pt.OK() && pt.Speedup > 0 {
				pts = append(pts, plotter.XY{X: float64(pt.Workers), Y: pt.Speedup})
			}
		}
		if len(pts) < 2 {
			continue
		}
		drawn = true
		if err := addLine(p, g.label(steerInLabel), i, pts); err != nil {
			return nil, err
		}
	}
	if !drawn {
		return nil, nil
	}
	ideal, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 1}, {X: float64(maxW), Y: float64(maxW)}})
	if err != nil {
		return nil, err
	}
	ideal.Color, ideal.Dashes = color.Gray{Y: 128}, []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(ideal)
	p.Legend.Add("linear", ideal)
	legendBeside(p, len(gs)+1, maxW)
	return p, nil
}

// cpuPlot stacks each thread's steering, work and off-CPU shares of the
// run's wall time, one bar per thread of each measured worker count.
func cpuPlot(g *group) (*plot.Plot, error) {
	var labels []string
	var steer, work, off plotter.Values
	for _, pt := range g.points {
		if !pt.OK() {
			continue
		}
		wall := pt.Seconds * 1e9
		add := func(name string, c WorkerCPU) {
			labels = append(labels, fmt.Sprintf("n=%d %s", pt.Workers, name))
			if wall <= 0 {
				steer, work, off = append(steer, 0), append(work, 0), append(off, 0)
				return
			}
			steer = append(steer, float64(c.SteerNs)/wall)
			work = append(work, float64(c.WorkNs)/wall)
			off = append(off, float64(c.OffCPUNs)/wall)
		}
		for _, c := range pt.PerWorker {
			add(fmt.Sprintf("w%d", c.Worker), c)
		}
		if pt.SteerThread != nil {
			add("steer", *pt.SteerThread)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Each thread's time (flows=%d size=%s steer=%s)", g.flows, g.size, g.steer)
	p.Y.Label.Text = "share of the run's wall time"
	top := 1.0
	for i := range steer {
		top = max(top, steer[i]+work[i]+off[i])
	}
	// Headroom above the bars for the legend.
	p.Y.Min, p.Y.Max = 0, 1.3*top
	p.Legend.Top = true
	if len(labels) == 0 {
		return p, nil
	}
	width := vg.Points(max(6, 300/float64(len(labels))))
	var below *plotter.BarChart
	for i, part := range []struct {
		name string
		v    plotter.Values
		c    color.Color
	}{
		{"steering", steer, color.RGBA{R: 200, G: 60, B: 40, A: 255}},
		{"work", work, color.RGBA{R: 30, G: 90, B: 200, A: 255}},
		{"off-CPU", off, color.RGBA{R: 190, G: 190, B: 190, A: 255}},
	} {
		b, err := plotter.NewBarChart(part.v, width)
		if err != nil {
			return nil, err
		}
		b.Color = part.c
		b.LineStyle.Width = 0
		if i > 0 {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(part.name, b)
	}
	p.NominalX(labels...)
	return p, nil
}

// stageColors tells the stages apart (one colour each).
var stageColors = []color.Color{
	color.RGBA{R: 120, G: 120, B: 120, A: 255}, // port
	color.RGBA{R: 200, G: 60, B: 40, A: 255},   // steer
	color.RGBA{R: 30, G: 90, B: 200, A: 255},   // parse
	color.RGBA{R: 240, G: 160, B: 40, A: 255},  // nat_lookup
	color.RGBA{R: 130, G: 60, B: 160, A: 255},  // nat_insert
	color.RGBA{R: 60, G: 160, B: 80, A: 255},   // forward
	color.RGBA{R: 230, G: 120, B: 190, A: 255}, // shaper_enq
	color.RGBA{R: 150, G: 40, B: 90, A: 255},   // shaper_deq
	color.RGBA{R: 90, G: 190, B: 210, A: 255},  // encap
	color.RGBA{R: 200, G: 200, B: 200, A: 255}, // other
}

// stagesPlot stacks the scaled ns per packet of each stage, one bar per
// measured worker count.
func stagesPlot(g *group) (*plot.Plot, error) {
	var labels []string
	vals := make([]plotter.Values, dataplane.NumStages)
	top := 0.0
	for _, pt := range g.points {
		ns := pt.StageNs()
		if !pt.OK() || ns == nil {
			continue
		}
		labels = append(labels, fmt.Sprintf("%d worker(s)", pt.Workers))
		sum := 0.0
		for i, v := range ns {
			vals[i] = append(vals[i], v)
			sum += v
		}
		top = max(top, sum)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("CPU ns per packet by stage (flows=%d size=%s steer=%s)", g.flows, g.size, g.steer)
	p.Y.Label.Text = "CPU ns/pkt, sampled shares of the run's cost"
	p.Y.Min, p.Y.Max = 0, 2.4*max(top, 1) // headroom: the legend above the bars
	p.Legend.Top = true
	if len(labels) == 0 {
		return p, nil
	}
	width := vg.Points(max(12, 240/float64(len(labels))))
	var below *plotter.BarChart
	for i := range vals {
		b, err := plotter.NewBarChart(vals[i], width)
		if err != nil {
			return nil, err
		}
		b.Color = stageColors[i%len(stageColors)]
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(dataplane.Stage(i).String(), b)
	}
	p.NominalX(labels...)
	return p, nil
}

// modelPlot draws a fit's predicted rate against cores for every target,
// the measured points at the cores they used, and the line rates.
func modelPlot(r *Report, f *Fit, gs []*group) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Model against cores (flows=%d size=%s steer=%s, s=%.2f)", f.Flows, f.Size, f.Steer, r.Model.Share)
	p.X.Label.Text = "cores"
	p.Y.Label.Text = "Mpps (both directions)"
	p.Y.Min = 0
	p.X.Tick.Marker = intTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	maxC := 1
	for i, t := range f.Targets {
		var pts plotter.XYs
		for _, c := range t.Curve {
			pts = append(pts, plotter.XY{X: float64(c.Cores), Y: c.Mpps})
			maxC = max(maxC, c.Cores)
		}
		name := fmt.Sprintf("model: %s (%d x %.2f GHz)", t.Name, t.Cores, t.ClockGHz)
		if err := addLine(p, name, i, pts); err != nil {
			return nil, err
		}
	}
	for _, g := range gs {
		if g.flows != f.Flows || g.size != f.Size || g.steer != f.Steer {
			continue
		}
		var pts plotter.XYs
		for _, pt := range g.points {
			if pt.OK() {
				pts = append(pts, plotter.XY{X: float64(pt.Threads), Y: pt.Mpps})
				maxC = max(maxC, pt.Threads)
			}
		}
		if len(pts) > 0 {
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			s.Shape, s.Color, s.Radius = draw.BoxGlyph{}, color.Black, vg.Points(4)
			p.Add(s)
			p.Legend.Add("measured (this machine)", s)
		}
	}
	fb, err := WANFrameBytes(f.Size)
	if err != nil {
		return nil, err
	}
	for i, l := range Links[:2] {
		total := LinkTotal(LineRate(l.BitsPerSec, fb), r.Model.Share) / 1e6
		ln, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: total}, {X: float64(maxC) + 0.5, Y: total}})
		if err != nil {
			return nil, err
		}
		ln.Color = color.Gray{Y: uint8(80 + 60*i)}
		ln.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(ln)
		p.Legend.Add(fmt.Sprintf("%s line rate, %s", l.Name, sizeLabel(f.Size)), ln)
	}
	p.X.Min, p.X.Max = 0.5, float64(maxC)+0.5
	return p, nil
}

// addLine adds line i (colour, dashes and glyph from plotutil's palettes)
// with its legend entry; nothing for no points.
func addLine(p *plot.Plot, name string, i int, pts plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes = plotutil.Color(i), plotutil.Dashes(i)
	s.Color, s.Shape = plotutil.Color(i), plotutil.Shape(i)
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// intTicks marks every integer of the axis (every second, fifth, ... when
// they would crowd), up to max when it is set.
type intTicks struct{ max int }

func (it intTicks) Ticks(lo, hi float64) []plot.Tick {
	if it.max > 0 {
		hi = min(hi, float64(it.max))
	}
	step := 1
	for (hi-lo)/float64(step) > 16 {
		step *= 2
	}
	var out []plot.Tick
	for v := int(lo); float64(v) <= hi; v++ {
		if float64(v) < lo || v < 1 {
			continue
		}
		t := plot.Tick{Value: float64(v)}
		if (v-1)%step == 0 {
			t.Label = strconv.Itoa(v)
		}
		out = append(out, t)
	}
	return out
}

// legendBeside puts a line plot's legend to the right of its data, in a
// strip the x axis leaves without ticks, when it has more entries than
// fit over the data (a sweep's 27 configurations).
func legendBeside(p *plot.Plot, entries, maxW int) {
	if entries <= 8 {
		return
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	p.Legend.ThumbnailWidth = vg.Points(16)
	p.X.Max = float64(maxW) + 0.5 + 0.9*(float64(maxW)-0.5)
	p.X.Tick.Marker = intTicks{max: maxW}
}

// sizeLabel names a size spec for a legend: "64 B", "imix".
func sizeLabel(s string) string {
	if _, err := strconv.Atoi(s); err == nil {
		return s + " B"
	}
	return s
}
