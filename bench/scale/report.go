package scale

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/dataplane"
)

// Machine describes the CPU a sweep ran on.
type Machine struct {
	CPUs  int    `json:"cpus"`
	Model string `json:"cpu_model,omitempty"`
	// ClockGHz is the clock the model scales from; 0 when unknown.
	ClockGHz    float64 `json:"clock_ghz"`
	ClockSource string  `json:"clock_source,omitempty"`
	GOOS        string  `json:"goos"`
	GOARCH      string  `json:"goarch"`
}

// ThisMachine describes the running machine; clockGHz > 0 overrides the
// clock the OS reports.
func ThisMachine(clockGHz float64) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	m.Model, m.ClockGHz, m.ClockSource = cpuClock()
	if clockGHz > 0 {
		m.ClockGHz, m.ClockSource = clockGHz, "--clock-ghz"
	}
	return m
}

// Target is a CPU the model predicts for.
type Target struct {
	Name     string  `json:"name"`
	Cores    int     `json:"cores"`
	ClockGHz float64 `json:"clock_ghz"`
}

// Targets are the built-in CPUs besides the machine itself: a 4-core
// Celeron J4105 at its base and burst clocks, and a 16-core box.
var Targets = []Target{
	{"Celeron J4105 base", 4, 1.5},
	{"Celeron J4105 burst", 4, 2.5},
	{"16 cores", 16, 3.0},
}

// Link is an Ethernet line the model's rates are held against.
type Link struct {
	Name       string  `json:"name"`
	BitsPerSec float64 `json:"bits_per_sec"`
}

// Links are the lines compared with: 1, 2.5 and 10 GbE.
var Links = []Link{{"1GbE", 1e9}, {"2.5GbE", 2.5e9}, {"10GbE", 10e9}}

// ModelOptions choose what the model predicts.
type ModelOptions struct {
	// Share is s for the targets' predictions (default 0.5, symmetric
	// traffic); the checks against the sweep use the share it measured.
	Share float64
}

// Model is the fitted model with its checks and predictions.
type Model struct {
	Formula     []string    `json:"formula"`
	Assumptions []string    `json:"assumptions"`
	Ignores     []string    `json:"ignores"`
	Share       float64     `json:"share"`
	LineRates   []LineRates `json:"line_rates"`
	Fits        []Fit       `json:"fits"`
	Notes       []string    `json:"notes,omitempty"`
}

// LineRates are one link's frame rates per frame size.
type LineRates struct {
	Link string `json:"link"`
	// MinFrameMpps is the rate of minimum frames (64 B with FCS, the
	// figure line rates are usually quoted at), one direction.
	MinFrameMpps float64    `json:"min_frame_mpps"`
	Sizes        []SizeRate `json:"sizes"`
}

// SizeRate is a link's rate for the WAN frames of one size spec.
type SizeRate struct {
	Size string `json:"size"`
	// WANFrameBytes is the mean WAN frame (the LAN frame plus PPPoE and
	// PPP headers), without FCS: the PPPoE side carries the longer frames,
	// so it is the tighter link.
	WANFrameBytes float64 `json:"wan_frame_bytes"`
	// PerDirectionMpps is one direction at line rate; TotalMpps both
	// directions of the model's share (LinkTotal).
	PerDirectionMpps float64 `json:"per_direction_mpps"`
	TotalMpps        float64 `json:"total_mpps"`
}

// Fit is the model fitted to one configuration (flows, size, steering)
// of the sweep from its 1-worker point.
type Fit struct {
	Flows    int     `json:"flows"`
	Size     string  `json:"size"`
	Steer    string  `json:"steer"`
	ClockGHz float64 `json:"clock_ghz"`
	Costs    Costs   `json:"costs"`
	// Checks hold every measured worker count of the configuration
	// against the model's rate at the measured costs and share.
	Checks  []Check      `json:"checks"`
	Targets []Prediction `json:"targets"`
	// Stages break the 1-worker point's CPU ns per packet down by stage
	// (sampled, scaled to the run's cost; absent without --stages).
	// Steering's share is s*c_steer, the rest is c_work.
	Stages []StageCost `json:"stages,omitempty"`
}

