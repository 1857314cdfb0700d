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
	// TCP are the iperf3 transfers through the router, one entry per
	// shaping, direction and stream count (none with the TCP step off).
	TCP []TCP `json:"tcp,omitempty"`
}

// TCPStep is one iperf3 transfer through the router in one run: a LAN
// host to (up) or from (down, iperf3 -R) a server on the Internet side of
// the access concentrator.
type TCPStep struct {
	Direction string `json:"direction"` // up or down
	Streams   int    `json:"streams"`   // iperf3 -P
	Shaped    bool   `json:"shaped"`
	// Mbps is the goodput: what the receiver got (iperf3's
	// end.sum_received.bits_per_second) over Seconds, the pre-test
	// iperf3 omits (slow start) excluded. Retransmits are the sender's.
	Mbps        float64 `json:"mbps"`
	Seconds     float64 `json:"seconds"`
	Retransmits int     `json:"retransmits"`
	// The probe's round trip during the transfer (the same probe as
	// the ladder's steps; a probe not back within a second is lost).
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	Probes       int     `json:"probes"`
	ProbesLost   int     `json:"probes_lost"`
	// Each vCPU's busy and softirq shares and each host CPU's busy
	// share over the measured window, as the ladder's steps have them.
	PerCoreBusy    []float64 `json:"per_core_busy"`
	PerCoreSoftirq []float64 `json:"per_core_softirq"`
	HostCoreBusy   []float64 `json:"host_core_busy"`
	// Error says why the transfer failed (iperf3's error, or killed
	// when it outlasted its time by half a minute): Mbps is 0 then.
	Error string `json:"error,omitempty"`
}

// TCP is one transfer's figures over the runs: medians, the goodput
// with its min and max.
type TCP struct {
	Direction      string    `json:"direction"`
	Streams        int       `json:"streams"`
	Shaped         bool      `json:"shaped"`
	Mbps           float64   `json:"mbps"`
	MbpsMin        float64   `json:"mbps_min"`
	MbpsMax        float64   `json:"mbps_max"`
	Retransmits    float64   `json:"retransmits"`
	LatencyP50Ms   float64   `json:"latency_p50_ms"`
	LatencyP99Ms   float64   `json:"latency_p99_ms"`
	PerCoreBusy    []float64 `json:"per_core_busy"`
	PerCoreSoftirq []float64 `json:"per_core_softirq"`
	HostCoreBusy   []float64 `json:"host_core_busy"`
	// Failed counts the runs whose transfer failed (their goodput, 0,
	// is in the median).
	Failed int       `json:"failed,omitempty"`
	Runs   []TCPStep `json:"runs"`
}

// TCPRatio compares the paths on one transfer: RatioMbps is pppfwd's
// goodput over the kernel's, RatioLatencyP99 the kernel's p99 over
// pppfwd's (above 1: pppfwd's is lower).
type TCPRatio struct {
	Direction       string  `json:"direction"`
	Streams         int     `json:"streams"`
	Shaped          bool    `json:"shaped"`
	RatioMbps       float64 `json:"ratio_mbps"`
	RatioLatencyP99 float64 `json:"ratio_latency_p99"`
}

