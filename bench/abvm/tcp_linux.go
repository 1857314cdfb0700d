package abvm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/tap"
)

// The TCP step's hosts. The LAN host is the kernel of the lab's
// namespace on the LAN tap (an address the generator's hosts do not
// use); the Internet host is a namespace of its own whose TAP stands for
// the AC's upstream: a relay moves the session's iperf3 segments between
// the WAN tap and that TAP (the AC itself sees only control frames).
//
//	iperf3 -c (LAN host, ablan) -- [VM: router] -- abwan -- relay -- abup (Internet namespace: iperf3 -s)
const (
	inetTap   = "abup"
	iperfPort = 5201
	// tcpOmit is the pre-test iperf3 leaves out of its figures (-O 1:
	// connection set-up and slow start); the window the probe and the
	// CPU figures cover starts tcpSettle after it and ends tcpSettle
	// before the transfer's end.
	tcpOmit   = time.Second
	tcpSettle = 100 * time.Millisecond
)

var (
	tcpClient = netip.MustParsePrefix("192.168.0.200/24")
	tcpServer = netip.MustParsePrefix("198.51.100.7/24")
	relayMAC  = [6]byte{0x02, 0xac, 0, 0, 0, 2} // the relay's side of the upstream TAP
)

// relayCounters count the relay's packets each way (diagnostics of a
// transfer that failed).
type relayCounters struct{ up, down atomic.Uint64 }

// inet is the Internet side of the access concentrator for the TCP step.
type inet struct {
	ns    *nettest.NS
	up    *tap.Port
	mac   [6]byte // the upstream TAP's (the Internet host's) MAC
	relay relayCounters
}

// checkIperf3 reports a missing iperf3.
func checkIperf3() error {
	if _, err := exec.LookPath("iperf3"); err != nil {
		return fmt.Errorf("abvm: the TCP step needs iperf3 (scripts/deps.sh installs it; --tcp=false skips the step): %w", err)
	}
	return nil
}

// startInet builds the Internet namespace: its upstream TAP (the
// session's MTU, no ARP: the relay takes every frame), the server's
// address, the subscribers' pool routed to the TAP, and iperf3 -s
// listening. The lab closes all of it.
func startInet(lab *nettest.Lab) (*inet, error) {
	ns, err := lab.NewNS("abinet")
	if err != nil {
		return nil, err
	}
	if err := ns.DisableIPv6(); err != nil {
		return nil, err
	}
	in := &inet{ns: ns}
	if err := ns.Do(func() (e error) { in.up, e = tap.Open(inetTap, tap.Config{Up: true, MTU: 1492}); return }); err != nil {
		return nil, fmt.Errorf("upstream tap: %w", err)
	}
	cleanup := true
	defer func() {
		if cleanup {
			in.up.Close()
		}
	}()
	mac, err := ns.MAC(inetTap)
	if err != nil {
		return nil, err
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("upstream tap MAC %q: %v", mac, err)
	}
	in.mac = [6]byte(hw)
	if _, err := ns.Exec("ip", "link", "set", "dev", inetTap, "arp", "off"); err != nil {
		return nil, err
	}
	if err := ns.AddAddr(inetTap, tcpServer); err != nil {
		return nil, err
	}
	pool := netip.PrefixFrom(poolAddr, 24).Masked().String()
	if _, err := ns.Exec("ip", "route", "add", pool, "dev", inetTap); err != nil {
		return nil, err
	}
	srv, err := ns.Start("iperf3", "-s", "-B", tcpServer.Addr().String(), "-p", strconv.Itoa(iperfPort))
	if err != nil {
		return nil, err
	}
	if err := waitListen(srv.Process.Pid, iperfPort, 10*time.Second); err != nil {
		return nil, fmt.Errorf("iperf3 -s: %w", err)
	}
	cleanup = false
	return in, nil
}

func (in *inet) close() { in.up.Close() }

