package ab

import (
	"fmt"
	"strings"

	"github.com/pppfwd/pppfwd/shaper"
)

// The Linux kernel path's names: pppd's linkname (its pid file is
// /run/ppp-LINKNAME.pid) and the nftables tables it loads.
const (
	pppLinkname = "pppfwd-ab"
	nftNAT      = "pppfwd_ab_nat"
	nftFilter   = "pppfwd_ab"
	// ethHeader is what an Ethernet port's qdisc counts beyond the IP
	// packet (tc-stab's overhead starts from the frame without FCS).
	ethHeader = 14
)

// LinuxKernel returns the files of the A/B's Linux kernel path: pppd's
// options (rp-pppoe.so on p.WAN, unit 0: ppp0), chap-secrets and
// pap-secrets (the password), an nftables ruleset (masquerade on ppp0,
// a forward chain that passes what the LAN started, MSS clamping), with
// shaping tc-cake.sh and tc-fq_codel.sh (cake, or htb with fq_codel
// where cake is missing, on ppp0 for upload and on the LAN port for
// download, in exact bit/s), and run-ab.sh, which starts either side.
func LinuxKernel(p Params) ([]File, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	files := []File{
		{Path: "pppd.peer", Mode: textMode, Body: pppdPeer(p)},
		{Path: "chap-secrets", Mode: secretMode, Body: pppdSecrets(p, "chap-secrets")},
		{Path: "pap-secrets", Mode: secretMode, Body: pppdSecrets(p, "pap-secrets")},
		{Path: "nftables.nft", Mode: textMode, Body: nftRuleset(p)},
	}
	if p.Shape.On() {
		files = append(files,
			File{Path: "tc-cake.sh", Mode: scriptMode, Body: tcCake(p)},
			File{Path: "tc-fq_codel.sh", Mode: scriptMode, Body: tcFQCoDel(p)})
	}
	files = append(files, File{Path: "run-ab.sh", Mode: scriptMode, Body: linuxRun(p)})
	return files, nil
}

func pppdPeer(p Params) string {
	var b strings.Builder
	header(&b, p, "pppd.peer: pppd's options on the Linux kernel path (pppd file pppd.peer; run-ab.sh kernel does).")
	b.WriteString("# The password is in chap-secrets and pap-secrets, not here.\n")
	b.WriteString("plugin rp-pppoe.so\n")
	fmt.Fprintf(&b, "nic-%s\n", p.WAN)
	if p.Service != "" {
		fmt.Fprintf(&b, "rp_pppoe_service %s\n", quote(p.Service))
	}
	fmt.Fprintf(&b, "user %s\n", quote(p.User))
	fmt.Fprintf(&b, "# the session is %s; run-ab.sh finds pppd by its pid file /run/ppp-%s.pid\n", pppIface, pppLinkname)
	b.WriteString("unit 0\n")
	fmt.Fprintf(&b, "linkname %s\n", pppLinkname)
	b.WriteString("noipdefault\n")
	b.WriteString("# defaultroute adds none while another default route exists: remove it first\n")
	b.WriteString("defaultroute\n")
	b.WriteString("persist\n")
	b.WriteString("maxfail 0\n")
	b.WriteString("holdoff 5\n")
	if p.MTU > DefaultMTU {
		fmt.Fprintf(&b, "# RFC 4638: %s's MTU is %d (run-ab.sh sets it)\n", p.WAN, p.MTU+8)
	}
	fmt.Fprintf(&b, "mtu %d\n", p.MTU)
	fmt.Fprintf(&b, "mru %d\n", p.MTU)
	b.WriteString("noauth\n")
	b.WriteString("hide-password\n")
	fmt.Fprintf(&b, "lcp-echo-interval %d\n", echoInterval)
	fmt.Fprintf(&b, "lcp-echo-failure %d\n", echoFailures)
	b.WriteString("# no compression: pppfwd has none\n")
	b.WriteString("noccp\nnovj\nnovjccomp\nnoaccomp\nnopcomp\ndefault-asyncmap\n")
	return b.String()
}

func pppdSecrets(p Params, name string) string {
	var b strings.Builder
	header(&b, p, name+": run-ab.sh kernel adds its line to /etc/ppp/"+name+" (pppd reads no other).")
	b.WriteString("# It holds the PPPoE password: keep it mode 600.\n")
	b.WriteString("# client\tserver\tsecret\tIP addresses\n")
	fmt.Fprintf(&b, "%s\t*\t%s\t*\n", quote(p.User), quote(p.Password))
	return b.String()
}

