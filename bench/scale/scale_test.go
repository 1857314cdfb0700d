package scale

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
)

// fakeRun returns a pipeline result built from known costs: c_work 100
// ns, c_steer 40 ns per steered frame, half the packets steered, on
// worker 0 (inline), a thread of its own, or by every worker its share
// (local); 1e6 packets per run, split evenly over the workers; the wall
// time is chosen so that the rate is mpps(workers).
func fakeRun(mpps func(o pipeline.Options) float64) func(pipeline.Options) (*pipeline.Result, error) {
	return func(o pipeline.Options) (*pipeline.Result, error) {
		const packets, steerNs, workNs = 1_000_000, 40.0, 100.0
		r := &pipeline.Result{Workers: o.Workers, Flows: o.Flows, Size: o.Size, Packets: packets,
			LANToWAN: packets / 2, WANToLAN: packets / 2, SteerNsPerPkt: steerNs, Mpps: mpps(o)}
		r.Seconds = float64(packets) / (r.Mpps * 1e6)
		var cpu uint64
		for i := 0; i < o.Workers; i++ {
			w := pipeline.WorkerResult{Worker: i, Packets: packets / uint64(o.Workers)}
			w.CPUNs = uint64(float64(w.Packets) * workNs)
			if i == 0 && o.Steer == dataplane.SteerInline {
				w.Steered = packets / 2
				w.CPUNs += uint64(float64(w.Steered) * steerNs)
			}
			if o.Steer == dataplane.SteerLocal {
				w.Steered = packets / 2 / uint64(o.Workers)
				w.CPUNs += uint64(float64(w.Steered) * steerNs)
			}
			w.NsPerPkt = float64(w.CPUNs) / float64(w.Packets)
			cpu += w.CPUNs
			r.PerWorker = append(r.PerWorker, w)
		}
		if o.Steer == dataplane.SteerThread {
			cpu += uint64(packets / 2 * steerNs * 1.5) // the thread polls a third of its time
		}
		r.CPUNsPerPkt = float64(cpu) / packets
		return r, nil
	}
}

// measured rates of the fake: 1 worker 6.667 Mpps, 2 workers 12.
func fakeMpps(o pipeline.Options) float64 {
	if o.Workers == 1 {
		return 1e6 / 0.15 / 1e6
	}
	return 6 * float64(o.Workers)
}

