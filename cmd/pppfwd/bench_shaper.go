package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pppfwd/pppfwd/bench/shaperbench"
	"github.com/pppfwd/pppfwd/shaper"
)

// shaperReport is `pppfwd bench shaper --json`: the scenario and its result.
type shaperReport struct {
	Bench     string  `json:"bench"`
	Spec      string  `json:"spec"`
	Load      float64 `json:"load"`
	DurationS float64 `json:"duration_s"`
	BulkFlows int     `json:"bulk_flows"`
	BulkSize  int     `json:"bulk_size"`
	// LineBufferMs is the line FIFO (the shaper-off delay's ceiling).
	LineBufferMs float64       `json:"line_buffer_ms"`
	LineBuffer   time.Duration `json:"-"`
	shaperbench.Result
}

// benchShaper is `pppfwd bench shaper`: latency under load on a simulated
// clock, through the real pipeline (default) or the shaper alone.
func benchShaper(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench shaper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rate := fs.String("rate", "900mbit", "shaped rate (tc units: 900mbit, 1gbit, ...)")
	line := fs.String("line", "auto", "line (bottleneck) rate; auto: rate / 0.9 (900mbit -> 1000mbit)")
	lineBuf := fs.Duration("line-buffer", 200*time.Millisecond, "line (modem) FIFO size in time at the line rate: the bufferbloat with the shaper off")
	load := fs.Float64("load", 2, "bulk load as a multiple of the rate")
	dur := fs.Duration("duration", 10*time.Second, "simulated time")
	spec := fs.String("spec", "", "extra tc-cake words for the shaper and the line (e.g. \"pppoe-ptm\", \"target 5ms dual-dsthost\")")
	path := fs.String("path", "pipeline", "pipeline (dataplane over memports) or shaper (FQ-CoDel alone)")
	dir := fs.String("dir", "down", "direction through the pipeline: down (WAN->LAN) or up (LAN->WAN)")
	workers := fs.Int("workers", 1, "dataplane workers (pipeline path)")
	flows := fs.Int("flows", 16, "bulk flows")
	size := fs.Int("size", 1492, "bulk packet size, IP bytes (at most the PPPoE MTU 1492 on the pipeline path)")
	poll := fs.Duration("poll", 0, "worker timer granularity (0: wake exactly at the next release)")
	costPkts := fs.Int("cost-packets", 1<<21, "packets for the ns_per_pkt measurement")
	check := fs.Bool("check", false, "exit 1 unless the goals are met (p99 <= 10 ms, rate error <= 1 %, <= 40 ns/pkt)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench shaper: unexpected arguments %q\n", fs.Args())
		return 2
	}
	sp, err := shaper.ParseSpec("bandwidth " + *rate + " " + *spec)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: --rate/--spec: %v\n", err)
		return 2
	}
	if sp.Rate == 0 {
		fmt.Fprintln(stderr, "pppfwd: --rate must be above 0")
		return 2
	}
	o := shaperbench.Options{Rate: sp.Rate, Config: sp.Config, Load: *load, Duration: *dur,
		BulkFlows: *flows, BulkSize: *size, Poll: *poll, BenchPackets: *costPkts, LineBuffer: *lineBuf}
	if *line != "auto" {
		ls, err := shaper.ParseSpec("bandwidth " + *line)
		if err != nil || ls.Rate == 0 {
			fmt.Fprintf(stderr, "pppfwd: --line %q: want a rate above 0 (%v)\n", *line, err)
			return 2
		}
		o.LineRate = ls.Rate
	} else {
		o.LineRate = uint64(float64(sp.Rate) / 0.9)
	}
	if *load <= 0 || *dur <= time.Second || *flows < 1 || *workers < 1 || *costPkts < 1 || *lineBuf <= 0 {
		fmt.Fprintln(stderr, "pppfwd: --load, --flows, --workers, --cost-packets, --line-buffer must be > 0 and --duration > 1s")
		return 2
	}
	var po shaperbench.PipelineOptions
	po.Workers = *workers
	switch *dir {
	case "down":
	case "up":
		po.Uplink = true
	default:
		fmt.Fprintf(stderr, "pppfwd: --dir %q: want down or up\n", *dir)
		return 2
	}
	switch *path {
	case "pipeline":
		o.Path = shaperbench.NewPipelinePath(po)
	case "shaper":
		o.Path = shaperbench.ShaperPath
	default:
		fmt.Fprintf(stderr, "pppfwd: --path %q: want pipeline or shaper\n", *path)
		return 2
	}
	res, err := shaperbench.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	rep := shaperReport{Bench: "shaper", Spec: strings.TrimSpace(sp.String()), Load: *load,
		DurationS: dur.Seconds(), BulkFlows: *flows, BulkSize: *size,
		LineBufferMs: float64(*lineBuf) / 1e6, LineBuffer: *lineBuf, Result: res}
	if *asJSON {
		if err := printJSON(stdout, rep); err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
	} else {
		printShaperTable(stdout, &rep)
	}
	if *check && !res.GoalsMet {
		fmt.Fprintln(stderr, "pppfwd bench shaper: goals not met")
		return 1
	}
	return 0
}