func nftRuleset(p Params) string {
	var b strings.Builder
	header(&b, p, "nftables.nft: NAT and firewall of the Linux kernel path (nft -f nftables.nft; run-ab.sh kernel does).")
	b.WriteString("# Its own tables, replaced whole on each load; the rest of the ruleset is left alone.\n")
	fmt.Fprintf(&b, "table ip %s\ndelete table ip %s\n", nftNAT, nftNAT)
	fmt.Fprintf(&b, "table ip %s {\n", nftNAT)
	b.WriteString("\tchain postrouting {\n")
	b.WriteString("\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
	fmt.Fprintf(&b, "\t\toifname %q ip saddr %s masquerade\n", pppIface, p.LANNet)
	b.WriteString("\t}\n}\n\n")
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\n", nftFilter, nftFilter)
	fmt.Fprintf(&b, "table inet %s {\n", nftFilter)
	b.WriteString("\tchain forward {\n")
	b.WriteString("\t\ttype filter hook forward priority filter; policy drop;\n")
	fmt.Fprintf(&b, "\t\t# MSS clamping, as pppfwd: SYNs out to the session's MTU (%d), SYN-ACKs in to %d\n", p.MTU, p.MTU-40)
	fmt.Fprintf(&b, "\t\toifname %q tcp flags syn tcp option maxseg size set rt mtu\n", pppIface)
	fmt.Fprintf(&b, "\t\tiifname %q tcp flags syn tcp option maxseg size > %d tcp option maxseg size set %d\n", pppIface, p.MTU-40, p.MTU-40)
	b.WriteString("\t\tct state established,related accept\n")
	b.WriteString("\t\tct state invalid drop\n")
	fmt.Fprintf(&b, "\t\tiifname %q oifname %q ip saddr %s accept\n", p.LAN, pppIface, p.LANNet)
	b.WriteString("\t\tcounter drop\n")
	b.WriteString("\t}\n\n")
	b.WriteString("\t# Inbound on the session only what belongs to a connection, as on a router.\n")
	b.WriteString("\tchain input {\n")
	b.WriteString("\t\ttype filter hook input priority filter; policy accept;\n")
	fmt.Fprintf(&b, "\t\tiifname %q ct state established,related accept\n", pppIface)
	fmt.Fprintf(&b, "\t\tiifname %q counter drop\n", pppIface)
	b.WriteString("\t}\n}\n")
	return b.String()
}

// tcRate writes bit/s with tc's bit suffix: exact, and never tc's mbps
// (megabytes per second).
func tcRate(bps uint64) string { return fmt.Sprintf("%dbit", bps) }

// cakeFraming is cake's framing keyword for o.
func cakeFraming(o shaper.Overhead) string {
	switch o.Framing {
	case shaper.FramingATM:
		return "atm"
	case shaper.FramingPTM:
		return "ptm"
	}
	return "noatm"
}

func tcCake(p Params) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	header(&b, p, "tc-cake.sh: the Linux kernel path's shaper, cake (run-ab.sh kernel tries it first).")
	o := p.Shape.Overhead
	fmt.Fprintf(&b, "# Upload on %s's egress, download on %s's: exact bit/s, the same overhead as pppfwd;\n", pppIface, p.LAN)
	b.WriteString("# per-flow fairness (flows) and one tin (besteffort), as dummynet's fq_codel and pppfwd.\n")
	b.WriteString("set -eu\n")
	for _, d := range []struct {
		dev  string
		rate uint64
	}{{pppIface, p.Shape.Up}, {p.LAN, p.Shape.Down}} {
		fmt.Fprintf(&b, "tc qdisc replace dev %s root cake bandwidth %s besteffort flows overhead %d mpu %d %s\n",
			d.dev, tcRate(d.rate), o.Bytes, o.MPU, cakeFraming(o))
	}
	return b.String()
}

// htbBurst is the htb class's burst and cburst: 1 ms at the rate, at
// least two full frames.
func htbBurst(bps uint64) uint64 {
	return max(bps/8/1000, 2*uint64(shaper.DefaultQuantum))
}

func tcFQCoDel(p Params) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	header(&b, p, "tc-fq_codel.sh: the Linux kernel path's shaper where cake is missing: htb at the rate, fq_codel under it.")
	o := p.Shape.Overhead
	link := "ethernet"
	if o.Framing == shaper.FramingATM {
		link = "atm"
	}
	fmt.Fprintf(&b, "# Upload on %s's egress, download on %s's: exact bit/s; tc-stab adds the overhead to the IP\n", pppIface, p.LAN)
	fmt.Fprintf(&b, "# packet (on %s, whose frames the kernel counts with their %d-byte Ethernet header, %d less).\n", p.LAN, ethHeader, ethHeader)
	if o.Framing == shaper.FramingPTM {
		b.WriteString("# PTM framing (64/65 encoding) has no tc-stab equivalent: this variant shapes without it.\n")
	}
	b.WriteString("set -eu\n")
	for _, d := range []struct {
		dev      string
		rate     uint64
		overhead int
	}{{pppIface, p.Shape.Up, o.Bytes}, {p.LAN, p.Shape.Down, o.Bytes - ethHeader}} {
		r, burst := tcRate(d.rate), htbBurst(d.rate)
		fq := fmt.Sprintf("fq_codel limit %d flows %d quantum %d target %dms interval %dms ecn",
			fqCodel.limit, fqCodel.flows, shaper.RateQuantum(d.rate), fqCodel.targetMs, fqCodel.intervalMs)
		fmt.Fprintf(&b, "tc qdisc replace dev %s root handle 1: stab overhead %d mpu %d linklayer %s htb default 1\n", d.dev, d.overhead, o.MPU, link)
		fmt.Fprintf(&b, "tc class replace dev %s parent 1: classid 1:1 htb rate %s ceil %s burst %d cburst %d quantum %d\n",
			d.dev, r, r, burst, burst, shaper.DefaultQuantum)
		fmt.Fprintf(&b, "tc qdisc replace dev %s parent 1:1 handle 10: %s\n", d.dev, fq)
	}
	return b.String()
}