func TestSweepFitsKnownCosts(t *testing.T) {
	var prog bytes.Buffer
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{100}, Sizes: []string{"64"},
		Steer: []dataplane.SteerMode{dataplane.SteerInline, dataplane.SteerThread}, Duration: time.Millisecond,
		Progress: &prog, Run: fakeRun(fakeMpps)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 4 {
		t.Fatalf("%d points, want 4", len(pts))
	}
	lines := strings.Split(strings.TrimSpace(prog.String()), "\n")
	if len(lines) != 4 || lines[1] != "[2/4] workers=2 flows=100 size=64 steer=inline: 12.00 Mpps" || !strings.HasPrefix(lines[3], "[4/4] workers=2 flows=100 size=64 steer=thread: ") {
		t.Errorf("progress:\n%s", prog.String())
	}
	in1, in2, th1 := &pts[0], &pts[1], &pts[2]
	if in1.Steer != "inline" || in2.Workers != 2 || th1.Steer != "thread" || th1.Workers != 1 {
		t.Fatalf("sweep order: %+v", pts)
	}
	// Inline, 1 worker: worker 0 steered 5e5 frames at 40 ns.
	w0 := in1.PerWorker[0]
	if w0.SteerNs != 20_000_000 || w0.WorkNs != 100_000_000 || w0.Steered != 500_000 {
		t.Errorf("worker 0 split: %+v", w0)
	}
	if want := uint64(150_000_000 - 120_000_000); w0.OffCPUNs != want {
		t.Errorf("worker 0 off-CPU %d ns, want %d", w0.OffCPUNs, want)
	}
	if in1.SteerThread != nil || th1.SteerThread == nil {
		t.Fatal("steering thread record where there is none, or none where there is one")
	}
	if st := th1.SteerThread; st.CPUNs != 30_000_000 || st.SteerNs != 20_000_000 || st.WorkNs != 10_000_000 || st.Worker != -1 {
		t.Errorf("steering thread: %+v", *st)
	}
	if th1.Threads != 2 || in1.Threads != 1 {
		t.Errorf("threads: inline %d, thread mode %d", in1.Threads, th1.Threads)
	}
	for _, p := range pts {
		if c := Measured(&p); math.Abs(c.WorkNs-100) > 1e-9 || c.SteerNs != 40 || c.Share != 0.5 {
			t.Errorf("%s/%d: costs %+v, want 100 ns work, 40 ns steering, share 0.5", p.Steer, p.Workers, c)
		}
		near(t, "wall ns/pkt", p.WallNsPerPkt, 1e3/p.Mpps, 1e-12)
	}

	m := Machine{CPUs: 2, ClockGHz: 2.0}
	md := BuildModel(pts, m, ModelOptions{})
	if len(md.Fits) != 2 || md.Share != 0.5 {
		t.Fatalf("fits %d share %v", len(md.Fits), md.Share)
	}
	f := md.Fits[0]
	if f.Steer != "inline" || len(f.Checks) != 2 {
		t.Fatalf("fit %+v", f)
	}
	// Model: R(1) = 1/(20+100) ns = 8.333 Mpps against 6.667 measured
	// (+25 %); R(2) = 1/(20+50) ns = 14.286 against 12 (+19.05 %).
	near(t, "check 1 predicted", f.Checks[0].PredictedMpps, 1e3/120, 1e-9)
	near(t, "check 1 error", f.Checks[0].RelError, 0.25, 1e-9)
	near(t, "check 2 error", f.Checks[1].RelError, (1e3/70-12)/12, 1e-9)
	th := md.Fits[1]
	// Thread: R(1) = min(1/100, 1/20) = 10 Mpps against 6.667 (+50 %).
	near(t, "thread check 1 error", th.Checks[0].RelError, 0.5, 1e-9)

	if len(f.Targets) != 1+len(Targets) || f.Targets[0].Name != "this machine" {
		t.Fatalf("targets %+v", f.Targets)
	}
	me, j := f.Targets[0], f.Targets[1]
	if len(me.Curve) != 2 || *me.RidgeWorkers != 5 || me.SaturationCores != 5 {
		t.Errorf("this machine: %+v", me)
	}
	near(t, "this machine's ceiling", *me.CeilingMpps, 50, 1e-9)
	// The J4105 at 1.5 GHz from 2.0: costs x 4/3.
	if j.Cores != 4 || j.ClockGHz != 1.5 {
		t.Fatalf("first target %+v", j.Target)
	}
	near(t, "J4105 base c_work", j.Costs.WorkNs, 400.0/3, 1e-9)
	near(t, "J4105 base at 4 cores", j.AllCoresMpps, 1e3/(80.0/3+100.0/3), 1e-9)
	near(t, "J4105 efficiency at 4", j.Curve[3].Efficiency, j.Curve[3].Mpps/(4*j.Curve[0].Mpps), 1e-12)
	// 1GbE at 64 B LAN frames (72 B WAN frames), both directions:
	// 2 * 1e9/8/96 = 2.604 Mpps; the J4105 reaches it with one core.
	if l := j.Lines[0]; l.Link != "1GbE" || l.CoresNeeded != 1 || l.CeilingBelow {
		t.Errorf("J4105 against 1GbE: %+v", l)
	}
	near(t, "1GbE total at 72 B", j.Lines[0].TotalMpps, 2*1e9/8/96/1e6, 1e-9)
	// 10GbE both ways: 2*1e10/8/96 = 26.04 Mpps: the J4105's 4 cores
	// (16.7 Mpps) fall short, the ceiling (37.5 Mpps) does not.
	if l := j.Lines[2]; l.CoresNeeded != 0 || l.CeilingBelow {
		t.Errorf("J4105 against 10GbE: %+v", l)
	}
	// The thread fit on 4 cores runs 3 workers.
	if c := th.Targets[1].Curve; len(c) != 3 || c[0].Cores != 2 || c[0].Workers != 1 {
		t.Errorf("thread curve on 4 cores: %+v", c)
	}

	// No clock: this machine only, with a note.
	md = BuildModel(pts, Machine{CPUs: 2}, ModelOptions{Share: 0.6})
	if len(md.Fits[0].Targets) != 1 || len(md.Notes) == 0 || md.Fits[0].Targets[0].Costs.Share != 0.6 {
		t.Errorf("no clock: %d targets, notes %q", len(md.Fits[0].Targets), md.Notes)
	}

	// The report is JSON (no NaN or Inf slipped in) and a table.
	rep := &Report{Bench: "scale", Machine: m, Points: pts, Model: BuildModel(pts, m, ModelOptions{})}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 4, 2, ' ', 0)
	WriteTable(tw, rep)
	tw.Flush()
	for _, want := range []string{"c_work 100.0 ns, c_steer 40.0 ns", "error +25.0 %", "Celeron J4105 base", "ignores", "memory bandwidth"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
}

