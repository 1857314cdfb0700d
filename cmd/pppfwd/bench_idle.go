package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pppfwd/pppfwd/bench/idle"
	"github.com/pppfwd/pppfwd/dataplane"
)

// benchIdle is `pppfwd bench idle`: the lab's router with its session up
// and no traffic, for each worker count asked for.
func benchIdle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench idle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := idle.Options{}
	workers := fs.String("workers", "1,2", "worker counts to measure, comma-separated")
	fs.StringVar(&o.Backend, "backend", "afpacket", "router ports: afpacket or afxdp")
	fs.DurationVar(&o.Duration, "duration", 0, "measured window per worker count (default 60s)")
	fs.DurationVar(&o.StraceFor, "strace", 0, "window for counting system calls with strace after the measured one (default 10s; negative: off)")
	fs.DurationVar(&o.EchoInterval, "echo-interval", 0, "the router's LCP echo interval (default 10s, the client's default)")
	poll := fs.String("poll", "adaptive", "the workers' idle policy: adaptive, busy or block")
	fs.Float64Var(&o.Rate, "rate", 0, "light load instead of none: ping requests per second from the LAN host to the Internet host through the router (the idle goals apply to 0 only)")
	asJSON := fs.Bool("json", false, "one JSON line per worker count")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench idle: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if o.Backend != "afpacket" && o.Backend != "afxdp" {
		fmt.Fprintf(stderr, "pppfwd: --backend %q: want afpacket or afxdp\n", o.Backend)
		return 2
	}
	var perr error
	if o.Poll, perr = dataplane.ParsePollMode(*poll); perr != nil {
		fmt.Fprintf(stderr, "pppfwd: --poll: %v\n", perr)
		return 2
	}
	var counts []int
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "pppfwd: --workers %q: want counts like 1,2\n", *workers)
			return 2
		}
		counts = append(counts, n)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "pppfwd bench idle: needs root (network namespaces)")
		return 1
	}
	enc := json.NewEncoder(stdout)
	rc := 0
	for _, n := range counts {
		o.Workers = n
		r, err := idle.Run(o)
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
		if *asJSON {
			_ = enc.Encode(r)
		} else if r.RatePPS > 0 {
			fmt.Fprintf(stdout, "%s, %d worker(s), poll %s, %.0f s at %.0f pings/s (%d of %d answered): CPU %.2f %% of a core (user %.2f, sys %.2f), %.0f wakeups/s (%.0f voluntary, %.0f involuntary), %.0f syscalls/s %v\n",
				r.Backend, r.Workers, r.Poll, r.Seconds, r.RatePPS, r.Echoes, r.Sent, 100*r.CPUShare, 100*r.UserShare, 100*r.SysShare, r.Wakeups, r.Voluntary, r.Involuntary, r.Syscalls, r.SyscallsTop)
		} else {
			sys := fmt.Sprintf("%.0f syscalls/s %v", r.Syscalls, r.SyscallsTop)
			if r.SyscallsSkipped != "" {
				sys = "syscalls not counted: " + r.SyscallsSkipped
			}
			fmt.Fprintf(stdout, "%s, %d worker(s), poll %s, %.0f s idle: CPU %.2f %% of a core (user %.2f, sys %.2f), %.0f wakeups/s (%.0f voluntary, %.0f involuntary), %s; goal <= %.1f %% and <= %.0f/s: %v\n",
				r.Backend, r.Workers, r.Poll, r.Seconds, 100*r.CPUShare, 100*r.UserShare, 100*r.SysShare, r.Wakeups, r.Voluntary, r.Involuntary, sys,
				100*r.GoalCPUShare, r.GoalWakeups, r.Pass)
		}
		if !r.Pass {
			rc = 1
		}
	}
	return rc
}