// waitListen waits until process pid (in its own network namespace)
// listens on TCP port.
func waitListen(pid, port int, d time.Duration) error {
	want := fmt.Sprintf(":%04X", port)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/tcp", pid))
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ...; st 0A is LISTEN.
			fs := strings.Fields(sc.Text())
			if len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				f.Close()
				return nil
			}
		}
		f.Close()
	}
	return fmt.Errorf("not listening on port %d after %v", port, d)
}

// tcpLAN gives the LAN host its address on the LAN tap (the VM's taps
// are new with each VM) and its route to the server via the router. The
// tap computes its checksums, as a NIC puts frames on a wire: with TX
// checksum offload on, the kernel would leave TCP checksums partial and
// qemu would pass them to the guest unfinished (virtio's NEEDS_CSUM).
func (b *bench) tcpLAN() error {
	if err := b.ns.SetFeature(lanTap, "tx", false); err != nil {
		return err
	}
	if err := b.ns.AddAddr(lanTap, tcpClient); err != nil {
		return err
	}
	return b.ns.AddRoute(tcpServer.Masked().String(), routerIP)
}

// startRelay moves the iperf3 service's segments of the session
// b.relaySess holds (none while it is nil) between the WAN tap and the
// upstream TAP until ctx ends: the uplink decapsulated into the TAP, the
// TAP's packets for the session's address encapsulated into the session.
func (b *bench) startRelay(ctx context.Context, wg *sync.WaitGroup) error {
	var conn *rawsock.Conn
	if err := b.ns.Do(func() (err error) { conn, err = rawsock.OpenTCPPort(wanTap, iperfPort); return }); err != nil {
		return fmt.Errorf("relay socket: %w", err)
	}
	in := b.inet
	acMAC := conn.HardwareAddr()
	var once sync.Once
	closeConn := func() { once.Do(func() { conn.Close() }) }
	wg.Add(2)
	go func() { // uplink
		defer wg.Done()
		defer closeConn()
		buf := make([]byte, 2048)
		out := nic.NewFrames(1)
		for ctx.Err() == nil {
			n, err := conn.ReadFrame(buf, 200*time.Millisecond)
			if errors.Is(err, rawsock.ErrTimeout) {
				continue
			}
			if err != nil {
				return
			}
			s := b.relaySess.Load()
			if s == nil {
				continue
			}
			ip := sessionIPv4(buf[:n], s.ID)
			if ip == nil {
				continue
			}
			f := out[0]
			f.Reset()
			e := f.Extend(hdr.EthernetLen + len(ip))
			if e == nil {
				continue
			}
			hdr.Ethernet(e).SetAddrs(in.mac, relayMAC)
			hdr.Ethernet(e).SetType(hdr.EtherTypeIPv4)
			copy(e[hdr.EthernetLen:], ip)
			if n, _ := in.up.Send(0, out); n > 0 {
				in.relay.up.Add(1)
			}
		}
	}()
	go func() { // downlink
		defer wg.Done()
		defer closeConn()
		in := nic.NewFrames(32)
		buf := make([]byte, 0, 2048)
		for ctx.Err() == nil {
			if err := b.inet.up.Wait(0, 200*time.Millisecond); err != nil {
				return
			}
			for _, f := range in {
				f.Reset()
			}
			n, err := b.inet.up.Recv(0, in)
			if err != nil {
				return
			}
			for _, f := range in[:n] {
				d := f.Data()
				if len(d) < hdr.EthernetLen || hdr.Ethernet(d).Type() != hdr.EtherTypeIPv4 {
					continue
				}
				ip := hdr.IPv4(d[hdr.EthernetLen:])
				s := b.relaySess.Load()
				if s == nil || !ip.IsValid() || ip.Dst() != s.Addr {
					continue
				}
				buf = appendSessionIPv4(buf[:0], s.PeerMAC, acMAC, s.ID, ip)
				if conn.WriteFrame(buf) == nil {
					b.inet.relay.down.Add(1)
				}
			}
		}
	}()
	return nil
}

