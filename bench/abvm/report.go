package abvm

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Step is one offered load on one path.
type Step struct {
	// OfferedPPS is the offered rate of each loaded direction (see
	// Report.Direction); PPS is what arrived, all directions together.
	OfferedPPS float64 `json:"offered_pps"`
	PPS        float64 `json:"pps"`
	UpPPS      float64 `json:"up_pps"`
	DownPPS    float64 `json:"down_pps"`
	// Mbps is the delivered Ethernet frames' bits (both directions).
	Mbps float64 `json:"mbps"`
	// LossPct is the share of the offer not delivered in the window.
	LossPct float64 `json:"loss_pct"`
	// PerCoreBusy is each vCPU's busy share of the step (1 - idle -
	// iowait), PerCoreSoftirq its softirq share.
	PerCoreBusy    []float64 `json:"per_core_busy"`
	PerCoreSoftirq []float64 `json:"per_core_softirq"`
	// Round trip through the router under the step's load (a probe
	// every 10 ms); lost probes took longer than a second.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	Probes       int     `json:"probes"`
	ProbesLost   int     `json:"probes_lost"`
	// GenCPUShare is the generator thread's CPU over the step;
	// HostCPUShare is the rest of this process (access concentrator,
	// probe, ARP responder). SentPct is the share of the offered frames
	// the generator got out: below 100 the host, not the router, limited
	// the step.
	GenCPUShare  float64 `json:"gen_cpu_share"`
	HostCPUShare float64 `json:"host_cpu_share"`
	SentPct      float64 `json:"sent_pct"`
	// HostCoreBusy is each host CPU's busy share over the step: the VM's
	// vCPU threads, qemu's I/O, the generator and the AC share them.
	HostCoreBusy []float64 `json:"host_core_busy"`
}

// Path is one router's figures: medians over runs.
type Path struct {
	// PPS is the most any step delivered (both directions), with its
	// min and max over runs; Mbps likewise.
	PPS    float64 `json:"pps"`
	PPSMin float64 `json:"pps_min"`
	PPSMax float64 `json:"pps_max"`
	Mbps   float64 `json:"mbps"`
	// LossPct, the latencies and PerCoreBusy are those of the heaviest
	// unshaped step (the overload); CapacityCoreBusy that of the step
	// that delivered most.
	LossPct          float64   `json:"loss_pct"`
	PerCoreBusy      []float64 `json:"per_core_busy"`
	CapacityCoreBusy []float64 `json:"capacity_core_busy"`
	LatencyP50Ms     float64   `json:"latency_p50_ms"`
	LatencyP99Ms     float64   `json:"latency_p99_ms"`
	// Shaped: the heaviest shaped step's latencies (0 when not shaped).
	ShapedLatencyP50Ms float64 `json:"shaped_latency_p50_ms,omitempty"`
	ShapedLatencyP99Ms float64 `json:"shaped_latency_p99_ms,omitempty"`
	Steps              []Step  `json:"steps"`
	ShapedSteps        []Step  `json:"shaped_steps,omitempty"`
	// RunSteps are every run's unshaped steps, RunShaped the shaped.
	RunSteps  [][]Step `json:"run_steps"`
	RunShaped [][]Step `json:"run_shaped_steps,omitempty"`
}