// TestSweepFitsLocal: local steering's points, fit, checks and
// predictions: every worker steers its share, no ridge or ceiling, and
// the h a point measured is reported with it.
func TestSweepFitsLocal(t *testing.T) {
	// At 2 workers each worker hands half the frames it steered to the
	// other: h = 0.5.
	run := func(o pipeline.Options) (*pipeline.Result, error) {
		r, err := fakeRun(fakeMpps)(o)
		if o.Workers == 2 {
			for i := range r.PerWorker {
				r.PerWorker[i].WANRedirects = r.PerWorker[i].Steered / 2
			}
		}
		return r, err
	}
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{100}, Sizes: []string{"64"},
		Steer: []dataplane.SteerMode{dataplane.SteerLocal}, Duration: time.Millisecond, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].Steer != "local" || pts[0].Mode() != dataplane.SteerLocal || pts[1].Threads != 2 || pts[1].SteerThread != nil {
		t.Fatalf("points %+v", pts)
	}
	// 2 workers: each steered 2.5e5 frames at 40 ns and handed over half.
	for _, w := range pts[1].PerWorker {
		if w.Steered != 250_000 || w.SteerNs != 10_000_000 || w.WorkNs != 50_000_000 || w.WANRedirects != 125_000 {
			t.Errorf("2 workers, worker %d: %+v", w.Worker, w)
		}
	}
	if pts[0].WANRedirectedShare != 0 || pts[1].WANRedirectedShare != 0.5 {
		t.Errorf("h: %v at 1 worker, %v at 2; want 0 and 0.5", pts[0].WANRedirectedShare, pts[1].WANRedirectedShare)
	}
	if c := Measured(&pts[0]); math.Abs(c.WorkNs-100) > 1e-9 || c.SteerNs != 40 || c.Share != 0.5 || c.Hop != 0 {
		t.Errorf("1 worker: costs %+v, want 100 ns work, 40 ns steering, share 0.5, h 0", c)
	}

	m := Machine{CPUs: 2, ClockGHz: 2.0}
	md := BuildModel(pts, m, ModelOptions{})
	if len(md.Fits) != 1 || md.Fits[0].Steer != "local" || len(md.Fits[0].Checks) != 2 {
		t.Fatalf("fits %+v", md.Fits)
	}
	f := md.Fits[0]
	// R(n) = n/(100+20) ns: 8.333 Mpps against 6.667 (+25 %), 16.667
	// against 12 (+38.9 %); c_hop is not measured, so h = 0.5 costs
	// nothing in the model, and a note says so.
	near(t, "check 1 predicted", f.Checks[0].PredictedMpps, 1e3/120, 1e-9)
	near(t, "check 1 error", f.Checks[0].RelError, 0.25, 1e-9)
	near(t, "check 2 predicted", f.Checks[1].PredictedMpps, 2e3/120, 1e-9)
	near(t, "check 2 error", f.Checks[1].RelError, (2e3/120-12)/12, 1e-9)
	if f.Checks[0].HopShare != 0 || f.Checks[1].HopShare != 0.5 {
		t.Errorf("checks' h: %+v", f.Checks)
	}
	noted := false
	for _, n := range md.Notes {
		noted = noted || strings.Contains(n, "flows=100 size=64 steer=local: up to 50.0 %")
	}
	if !noted {
		t.Errorf("no note of the unmodelled hand-over: %q", md.Notes)
	}
	if len(f.Targets) != 1+len(Targets) {
		t.Fatalf("targets %+v", f.Targets)
	}
	for _, p := range f.Targets {
		if p.RidgeWorkers != nil || p.CeilingMpps != nil || p.SaturationCores != 0 || p.Costs.Hop != 0 {
			t.Errorf("%s: ridge %v ceiling %v saturation %d h %v; want none, none, never, 0", p.Name, p.RidgeWorkers, p.CeilingMpps, p.SaturationCores, p.Costs.Hop)
		}
		for _, l := range p.Lines {
			if l.CeilingBelow {
				t.Errorf("%s against %s: a ceiling below the line", p.Name, l.Link)
			}
		}
	}
	// The J4105 at 1.5 GHz: 4/3 x 120 ns = 160 ns per packet per core:
	// 25 Mpps on 4 cores, short of 10GbE's 26.04 Mpps at 72 B.
	j := f.Targets[1]
	near(t, "J4105 base at 4 cores", j.AllCoresMpps, 25, 1e-9)
	near(t, "J4105 efficiency at 4", j.Curve[3].Efficiency, 1, 1e-12)
	if l := j.Lines[0]; l.CoresNeeded != 1 {
		t.Errorf("J4105 against 1GbE: %+v", l)
	}
	if l := j.Lines[2]; l.CoresNeeded != 0 {
		t.Errorf("J4105 against 10GbE: %+v", l)
	}
	// 16 cores at 3 GHz: 80 ns per packet per core; 10GbE's 26.04 Mpps
	// takes 3 (2.08).
	if l := f.Targets[3].Lines[2]; l.CoresNeeded != 3 {
		t.Errorf("16 cores against 10GbE: %+v", l)
	}

	rep := &Report{Bench: "scale", Machine: m, Points: pts, Model: md}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 4, 2, ' ', 0)
	WriteTable(tw, rep)
	tw.Flush()
	for _, want := range []string{"fit flows=100 size=64 steer=local", "error +25.0 %, h 0.000", "h 0.500", "local steering: R(n) = n/(c_work + s*c_steer + s*h*c_hop)"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	rows := csvOf(t, pts)
	if r := rows[2]; r[col(t, "steer")] != "local" || r[col(t, "wan_redirected_share")] != "0.5" || r[col(t, "worker_wan_redirected")] != "125000;125000" {
		t.Errorf("CSV row of 2 workers: %q", r)
	}
}

