package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/bench/lab"
	"github.com/pppfwd/pppfwd/dataplane/router"
)

// labResult is what `pppfwd lab --json` prints.
type labResult struct {
	Backend      string  `json:"backend"`
	Workers      int     `json:"workers"`
	SessionUpMs  float64 `json:"session_up_ms"`
	SessionID    uint16  `json:"session_id"`
	Address      string  `json:"address"`
	MTU          int     `json:"mtu"`
	GatewayPing  bool    `json:"gateway_ping_ok"`
	InternetPing bool    `json:"internet_ping_ok"`
	UDPSent      int     `json:"udp_sent"`
	UDPEchoed    int     `json:"udp_echoed"`
	// 3000-byte datagrams: fragmented by the hosts' kernels, crossing
	// pppfwd in fragments both ways.
	UDPLargeSent   int     `json:"udp_3000b_sent"`
	UDPLargeEchoed int     `json:"udp_3000b_echoed"`
	EchoRTTMs      float64 `json:"lcp_echo_rtt_ms"`
	// IPv6: the prefix the ISP delegated (DHCPv6-PD), the LAN host's
	// SLAAC address in the /64 pppfwd advertised, ping and UDP echo to
	// the Internet host, and unsolicited datagrams the firewall dropped.
	Delegated6 string            `json:"ipv6_delegated"`
	HostAddr6  string            `json:"ipv6_host_address"`
	Ping6      bool              `json:"ipv6_internet_ping_ok"`
	UDP6Sent   int               `json:"ipv6_udp_sent"`
	UDP6Echoed int               `json:"ipv6_udp_echoed"`
	Firewall6  bool              `json:"ipv6_unsolicited_blocked"`
	Drops      map[string]uint64 `json:"drops"`
}

func labMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "afpacket", "afpacket or afxdp")
	workers := fs.Int("workers", 2, "worker threads")
	flows := fs.Int("flows", 64, "UDP echo flows from the LAN host")
	verbose := fs.Bool("v", false, "log the router's control plane")
	asJSON := fs.Bool("json", false, "print one JSON object")
	conf := fs.String("config", "", "try this router configuration file in the lab: its VLAN, login, MTU, shaping and NAT against the lab's AC (interfaces, lan.address and files are the lab's)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd lab: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *conf != "" {
		return labConfig(*conf, stdout, stderr)
	}
	logf := func(string, ...any) {}
	if *verbose {
		logf = log.New(stderr, "", log.Lmicroseconds).Printf
	}
	t0 := time.Now()
	l, err := lab.Start(lab.Options{Backend: *backend, Workers: *workers, Logf: logf})
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v (needs root, iproute2)\n", err)
		return 1
	}
	defer l.Close()
	if err := l.WaitUp(15 * time.Second); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	res := labResult{Backend: *backend, Workers: *workers, SessionUpMs: float64(time.Since(t0).Microseconds()) / 1000}
	s := l.R.Engine().Session()
	res.SessionID, res.MTU = s.ID, s.MTU
	res.Address = fmt.Sprintf("%d.%d.%d.%d", byte(s.LocalAddr>>24), byte(s.LocalAddr>>16), byte(s.LocalAddr>>8), byte(s.LocalAddr))
	out, err := l.Ping(lab.LANPrefix.Addr().String(), 3)
	res.GatewayPing = err == nil && strings.Contains(out, " 0% packet loss")
	out, err = l.Ping(lab.RemoteAddr.String(), 5)
	res.InternetPing = err == nil && strings.Contains(out, " 0% packet loss")
	if !*asJSON {
		fmt.Fprintf(stdout, "LAN host pings %s through pppfwd:\n%s\n", lab.RemoteAddr, out)
	}
	res.UDPSent = *flows * 20
	if res.UDPEchoed, err = l.UDPEcho(*flows, 20); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	res.UDPLargeSent = 10
	if res.UDPLargeEchoed, err = l.UDPEchoLarge(res.UDPLargeSent, 3000); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	a6, err := l.WaitAddr6(15 * time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	res.HostAddr6 = a6.String()
	if d, ok := l.Delegated(); ok {
		res.Delegated6 = d.String()
	}
	out, err = l.Ping6(lab.Remote6Addr.String(), 5)
	res.Ping6 = err == nil && strings.Contains(out, " 0% packet loss")
	if !*asJSON {
		fmt.Fprintf(stdout, "LAN host (%s) pings %s through pppfwd over IPv6:\n%s\n", a6, lab.Remote6Addr, out)
	}
	res.UDP6Sent = *flows * 5
	if res.UDP6Echoed, err = l.UDPEcho6(*flows, 5); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	if res.Firewall6, err = l.Unsolicited6(a6, 3); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	res.EchoRTTMs = float64(l.R.Client().Status().EchoRTT.Microseconds()) / 1000
	c := l.R.Engine().Totals()
	res.Drops = c.DropMap()
	if err := l.Close(); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	ok := res.GatewayPing && res.InternetPing && res.UDPEchoed == res.UDPSent && res.UDPLargeEchoed == res.UDPLargeSent &&
		res.Ping6 && res.UDP6Echoed == res.UDP6Sent && res.Firewall6
	if *asJSON {
		if err := printJSON(stdout, res); err != nil {
			return 1
		}
	} else {
		fmt.Fprintf(stdout, "session %d up in %.0f ms: %s mtu %d (LCP echo rtt %.2f ms)\n", res.SessionID, res.SessionUpMs, res.Address, res.MTU, res.EchoRTTMs)
		fmt.Fprintf(stdout, "gateway ping ok: %v, Internet ping ok: %v, UDP echoes %d/%d, 3000-byte (fragmented) %d/%d\n",
			res.GatewayPing, res.InternetPing, res.UDPEchoed, res.UDPSent, res.UDPLargeEchoed, res.UDPLargeSent)
		fmt.Fprintf(stdout, "IPv6: delegated %s, LAN host %s, Internet ping ok: %v, UDP echoes %d/%d, unsolicited blocked: %v\n",
			res.Delegated6, res.HostAddr6, res.Ping6, res.UDP6Echoed, res.UDP6Sent, res.Firewall6)
		fmt.Fprintf(stdout, "drops %v\n", res.Drops)
	}
	if !ok {
		return 1
	}
	return 0
}