// Report is `pppfwd bench ab`'s result.
type Report struct {
	Bench    string `json:"bench"`
	Where    string `json:"where"`
	Emulated bool   `json:"emulated"`
	VCPUs    int    `json:"vcpus"`
	Runs     int    `json:"runs"`
	Size     int    `json:"size"`
	Flows    int    `json:"flows"`
	// Direction is what was loaded: both, down (WAN to LAN) or up.
	Direction string `json:"direction"`
	Workers   int    `json:"pppfwd_workers"`
	Backend   string `json:"pppfwd_backend"`
	// ShapeBps is the shaped steps' rate of each direction (0: none).
	ShapeBps uint64 `json:"shape_bps"`
	Kernel   Path   `json:"kernel"`
	PPPFWD   Path   `json:"pppfwd"`
	// RatioPPS and RatioMbps are pppfwd's over the kernel's;
	// RatioLatencyP99 the kernel's p99 over pppfwd's under overload
	// (above 1: pppfwd's is lower), ShapedRatioLatencyP99 when shaped.
	RatioPPS              float64  `json:"ratio_pps"`
	RatioMbps             float64  `json:"ratio_mbps"`
	RatioLatencyP99       float64  `json:"ratio_latency_p99"`
	ShapedRatioLatencyP99 float64  `json:"shaped_ratio_latency_p99,omitempty"`
	Notes                 []string `json:"notes"`
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianSteps merges runs step by step (runs offer the same ladder):
// each field is the median over the runs that reached that step.
func medianSteps(runs [][]Step) []Step {
	n := 0
	for _, r := range runs {
		n = max(n, len(r))
	}
	out := make([]Step, n)
	for i := range out {
		var at []Step
		for _, r := range runs {
			if i < len(r) {
				at = append(at, r[i])
			}
		}
		f := func(get func(Step) float64) float64 {
			var xs []float64
			for _, s := range at {
				xs = append(xs, get(s))
			}
			return median(xs)
		}
		cores := func(get func(Step) []float64) []float64 {
			k := 0
			for _, s := range at {
				k = max(k, len(get(s)))
			}
			v := make([]float64, k)
			for c := range v {
				var xs []float64
				for _, s := range at {
					if c < len(get(s)) {
						xs = append(xs, get(s)[c])
					}
				}
				v[c] = median(xs)
			}
			return v
		}
		out[i] = Step{
			OfferedPPS: f(func(s Step) float64 { return s.OfferedPPS }),
			PPS:        f(func(s Step) float64 { return s.PPS }),
			UpPPS:      f(func(s Step) float64 { return s.UpPPS }),
			DownPPS:    f(func(s Step) float64 { return s.DownPPS }),
			Mbps:       f(func(s Step) float64 { return s.Mbps }),
			LossPct:    f(func(s Step) float64 { return s.LossPct }),
			PerCoreBusy: cores(func(s Step) []float64 {
				return s.PerCoreBusy
			}),
			PerCoreSoftirq: cores(func(s Step) []float64 { return s.PerCoreSoftirq }),
			LatencyP50Ms:   f(func(s Step) float64 { return s.LatencyP50Ms }),
			LatencyP99Ms:   f(func(s Step) float64 { return s.LatencyP99Ms }),
			LatencyMaxMs:   f(func(s Step) float64 { return s.LatencyMaxMs }),
			Probes:         int(f(func(s Step) float64 { return float64(s.Probes) })),
			ProbesLost:     int(f(func(s Step) float64 { return float64(s.ProbesLost) })),
			GenCPUShare:    f(func(s Step) float64 { return s.GenCPUShare }),
			HostCPUShare:   f(func(s Step) float64 { return s.HostCPUShare }),
			SentPct:        f(func(s Step) float64 { return s.SentPct }),
			HostCoreBusy:   cores(func(s Step) []float64 { return s.HostCoreBusy }),
		}
	}
	return out
}

// summarize fills a Path from its runs' steps.
func summarize(runs, shaped [][]Step) Path {
	p := Path{RunSteps: runs, RunShaped: shaped, Steps: medianSteps(runs)}
	if len(shaped) > 0 {
		p.ShapedSteps = medianSteps(shaped)
	}
	var best []float64
	var bestMbps []float64
	for _, r := range runs {
		b, m := 0.0, 0.0
		for _, s := range r {
			b, m = max(b, s.PPS), max(m, s.Mbps)
		}
		best, bestMbps = append(best, b), append(bestMbps, m)
	}
	if len(best) > 0 {
		p.PPS, p.PPSMin, p.PPSMax = median(best), slices.Min(best), slices.Max(best)
		p.Mbps = median(bestMbps)
	}
	if n := len(p.Steps); n > 0 {
		last := p.Steps[n-1]
		p.LossPct, p.PerCoreBusy = last.LossPct, last.PerCoreBusy
		p.LatencyP50Ms, p.LatencyP99Ms = last.LatencyP50Ms, last.LatencyP99Ms
		capStep := p.Steps[0]
		for _, s := range p.Steps {
			if s.PPS > capStep.PPS {
				capStep = s
			}
		}
		p.CapacityCoreBusy = capStep.PerCoreBusy
	}
	if n := len(p.ShapedSteps); n > 0 {
		p.ShapedLatencyP50Ms, p.ShapedLatencyP99Ms = p.ShapedSteps[n-1].LatencyP50Ms, p.ShapedSteps[n-1].LatencyP99Ms
	}
	return p
}

// finish computes the ratios.
func (r *Report) finish() {
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	r.RatioPPS = div(r.PPPFWD.PPS, r.Kernel.PPS)
	r.RatioMbps = div(r.PPPFWD.Mbps, r.Kernel.Mbps)
	r.RatioLatencyP99 = div(r.Kernel.LatencyP99Ms, r.PPPFWD.LatencyP99Ms)
	r.ShapedRatioLatencyP99 = div(r.Kernel.ShapedLatencyP99Ms, r.PPPFWD.ShapedLatencyP99Ms)
}

// WriteTable writes the report as text: the ratios first, then each
// path's steps.
func (r *Report) WriteTable(w io.Writer) {
	emu := ""
	if r.Emulated {
		emu = ", emulated (TCG): read the ratios, not the absolute rates"
	}
	fmt.Fprintf(w, "bench ab: where %s%s; %d vCPUs, %d runs (medians, min-max), %d B frames, %d flows, load %s, pppfwd %s with %d workers\n",
		r.Where, emu, r.VCPUs, r.Runs, r.Size, r.Flows, r.Direction, r.Backend, r.Workers)
	fmt.Fprintf(w, "\n  delivered  pppfwd/kernel %.2fx packets, %.2fx Mbit/s\n", r.RatioPPS, r.RatioMbps)
	fmt.Fprintf(w, "  p99 under overload  kernel %.1f ms, pppfwd %.1f ms (kernel/pppfwd %.2fx)\n",
		r.Kernel.LatencyP99Ms, r.PPPFWD.LatencyP99Ms, r.RatioLatencyP99)
	if r.ShapeBps > 0 {
		fmt.Fprintf(w, "  shaped at %d bit/s each way, p99 under overload  kernel %.1f ms, pppfwd %.1f ms\n",
			r.ShapeBps, r.Kernel.ShapedLatencyP99Ms, r.PPPFWD.ShapedLatencyP99Ms)
	}
	for _, e := range []struct {
		name string
		p    *Path
	}{{"kernel (pppd rp-pppoe.so + nftables)", &r.Kernel}, {"pppfwd", &r.PPPFWD}} {
		fmt.Fprintf(w, "\n%s: %.0f pps delivered (%.0f-%.0f), %.1f Mbit/s; at its peak cores busy %s\n",
			e.name, e.p.PPS, e.p.PPSMin, e.p.PPSMax, e.p.Mbps, pcts(e.p.CapacityCoreBusy))
		writeSteps(w, "unshaped", e.p.Steps)
		if len(e.p.ShapedSteps) > 0 {
			writeSteps(w, "shaped", e.p.ShapedSteps)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s", n)
	}
	fmt.Fprintln(w)
}

func writeSteps(w io.Writer, what string, steps []Step) {
	fmt.Fprintf(w, "  %-8s %10s %10s %7s %8s %8s %8s  %-14s %-14s %-14s %6s\n", what, "offered/dir", "delivered", "loss%",
		"p50 ms", "p99 ms", "Mbit/s", "vCPU busy", "vCPU softirq", "host busy", "sent%")
	for _, s := range steps {
		fmt.Fprintf(w, "  %-8s %10.0f %10.0f %7.2f %8.2f %8.2f %8.1f  %-14s %-14s %-14s %6.1f\n", "",
			s.OfferedPPS, s.PPS, s.LossPct, s.LatencyP50Ms, s.LatencyP99Ms, s.Mbps,
			pcts(s.PerCoreBusy), pcts(s.PerCoreSoftirq), pcts(s.HostCoreBusy), s.SentPct)
	}
}

func pcts(xs []float64) string {
	var b []string
	for _, x := range xs {
		b = append(b, fmt.Sprintf("%.0f%%", 100*x))
	}
	return strings.Join(b, " ")
}