// StageCost is one stage's ns per forwarded packet.
type StageCost struct {
	Stage    string  `json:"stage"`
	NsPerPkt float64 `json:"ns_per_pkt"`
}

// stagesAt returns the stage costs moved from a core of fromGHz to one
// of toGHz, as Costs.AtClock moves the model's costs.
func stagesAt(st []StageCost, fromGHz, toGHz float64) []StageCost {
	if len(st) == 0 {
		return nil
	}
	k := 1.0
	if fromGHz > 0 && toGHz > 0 {
		k = fromGHz / toGHz
	}
	out := make([]StageCost, len(st))
	for i, c := range st {
		out[i] = StageCost{Stage: c.Stage, NsPerPkt: c.NsPerPkt * k}
	}
	return out
}

// Check is one measured point against the model.
type Check struct {
	Workers        int     `json:"workers"`
	Oversubscribed bool    `json:"oversubscribed,omitempty"`
	MeasuredMpps   float64 `json:"measured_mpps"`
	PredictedMpps  float64 `json:"predicted_mpps"`
	// HopShare is the h the point measured and the model used (local
	// steering).
	HopShare float64 `json:"hop_share,omitempty"`
	// RelError is (predicted-measured)/measured.
	RelError float64 `json:"rel_error"`
}

// Prediction is the model for one target CPU.
type Prediction struct {
	Target
	Costs Costs `json:"costs"`
	// Stages are the fit's stage costs at the target's clock.
	Stages []StageCost `json:"stages,omitempty"`
	// RidgeWorkers, CeilingMpps: see Ridge and Ceiling; absent when
	// nothing is steered or no core steers for the others (local
	// steering): no ceiling.
	RidgeWorkers    *float64 `json:"ridge_workers,omitempty"`
	CeilingMpps     *float64 `json:"ceiling_mpps,omitempty"`
	SaturationCores int      `json:"saturation_cores"`
	// AllCoresMpps is the rate with every core of the target in use.
	AllCoresMpps float64      `json:"all_cores_mpps"`
	Curve        []CurvePoint `json:"curve"`
	Lines        []LineCheck  `json:"lines"`
}

// CurvePoint is the predicted rate at one core count.
type CurvePoint struct {
	Cores   int     `json:"cores"`
	Workers int     `json:"workers"`
	Mpps    float64 `json:"mpps"`
	// Efficiency is the rate per core against one worker's (n workers'
	// rate / (n * R(1))).
	Efficiency float64 `json:"efficiency"`
}

// LineCheck holds a target against a link at the fit's frame size.
type LineCheck struct {
	Link      string  `json:"link"`
	TotalMpps float64 `json:"total_mpps"`
	// CoresNeeded is the fewest cores (of the target's) that reach the
	// link's rate; 0 if its cores do not. CeilingBelow is set when the
	// steering ceiling is under the link's rate: no core count reaches it.
	CoresNeeded  int  `json:"cores_needed"`
	CeilingBelow bool `json:"ceiling_below,omitempty"`
}

// Report is `bench scale`'s JSON: the machine, the points and the model.
type Report struct {
	Bench   string  `json:"bench"`
	Machine Machine `json:"machine"`
	// DurationSec and Repeat are per point.
	DurationSec float64 `json:"duration_sec"`
	Repeat      int     `json:"repeat"`
	Points      []Point `json:"points"`
	Model       *Model  `json:"model,omitempty"`
}

// WANFrameBytes is the mean WAN frame (without FCS) carrying the LAN
// frames of a size spec.
func WANFrameBytes(size string) (float64, error) {
	sz, err := pipeline.Sizes(size)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, s := range sz {
		sum += float64(s)
	}
	return sum/float64(len(sz)) + pppoeBytes, nil
}

