package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/pppfwd/pppfwd/bench/natbench"
)

func benchNAT(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd bench nat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	entries := fs.Int("entries", 65536, "conntrack table size (slots): e.g. 1000, 65536, 1000000")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	res, err := natbench.Run(*entries)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	return emit(stdout, stderr, *asJSON, res, func(tw io.Writer) {
		fmt.Fprintf(tw, "entries\t%d\nflows\t%d\nlookup ns\t%.1f\noutbound ns\t%.1f\ninsert ns\t%.1f\nexpire ns\t%.1f\nbytes/entry\t%.1f\ntable bytes\t%d\n",
			res.Entries, res.Flows, res.LookupNs, res.OutboundNs, res.InsertNs, res.ExpireNs, res.BytesPerEntry, res.TableBytes)
	})
}
