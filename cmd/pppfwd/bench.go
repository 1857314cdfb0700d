package main

import (
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/bench/scale"
	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/shaper"
)

const benchUsage = `Usage: pppfwd bench <scenario> [flags]

Scenarios:
  pipeline   the whole dataplane over in-memory ports (steering, PPPoE, NAT, MSS clamp, shaper); --stages: per-stage costs
  scale      the pipeline swept over workers, flows, sizes and steering: CSV, plots, a per-core model
  shaper     FQ-CoDel latency under load (bulk at 2x the rate plus a sparse ping) through the pipeline
  nat        the NAT44 conntrack table: lookup, insert, expiry cost and bytes per entry
  io         pppfwd on afpacket/afxdp over veth against the kernel's forward + masquerade
  soak       the namespace lab at 80 % of its capacity for a long time: RSS, goroutines, fds, NAT trends
  idle       the namespace lab's router, session up, no traffic: CPU share, wakeups and system calls per second
  share      bulk TCP through the lab's router while busy loops run on the same cores: what each keeps
  ab         pppfwd against the in-kernel PPPoE router path: live (--where vm or host) or --dry-run configurations
`

func benchMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return 2
	}
	switch args[0] {
	case "pipeline":
		return benchPipeline(args[1:], stdout, stderr)
	case "scale":
		return benchScale(args[1:], stdout, stderr)
	case "io":
		return benchIO(args[1:], stdout, stderr)
	case "nat":
		return benchNAT(args[1:], stdout, stderr)
	case "shaper":
		return benchShaper(args[1:], stdout, stderr)
	case "soak":
		return benchSoak(args[1:], stdout, stderr)
	case "idle":
		return benchIdle(args[1:], stdout, stderr)
	case "share":
		return benchShare(args[1:], stdout, stderr)
	case "ab":
		return benchAB(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, benchUsage)
		return 0
	}
	fmt.Fprintf(stderr, "pppfwd bench: unknown scenario %q\n\n%s", args[0], benchUsage)
	return 2
}