// labSocket is the lab router's control socket with --config.
const labSocket = "/run/pppfwd-lab.sock"

// labConfig runs the lab with the router a user's configuration file
// describes (lab.AdaptConfig): the router's log as `pppfwd run` would
// write it, the LAN host's ping and UDP through the session, then what
// `pppfwd status` says of the running router.
func labConfig(file string, stdout, stderr io.Writer) int {
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 2
	}
	cfg, err := router.ParseConfig(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %s: %v\n", file, err)
		return 2
	}
	opt, notes := lab.AdaptConfig(cfg, labSocket)
	fmt.Fprintf(stdout, "%s in the lab (%s):\n", file, strings.Join(notes, ", "))
	logger := log.New(stdout, "", 0)
	opt.Logf = logger.Printf
	l, err := lab.Start(opt)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v (needs root, iproute2)\n", err)
		return 1
	}
	defer l.Close()
	if err := l.WaitUp(20 * time.Second); err != nil {
		fmt.Fprintf(stderr, "pppfwd lab: %v\n", err)
		return 1
	}
	out, err := l.Ping(lab.RemoteAddr.String(), 3)
	if err != nil || !strings.Contains(out, " 0% packet loss") {
		fmt.Fprintf(stderr, "pppfwd lab: ping through the session: %v\n%s", err, out)
		return 1
	}
	const flows, per = 8, 20
	got, err := l.UDPEcho(flows, per)
	if err != nil || got != flows*per {
		fmt.Fprintf(stderr, "pppfwd lab: UDP echo: %d of %d (%v)\n", got, flows*per, err)
		return 1
	}
	fmt.Fprintf(stdout, "LAN host %s: ping %s 3/3, UDP echo %d/%d through the session\n", lab.HostAddr.Addr(), lab.RemoteAddr, got, flows*per)
	// The status a user would see, with the LAN host's UDP echoes
	// running (the workers publish their figures once a second).
	done := make(chan struct{})
	go func() { defer close(done); _, _ = l.UDPEcho(flows, 100*per) }()
	time.Sleep(2 * time.Second)
	fmt.Fprintf(stdout, "\n# pppfwd status -s %s\n", labSocket)
	code := ctlMain("status", []string{"-s", labSocket}, stdout, stderr)
	<-done
	return code
}
