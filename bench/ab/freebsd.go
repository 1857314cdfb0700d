package ab

import (
	"fmt"
	"strings"

	"github.com/pppfwd/pppfwd/shaper"
)

// The FreeBSD kernel path's names: mpd5's pid file and the ipfw rules,
// pipes, schedulers and queues of its shaper (1: upload, 2: download).
const (
	mpdPidFile = "/var/run/pppfwd-ab-mpd5.pid"
	ipfwRuleUp = 10100
	ipfwRuleDn = 10200
)

// FreeBSDKernel returns the files of the A/B's FreeBSD kernel path:
// mpd5's mpd.conf (ng_pppoe client on p.WAN; it holds the password),
// pf.conf (NAT on ng0, stateful default deny inbound on it), with
// shaping dummynet.sh (FQ-CoDel schedulers on ng0 in and out at exactly
// the configured bit/s), sysctl.conf and loader.conf (the netisr
// settings: deferred dispatch, one bound thread per CPU), and run-ab.sh,
// which starts either side.
func FreeBSDKernel(p Params) ([]File, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Shape.On() {
		for _, r := range []uint64{p.Shape.Up, p.Shape.Down} {
			if r > MaxDummynetRate {
				return nil, fmt.Errorf("%w %d bit/s: allowed: up to %d bit/s (ipfw reads bw into a C int)", ErrDummynetRate, r, MaxDummynetRate)
			}
		}
	}
	files := []File{
		{Path: "mpd.conf", Mode: secretMode, Body: mpdConf(p)},
		{Path: "pf.conf", Mode: textMode, Body: pfConf(p)},
	}
	if p.Shape.On() {
		files = append(files, File{Path: "dummynet.sh", Mode: scriptMode, Body: dummynetScript(p)})
	}
	files = append(files,
		File{Path: "sysctl.conf", Mode: textMode, Body: freebsdSysctl(p)},
		File{Path: "loader.conf", Mode: textMode, Body: freebsdLoader(p)},
		File{Path: "run-ab.sh", Mode: scriptMode, Body: freebsdRun(p)},
	)
	return files, nil
}

func mpdConf(p Params) string {
	var b strings.Builder
	header(&b, p, "mpd.conf: mpd5's configuration on the FreeBSD kernel path (mpd5 -d DIR -f mpd.conf; run-ab.sh kernel does).")
	b.WriteString("# It holds the PPPoE password: keep it mode 600. mpd5's first bundle is ng0.\n")
	b.WriteString("default:\n\tload pppfwd_ab\n\n")
	b.WriteString("pppfwd_ab:\n")
	b.WriteString("\tcreate bundle static B1\n")
	b.WriteString("\tset iface route default\n")
	b.WriteString("\tset iface disable on-demand\n")
	b.WriteString("\tset iface idle 0\n")
	fmt.Fprintf(&b, "\t# MSS clamping to the session's MTU (%d), as pppfwd does\n", p.MTU)
	b.WriteString("\tset iface enable tcpmssfix\n")
	b.WriteString("\tset ipcp ranges 0.0.0.0/0 0.0.0.0/0\n")
	b.WriteString("\tset ipcp no vjcomp\n\n")
	b.WriteString("\tcreate link static L1 pppoe\n")
	b.WriteString("\tset link action bundle B1\n")
	b.WriteString("\t# redial forever, as pppd's persist maxfail 0\n")
	b.WriteString("\tset link max-redial 0\n")
	fmt.Fprintf(&b, "\tset link mtu %d\n", p.MTU)
	fmt.Fprintf(&b, "\tset link mru %d\n", p.MTU)
	fmt.Fprintf(&b, "\t# LCP echo every %d s, down after %d s without a reply (pppfwd: %d unanswered)\n", echoInterval, echoInterval*echoFailures, echoFailures)
	fmt.Fprintf(&b, "\tset link keep-alive %d %d\n", echoInterval, echoInterval*echoFailures)
	fmt.Fprintf(&b, "\tset auth authname %s\n", quote(p.User))
	fmt.Fprintf(&b, "\tset auth password %s\n", quote(p.Password))
	fmt.Fprintf(&b, "\tset pppoe iface %s\n", p.WAN)
	fmt.Fprintf(&b, "\tset pppoe service %s\n", quote(p.Service))
	if p.MTU > DefaultMTU {
		fmt.Fprintf(&b, "\t# RFC 4638: %s's MTU is %d (run-ab.sh sets it)\n", p.WAN, p.MTU+8)
		fmt.Fprintf(&b, "\tset pppoe max-payload %d\n", p.MTU)
	}
	b.WriteString("\topen\n")
	return b.String()
}