func TestSweepMedianAndErrors(t *testing.T) {
	calls := 0
	run := fakeRun(func(o pipeline.Options) float64 {
		calls++
		return []float64{3, 1, 2}[(calls-1)%3]
	})
	pts, err := Sweep(Options{Workers: []int{1}, Flows: []int{1}, Sizes: []string{"64"}, Repeat: 3, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if p := pts[0]; p.Runs != 3 || p.Mpps != 2 || p.MppsMin != 1 || p.MppsMax != 3 {
		t.Errorf("median of 3, 1, 2: %+v", p)
	}
	calls = 0
	pts, err = Sweep(Options{Workers: []int{1}, Flows: []int{1}, Sizes: []string{"64"}, Repeat: 4, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if p := pts[0]; p.Mpps != 2 {
		t.Errorf("median of 3, 1, 2, 3: %v, want the lower middle 2", p.Mpps)
	}

	boom := errors.New("priming failed")
	var prog bytes.Buffer
	n := 0
	pts, err = Sweep(Options{Workers: []int{1, 2}, Flows: []int{1}, Sizes: []string{"64"}, Progress: &prog,
		Run: func(o pipeline.Options) (*pipeline.Result, error) {
			n++
			if o.Workers == 2 {
				return nil, boom
			}
			return fakeRun(fakeMpps)(o)
		}})
	if err == nil || !strings.Contains(err.Error(), "1 of 2 points failed") {
		t.Errorf("error %v, want one of two points failed", err)
	}
	if len(pts) != 2 || !pts[0].OK() || pts[1].OK() || pts[1].Error != boom.Error() || n != 2 {
		t.Errorf("points %+v after %d runs", pts, n)
	}
	if !strings.Contains(prog.String(), "[2/2] workers=2 flows=1 size=64 steer=inline: error: priming failed") {
		t.Errorf("progress:\n%s", prog.String())
	}
	// A failed point is in the CSV and the JSON, and no fit needs it.
	md := BuildModel(pts, Machine{CPUs: 1, ClockGHz: 1}, ModelOptions{})
	if len(md.Fits) != 1 || len(md.Fits[0].Checks) != 1 {
		t.Errorf("fit over a failed point: %+v", md.Fits)
	}
}

func TestOversubscribed(t *testing.T) {
	got := Oversubscribed([]int{1, 2, 3, 4}, []dataplane.SteerMode{dataplane.SteerInline}, 2)
	if len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Errorf("inline on 2 CPUs: %v, want [3 4]", got)
	}
	got = Oversubscribed([]int{1, 2}, []dataplane.SteerMode{dataplane.SteerThread}, 2)
	if len(got) != 1 || got[0] != 2 {
		t.Errorf("thread on 2 CPUs: %v, want [2] (2 workers and the steering thread)", got)
	}
	if got = Oversubscribed([]int{1, 2, 3}, []dataplane.SteerMode{dataplane.SteerLocal}, 2); len(got) != 1 || got[0] != 3 {
		t.Errorf("local on 2 CPUs: %v, want [3]", got)
	}
	pts, _ := Sweep(Options{Workers: []int{4096}, Flows: []int{1}, Sizes: []string{"64"}, Run: fakeRun(fakeMpps)})
	if !pts[0].Oversubscribed {
		t.Error("4096 workers not marked oversubscribed")
	}
}

func TestCSVAndPlots(t *testing.T) {
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{100, 10000}, Sizes: []string{"64"},
		Steer: []dataplane.SteerMode{dataplane.SteerInline, dataplane.SteerThread, dataplane.SteerLocal}, Run: fakeRun(fakeMpps)})
	if err != nil {
		t.Fatal(err)
	}
	rows := csvOf(t, pts)
	if rows[2][col(t, "worker_steer_ns")] != "20000000;0" || rows[6][col(t, "steer_thread_cpu_ns")] != "30000000" {
		t.Errorf("per-thread columns: %q", rows[2])
	}

	m := Machine{CPUs: 2, ClockGHz: 2}
	rep := &Report{Bench: "scale", Machine: m, Points: pts, Model: BuildModel(pts, m, ModelOptions{})}
	dir := t.TempDir()
	files, err := Plot(rep, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 10 { // no stage costs in these points: no stage figure
		t.Errorf("wrote %v, want 5 figures as PNG and SVG", files)
	}
	CheckPlots(t, dir, true, "flows=100 size=64 steer=inline", "flows=10000 size=64 steer=thread", "flows=10000 size=64 steer=local")
	// Without a model there is no model figure.
	rep.Model = nil
	dir = t.TempDir()
	if _, err := Plot(rep, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PlotModel+".png")); !os.IsNotExist(err) {
		t.Errorf("model figure without a model: %v", err)
	}
	// Without 1-worker points there is no speedup and no speedup figure.
	two, err := Sweep(Options{Workers: []int{2, 3}, Flows: []int{100}, Sizes: []string{"64"}, Run: fakeRun(fakeMpps)})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if _, err := Plot(&Report{Bench: "scale", Machine: m, Points: two}, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PlotSpeedup+".png")); !os.IsNotExist(err) {
		t.Errorf("speedup figure without 1-worker points: %v", err)
	}
	// Nine configurations put the legend beside the data: every entry is
	// drawn, and the x axis has no tick past the last worker count.
	nine, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{1, 100, 10000}, Sizes: []string{"64", "imix", "1500"},
		Steer: []dataplane.SteerMode{dataplane.SteerLocal}, Run: fakeRun(fakeMpps)})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if _, err := Plot(&Report{Bench: "scale", Machine: m, Points: nine}, dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, PlotSpeedup+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"flows=1 size=64", "flows=10000 size=1500", "linear"} {
		if !bytes.Contains(svg, []byte(">"+l)) {
			t.Errorf("nine configurations: speedup legend lacks %q", l)
		}
	}
	if ticks := (intTicks{max: 2}).Ticks(0.5, 3.85); len(ticks) != 2 || ticks[1].Value != 2 {
		t.Errorf("ticks up to 2 workers on an axis to 3.85: %v", ticks)
	}
	if _, err := Plot(&Report{Points: []Point{{Error: "x"}}}, t.TempDir()); err == nil {
		t.Error("plotted nothing without an error")
	}
}

