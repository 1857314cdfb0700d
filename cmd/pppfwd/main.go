package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"text/tabwriter"
)

const usage = `pppfwd — a multi-core userspace PPPoE WAN fast path

Usage:
  pppfwd run [-c FILE] [-check [-v]]  run the router (PPPoE client, NAT, shaper; IPv6 routing with
                                      DHCPv6-PD, RAs and a firewall) on the configured ports;
                                      -c (or -config) FILE, default /etc/pppfwd.conf;
                                      -check: check the file and the interfaces, then exit;
                                      -v: print the effective configuration (secrets masked);
                                      SIGHUP re-reads FILE and applies new shaper rates live
  pppfwd status [-json|-watch]        a running router's session and per-worker figures (pps, Mbit/s,
                                      CPU, drops, NAT, shaper), from its control socket (-s SOCKET)
  pppfwd reconnect                    end the session with PADT and bring a new one up now
  pppfwd reload                       as SIGHUP: re-read the file; prints what was applied and what
                                      needs a restart
  pppfwd lab [flags]                  namespace lab: LAN host, pppfwd, a PPPoE ISP; ping and UDP through it,
                                      over IPv4 and IPv6 (root)
  pppfwd lab --config FILE            try a router configuration against the lab's AC (its VLAN, login,
                                      MTU, shaping); prints the router's log and pppfwd status (root)
  pppfwd bench pipeline [flags]       whole-pipeline benchmark over in-memory ports
  pppfwd bench nat [flags]            NAT conntrack table costs
  pppfwd bench shaper [flags]         FQ-CoDel latency under load through the pipeline
  pppfwd bench io [flags]             pppfwd on afpacket/afxdp over veth vs the kernel's forward + masquerade
                                      (the I/O floor of plain forwarding; no PPPoE on the kernel side)
  pppfwd bench scale [flags]          the pipeline swept over workers, flows, sizes; a per-core model
  pppfwd bench ab [flags]             pppfwd against the kernel's own PPPoE path (pppd, nftables, cake)
                                      in the lab VM; --dry-run prints both sides' configs for a real box
  pppfwd bench idle [flags]           an idle router's CPU share, wakeups and system calls
  pppfwd bench share [flags]          bulk TCP through the router while busy loops share its CPUs
  pppfwd bench soak [flags]           the lab under load for a while: RSS, fds, NAT entries stay flat
  pppfwd version                      the version (also --version)
  pppfwd help                         this text

Run "pppfwd <command> -h" for a command's flags.

Exit status: 0 clean (a signal ended the router, or -check found nothing wrong),
1 runtime failure (a port, the session or the system failed), 2 bad configuration
or usage (the file, its keys, the interfaces it names, or the command line).
`

// version is the release, set at build time with
// -ldflags "-X main.version=v1.2.3"; without it the module's version
// and the VCS revision the binary was built from are shown.
var version = ""

// versionString returns "pppfwd VERSION (REVISION[, modified]) GO OS/ARCH".
func versionString() string {
	v, rev, modified := version, "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	out := "pppfwd " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified {
			rev += ", modified"
		}
		out += " (" + rev + ")"
	}
	return out + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes (usage documents them).
const (
	exitOK      = 0
	exitFailure = 1 // runtime failure
	exitUsage   = 2 // bad configuration or usage
)

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "pppfwd version: unexpected argument %q\n", args[1])
			return exitUsage
		}
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case "bench":
		return helpExitsZero(benchMain, args[1:], stdout, stderr)
	case "run":
		return runMain(args[1:], stdout, stderr)
	case "lab":
		return helpExitsZero(labMain, args[1:], stdout, stderr)
	case "status", "reconnect", "reload":
		cmd := args[0]
		return helpExitsZero(func(a []string, o, e io.Writer) int { return ctlMain(cmd, a, o, e) }, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "pppfwd: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

// helpExitsZero runs a command whose flag parsing treats -h as an error
// (exit 2, usage on stderr): asked for help, its usage goes to stdout
// and the exit status is 0, as for "pppfwd run -h".
func helpExitsZero(cmd func(args []string, stdout, stderr io.Writer) int, args []string, stdout, stderr io.Writer) int {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			cmd(args, stdout, stdout)
			return exitOK
		}
	}
	return cmd(args, stdout, stderr)
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