func pfConf(p Params) string {
	var b strings.Builder
	header(&b, p, "pf.conf: the FreeBSD kernel path's NAT and firewall (pfctl -f pf.conf; run-ab.sh kernel does).")
	fmt.Fprintf(&b, "# NAT and a router's stateful default deny inbound on ng0, the PPPoE session mpd5 runs on %s\n", p.WAN)
	fmt.Fprintf(&b, "# (pf sees only PPPoE frames on %s, no IP: no rule names it).\n", p.WAN)
	fmt.Fprintf(&b, "wan_if = \"%s\"\n", ngIface)
	fmt.Fprintf(&b, "lan_if = \"%s\"\n", p.LAN)
	fmt.Fprintf(&b, "lan_net = \"%s\"\n\n", p.LANNet)
	b.WriteString("set skip on lo0\n")
	b.WriteString("set block-policy drop\n\n")
	b.WriteString("nat on $wan_if inet from $lan_net to any -> ($wan_if)\n\n")
	b.WriteString("# Inbound on the session only what belongs to a state (replies, their ICMP errors).\n")
	b.WriteString("block drop in on $wan_if all\n")
	b.WriteString("pass in on $lan_if inet from $lan_net to any keep state\n")
	b.WriteString("pass out on $wan_if inet all keep state\n")
	b.WriteString("pass out on $lan_if inet all keep state\n")
	return b.String()
}

// dnRate writes bit/s as ipfw's bw reads it back exactly: in Mbit/s or
// Kbit/s when the rate is a whole number of them, else in bit/s (ipfw's
// K and M are 10^3 and 10^6; bit/s, not B or bytes, keeps it in bits).
func dnRate(bps uint64) string {
	switch {
	case bps%1e6 == 0:
		return fmt.Sprintf("%dMbit/s", bps/1e6)
	case bps%1e3 == 0:
		return fmt.Sprintf("%dKbit/s", bps/1e3)
	}
	return fmt.Sprintf("%dbit/s", bps)
}

func dummynetScript(p Params) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	header(&b, p, "dummynet.sh: the FreeBSD kernel path's shaper (run-ab.sh kernel runs it after loading ipfw and dummynet).")
	fmt.Fprintf(&b, "# FQ-CoDel on ng0: upload %d bit/s (pipe 1, out), download %d bit/s (pipe 2, in),\n", p.Shape.Up, p.Shape.Down)
	b.WriteString("# exactly the configured rates; per-flow FQ-CoDel with pppfwd's parameters.\n")
	for _, l := range dummynetOverheadNote(p) {
		b.WriteString("# " + l + "\n")
	}
	b.WriteString("set -eu\n\n")
	for _, d := range []struct {
		n    int
		rate uint64
		what string
	}{{1, p.Shape.Up, "upload"}, {2, p.Shape.Down, "download"}} {
		fq := fmt.Sprintf("type fq_codel target %dms interval %dms quantum %d limit %d flows %d ecn",
			fqCodel.targetMs, fqCodel.intervalMs, shaper.RateQuantum(d.rate), fqCodel.limit, fqCodel.flows)
		fmt.Fprintf(&b, "# %s\n", d.what)
		fmt.Fprintf(&b, "ipfw pipe %d config bw %s\n", d.n, dnRate(d.rate))
		fmt.Fprintf(&b, "ipfw sched %d config pipe %d %s\n", d.n, d.n, fq)
		fmt.Fprintf(&b, "ipfw queue %d config sched %d\n", d.n, d.n)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "ipfw -q add %d queue 1 ip from any to any out xmit %s\n", ipfwRuleUp, ngIface)
	fmt.Fprintf(&b, "ipfw -q add %d queue 2 ip from any to any in recv %s\n", ipfwRuleDn, ngIface)
	return b.String()
}

// dummynetOverheadNote says how the kernel path's dummynet shaper
// treats the per-packet overhead, which it cannot apply: figures are
// computed from the MTU, the rates and the overhead.
func dummynetOverheadNote(p Params) []string {
	o := p.Shape.Overhead
	if o == (shaper.Overhead{}) {
		return []string{"Per-packet overhead: none configured; cake, fq_codel and pppfwd count the IP packet as dummynet does."}
	}
	wire := o.WireLen(p.MTU)
	more := 100 * float64(wire-p.MTU) / float64(p.MTU)
	return []string{
		"Per-packet overhead: dummynet has none to set (its one knob is the pipe's bw); it counts",
		fmt.Sprintf("each IP packet as it crosses ng0, while the other shapers add %q.", o.String()),
		"It is not approximated here: every path shapes to the same bit/s. For full-size packets",
		fmt.Sprintf("(%d B of IP, %d B with the overhead) this path therefore passes %.2f %% more IP bytes.", p.MTU, wire, more),
		"To approximate the overhead for full-size packets instead, set the pipes' bw to",
		fmt.Sprintf("%dbit/s (upload) and %dbit/s (download): rate * %d / %d.", p.Shape.Up*uint64(p.MTU)/uint64(wire), p.Shape.Down*uint64(p.MTU)/uint64(wire), p.MTU, wire),
	}
}

func freebsdSysctl(p Params) string {
	var b strings.Builder
	header(&b, p, "sysctl.conf: the FreeBSD kernel path's sysctls (sysctl -f sysctl.conf; run-ab.sh kernel does).")
	b.WriteString("net.inet.ip.forwarding=1\n")
	b.WriteString("# netisr: queue inbound work to the netisr threads (loader.conf sets their number)\n")
	b.WriteString("net.isr.dispatch=deferred\n")
	return b.String()
}

