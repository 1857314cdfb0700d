package lab

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationLANTxChecksum: a LAN host whose veth has tx checksumming
// on, as a VM's or a container's has, hands its TCP and UDP over with the
// checksum unfinished (the pseudo-header sum only). Through pppfwd, on
// afpacket (which reports such frames) and afxdp (which cannot tell, so
// pppfwd recognises them), real kernel TCP connections reach the Internet
// host over IPv4 and IPv6 and the router's own host stack through the host
// TAP, and UDP echoes come back: every one of those checksums was
// finished, and counted.
func TestIntegrationLANTxChecksum(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	for _, backend := range []string{"afpacket", "afxdp"} {
		t.Run(backend, func(t *testing.T) {
			l, err := Start(Options{Backend: backend, Workers: 2, HostTap: true, LANTxChecksum: true, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if on, err := l.LAN.Feature("lan0", "tx"); err != nil || !on {
				t.Fatalf("lan0 tx checksumming on: %v (%v)", on, err)
			}
			if err := l.WaitUp(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			if err := l.TCPEcho(100_000); err != nil {
				t.Fatalf("TCP echo over IPv4: %v; counters %+v", err, l.R.Engine().Totals())
			}
			if got, err := l.UDPEcho(4, 5); err != nil || got != 20 {
				t.Fatalf("%d of 20 UDP echoes over IPv4 (%v); drops %v", got, err, l.R.Engine().Totals().DropMap())
			}
			// The router's host stack, on the host TAP (its kernel checks
			// every checksum it is given).
			if err := echoBetween(l.Router, l.LAN, "tcp4", netip.AddrPortFrom(LANPrefix.Addr(), 2222), 50_000); err != nil {
				t.Fatalf("TCP to the router's host stack: %v; counters %+v", err, l.R.Engine().Totals())
			}
			if _, err := l.WaitAddr6(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			if err := echoBetween(l.Inet, l.LAN, "tcp6", netip.AddrPortFrom(Remote6Addr, 7007), 100_000); err != nil {
				t.Fatalf("TCP echo over IPv6: %v; counters %+v", err, l.R.Engine().Totals())
			}
			if got, err := l.UDPEcho6(4, 5); err != nil || got != 20 {
				t.Fatalf("%d of 20 UDP echoes over IPv6 (%v); drops %v", got, err, l.R.Engine().Totals().DropMap())
			}
			c := l.R.Engine().Totals()
			for deadline := time.Now().Add(2 * time.Second); c.CsumCompleted < 40 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
				c = l.R.Engine().Totals()
			}
			t.Logf("%s: %d checksums finished; rx lan %d; drops %v", backend, c.CsumCompleted, c.RxLAN, c.DropMap())
			if c.CsumCompleted < 40 {
				t.Fatalf("%d checksums finished, want at least the 40 UDP datagrams'", c.CsumCompleted)
			}
		})
	}
}

// echoBetween runs a TCP echo service at at in namespace srv and checks
// that size bytes sent from namespace cli come back.
func echoBetween(srv, cli *nettest.NS, network string, at netip.AddrPort, size int) error {
	var ln net.Listener
	if err := srv.Do(func() (err error) {
		ln, err = net.Listen(network, at.String())
		return err
	}); err != nil {
		return err
	}
	defer ln.Close()
	go serveEcho(ln)
	var c net.Conn
	if err := cli.Do(func() (err error) {
		c, err = net.DialTimeout(network, at.String(), 5*time.Second)
		return err
	}); err != nil {
		return err
	}
	defer c.Close()
	return tcpEchoConn(c, size)
}