func printShaperTable(w io.Writer, r *shaperReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	via := r.Path
	if r.Pipeline {
		via = fmt.Sprintf("pipeline (dataplane, %s, %d worker(s))", r.Direction, r.Workers)
	}
	fmt.Fprintf(tw, "path\t%s\n", via)
	fmt.Fprintf(tw, "shaper\t%s\n", r.Spec)
	fmt.Fprintf(tw, "line\t%.1f Mbit/s, %v FIFO\n", r.LineMbit, r.LineBuffer)
	fmt.Fprintf(tw, "load\t%.2f x rate, %d bulk flows of %d B + ping, %.1f s simulated\n", r.Load, r.BulkFlows, r.BulkSize, r.DurationS)
	fmt.Fprintf(tw, "\tshaper on\tshaper off\tgoal\n")
	fmt.Fprintf(tw, "p50 added delay\t%.3f ms\t%.3f ms\t\n", r.P50AddedDelayMs, r.P50AddedOffMs)
	fmt.Fprintf(tw, "p99 added delay\t%.3f ms\t%.3f ms\t<= %d ms\n", r.P99AddedDelayMs, r.P99AddedDelayMsOff, shaperbench.GoalP99AddedDelayMs)
	fmt.Fprintf(tw, "ping loss\t%.2f %%\t%.2f %%\t\n", r.PingLossPct, r.PingLossOff)
	fmt.Fprintf(tw, "shaped rate\t%.3f Mbit/s (error %.4f %%)\t\t<= %d %%\n", r.ShapedMbit, r.RateErrorPct, shaperbench.GoalRateErrorPct)
	fmt.Fprintf(tw, "shaper cost\t%.1f ns/pkt (cpu %.1f)\t\t<= %d ns\n", r.NsPerPkt, r.CPUNsPerPkt, shaperbench.GoalNsPerPkt)
	fmt.Fprintf(tw, "bulk flows\t%.3f-%.3f Mbit/s each (Jain's index %.4f)\t\t\n", r.FlowMbitMin, r.FlowMbitMax, r.JainIndex)
	fmt.Fprintf(tw, "packets out / dropped\t%d / %d (fq_codel %d)\t\t\n", r.Frames, r.Lost, r.ShaperDrops)
	var names []string
	for k := range r.Drops {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(tw, "engine drop %s\t%d\t\t\n", k, r.Drops[k])
	}
	fmt.Fprintf(tw, "goals met\t%v\t\t\n", r.GoalsMet)
	fmt.Fprintf(tw, "wall time\t%.2f s\t\t\n", r.WallSec)
	tw.Flush()
}