// tcpSteps runs the TCP step: for each direction and stream count one
// iperf3 transfer with the probe and the CPU figures.
func (b *bench) tcpSteps(ctx context.Context, vm box, g *gen, run int, path string, shaped bool) ([]TCPStep, error) {
	what := "unshaped"
	if shaped {
		what = "shaped"
	}
	var out []TCPStep
	for _, dir := range tcpDirections(b.o.Direction) {
		for _, n := range b.o.TCPStreams {
			s, err := b.tcpStep(ctx, vm, g, dir, n)
			if err != nil {
				return nil, fmt.Errorf("TCP %s %s with %d streams: %w", what, dir, n, err)
			}
			s.Shaped = shaped
			out = append(out, *s)
			failed := ""
			if s.Error != "" {
				failed = " (failed: " + s.Error + ")"
			}
			b.o.Progress(fmt.Sprintf("run %d/%d: %s %s TCP %s x%d: %.1f Mbit/s%s, %d retransmits, p50 %.1f ms, p99 %.1f ms, cores %s",
				run+1, b.o.Runs, path, what, dir, n, s.Mbps, failed, s.Retransmits, s.LatencyP50Ms, s.LatencyP99Ms, pcts(s.PerCoreBusy)))
		}
	}
	return out, nil
}

// tcpStep runs one iperf3 transfer of streams streams, up (the LAN host
// sends) or down (-R: the server sends).
func (b *bench) tcpStep(ctx context.Context, vm box, g *gen, dir string, streams int) (*TCPStep, error) {
	d := b.o.TCPDuration
	args := []string{"-c", tcpServer.Addr().String(), "-p", strconv.Itoa(iperfPort), "-J",
		"-t", strconv.Itoa(int(d / time.Second)), "-O", strconv.Itoa(int(tcpOmit / time.Second)),
		"-P", strconv.Itoa(streams), "--connect-timeout", "10000"}
	if dir == "down" {
		args = append(args, "-R")
	}
	cctx, cancel := context.WithTimeout(ctx, d+tcpOmit+30*time.Second)
	defer cancel()
	cmd := b.ns.Command(cctx, "iperf3", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	smp := b.sample(ctx, vm, g, tcpOmit+tcpSettle, d-2*tcpSettle)
	werr := cmd.Wait()
	serr := smp.wait()
	if serr != nil {
		return nil, fmt.Errorf("the router's /proc/stat: %w", serr)
	}
	s := &TCPStep{Direction: dir, Streams: streams}
	// A transfer that fails (a router that stalls it, iperf3 killed at
	// the deadline) is a result: goodput 0 with the reason.
	if res, err := parseIperf3(stdout.Bytes()); err != nil {
		s.Error = fmt.Sprintf("%v (exit: %v; stderr: %s)", err, werr, strings.TrimSpace(stderr.String()))
		b.o.Logf("iperf3 %s: %s; relayed %d packets up, %d down so far; %s", strings.Join(args, " "), s.Error,
			b.inet.relay.up.Load(), b.inet.relay.down.Load(), b.diagnose(vm))
	} else {
		s.Mbps, s.Seconds, s.Retransmits = res.Mbps, res.Seconds, res.Retransmits
	}
	s.PerCoreBusy, s.PerCoreSoftirq, s.HostCoreBusy = smp.shares()
	if p := smp.probe; p != nil {
		s.Probes, s.ProbesLost = p.sent, p.lost
		s.LatencyP50Ms, s.LatencyP99Ms, s.LatencyMaxMs = p.p50, p.p99, p.max
	}
	return s, nil
}

// diagnose returns what the guest and the LAN host say about the
// router, for an error.
func (b *bench) diagnose(vm box) string {
	guest, _ := vm.Run(fmt.Sprintf("%s 2>&1 | head -n 60; tail -n 20 %s 2>/dev/null; ip -s link 2>&1 | head -n 40", b.paths.status(), b.paths.log))
	lan, _ := b.ns.Exec("ip", "-s", "neigh")
	route, _ := b.ns.Exec("ip", "route")
	inetStat, _ := b.inet.ns.Exec("nstat", "-as")
	return fmt.Sprintf("guest:\n%s\nLAN host neighbours:\n%sroutes:\n%s\nInternet host:\n%s", guest, lan, route, inetStat)
}