func freebsdLoader(p Params) string {
	var b strings.Builder
	header(&b, p, "loader.conf: the FreeBSD kernel path's loader tunables.")
	b.WriteString("# Append to /boot/loader.conf and reboot: they take effect only at boot (run-ab.sh checks them).\n")
	fmt.Fprintf(&b, "net.isr.maxthreads=\"%d\"\n", p.CPUs)
	b.WriteString("net.isr.bindthreads=\"1\"\n")
	if p.Shape.On() {
		b.WriteString("# ipfw is loaded for dummynet only: let everything else pass (run-ab.sh also sets it with kenv).\n")
		b.WriteString("net.inet.ip.fw.default_to_accept=\"1\"\n")
	}
	return b.String()
}

func freebsdRun(p Params) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	header(&b, p, "run-ab.sh: either side of the A/B on FreeBSD, as root.")
	b.WriteString(`#
# sh run-ab.sh kernel   the kernel path: mpd5 (ng_pppoe) on the WAN, pf NAT and firewall,
#                       the netisr settings` + map[bool]string{true: ", dummynet FQ-CoDel", false: ""}[p.Shape.On()] + `
# sh run-ab.sh pppfwd   stop the kernel path, then run pppfwd (netmap) with pppfwd.conf:
#                       the same ports, account, MTU and shaping
# sh run-ab.sh stop     stop the kernel path
# PPPFWD names the pppfwd binary (default: pppfwd from PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
`)
	fmt.Fprintf(&b, "wan=%s\nlan=%s\nlan_addr=%s\nng=%s\n", p.WAN, p.LAN, p.lanAddr(), ngIface)
	fmt.Fprintf(&b, "router=%s\npidfile=%s\n", p.Router, mpdPidFile)
	fmt.Fprintf(&b, "shaping=%s\n", map[bool]string{true: "on", false: "off"}[p.Shape.On()])
	wanMTU := ""
	if p.MTU > DefaultMTU {
		wanMTU = fmt.Sprintf(" mtu %d", p.MTU+8)
	}
	fmt.Fprintf(&b, "wan_up=\"up%s\"\n", wanMTU)
	fmt.Fprintf(&b, "cpus=%d\n", p.CPUs)
	b.WriteString(`
die() {
	echo "run-ab.sh: $*" >&2
	exit 1
}

# tunable NAME WANT: warn when a loader tunable is not in effect.
tunable() {
	have=$(sysctl -n "$1" 2>/dev/null || echo unset)
	if [ "$have" != "$2" ]; then
		echo "run-ab.sh: $1 is $have, want $2: append loader.conf to /boot/loader.conf and reboot" >&2
	fi
}

kernel_up() {
	[ "$(id -u)" = 0 ] || die "needs root"
	command -v mpd5 >/dev/null || die "mpd5 is not installed (pkg install mpd5)"
	tunable net.isr.maxthreads "$cpus"
	tunable net.isr.bindthreads 1
	sysctl -f "$here/sysctl.conf" >/dev/null
	ifconfig "$wan" $wan_up
	ifconfig "$lan" | grep -q "inet $router " || ifconfig "$lan" inet "$lan_addr" alias
	ifconfig "$lan" up
	mpd5 -b -d "$here" -f mpd.conf -p "$pidfile"
	i=0
	until ifconfig "$ng" 2>/dev/null | grep -q 'inet '; do
		i=$((i + 1))
		[ "$i" -le 60 ] || die "$ng has no address after 60 s: see mpd5's messages in the system log"
		sleep 1
	done
	kldload -n pf
	pfctl -q -f "$here/pf.conf"
	pfctl -q -e 2>/dev/null || true
	if [ "$shaping" = on ]; then
		kenv net.inet.ip.fw.default_to_accept=1 >/dev/null
		kldload -n ipfw dummynet
		sh "$here/dummynet.sh"
	fi
	echo "kernel path up: $ng $(ifconfig "$ng" | grep 'inet ')"
}

kernel_down() {
	if [ -f "$pidfile" ]; then
		kill "$(cat "$pidfile")" 2>/dev/null || true
	fi
	if [ "$shaping" = on ] && command -v ipfw >/dev/null && kldstat -q -m dummynet; then
`)
	fmt.Fprintf(&b, "\t\tipfw -q delete %d %d 2>/dev/null || true\n", ipfwRuleUp, ipfwRuleDn)
	b.WriteString(`		ipfw queue delete 1 2 2>/dev/null || true
		ipfw sched delete 1 2 2>/dev/null || true
		ipfw pipe delete 1 2 2>/dev/null || true
	fi
	pfctl -q -d 2>/dev/null || true
	pfctl -q -F all 2>/dev/null || true
	ifconfig "$lan" inet "$router" -alias 2>/dev/null || true
	i=0
	while ifconfig "$ng" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 10 ] || die "$ng is still there 10 s after mpd5 was told to stop"
		sleep 1
	done
}

`)
	runABTail(&b, `	ifconfig "$wan" $wan_up
	ifconfig "$lan" up
`)
	return b.String()
}