// Report is `pppfwd bench ab`'s result.
type Report struct {
	Bench string `json:"bench"`
	// Where the router under test ran: vm (the lab VM, Emulated) or
	// host (a network namespace of this host, on CPUs).
	Where    string `json:"where"`
	Emulated bool   `json:"emulated"`
	// Paths are the routers measured (a path not run has no steps).
	Paths []string `json:"paths"`
	// VCPUs are the CPUs the router under test had: the VM's vCPUs, or
	// with where host len(CPUs), the host CPUs its per-core figures are.
	VCPUs int   `json:"vcpus"`
	CPUs  []int `json:"cpus,omitempty"`
	Runs  int   `json:"runs"`
	Size  int   `json:"size"`
	Flows int   `json:"flows"`
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
	RatioPPS              float64 `json:"ratio_pps"`
	RatioMbps             float64 `json:"ratio_mbps"`
	RatioLatencyP99       float64 `json:"ratio_latency_p99"`
	ShapedRatioLatencyP99 float64 `json:"shaped_ratio_latency_p99,omitempty"`
	// TCPSeconds is each iperf3 transfer's measured time (0: no TCP
	// step), TCPRatios the paths' ratios per transfer.
	TCPSeconds float64    `json:"tcp_seconds,omitempty"`
	TCPRatios  []TCPRatio `json:"tcp_ratios,omitempty"`
	Notes      []string   `json:"notes"`
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

// medianCores is the per-core median of per-core shares (cores a run
// lacks are left out of that core's median).
func medianCores(xs [][]float64) []float64 {
	k := 0
	for _, x := range xs {
		k = max(k, len(x))
	}
	v := make([]float64, k)
	for c := range v {
		var at []float64
		for _, x := range xs {
			if c < len(x) {
				at = append(at, x[c])
			}
		}
		v[c] = median(at)
	}
	return v
}

// tcpKey names one transfer of the TCP step.
type tcpKey struct {
	shaped    bool
	direction string
	streams   int
}

func (s TCPStep) key() tcpKey { return tcpKey{s.Shaped, s.Direction, s.Streams} }
func (t TCP) key() tcpKey     { return tcpKey{t.Shaped, t.Direction, t.Streams} }

// summarizeTCP merges the runs' transfers by shaping, direction and
// stream count, in the order the first run made them.
func summarizeTCP(runs [][]TCPStep) []TCP {
	var keys []tcpKey
	by := map[tcpKey][]TCPStep{}
	for _, r := range runs {
		for _, s := range r {
			k := s.key()
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], s)
		}
	}
	var out []TCP
	for _, k := range keys {
		at := by[k]
		f := func(get func(TCPStep) float64) []float64 {
			var xs []float64
			for _, s := range at {
				xs = append(xs, get(s))
			}
			return xs
		}
		cores := func(get func(TCPStep) []float64) []float64 {
			var xs [][]float64
			for _, s := range at {
				xs = append(xs, get(s))
			}
			return medianCores(xs)
		}
		mbps := f(func(s TCPStep) float64 { return s.Mbps })
		failed := 0
		for _, s := range at {
			if s.Error != "" {
				failed++
			}
		}
		out = append(out, TCP{Direction: k.direction, Streams: k.streams, Shaped: k.shaped,
			Mbps: median(mbps), MbpsMin: slices.Min(mbps), MbpsMax: slices.Max(mbps),
			Retransmits:    median(f(func(s TCPStep) float64 { return float64(s.Retransmits) })),
			LatencyP50Ms:   median(f(func(s TCPStep) float64 { return s.LatencyP50Ms })),
			LatencyP99Ms:   median(f(func(s TCPStep) float64 { return s.LatencyP99Ms })),
			PerCoreBusy:    cores(func(s TCPStep) []float64 { return s.PerCoreBusy }),
			PerCoreSoftirq: cores(func(s TCPStep) []float64 { return s.PerCoreSoftirq }),
			HostCoreBusy:   cores(func(s TCPStep) []float64 { return s.HostCoreBusy }),
			Failed:         failed, Runs: at})
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
	r.TCPRatios = nil
	for _, k := range r.Kernel.TCP {
		for _, p := range r.PPPFWD.TCP {
			if p.key() == k.key() {
				r.TCPRatios = append(r.TCPRatios, TCPRatio{Direction: k.Direction, Streams: k.Streams, Shaped: k.Shaped,
					RatioMbps: div(p.Mbps, k.Mbps), RatioLatencyP99: div(k.LatencyP99Ms, p.LatencyP99Ms)})
			}
		}
	}
}

// ran reports whether path was measured (a report without Paths has
// both).
func (r *Report) ran(path string) bool { return len(r.Paths) == 0 || slices.Contains(r.Paths, path) }

// coreName is what the per-core figures are of: the VM's vCPUs or, with
// where host, host CPUs.
func (r *Report) coreName() string {
	if r.Where == "host" {
		return "CPU"
	}
	return "vCPU"
}

// WriteTable writes the report as text: the ratios first, then each
// path's steps.
func (r *Report) WriteTable(w io.Writer) {
	emu := ""
	if r.Emulated {
		emu = ", emulated (TCG): read the ratios, not the absolute rates"
	}
	cores := fmt.Sprintf("%d vCPUs", r.VCPUs)
	if r.Where == "host" {
		cores = "the router on CPUs " + cpuList(r.CPUs)
	}
	fmt.Fprintf(w, "bench ab: where %s%s; %s, %d runs (medians, min-max), %d B frames, %d flows, load %s, pppfwd %s with %d workers\n",
		r.Where, emu, cores, r.Runs, r.Size, r.Flows, r.Direction, r.Backend, r.Workers)
	if r.ran("kernel") && r.ran("pppfwd") {
		fmt.Fprintf(w, "\n  delivered  pppfwd/kernel %.2fx packets, %.2fx Mbit/s\n", r.RatioPPS, r.RatioMbps)
		fmt.Fprintf(w, "  p99 under overload  kernel %.1f ms, pppfwd %.1f ms (kernel/pppfwd %.2fx)\n",
			r.Kernel.LatencyP99Ms, r.PPPFWD.LatencyP99Ms, r.RatioLatencyP99)
		if r.ShapeBps > 0 {
			fmt.Fprintf(w, "  shaped at %d bit/s each way, p99 under overload  kernel %.1f ms, pppfwd %.1f ms\n",
				r.ShapeBps, r.Kernel.ShapedLatencyP99Ms, r.PPPFWD.ShapedLatencyP99Ms)
		}
	} else if r.ShapeBps > 0 {
		fmt.Fprintf(w, "\n  shaped at %d bit/s each way\n", r.ShapeBps)
	}
	for _, e := range []struct {
		path, name string
		p          *Path
	}{{"kernel", "kernel (pppd rp-pppoe.so + nftables)", &r.Kernel}, {"pppfwd", "pppfwd", &r.PPPFWD}} {
		if !r.ran(e.path) {
			continue
		}
		fmt.Fprintf(w, "\n%s: %.0f pps delivered (%.0f-%.0f), %.1f Mbit/s; at its peak cores busy %s\n",
			e.name, e.p.PPS, e.p.PPSMin, e.p.PPSMax, e.p.Mbps, pcts(e.p.CapacityCoreBusy))
		writeSteps(w, "unshaped", r.coreName(), e.p.Steps)
		if len(e.p.ShapedSteps) > 0 {
			writeSteps(w, "shaped", r.coreName(), e.p.ShapedSteps)
		}
	}
	r.writeTCP(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nnote: %s", n)
	}
	fmt.Fprintln(w)
}