func benchPipeline(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench pipeline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.String("workers", "1", "worker threads; a comma-separated list (e.g. 1,2) runs each count in paired rounds and reports the speedup over 1 worker")
	rounds := fs.Int("rounds", 0, "rounds of runs, each count once per round, every other round backwards; figures are the medians (default 1, or 5 with a list of worker counts)")
	flows := fs.Int("flows", 10000, "UDP flows (both directions)")
	size := fs.String("size", "64", "LAN frame size: 64, 1500, any 64..1506, or imix")
	dur := fs.Duration("duration", 5*time.Second, "measured window")
	shape := fs.String("shape", "bandwidth 100gbit", "shaper of each direction in tc-cake words (e.g. \"bandwidth 900mbit pppoe-ptm\"), or off")
	pinCPU := fs.Bool("pin", true, "pin workers to CPUs")
	steer := fs.String("steer", "local", "where WAN frames are steered: local (each worker its own WAN queue, frames replayed on their owner's), inline (worker 0 steers all, replayed on queue 0) or thread (a steering thread)")
	batch := fs.Int("batch", 64, "frames per batch (ports, rings, stages)")
	ipv6 := fs.Bool("ipv6", false, "IPv6 flows (routed through the firewall) instead of IPv4 (NAT)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	prof := fs.String("cpuprofile", "", "write a pprof CPU profile to this file")
	stages := fs.Bool("stages", false, "sample per-stage costs (ns/pkt for steering, decap and checks, NAT lookup and insert, forwarding, shaper enqueue/dequeue, encap, port bookkeeping)")
	stageEvery := fs.Int("stage-every", 256, "with --stages, sample one step in this many (a power of two)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	shift, err := stageShift(*stageEvery)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 2
	}
	ws, err := scale.ParseInts(*workers, 1, 1024)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: --workers: %v\n", err)
		return 2
	}
	if *rounds < 0 || *rounds > 1000 {
		fmt.Fprintf(stderr, "pppfwd: --rounds %d: want 1..1000\n", *rounds)
		return 2
	}
	if *rounds == 0 {
		*rounds = 1
		if len(ws) > 1 {
			*rounds = 5
		}
	}
	if *prof != "" {
		stop, err := startProfile(*prof)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
		defer stop()
	}
	o := pipeline.Options{Workers: ws[0], Flows: *flows, Size: *size, Duration: *dur, Pin: *pinCPU, Batch: *batch, IPv6: *ipv6,
		Stages: *stages, StageShift: shift}
	if *shape != "off" {
		sp, err := shaper.ParseSpec(*shape)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: --shape: %v\n", err)
			return 2
		}
		o.Shape = sp
	}
	switch *steer {
	case "inline":
		o.Steer = dataplane.SteerInline
	case "thread":
		o.Steer = dataplane.SteerThread
	case "local":
		o.Steer = dataplane.SteerLocal
	default:
		fmt.Fprintf(stderr, "pppfwd: --steer %q: want local, inline or thread\n", *steer)
		return 2
	}
	if len(ws) > 1 || *rounds > 1 {
		return benchPipelineRounds(o, ws, *rounds, *asJSON, stdout, stderr)
	}
	res, err := pipeline.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	return emit(stdout, stderr, *asJSON, res, func(tw io.Writer) {
		fmt.Fprintf(tw, "workers\t%d\nflows\t%d\nsize\t%s\nsteer\t%s\nshaper\t%v\nipv6\t%v\n", res.Workers, res.Flows, res.Size, res.Steer, res.Shaper, res.IPv6)
		fmt.Fprintf(tw, "packets\t%d (LAN->WAN %d, WAN->LAN %d)\n", res.Packets, res.LANToWAN, res.WANToLAN)
		fmt.Fprintf(tw, "Mpps (wall)\t%.3f\ncpu ns/pkt\t%.1f\nsteer ns/pkt\t%.1f\nallocs/pkt\t%.4f\n", res.Mpps, res.CPUNsPerPkt, res.SteerNsPerPkt, res.AllocsPerPkt)
		for _, w := range res.PerWorker {
			fmt.Fprintf(tw, "worker %d\t%d pkts, %.1f cpu ns/pkt, %d steered, %d redirected, %d WAN handed over\n", w.Worker, w.Packets, w.NsPerPkt, w.Steered, w.Redirects, w.WANRedirects)
		}
		if st := res.Stages; st != nil {
			fmt.Fprintf(tw, "stages\tone step in %d sampled: %d steps, %d packets, %.1f ns/pkt in all, %.2fx the run's cpu ns/pkt (clock read %d ns, taken off)\n", st.Every, st.SampledSteps, st.SampledPackets, st.NsPerPkt, st.Inflation, st.ClockReadNs)
			for _, s := range st.PerStage {
				fmt.Fprintf(tw, "stage %s\t%.1f ns/pkt scaled to the run (%.1f%%); sampled %.1f ns/pkt, %d events, %.1f ns/event\n", s.Stage, s.NsPerPktScaled, 100*s.Share, s.NsPerPkt, s.Events, s.NsPerEvent)
			}
			fmt.Fprintf(tw, "sampling cost\t%.3f Mpps sampled, %.3f Mpps paused (alternating slices): %+.2f %%\n", st.MppsSampling, st.MppsPaused, 100*st.Perturbation)
			if st.NATInserts > 0 {
				fmt.Fprintf(tw, "nat insert\t%.1f ns each (%d while priming)\n", st.NATInsertNs, st.NATInserts)
			}
		}
		names := make([]string, 0, len(res.Drops))
		for k := range res.Drops {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(tw, "drop %s\t%d\n", k, res.Drops[k])
		}
	})
}

// benchPipelineRounds is `bench pipeline` with several worker counts or
// rounds: o's measurement for each count, round after round (bench
// scale's sweep over one configuration), each count's median run, and
// each count's speedup as the median of its rounds' ratios to the
// 1-worker run of the same round.
func benchPipelineRounds(o pipeline.Options, workers []int, rounds int, asJSON bool, stdout, stderr io.Writer) int {
	pts, err := scale.Sweep(scale.Options{Workers: workers, Flows: []int{o.Flows}, Sizes: []string{o.Size}, Steer: []dataplane.SteerMode{o.Steer},
		Duration: o.Duration, Repeat: rounds, Shape: o.Shape, Pin: o.Pin, Batch: o.Batch, IPv6: o.IPv6,
		Stages: o.Stages, StageShift: o.StageShift, Progress: stderr})
	rep := &scale.Report{Bench: "pipeline", Machine: scale.ThisMachine(0), DurationSec: o.Duration.Seconds(), Repeat: rounds, Points: pts}
	code := 0
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench pipeline: %v\n", err)
		code = 1
	}
	if c := emit(stdout, stderr, asJSON, rep, func(tw io.Writer) { scale.WriteTable(tw, rep) }); c != 0 {
		return c
	}
	return code
}

// stageShift turns --stage-every (one step in every N sampled, N a power
// of two) into the engine's sampling shift.
func stageShift(every int) (int, error) {
	if every < 1 || every&(every-1) != 0 {
		return 0, fmt.Errorf("--stage-every %d: want a power of two", every)
	}
	return bits.TrailingZeros(uint(every)), nil
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