func linuxRun(p Params) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	header(&b, p, "run-ab.sh: either side of the A/B on Linux, as root.")
	shapeLine := ""
	if p.Shape.On() {
		shapeLine = "\n#                       and the shaper: cake, else htb + fq_codel (AB_SHAPER=cake|fq_codel picks one)"
	}
	b.WriteString(`#
# sh run-ab.sh kernel   the kernel path: pppd (rp-pppoe.so) on the WAN, nftables NAT and firewall` + shapeLine + `
# sh run-ab.sh pppfwd   stop the kernel path, then run pppfwd with pppfwd.conf:
#                       the same ports, account, MTU and shaping
# sh run-ab.sh stop     stop the kernel path
# PPPFWD names the pppfwd binary (default: pppfwd from PATH).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
`)
	fmt.Fprintf(&b, "wan=%s\nlan=%s\nlan_addr=%s\nppp=%s\n", p.WAN, p.LAN, p.lanAddr(), pppIface)
	fmt.Fprintf(&b, "pidfile=/run/ppp-%s.pid\n", pppLinkname)
	fmt.Fprintf(&b, "shaping=%s\n", map[bool]string{true: "on", false: "off"}[p.Shape.On()])
	wanMTU := ""
	if p.MTU > DefaultMTU {
		wanMTU = fmt.Sprintf(" mtu %d", p.MTU+8)
	}
	fmt.Fprintf(&b, "wan_up=\"up%s\"\n", wanMTU)
	b.WriteString(`
die() {
	echo "run-ab.sh: $*" >&2
	exit 1
}

# install_secret GENERATED SYSTEM: add GENERATED's one line to SYSTEM
# unless it is there.
install_secret() {
	line=$(grep -v '^#' "$1")
	if [ -f "$2" ] && grep -qxF -e "$line" "$2"; then
		return 0
	fi
	(umask 077 && printf '%s\n' "$line" >>"$2")
}

shaper() {
	case "${AB_SHAPER:-auto}" in
	cake) sh "$here/tc-cake.sh" ;;
	fq_codel) sh "$here/tc-fq_codel.sh" ;;
	auto)
		if sh "$here/tc-cake.sh" 2>/dev/null; then
			echo "shaper: cake"
		else
			echo "shaper: no cake in this kernel: htb + fq_codel"
			sh "$here/tc-fq_codel.sh"
		fi
		;;
	*) die "AB_SHAPER=$AB_SHAPER: want cake or fq_codel" ;;
	esac
}

kernel_up() {
	[ "$(id -u)" = 0 ] || die "needs root"
	command -v pppd >/dev/null || die "pppd is not installed (apt-get install ppp)"
	command -v nft >/dev/null || die "nft is not installed (apt-get install nftables)"
	sysctl -qw net.ipv4.ip_forward=1
	ip link set dev "$wan" $wan_up
	ip link set dev "$lan" up
	ip addr replace "$lan_addr" dev "$lan"
	install_secret "$here/chap-secrets" /etc/ppp/chap-secrets
	install_secret "$here/pap-secrets" /etc/ppp/pap-secrets
	pppd file "$here/pppd.peer"
	i=0
	until ip -4 addr show dev "$ppp" 2>/dev/null | grep -q 'inet '; do
		i=$((i + 1))
		[ "$i" -le 60 ] || die "$ppp has no address after 60 s: see pppd's messages in the system log"
		sleep 1
	done
	nft -f "$here/nftables.nft"
	if [ "$shaping" = on ]; then
		shaper
	fi
	echo "kernel path up: $(ip -4 -br addr show dev "$ppp")"
}

kernel_down() {
	if [ -f "$pidfile" ]; then
		kill "$(head -n 1 "$pidfile")" 2>/dev/null || true
	fi
	tc qdisc del dev "$lan" root 2>/dev/null || true
`)
	fmt.Fprintf(&b, "\tnft delete table ip %s 2>/dev/null || true\n", nftNAT)
	fmt.Fprintf(&b, "\tnft delete table inet %s 2>/dev/null || true\n", nftFilter)
	b.WriteString(`	ip addr del "$lan_addr" dev "$lan" 2>/dev/null || true
	i=0
	while ip link show dev "$ppp" >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 10 ] || die "$ppp is still there 10 s after pppd was told to stop"
		sleep 1
	done
}

`)
	runABTail(&b, `	ip link set dev "$wan" $wan_up
	ip link set dev "$lan" up
`)
	return b.String()
}