func ptr(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// The model's statement, carried in its JSON.
var (
	formula = []string{
		"inline steering: R(n) = min(n/c_work, 1/(s*c_steer + c_work/n)) with n workers on n cores (the second term is the minimum whenever s*c_steer > 0)",
		"steering thread: R(n) = min(n/c_work, 1/(s*c_steer)) with n workers and the steering thread on n+1 cores",
		"local steering: R(n) = n/(c_work + s*c_steer + s*h*c_hop) with n workers on n cores, each steering the WAN frames that arrive on its own queue; h: share of steered frames handed to their owner on another worker (0 when the receive path places each frame on its owner's queue, (n-1)/n when arrival is hashed uniformly); no steering ceiling and no ridge: the rate is set by the work per core",
		"ceiling 1/(s*c_steer); ridge n* = c_work/(s*c_steer); inline R(n) = ceiling * n/(n+n*)",
		"c_work: workers' CPU minus their steering time, per forwarded packet, at 1 worker; c_steer: steering ns per steered frame; s: WAN->LAN share of forwarded packets",
		"h: WAN frames the workers' steering handed to another worker per steered frame, from each measured point; c_hop: not measured (the pipeline places each WAN frame on its owner's queue, so its points hand next to nothing over): the checks count no cost for h and the predictions take h = 0",
	}
	assumptions = []string{
		"costs scale with the clock as f_measured/f_target: same microarchitecture, a packet's cost fixed in cycles",
		"costs measured at 1 worker hold at every worker count: work divides evenly over the workers (flows spread evenly over their owners)",
		"each worker on a core of its own",
		"local steering: the receive path places each WAN frame on its owner's queue (h = 0), as afpacket's WAN fanout program and the pipeline do; frames it cannot place cost a hand-over the model leaves out",
	}
	ignores = []string{
		"memory bandwidth",
		"cache contention between cores (shared L2/L3, the rings' cache lines moving between cores)",
		"NIC and PCIe limits (descriptor rings, DMA, interrupts)",
		"the kernel's share of each packet on AF_PACKET (or AF_XDP, netmap): the pipeline runs over in-memory ports",
		"SMT: two hardware threads of one core are counted as two cores",
		"turbo and frequency scaling under load: the clock is fixed",
	}
)

// BuildModel fits the model to every configuration of points that has a
// measured 1-worker point, checks it against all of that configuration's
// points, and predicts for this machine and the built-in targets.
func BuildModel(points []Point, m Machine, mo ModelOptions) *Model {
	if !(mo.Share > 0 && mo.Share < 1) {
		mo.Share = 0.5
	}
	md := &Model{Formula: formula, Assumptions: assumptions, Ignores: ignores, Share: mo.Share}
	var sizes []string
	for _, p := range points {
		if !contains(sizes, p.Size) {
			sizes = append(sizes, p.Size)
		}
	}
	for _, l := range Links {
		lr := LineRates{Link: l.Name, MinFrameMpps: LineRate(l.BitsPerSec, 64-fcsBytes) / 1e6}
		for _, s := range sizes {
			fb, err := WANFrameBytes(s)
			if err != nil {
				continue
			}
			pd := LineRate(l.BitsPerSec, fb)
			lr.Sizes = append(lr.Sizes, SizeRate{Size: s, WANFrameBytes: fb, PerDirectionMpps: pd / 1e6, TotalMpps: LinkTotal(pd, mo.Share) / 1e6})
		}
		md.LineRates = append(md.LineRates, lr)
	}
	targets := []Target{{Name: "this machine", Cores: m.CPUs, ClockGHz: m.ClockGHz}}
	if m.ClockGHz > 0 {
		targets = append(targets, Targets...)
	} else {
		md.Notes = append(md.Notes, "this machine's clock is unknown (pass --clock-ghz): no predictions for other CPUs")
	}
	for _, g := range groups(points) {
		one := g.at(1)
		if one == nil {
			md.Notes = append(md.Notes, fmt.Sprintf("flows=%d size=%s steer=%s: no measured 1-worker point, no fit", g.flows, g.size, g.steer))
			continue
		}
		mode := one.Mode()
		f := Fit{Flows: g.flows, Size: g.size, Steer: g.steer, ClockGHz: m.ClockGHz, Costs: Measured(one)}
		if ns := one.StageNs(); ns != nil {
			for i, v := range ns {
				f.Stages = append(f.Stages, StageCost{Stage: dataplane.Stage(i).String(), NsPerPkt: v})
			}
		}
		maxHop := 0.0
		for _, p := range g.points {
			if !p.OK() || !(p.Mpps > 0) {
				continue
			}
			c := f.Costs
			ck := Check{Workers: p.Workers, Oversubscribed: p.Oversubscribed, MeasuredMpps: p.Mpps}
			if mode == dataplane.SteerLocal {
				// The point's own h; c_hop is not measured (0).
				c.Hop, ck.HopShare = p.WANRedirectedShare, p.WANRedirectedShare
				maxHop = math.Max(maxHop, p.WANRedirectedShare)
			}
			ck.PredictedMpps = Rate(c, mode, p.Workers) / 1e6
			ck.RelError = RelError(ck.PredictedMpps, p.Mpps)
			f.Checks = append(f.Checks, ck)
		}
		if maxHop >= hopNoted {
			md.Notes = append(md.Notes, fmt.Sprintf("%s: up to %.1f %% of the steered WAN frames were handed to another worker; the model counts no cost for that (c_hop is not measured) and overestimates those points",
				g.label(true), 100*maxHop))
		}
		fb, _ := WANFrameBytes(g.size)
		for _, t := range targets {
			c := f.Costs.AtClock(m.ClockGHz, t.ClockGHz)
			c.Share = mo.Share
			// Local steering: frames placed on their owner's queue.
			c.Hop, c.HopNs = 0, 0
			pr := predict(t, c, mode, fb)
			pr.Stages = stagesAt(f.Stages, m.ClockGHz, t.ClockGHz)
			f.Targets = append(f.Targets, pr)
		}
		md.Fits = append(md.Fits, f)
	}
	return md
}

// hopNoted is the h from which a local fit's points get a note: the
// hand-over they did costs what the model leaves out.
const hopNoted = 0.01

// predict is the model for one target at costs c.
func predict(t Target, c Costs, mode dataplane.SteerMode, wanFrame float64) Prediction {
	p := Prediction{Target: t, Costs: c, SaturationCores: SaturationCores(c, mode)}
	ceiling := math.Inf(1)
	if HasCeiling(mode) {
		p.RidgeWorkers, ceiling = ptr(Ridge(c)), Ceiling(c)
	}
	if !math.IsInf(ceiling, 1) {
		p.CeilingMpps = ptr(ceiling / 1e6)
	}
	r1 := Rate(c, mode, 1)
	for n := 1; CoresFor(mode, n) <= t.Cores; n++ {
		r := Rate(c, mode, n)
		cp := CurvePoint{Cores: CoresFor(mode, n), Workers: n, Mpps: r / 1e6}
		if r1 > 0 {
			cp.Efficiency = r / (float64(n) * r1)
		}
		p.Curve = append(p.Curve, cp)
		p.AllCoresMpps = r / 1e6
	}
	for _, l := range Links {
		total := LinkTotal(LineRate(l.BitsPerSec, wanFrame), c.Share)
		p.Lines = append(p.Lines, LineCheck{Link: l.Name, TotalMpps: total / 1e6,
			CoresNeeded: CoresToReach(c, mode, total, t.Cores), CeilingBelow: ceiling < total})
	}
	return p
}

// group is one configuration's points, in sweep order.
type group struct {
	flows  int
	size   string
	steer  string
	points []*Point
}

func (g *group) at(workers int) *Point {
	for _, p := range g.points {
		if p.Workers == workers && p.OK() {
			return p
		}
	}
	return nil
}

// hasStages reports whether any of the group's points has stage costs.
func (g *group) hasStages() bool {
	for _, p := range g.points {
		if p.StageNs() != nil {
			return true
		}
	}
	return false
}

func (g *group) label(withSteer bool) string {
	s := fmt.Sprintf("flows=%d size=%s", g.flows, g.size)
	if withSteer {
		s += " steer=" + g.steer
	}
	return s
}

// groups splits points by configuration, in order of first appearance,
// each group's points sorted by workers.
func groups(points []Point) []*group {
	var out []*group
	idx := map[string]*group{}
	for i := range points {
		p := &points[i]
		k := fmt.Sprintf("%d/%s/%s", p.Flows, p.Size, p.Steer)
		g := idx[k]
		if g == nil {
			g = &group{flows: p.Flows, size: p.Size, steer: p.Steer}
			idx[k] = g
			out = append(out, g)
		}
		g.points = append(g.points, p)
	}
	for _, g := range out {
		sort.SliceStable(g.points, func(i, j int) bool { return g.points[i].Workers < g.points[j].Workers })
	}
	return out
}

// reference picks the configuration the single-configuration figures
// (CPU split, model) show: 64 B frames if swept, else the first size;
// the flow count nearest 10000 (by ratio); the first steering mode.
func reference(gs []*group) *group {
	var best *group
	score := func(g *group) (int, float64) {
		s := 1
		if g.size == "64" {
			s = 0
		}
		return s, math.Abs(math.Log(float64(max(g.flows, 1)) / 10000))
	}
	for _, g := range gs {
		if g.steer != gs[0].steer {
			continue
		}
		if best == nil {
			best = g
			continue
		}
		s1, d1 := score(g)
		s0, d0 := score(best)
		if s1 < s0 || (s1 == s0 && d1 < d0-1e-12) {
			best = g
		}
	}
	return best
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// WriteTable writes the report for a reader: the points, then the model.
// w should be a tabwriter (columns are tab-separated).
func WriteTable(w io.Writer, r *Report) {
	m := r.Machine
	clock := "clock unknown"
	if m.ClockGHz > 0 {
		clock = fmt.Sprintf("%.3f GHz (%s)", m.ClockGHz, m.ClockSource)
	}
	fmt.Fprintf(w, "machine\t%d CPUs, %s, %s, %s/%s\n", m.CPUs, orDash(m.Model), clock, m.GOOS, m.GOARCH)
	fmt.Fprintf(w, "per point\t%.3g s, median of %d run(s); speedup: median of each round's rate over the 1-worker point's\n\n", r.DurationSec, r.Repeat)
	fmt.Fprintln(w, "workers\tflows\tsize\tsteer\tMpps\tspeedup\twall ns/pkt\tcpu ns/pkt\tsteer ns/pkt\tallocs/pkt\tsteered\tredirected\twan redirected\tper thread: share of packets, cpu ns per own packet, steering share of its cpu")
	for i := range r.Points {
		p := &r.Points[i]
		if !p.OK() {
			fmt.Fprintf(w, "%d\t%d\t%s\t%s\terror: %s\n", p.Workers, p.Flows, p.Size, p.Steer, p.Error)
			continue
		}
		mpps := fmt.Sprintf("%.3f", p.Mpps)
		if p.Runs > 1 {
			mpps += fmt.Sprintf(" [%.3f..%.3f]", p.MppsMin, p.MppsMax)
		}
		if p.Oversubscribed {
			mpps += " *"
		}
		speedup := "-"
		if p.Speedup > 0 {
			speedup = fmt.Sprintf("%.2f", p.Speedup)
			if p.Runs > 1 {
				speedup += fmt.Sprintf(" [%.2f..%.2f]", p.SpeedupMin, p.SpeedupMax)
			}
		}
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.4f\t%.3f\t%.3f\t%.3f\t%s\n", p.Workers, p.Flows, p.Size, p.Steer, mpps, speedup,
			p.WallNsPerPkt, p.CPUNsPerPkt, p.SteerNsPerPkt, p.AllocsPerPkt, p.SteeredShare, p.RedirectedShare, p.WANRedirectedShare, threads(p))
	}
	for _, p := range r.Points {
		if p.Oversubscribed {
			fmt.Fprintln(w, "* oversubscribed: more threads than CPUs, the point measures the scheduler too")
			break
		}
	}
	if r.Model == nil {
		return
	}
	md := r.Model
	fmt.Fprintln(w)
	fmt.Fprintln(w, "model")
	for _, f := range md.Formula {
		fmt.Fprintf(w, "\t%s\n", f)
	}
	fmt.Fprintf(w, "assumes\t%s\n", strings.Join(md.Assumptions, "; "))
	fmt.Fprintf(w, "ignores\t%s\n", strings.Join(md.Ignores, "; "))
	for _, n := range md.Notes {
		fmt.Fprintf(w, "note\t%s\n", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "line rate\tmin frame Mpps (one way)\tper size: WAN frame B, Mpps one way / both ways at s="+fmt.Sprint(md.Share))
	for _, l := range md.LineRates {
		var parts []string
		for _, s := range l.Sizes {
			parts = append(parts, fmt.Sprintf("%s: %.0f B %.4f / %.4f", s.Size, s.WANFrameBytes, s.PerDirectionMpps, s.TotalMpps))
		}
		fmt.Fprintf(w, "%s\t%.4f\t%s\n", l.Link, l.MinFrameMpps, strings.Join(parts, ", "))
	}
	for _, f := range md.Fits {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "fit flows=%d size=%s steer=%s\tc_work %.1f ns, c_steer %.1f ns, s %.3f (measured at 1 worker", f.Flows, f.Size, f.Steer, f.Costs.WorkNs, f.Costs.SteerNs, f.Costs.Share)
		if f.ClockGHz > 0 {
			fmt.Fprintf(w, ", %.3f GHz", f.ClockGHz)
		}
		fmt.Fprintln(w, ")")
		if len(f.Stages) > 0 {
			var parts []string
			for _, st := range f.Stages {
				parts = append(parts, fmt.Sprintf("%s %.1f", st.Stage, st.NsPerPkt))
			}
			fmt.Fprintf(w, "  stages ns/pkt\t%s\n", strings.Join(parts, ", "))
		}
		for _, c := range f.Checks {
			mark := ""
			if c.Oversubscribed {
				mark = " *"
			}
			hop := ""
			if f.Steer == "local" {
				hop = fmt.Sprintf(", h %.3f", c.HopShare)
			}
			fmt.Fprintf(w, "  check workers=%d%s\tmeasured %.3f Mpps, model %.3f Mpps, error %+.1f %%%s\n", c.Workers, mark, c.MeasuredMpps, c.PredictedMpps, 100*c.RelError, hop)
		}
		fmt.Fprintln(w, "  target\tcores\tGHz\tc_work ns\tc_steer ns\tridge\tsaturates at\tceiling Mpps\tall cores Mpps\tcores for 1GbE / 2.5GbE / 10GbE")
		for _, t := range f.Targets {
			var lines []string
			for _, l := range t.Lines {
				switch {
				case l.CoresNeeded > 0:
					lines = append(lines, fmt.Sprint(l.CoresNeeded))
				case l.CeilingBelow:
					lines = append(lines, "never")
				default:
					lines = append(lines, fmt.Sprintf(">%d", t.Cores))
				}
			}
			fmt.Fprintf(w, "  %s\t%d\t%.2f\t%.1f\t%.1f\t%s\t%s\t%s\t%.3f\t%s\n", t.Name, t.Cores, t.ClockGHz, t.Costs.WorkNs, t.Costs.SteerNs,
				optf(t.RidgeWorkers, "%.1f"), sat(t.SaturationCores), optf(t.CeilingMpps, "%.3f"), t.AllCoresMpps, strings.Join(lines, " / "))
		}
	}
}

func threads(p *Point) string {
	var parts []string
	one := func(name string, c WorkerCPU) {
		st := 0.0
		if c.CPUNs > 0 {
			st = 100 * float64(c.SteerNs) / float64(c.CPUNs)
		}
		if c.Worker < 0 {
			// The steering thread forwards nothing itself.
			parts = append(parts, fmt.Sprintf("%s %.0f ns/pkt of all, st %.0f %%", name, float64(c.CPUNs)/float64(max(p.Packets, 1)), st))
			return
		}
		s := fmt.Sprintf("%s %.0f %%", name, 100*float64(c.Packets)/float64(max(p.Packets, 1)))
		if c.Packets > 0 {
			s += fmt.Sprintf(" %.0f ns", float64(c.CPUNs)/float64(c.Packets))
		}
		parts = append(parts, s+fmt.Sprintf(" st %.0f %%", st))
	}
	for _, c := range p.PerWorker {
		one(fmt.Sprintf("w%d", c.Worker), c)
	}
	if p.SteerThread != nil {
		one("steer", *p.SteerThread)
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func optf(v *float64, f string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(f, *v)
}

func sat(n int) string {
	if n == 0 {
		return "never"
	}
	return fmt.Sprintf("%d cores", n)
}
