package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pppfwd/pppfwd/bench/soak"
)

// benchSoak is `pppfwd bench soak`: the namespace lab at 80 % of its
// measured capacity for a long time, sampled for growth.
func benchSoak(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := soak.Options{}
	fs.DurationVar(&o.Duration, "duration", 0, "paced run after the capacity probe (default 2m)")
	fs.IntVar(&o.Workers, "workers", 2, "router workers")
	fs.StringVar(&o.Backend, "backend", "afpacket", "router ports: afpacket or afxdp")
	fs.DurationVar(&o.Interval, "interval", 0, "time between samples (default 5s)")
	fs.Float64Var(&o.Load, "load", 0.8, "share of the measured capacity to offer")
	asJSON := fs.Bool("json", false, "one JSON line per sample, then a summary line")
	verbose := fs.Bool("v", false, "log the router and the PPPoE session to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench soak: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.Backend != "afpacket" && o.Backend != "afxdp" {
		fmt.Fprintf(stderr, "pppfwd: --backend %q: want afpacket or afxdp\n", o.Backend)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "pppfwd bench soak: needs root (network namespaces)")
		return 1
	}
	enc := json.NewEncoder(stdout)
	o.OnSample = func(s soak.Sample) {
		if *asJSON {
			_ = enc.Encode(s)
			return
		}
		fmt.Fprintf(stdout, "t=%4.0fs rss %6.1f MiB goroutines %4d fds %4d nat %6d echoes/s %7.0f sent %9d lost %6d late %6d flows %7d tcp %5d/%d state %s drops %v\n",
			s.T, float64(s.RSSBytes)/(1<<20), s.Goroutines, s.FDs, s.NATEntries, s.RatePPS, s.Sent, s.Lost, s.Late,
			s.FlowsOpen, s.TCPConns, s.TCPFailed, s.State, s.Drops)
	}
	o.Logf = func(format string, args ...any) {
		if *verbose {
			fmt.Fprintf(stderr, format+"\n", args...)
		}
	}
	res, err := soak.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	s := res.Summary
	if *asJSON {
		if err := enc.Encode(s); err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "capacity %.0f echoes/s, target %.0f, achieved %.0f; sent %d, lost %d (%d late; %.5f lost); udp flows %d, tcp %d (%d failed); session stable %v\n",
			s.CapacityPPS, s.TargetPPS, s.AchievedPPS, s.Sent, s.Lost, s.Late, s.LossRatio, s.FlowsOpened, s.TCPConns, s.TCPFailed, s.SessionStable)
		for _, tr := range s.Trends {
			if tr.Skipped {
				fmt.Fprintf(stdout, "%-12s not measured\n", tr.Name)
				continue
			}
			fmt.Fprintf(stdout, "%-12s slope %.3f/s growth %.1f (limit %.1f) mean %.1f max %.1f flat %v\n",
				tr.Name, tr.Slope, tr.Growth, tr.Limit, tr.Mean, tr.Max, tr.Flat)
		}
		fmt.Fprintf(stdout, "verdict: %s\n", s.Verdict)
	}
	if !s.Flat {
		return 1
	}
	return 0
}