func col(t *testing.T, name string) int {
	for i, h := range CSVHeader {
		if h == name {
			return i
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

// csvOf writes pts as CSV, reads it back and checks it (checkCSV).
func csvOf(t *testing.T, pts []Point) [][]string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCSV(&b, pts); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	checkCSV(t, rows, len(pts))
	return rows
}

// checkCSV checks a parsed CSV: the header, one row per point, every row
// as wide as the header, numeric columns numeric.
func checkCSV(t *testing.T, rows [][]string, points int) {
	t.Helper()
	if len(rows) != points+1 {
		t.Fatalf("%d rows, want a header and %d points", len(rows), points)
	}
	if strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") {
		t.Errorf("header %q", rows[0])
	}
	for _, r := range rows[1:] {
		if len(r) != len(CSVHeader) {
			t.Fatalf("row of %d columns: %q", len(r), r)
		}
		for _, c := range []string{"workers", "flows", "packets"} {
			if _, err := strconv.ParseUint(r[col(t, c)], 10, 64); err != nil {
				t.Errorf("%s %q: %v", c, r[col(t, c)], err)
			}
		}
		for _, c := range []string{"mpps", "cpu_ns_per_pkt", "steer_ns_per_pkt", "steered_share"} {
			if _, err := strconv.ParseFloat(r[col(t, c)], 64); err != nil {
				t.Errorf("%s %q: %v", c, r[col(t, c)], err)
			}
		}
		w, _ := strconv.Atoi(r[col(t, "workers")])
		if n := len(strings.Split(r[col(t, "worker_cpu_ns")], ";")); n != w {
			t.Errorf("worker_cpu_ns has %d values for %d workers", n, w)
		}
	}
}

// CheckPlots checks the figures in dir: every PNG decodes, every SVG is
// an SVG with its legend (the labels given for the line figures, the
// parts of the CPU split).
func CheckPlots(t *testing.T, dir string, model bool, labels ...string) {
	t.Helper()
	names := []string{PlotMpps, PlotNsPkt, PlotCPU, PlotSpeedup}
	if model {
		names = append(names, PlotModel)
	}
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n+".png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s.png: %v", n, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s.png is %v", n, b)
		}
		svg, err := os.ReadFile(filepath.Join(dir, n+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		want := labels
		switch n {
		case PlotCPU:
			want = []string{"steering", "work", "off-CPU", "n=2 w1"}
		case PlotModel:
			want = []string{"measured (this machine)", "model: Celeron J4105 base", "1GbE line rate"}
		case PlotSpeedup:
			want = append(append([]string(nil), labels...), "linear")
		}
		if !bytes.Contains(svg, []byte("<svg")) {
			t.Errorf("%s.svg is no SVG", n)
		}
		for _, l := range want {
			if !bytes.Contains(svg, []byte(">"+l)) {
				t.Errorf("%s.svg has no legend entry %q", n, l)
			}
		}
	}
}

func TestIdleWorkers(t *testing.T) {
	var prog bytes.Buffer
	pts, err := Sweep(Options{Workers: []int{2}, Flows: []int{100}, Sizes: []string{"64"}, Progress: &prog,
		Run: func(o pipeline.Options) (*pipeline.Result, error) {
			r, err := fakeRun(fakeMpps)(o)
			// Worker 0 takes all of worker 1's packets.
			r.PerWorker[0].Packets += r.PerWorker[1].Packets
			r.PerWorker[1].Packets, r.PerWorker[1].CPUNs = 0, 0
			return r, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	if p := pts[0]; p.IdleWorkers != 1 || p.BusiestShare != 1 {
		t.Errorf("idle %d, busiest share %v; want 1 and 1", p.IdleWorkers, p.BusiestShare)
	}
	if !strings.Contains(prog.String(), "(1 of 2 workers forwarded nothing)") {
		t.Errorf("progress: %s", prog.String())
	}
	pts, _ = Sweep(Options{Workers: []int{2}, Flows: []int{100}, Sizes: []string{"64"}, Run: fakeRun(fakeMpps)})
	if p := pts[0]; p.IdleWorkers != 0 || p.BusiestShare != 0.5 {
		t.Errorf("even split: idle %d, busiest share %v; want 0 and 0.5", p.IdleWorkers, p.BusiestShare)
	}
}

// TestSweepStages: with Options.Stages each run is asked for stage
// costs; the points, the CSV's stage columns, the fit (at 1 worker) and
// the targets (moved with the clock) carry them, and a stage figure is
// drawn.
func TestSweepStages(t *testing.T) {
	run := func(o pipeline.Options) (*pipeline.Result, error) {
		if !o.Stages || o.StageShift != 4 {
			return nil, fmt.Errorf("stages %v every 2^%d", o.Stages, o.StageShift)
		}
		r, err := fakeRun(fakeMpps)(o)
		if err != nil {
			return nil, err
		}
		st := &pipeline.Stages{Every: 16, Inflation: 1.25, NATInsertNs: 500}
		for s := dataplane.Stage(0); s < dataplane.NumStages; s++ {
			// Stage k costs k+1 ns per packet at one worker, k+2 at more.
			st.PerStage = append(st.PerStage, pipeline.StageResult{Stage: s.String(), NsPerPktScaled: float64(int(s) + o.Workers)})
		}
		r.Stages = st
		return r, nil
	}
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{100}, Sizes: []string{"64"}, Steer: []dataplane.SteerMode{dataplane.SteerLocal},
		Stages: true, StageShift: 4, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if !p.OK() || p.StageNs() == nil {
			t.Fatalf("point %+v", p)
		}
	}
	rows := csvOf(t, pts)
	if got := rows[2][col(t, "stage_nat_lookup_ns")]; got != "5" { // stage 3, 2 workers
		t.Errorf("stage_nat_lookup_ns %q", got)
	}
	if got := rows[1][col(t, "stage_inflation")]; got != "1.25" {
		t.Errorf("stage_inflation %q", got)
	}
	m := Machine{CPUs: 2, ClockGHz: 2}
	md := BuildModel(pts, m, ModelOptions{})
	if len(md.Fits) != 1 || len(md.Fits[0].Stages) != int(dataplane.NumStages) || md.Fits[0].Stages[3] != (StageCost{"nat_lookup", 4}) {
		t.Fatalf("fit stages %+v", md.Fits)
	}
	for _, tg := range md.Fits[0].Targets {
		want := 4 * 2 / tg.ClockGHz
		if got := tg.Stages[3].NsPerPkt; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s at %.2f GHz: nat_lookup %.3f ns, want %.3f", tg.Name, tg.ClockGHz, got, want)
		}
	}
	var tb bytes.Buffer
	rep := &Report{Bench: "scale", Machine: m, Points: pts, Model: md}
	WriteTable(&tb, rep)
	if !strings.Contains(tb.String(), "nat_lookup 4.0") {
		t.Errorf("table lacks the fit's stages:\n%s", tb.String())
	}
	dir := t.TempDir()
	if _, err := Plot(rep, dir); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, PlotStages+".svg"))
	if err != nil || !strings.Contains(string(svg), "nat_lookup") || !strings.Contains(string(svg), "shaper_deq") {
		t.Fatalf("stage figure: %v", err)
	}
	// Without stage costs: no stage figure.
	pts[0].Stages, pts[1].Stages = nil, nil
	dir = t.TempDir()
	if _, err := Plot(&Report{Machine: m, Points: pts}, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, PlotStages+".png")); !os.IsNotExist(err) {
		t.Errorf("stage figure without stage costs: %v", err)
	}
}