func writeSteps(w io.Writer, what, core string, steps []Step) {
	fmt.Fprintf(w, "  %-8s %10s %10s %7s %8s %8s %8s  %-14s %-14s %-14s %6s\n", what, "offered/dir", "delivered", "loss%",
		"p50 ms", "p99 ms", "Mbit/s", core+" busy", core+" softirq", "host busy", "sent%")
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

// writeTCP writes the TCP section: per transfer, each path's goodput,
// retransmits, the probe's round trip during it and the vCPUs' busy
// shares, with pppfwd's line carrying the ratios.
func (r *Report) writeTCP(w io.Writer) {
	if len(r.Kernel.TCP) == 0 && len(r.PPPFWD.TCP) == 0 {
		return
	}
	fmt.Fprintf(w, "\nTCP through the router (iperf3 from a LAN host to the Internet side, %.0f s each; goodput received, round trip during the transfer):\n", r.TCPSeconds)
	fmt.Fprintf(w, "  %-8s %-4s %7s  %-6s %8s %-17s %6s %8s %8s  %-14s %s\n", "", "dir", "streams", "path", "Mbit/s", " (min-max)",
		"retr", "p50 ms", "p99 ms", r.coreName()+" busy", "pppfwd/kernel")
	ratio := map[tcpKey]TCPRatio{}
	for _, x := range r.TCPRatios {
		ratio[tcpKey{x.Shaped, x.Direction, x.Streams}] = x
	}
	keys, _ := tcpGroups(r)
	for _, k := range keys {
		what := "unshaped"
		if k.shaped {
			what = "shaped"
		}
		for i, e := range []struct {
			name string
			p    []TCP
		}{{"kernel", r.Kernel.TCP}, {"pppfwd", r.PPPFWD.TCP}} {
			lead := fmt.Sprintf("  %-8s %-4s %7d", what, k.direction, k.streams)
			if i > 0 {
				lead = fmt.Sprintf("  %-8s %-4s %7s", "", "", "")
			}
			var t *TCP
			for j := range e.p {
				if e.p[j].key() == k {
					t = &e.p[j]
				}
			}
			if t == nil {
				fmt.Fprintf(w, "%s  %-6s %8s\n", lead, e.name, "-")
				continue
			}
			rs := ""
			if x, ok := ratio[k]; ok && i > 0 {
				rs = fmt.Sprintf("%.2fx Mbit/s, p99 %.2fx", x.RatioMbps, x.RatioLatencyP99)
			}
			if t.Failed > 0 {
				rs = strings.TrimSpace(fmt.Sprintf("%s (%d of %d runs failed)", rs, t.Failed, len(t.Runs)))
			}
			line := fmt.Sprintf("%s  %-6s %8.1f %-17s %6.0f %8.2f %8.2f  %-14s %s", lead, e.name, t.Mbps,
				fmt.Sprintf(" (%.1f-%.1f)", t.MbpsMin, t.MbpsMax), t.Retransmits, t.LatencyP50Ms, t.LatencyP99Ms, pcts(t.PerCoreBusy), rs)
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
}

// tcpGroups are the TCP transfers of both paths (the kernel's order,
// then any only pppfwd made) and their axis labels.
func tcpGroups(r *Report) ([]tcpKey, []string) {
	var keys []tcpKey
	var labels []string
	seen := map[tcpKey]bool{}
	for _, ts := range [][]TCP{r.Kernel.TCP, r.PPPFWD.TCP} {
		for _, t := range ts {
			k := t.key()
			if seen[k] {
				continue
			}
			seen[k] = true
			keys = append(keys, k)
			l := fmt.Sprintf("%s\nx%d", k.direction, k.streams)
			if k.shaped {
				l = "shaped\n" + l
			}
			labels = append(labels, l)
		}
	}
	return keys, labels
}
