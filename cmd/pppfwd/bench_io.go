package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/shaper"
)

// benchIO runs `pppfwd bench io`: pppfwd on afpacket/afxdp ports over veth
// against the kernel's forward + masquerade on the same topology.
func benchIO(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench io", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "afpacket", "pppfwd's packet I/O: afpacket or afxdp")
	size := fs.Int("size", 64, "LAN frame size in bytes (64..1500)")
	workers := fs.Int("workers", 1, "pppfwd worker threads")
	dur := fs.Duration("duration", 3*time.Second, "measured window of each measurement")
	warmup := fs.Duration("warmup", 500*time.Millisecond, "load before each window")
	flows := fs.Int("flows", 256, "UDP flows (both directions)")
	rate := fs.Float64("rate", 0, "offered frames/s per direction (0: as fast as the generator goes)")
	shape := fs.String("shape", "bandwidth 100gbit", "shaper of each direction in tc-cake words, or off")
	xdpMode := fs.String("xdp-mode", "generic", "afxdp attach mode: generic, native or auto")
	busyPoll := fs.Bool("busy-poll", false, "afxdp: NAPI busy polling on pppfwd's sockets (native mode only; the JSON's busy_poll says whether it was in effect)")
	afpTx := fs.String("afpacket-tx", "auto", "TX mode of pppfwd's afpacket ports (--backend afpacket only): ring (mapped TX ring), copy (sendmmsg) or auto (copy on veth)")
	afpRing := fs.String("afpacket-ring", "auto", "RX ring of pppfwd's afpacket ports (--backend afpacket only): auto (frames, blocks under load), frames (TPACKET_V2) or blocks (TPACKET_V3)")
	genCPU := fs.Int("gen-cpu", 0, "CPU of the traffic generator (the forwarder gets the others)")
	noPin := fs.Bool("no-pin", false, "no CPU pinning and no RPS")
	skipKernel := fs.Bool("skip-kernel", false, "measure pppfwd only")
	latency := fs.Int("latency", 0, "probe each side's one-way delay with this many single frames on the idle line, every round (0: no probe)")
	awake := fs.Bool("awake", false, "keep the forwarder's CPUs out of the idle loop during the latency probes (a SCHED_IDLE busy loop on each, both sides): on a VM, takes the host's late wakeup of a halted vCPU out of both tails")
	interleave := fs.Bool("latency-interleave", false, "with --latency: after the rounds, probe the kernel and pppfwd in turn, probe by probe, the kernel forwarding on a second line of its own: a stretch of slow machine time falls on both alike")
	latencyOut := fs.String("latency-out", "", "with --latency: write every probe (io-latency.csv: side, round, probe, delay) and the sides' delay distributions (io-latency.png, .svg) into this directory")
	floor := fs.Bool("floor", false, "also measure a null forwarder (same backend, ports and threads; frames moved unchanged): the I/O floor")
	rounds := fs.Int("rounds", 2, "alternate the kernel, pppfwd (and floor) measurements this many times; the best throughput of each is reported, latency probes are pooled")
	search := fs.Bool("search", true, "when a side loses frames at full load, bisect the offered rate for the highest one within --loss-tolerance")
	lossTol := fs.Float64("loss-tolerance", 0.01, "loss fraction a measurement may have (rate search)")
	poll := fs.String("poll", "adaptive", "pppfwd's workers' idle policy: adaptive, busy or block")
	slice := fs.String("slice", "default", "scheduling slice pppfwd's workers ask of Linux 6.12+ (as the router's workers.slice): default (500us), a duration, or off")
	rtprio := fs.String("rtprio", "default", "realtime priority pppfwd's workers wake with while lightly loaded (as the router's workers.rtprio): default (1), 1..99, or off")
	steerCompare := fs.Bool("steer-compare", false, "also measure pppfwd with WAN frames steered in user space (hash fanout, worker 0 steers them all) against the WAN port's owner program (afpacket, --workers 2 or more)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench io: unexpected arguments %v\n", fs.Args())
		return 2
	}
	if *latencyOut != "" && *latency <= 0 {
		fmt.Fprintf(stderr, "pppfwd bench io: --latency-out needs --latency\n")
		return 2
	}
	if *interleave && (*latency <= 0 || *skipKernel) {
		fmt.Fprintf(stderr, "pppfwd bench io: --latency-interleave needs --latency and the kernel's side\n")
		return 2
	}
	o := iobench.Options{Backend: *backend, Size: *size, Workers: *workers, Flows: *flows,
		Duration: *dur, Warmup: *warmup, Rate: *rate, XDPMode: *xdpMode, BusyPoll: *busyPoll, GenCPU: *genCPU,
		NoPin: *noPin, SkipKernel: *skipKernel, Floor: *floor, Latency: *latency, Awake: *awake, Search: *search, LossTolerance: *lossTol, Rounds: *rounds,
		SteerCompare: *steerCompare, Interleave: *interleave}
	var perr error
	if o.Poll, perr = dataplane.ParsePollMode(*poll); perr != nil {
		fmt.Fprintf(stderr, "pppfwd: --poll: %v\n", perr)
		return 2
	}
	switch *slice {
	case "default":
	case "off":
		o.Slice = -1
	default:
		d, err := time.ParseDuration(*slice)
		if err != nil || d <= 0 {
			fmt.Fprintf(stderr, "pppfwd: --slice %q: a duration, default or off\n", *slice)
			return 2
		}
		o.Slice = d
	}
	if *rtprio != "default" {
		n, err := dataplane.ParseRTPrio(*rtprio)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: --rtprio %q: %d..%d, default or off\n", *rtprio, pin.MinRTPrio, pin.MaxRTPrio)
			return 2
		}
		o.RTPrio = n
	}
	var err error
	if o.AFPacketTx, err = afpacket.ParseTxMode(*afpTx); err != nil {
		fmt.Fprintf(stderr, "pppfwd: --afpacket-tx: %v\n", err)
		return 2
	}
	if o.AFPacketRing, err = afpacket.ParseRxRing(*afpRing); err != nil {
		fmt.Fprintf(stderr, "pppfwd: --afpacket-ring: %v\n", err)
		return 2
	}
	if o.AFPacketRing != afpacket.RxAuto && o.Backend != "afpacket" {
		fmt.Fprintf(stderr, "pppfwd: --afpacket-ring is for --backend afpacket\n")
		return 2
	}
	if o.AFPacketTx != afpacket.TxAuto && o.Backend != "afpacket" {
		fmt.Fprintf(stderr, "pppfwd: --afpacket-tx is for --backend afpacket\n")
		return 2
	}
	if *shape == "off" {
		o.ShapeOff = true
	} else {
		sp, err := shaper.ParseSpec(*shape)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: --shape: %v\n", err)
			return 2
		}
		o.Shape = sp
	}
	res, err := iobench.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: bench io: %v\n", err)
		return 1
	}
	// A failed --latency-out fails the command, but the figures are
	// still printed.
	code := 0
	if *latencyOut != "" {
		files, err := writeLatencyOut(res, *latencyOut)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: bench io: --latency-out: %v\n", err)
			code = 1
		}
		for _, f := range files {
			fmt.Fprintf(stderr, "wrote %s\n", f)
		}
	}
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	busy := ""
	if res.BusyPoll {
		busy = ", busy polling"
	}
	fmt.Fprintf(tw, "backend\t%s %s%s%s\nsize\t%d\nworkers\t%d\nflows\t%d\nshaper\t%s\n", res.Backend, res.XDPMode, res.TxMode, busy, res.Size, res.Workers, res.Flows, res.Shaper)
	if res.Steer != "" {
		fmt.Fprintf(tw, "steering\t%s (WAN port: %s)\n", res.Steer, res.WANFanout)
	}
	printSide := func(name string, s *iobench.Side) {
		fmt.Fprintf(tw, "%s pps\t%.0f (up %.0f, down %.0f; offered %.0f; loss %.2f%%; %s-bound; fwd CPU busy %.0f%%, %.0f ns/pkt)\n",
			name, s.PPS, s.UpPPS, s.DownPPS, s.OfferedPPS, 100*s.Loss, s.Bound, 100*s.FwdCPUBusy, s.FwdCPUNsPerPkt)
		if l := s.Latency; l != nil {
			fmt.Fprintf(tw, "%s latency\tp50 %.0f us, p90 %.0f us, p99 %.0f us, max %.0f us (%d probes over %d rounds, %d lost)\n",
				name, l.P50Us, l.P90Us, l.P99Us, l.MaxUs, l.Probes, l.Rounds, l.Lost)
			if w := l.Workers; w != nil {
				fmt.Fprintf(tw, "%s workers while probing\t%d wakeups, %d exits from the realtime class\n", name, w.Wakeups, w.RealtimeExits)
			}
		}
		if m := s.AtMaxLoad; m != nil {
			fmt.Fprintf(tw, "%s at full load\t%.0f (offered %.0f; loss %.2f%%)\n", name, m.PPS, m.OfferedPPS, 100*m.Loss)
		}
	}
	printSide("pppfwd", &res.PPPFWD)
	if res.Kernel != nil {
		printSide("kernel", res.Kernel)
		fmt.Fprintf(tw, "ratio\t%.2f (at full load %.2f)\n", res.Ratio, res.RatioAtMaxLoad)
		if res.PPPFWD.Latency != nil && res.Kernel.Latency != nil {
			fmt.Fprintf(tw, "latency pppfwd - kernel\tp50 %+.0f us, p99 %+.0f us (all rounds pooled)\n", res.LatencyP50DeltaUs, res.LatencyP99DeltaUs)
		}
		if il := res.Interleaved; il != nil {
			fmt.Fprintf(tw, "latency in turn\tkernel p50 %.0f us, p99 %.0f us; pppfwd p50 %.0f us, p99 %.0f us; pppfwd - kernel p50 %+.0f us, p99 %+.0f us (%d probes a side, %d and %d lost)\n",
				il.Kernel.P50Us, il.Kernel.P99Us, il.PPPFWD.P50Us, il.PPPFWD.P99Us, il.P50DeltaUs, il.P99DeltaUs, il.PPPFWD.Probes, il.Kernel.Lost, il.PPPFWD.Lost)
		}
		if res.Floor != nil && res.Floor.Latency != nil && res.Kernel.Latency != nil {
			fmt.Fprintf(tw, "latency floor - kernel\tp50 %+.0f us, p99 %+.0f us (the backend's I/O alone)\n", res.FloorLatencyP50DeltaUs, res.FloorLatencyP99DeltaUs)
		}
	}
	if res.Floor != nil {
		printSide("floor", res.Floor)
		if res.Kernel != nil {
			fmt.Fprintf(tw, "floor ratio\t%.2f\n", res.FloorRatio)
		}
	}
	if res.UserSteer != nil {
		printSide("user-steered", res.UserSteer)
		fmt.Fprintf(tw, "steer ratio\t%.2f (owner program over user-space steering)\n", res.SteerRatio)
	}
	for _, w := range res.PerWorker {
		fmt.Fprintf(tw, "worker %d\t%d pkts, %.1f cpu ns/pkt, %d steered, %d redirected, %d WAN handed over\n", w.Worker, w.Packets, w.NsPerPkt, w.Steered, w.Redirects, w.WANRedirects)
	}
	for _, w := range res.UserSteerPerWorker {
		fmt.Fprintf(tw, "user-steered worker %d\t%d pkts, %.1f cpu ns/pkt, %d steered, %d redirected\n", w.Worker, w.Packets, w.NsPerPkt, w.Steered, w.Redirects)
	}
	for _, w := range res.FloorPerWorker {
		fmt.Fprintf(tw, "floor thread %d\t%d pkts, %.1f cpu ns/pkt\n", w.Worker, w.Packets, w.NsPerPkt)
	}
	for _, m := range []map[string]uint64{res.Drops, res.PortDrops} {
		var names []string
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(tw, "drop %s\t%d\n", k, m[k])
		}
	}
	for i, r := range res.Rounds {
		fmt.Fprintf(tw, "round %d\tkernel %.0f pps (generator CPU share %.2f), pppfwd %.0f pps (%.2f)",
			i, r.KernelPPS, r.KernelGenShare, r.PPPFWDPPS, r.PPPFWDGenShare)
		if res.Floor != nil {
			fmt.Fprintf(tw, ", floor %.0f pps (%.2f)", r.FloorPPS, r.FloorGenShare)
		}
		if res.UserSteer != nil {
			fmt.Fprintf(tw, ", user-steered %.0f pps (%.2f)", r.UserSteerPPS, r.UserSteerGenShare)
		}
		if l := r.KernelLatency; l != nil {
			fmt.Fprintf(tw, "; kernel p50/p99 %.0f/%.0f us", l.P50Us, l.P99Us)
		}
		if l := r.PPPFWDLatency; l != nil {
			fmt.Fprintf(tw, "; pppfwd p50/p99 %.0f/%.0f us", l.P50Us, l.P99Us)
		}
		if l := r.FloorLatency; l != nil {
			fmt.Fprintf(tw, "; floor p50/p99 %.0f/%.0f us", l.P50Us, l.P99Us)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "fairness\t%s\n", res.Fairness)
	tw.Flush()
	return code
}

// writeLatencyOut writes res's latency probes into dir (made if missing):
// io-latency.csv and the delay distribution plots; it returns the files
// written, also when it fails part-way.
func writeLatencyOut(res *iobench.Result, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := filepath.Join(dir, "io-latency.csv")
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := res.WriteLatencyCSV(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	plots, err := iobench.PlotLatency(res, dir)
	return append([]string{name}, plots...), err
}