// TestSweepRoundRobin: repeated runs go round the whole sweep (each
// point's runs spread over it), every other round backwards, and each
// point is its median run.
func TestSweepRoundRobin(t *testing.T) {
	var order []int
	run := fakeRun(func(o pipeline.Options) float64 {
		order = append(order, o.Workers)
		return float64(len(order)) // later runs are faster: a drifting machine
	})
	var prog bytes.Buffer
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{1}, Sizes: []string{"64"}, Repeat: 3, Run: run, Progress: &prog})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(order) != "[1 2 2 1 1 2]" {
		t.Fatalf("run order %v, want round after round, the second backwards", order)
	}
	// 1 worker ran 1st, 4th and 5th; 2 workers 2nd, 3rd and 6th.
	if pts[0].Mpps != 4 || pts[0].MppsMin != 1 || pts[0].MppsMax != 5 || pts[1].Mpps != 3 || pts[1].MppsMax != 6 || pts[1].Runs != 3 {
		t.Fatalf("points %+v", pts)
	}
	if !strings.Contains(prog.String(), "[6/6] round 3/3 workers=2 flows=1 size=64 steer=inline: 6.00 Mpps") {
		t.Errorf("progress:\n%s", prog.String())
	}
}

// TestSweepSpeedup: a point's speedup pairs its runs with the 1-worker
// point's runs of the same round, so a machine whose speed changes from
// round to round still gives the ratio of each round; points without a
// 1-worker point of their kind, or whose base failed, have none.
func TestSweepSpeedup(t *testing.T) {
	type key struct{ workers, flows int }
	round := map[key]int{}
	// The machine's speed, round by round, close enough between rounds
	// that the runs' order by rate differs from the rounds' (pairing
	// runs sorted by rate gives other ratios: 1.615..2.3, median 1.863).
	speed := []float64{1, 1.05, 1.1, 0.95, 1.02}
	gain := map[int][]float64{ // the workers' gain, round by round
		1: {1, 1, 1, 1, 1},
		2: {1.9, 1.5, 2.3, 1.7, 2.1},
		3: {2.5, 2.9, 2.7, 2.6, 2.8},
	}
	run := fakeRun(func(o pipeline.Options) float64 {
		k := key{o.Workers, o.Flows}
		r := round[k]
		round[k]++
		if o.Flows == 100 && o.Workers == 1 {
			return 0 // no packets: the base fails
		}
		return 5 * speed[r] * gain[o.Workers][r]
	})
	pts, err := Sweep(Options{Workers: []int{1, 2}, Flows: []int{1}, Sizes: []string{"64"}, Repeat: 5, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if p := pts[1]; !near(p.Speedup, 1.9) || !near(p.SpeedupMin, 1.5) || !near(p.SpeedupMax, 2.3) {
		t.Errorf("2 workers: speedup %v [%v..%v], want 1.9 [1.5..2.3]", p.Speedup, p.SpeedupMin, p.SpeedupMax)
	}
	if p := pts[0]; p.Speedup != 1 || p.SpeedupMin != 1 || p.SpeedupMax != 1 {
		t.Errorf("1 worker: speedup %v [%v..%v], want 1", p.Speedup, p.SpeedupMin, p.SpeedupMax)
	}

	round = map[key]int{}
	pts, err = Sweep(Options{Workers: []int{2, 3}, Flows: []int{1}, Sizes: []string{"64"}, Repeat: 5, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if p.Speedup != 0 {
			t.Errorf("%d workers without a 1-worker point: speedup %v", p.Workers, p.Speedup)
		}
	}

	round = map[key]int{}
	pts, _ = Sweep(Options{Workers: []int{1, 3}, Flows: []int{1, 100}, Sizes: []string{"64"}, Repeat: 5, Run: run})
	if len(pts) != 4 {
		t.Fatalf("%d points", len(pts))
	}
	if p := pts[1]; p.Flows != 1 || p.Workers != 3 || !near(p.Speedup, 2.7) || !near(p.SpeedupMin, 2.5) || !near(p.SpeedupMax, 2.9) {
		t.Errorf("3 workers, 1 flow: speedup %v [%v..%v], want 2.7 [2.5..2.9]", p.Speedup, p.SpeedupMin, p.SpeedupMax)
	}
	if p := pts[3]; p.Flows != 100 || p.Speedup != 0 {
		t.Errorf("3 workers, 100 flows, base failed: speedup %v", p.Speedup)
	}
	rows := csvOf(t, pts)
	if r := rows[2]; r[col(t, "speedup")] != "2.7" || r[col(t, "speedup_min")] != "2.5" || r[col(t, "speedup_max")] != "2.9" {
		t.Errorf("CSV speedup columns: %q", r[col(t, "speedup"):])
	}
}
