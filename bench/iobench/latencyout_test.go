package iobench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
)

// latencyResult is a Result with two rounds of probes on the kernel's,
// pppfwd's and the floor's side, one probe of pppfwd's lost.
func latencyResult() *Result {
	us := time.Microsecond
	mk := func(series ...time.Duration) *Latency {
		l := &Latency{Probes: len(series), Rounds: 1, series: series}
		for _, d := range series {
			if d < 0 {
				l.Lost++
			}
		}
		l.percentiles()
		return l
	}
	k1, k2 := mk(50*us, 60*us), mk(70*us, 1500*us)
	p1, p2 := mk(80*us, -1), mk(90*us, 2500*us)
	f1, f2 := mk(75*us, 85*us), mk(95*us, 105*us)
	r := &Result{Backend: "afpacket", Size: 64, Awake: true,
		Kernel: &Side{}, Floor: &Side{},
		Rounds: []Round{
			{KernelLatency: roundLatency(k1), PPPFWDLatency: roundLatency(p1), FloorLatency: roundLatency(f1)},
			{KernelLatency: roundLatency(k2), PPPFWDLatency: roundLatency(p2), FloorLatency: roundLatency(f2)},
		}}
	r.Kernel.Latency = PoolLatency([]*Latency{k1, k2})
	r.PPPFWD.Latency = PoolLatency([]*Latency{p1, p2})
	r.Floor.Latency = PoolLatency([]*Latency{f1, f2})
	return r
}

// withInterleaved adds an interleaved series to r: the kernel's two
// probes, pppfwd's two, one lost.
func withInterleaved(r *Result) *Result {
	us := time.Microsecond
	k := &Latency{Probes: 2, Rounds: 1, series: []time.Duration{55 * us, 65 * us}}
	p := &Latency{Probes: 2, Rounds: 1, Lost: 1, series: []time.Duration{-1, 77 * us}}
	k.percentiles()
	p.percentiles()
	r.Interleaved = &Interleaved{Kernel: k, PPPFWD: p}
	return r
}

// TestWriteLatencyCSV: one row per probe, per side and round in the
// order sent, a lost probe with an empty delay.
func TestWriteLatencyCSV(t *testing.T) {
	var b bytes.Buffer
	if err := latencyResult().WriteLatencyCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := `side,round,probe,delay_us
kernel,1,1,50.000
kernel,1,2,60.000
kernel,2,1,70.000
kernel,2,2,1500.000
pppfwd,1,1,80.000
pppfwd,1,2,
pppfwd,2,1,90.000
pppfwd,2,2,2500.000
floor,1,1,75.000
floor,1,2,85.000
floor,2,1,95.000
floor,2,2,105.000
`
	if b.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", b.String(), want)
	}
	// An interleaved series follows, round 1, each side's probes in
	// their order.
	b.Reset()
	if err := withInterleaved(latencyResult()).WriteLatencyCSV(&b); err != nil {
		t.Fatal(err)
	}
	want += `kernel-interleaved,1,1,55.000
kernel-interleaved,1,2,65.000
pppfwd-interleaved,1,1,
pppfwd-interleaved,1,2,77.000
`
	if b.String() != want {
		t.Fatalf("csv with an interleaved series:\n%s\nwant:\n%s", b.String(), want)
	}
	// Without probes: the header alone.
	b.Reset()
	if err := (&Result{Rounds: []Round{{}}}).WriteLatencyCSV(&b); err != nil || b.String() != "side,round,probe,delay_us\n" {
		t.Fatalf("no probes: %q, %v", b.String(), err)
	}
}

// TestPlotLatency: the plot is written as PNG and SVG; with no probes
// there is nothing to plot and it says so.
func TestPlotLatency(t *testing.T) {
	dir := t.TempDir()
	files, err := PlotLatency(withInterleaved(latencyResult()), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0] != filepath.Join(dir, "io-latency.png") || files[1] != filepath.Join(dir, "io-latency.svg") {
		t.Fatalf("files %v", files)
	}
	png, err := os.ReadFile(files[0])
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("png: %v, %d bytes", err, len(png))
	}
	svg, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"kernel: p50", "pppfwd: p50", "floor: p50", "kernel, in turn: p50", "pppfwd, in turn: p50"} {
		if !strings.Contains(string(svg), s) {
			t.Errorf("svg has no legend entry %q", s)
		}
	}
	if _, err := PlotLatency(&Result{}, dir); err == nil {
		t.Fatal("a result without probes plotted")
	}
}

// TestCCDF: the points run from the fastest probe (share 1) to the
// slowest (share 1/n) of those that arrived, whatever their order.
func TestCCDF(t *testing.T) {
	us := time.Microsecond
	pts := ccdf(&Latency{series: []time.Duration{300 * us, 100 * us, -1, 200 * us, 400 * us}})
	want := [][2]float64{{100, 1}, {200, 0.75}, {300, 0.5}, {400, 0.25}}
	if len(pts) != len(want) {
		t.Fatalf("%d points", len(pts))
	}
	for i, w := range want {
		if pts[i].X != w[0] || pts[i].Y != w[1] {
			t.Errorf("point %d: %v, want %v", i, pts[i], w)
		}
	}
	if ccdf(&Latency{}) != nil {
		t.Fatal("points without samples")
	}
	// 5000 samples: the body thinned, the 200 slowest all kept, the
	// first and the last point always there.
	var many []time.Duration
	for i := 5000; i > 0; i-- {
		many = append(many, time.Duration(i)*us)
	}
	pts = ccdf(&Latency{series: many})
	if len(pts) < ccdfTail+ccdfBody/2 || len(pts) > ccdfTail+2*ccdfBody {
		t.Fatalf("%d points for 5000 samples", len(pts))
	}
	if pts[0] != (plotter.XY{X: 1, Y: 1}) || pts[len(pts)-1] != (plotter.XY{X: 5000, Y: 1.0 / 5000}) {
		t.Fatalf("ends %v %v", pts[0], pts[len(pts)-1])
	}
	for i := len(pts) - ccdfTail; i < len(pts); i++ {
		if pts[i].X != float64(5000-ccdfTail+1+i-(len(pts)-ccdfTail)) {
			t.Fatalf("tail point %d: %v", i, pts[i])
		}
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].X <= pts[i-1].X || pts[i].Y >= pts[i-1].Y {
			t.Fatalf("points %d, %d out of order: %v %v", i-1, i, pts[i-1], pts[i])
		}
	}
}

// TestDecadeTicks: the marks are m×10^k inside the range, labelled plainly.
func TestDecadeTicks(t *testing.T) {
	var got []string
	for _, tk := range (decadeTicks{1, 2, 5}).Ticks(30, 1200) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, " ") != "50 100 200 500 1000" {
		t.Fatalf("ticks %v", got)
	}
	got = got[:0]
	for _, tk := range (decadeTicks{1}).Ticks(0.0002, 1) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, " ") != "0.001 0.01 0.1 1" {
		t.Fatalf("ticks %v", got)
	}
	if len((decadeTicks{1}).Ticks(0, 1)) != 0 {
		t.Fatal("ticks on a range a log axis cannot hold")
	}
}
