package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pppfwd/pppfwd/bench/share"
	"github.com/pppfwd/pppfwd/dataplane"
)

// benchShare is `pppfwd bench share`: bulk TCP through the lab's router
// while busy loops run on the same cores.
func benchShare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench share", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := share.Options{}
	fs.IntVar(&o.Workers, "workers", 1, "router workers")
	polls := fs.String("poll", "adaptive,busy", "workers.poll policies to measure, comma-separated")
	fs.DurationVar(&o.Duration, "duration", 0, "each measurement (default 5s)")
	fs.IntVar(&o.Hogs, "hogs", 0, "busy-loop processes (default one per CPU)")
	asJSON := fs.Bool("json", false, "one JSON line per policy")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd bench share: unexpected arguments %q\n", fs.Args())
		return 2
	}
	for _, p := range strings.Split(*polls, ",") {
		m, err := dataplane.ParsePollMode(strings.TrimSpace(p))
		if err != nil {
			fmt.Fprintf(stderr, "pppfwd: --poll: %v\n", err)
			return 2
		}
		o.Polls = append(o.Polls, m)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "pppfwd bench share: needs root (network namespaces)")
		return 1
	}
	res, err := share.Run(o)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	for _, r := range res {
		if *asJSON {
			_ = enc.Encode(r)
			continue
		}
		fmt.Fprintf(stdout, "poll %-8s TCP %6.1f Mbit/s alone, %6.1f with %d busy loops (%.0f %%); busy loops %.2f CPUs alone, %.2f with the TCP (%.0f %%)\n",
			r.Poll, r.TCPAloneMbps, r.TCPSharedMbps, r.Hogs, 100*r.TCPKept, r.HogAlone, r.HogShared, 100*r.HogKept)
	}
	return 0
}
