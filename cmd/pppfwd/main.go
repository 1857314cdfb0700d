// Command pppfwd is a userspace PPPoE WAN fast path: it terminates the
// PPPoE session, NATs and shapes both directions on every core.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

const usage = `pppfwd — a multi-core userspace PPPoE WAN fast path

Usage:
  pppfwd run [-config FILE] [-check]  run the router (PPPoE client, NAT, shaper; IPv6 routing with
                                      DHCPv6-PD, RAs and a firewall) on the configured ports;
                                      SIGHUP re-reads FILE and applies new shaper rates live
  pppfwd lab [flags]                  namespace lab: LAN host, pppfwd, a PPPoE ISP; ping and UDP through it,
                                      over IPv4 and IPv6 (root)
  pppfwd bench pipeline [flags]       whole-pipeline benchmark over in-memory ports
  pppfwd bench nat [flags]            NAT conntrack table costs
  pppfwd bench shaper [flags]         FQ-CoDel latency under load through the pipeline
  pppfwd bench io [flags]             pppfwd on afpacket/afxdp over veth vs the kernel's forward + masquerade
  pppfwd help                         this text

Run "pppfwd <command> -h" for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	case "bench":
		return benchMain(args[1:], stdout, stderr)
	case "run":
		return runMain(args[1:], stdout, stderr)
	case "lab":
		return labMain(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "pppfwd: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// emit prints res as one JSON line, or as the table table writes, and
// returns the exit code.
func emit(stdout, stderr io.Writer, asJSON bool, res any, table func(w io.Writer)) int {
	if asJSON {
		if err := printJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	return 0
}
