package lab

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/nettest"
)

// hostFwdPort is the lab's forward to the router's host stack
// (nat.forward udp 51820 host).
const hostFwdPort = 51820

// TestIntegrationHostTraffic: the router's own host stack (the host TAP
// in the router's namespace, carrying the LAN address, with a default
// route through it) reaches the Internet host through the session: ping,
// UDP and TCP echo over IPv4 through the NAT, ping and UDP echo over IPv6
// from the LAN prefix's router address. A service on it is reached from
// the Internet through nat.forward udp PORT host and answers from the
// forwarded port; what it did not ask for stays out (the NAT and the IPv6
// firewall drop it, counted).
func TestIntegrationHostTraffic(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	nettest.RequireCmd(t, "ping")
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			l, err := Start(Options{Workers: workers, HostTap: true, Logf: t.Logf,
				Forwards: []nat.Forward{{Proto: hdr.ProtoUDP, ExtPort: hostFwdPort, LANAddr: u32(LANPrefix.Addr()), LANPort: hostFwdPort}}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.WaitUp(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			// The default route of the box: via an on-link gateway
			// beyond the LAN that pppfwd answers ARP for.
			if out, err := l.Router.Exec("ip", "route", "add", "default", "via", "169.254.0.1", "dev", "pppfwd0", "onlink"); err != nil {
				t.Fatalf("default route: %v: %s", err, out)
			}
			out, err := l.Router.Exec("ping", "-c", "3", "-i", "0.2", "-w", "15", RemoteAddr.String())
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping from the router's host stack: %v\n%s\ncounters %+v\ncontrol %+v", err, out, l.R.Engine().Totals(), l.R.Control().Stats())
			}
			if got, err := l.hostUDPEcho("udp4", netip.AddrPortFrom(RemoteAddr, 7), 20); err != nil || got != 20 {
				t.Fatalf("UDP echo from the router's host stack: %d of 20 (%v)", got, err)
			}
			if err := l.hostTCPEcho(200_000); err != nil {
				t.Fatalf("TCP echo from the router's host stack: %v; counters %+v", err, l.R.Engine().Totals())
			}
			pub := l.publicAddr()
			if err := l.hostForward(pub); err != nil {
				t.Fatalf("forward to the host stack: %v; counters %+v", err, l.R.Engine().Totals())
			}
			if err := l.hostUnsolicited(pub, 9999, 3); err != nil {
				t.Fatal(err)
			}
			c, st := l.R.Engine().Totals(), l.R.Control().Stats()
			if c.FromHost == 0 || c.ToHost == 0 || st.HostRouted == 0 || st.HostProxied == 0 || st.HostDropped != 0 {
				t.Fatalf("host path counters: from %d to %d; control %+v", c.FromHost, c.ToHost, st)
			}

			// IPv6: the delegated prefix's router address on the TAP.
			if err := l.hostIPv6(); err != nil {
				t.Fatal(err)
			}
			l6 := l.R.Engine().LAN6()
			r6 := netip.AddrFrom16(l6.Router)
			out, err = l.Router.Exec("ping", "-6", "-c", "3", "-i", "0.2", "-w", "15", Remote6Addr.String())
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("ping6 from the router's host stack: %v\n%s\ncounters %+v\ncontrol %+v", err, out, l.R.Engine().Totals(), l.R.Control().Stats())
			}
			if got, err := l.hostUDPEcho("udp6", netip.AddrPortFrom(Remote6Addr, 7), 20); err != nil || got != 20 {
				t.Fatalf("UDP echo over IPv6 from the router's host stack: %d of 20 (%v)", got, err)
			}
			if blocked, err := l.Unsolicited6(r6, 3); err != nil || !blocked {
				t.Fatalf("unsolicited IPv6 to the router's address not dropped (%v): %v", err, l.R.Engine().Totals().DropMap())
			}
		})
	}
}

// publicAddr is the session's address.
func (l *Lab) publicAddr() netip.Addr {
	var a [4]byte
	s := l.R.Engine().Session()
	a[0], a[1], a[2], a[3] = byte(s.LocalAddr>>24), byte(s.LocalAddr>>16), byte(s.LocalAddr>>8), byte(s.LocalAddr)
	return netip.AddrFrom4(a)
}

// hostUDPEcho sends n datagrams from a socket in the router's namespace
// to the echo service at to and returns how many came back.
func (l *Lab) hostUDPEcho(network string, to netip.AddrPort, n int) (int, error) {
	var c net.Conn
	err := l.Router.Do(func() (err error) {
		c, err = net.Dial(network, to.String())
		return err
	})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return echoFlow(c, n), nil
}

// hostTCPEcho sends size bytes over a TCP connection from the router's
// namespace to the Internet host's echo service and checks what comes
// back (segments of the clamped MSS, both ways through the NAT).
func (l *Lab) hostTCPEcho(size int) error {
	var c net.Conn
	err := l.Router.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(RemoteAddr, 7).String(), 5*time.Second)
		return err
	})
	if err != nil {
		return err
	}
	defer c.Close()
	if la := c.LocalAddr().(*net.TCPAddr); !la.IP.Equal(LANPrefix.Addr().AsSlice()) {
		return fmt.Errorf("connection from %v, not the router's LAN address", la)
	}
	return tcpEchoConn(c, size)
}

// hostForward checks nat.forward udp hostFwdPort host: a datagram from the
// Internet host to the public address reaches a listener in the router's
// namespace from the Internet host's address, and its answer comes back
// from the public address and the forwarded port.
func (l *Lab) hostForward(pub netip.Addr) error {
	var srv *net.UDPConn
	err := l.Router.Do(func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{Port: hostFwdPort})
		return err
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	var cl *net.UDPConn
	err = l.Inet.Do(func() (err error) {
		cl, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(RemoteAddr, 0)))
		return err
	})
	if err != nil {
		return err
	}
	defer cl.Close()
	to := netip.AddrPortFrom(pub, hostFwdPort)
	buf := make([]byte, 64)
	for try := 0; try < 3; try++ {
		if _, err := cl.WriteToUDPAddrPort([]byte("knock"), to); err != nil {
			return err
		}
		_ = srv.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, from, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			continue
		}
		if string(buf[:n]) != "knock" || from.Addr().Unmap() != RemoteAddr {
			return fmt.Errorf("the service got %q from %v", buf[:n], from)
		}
		if _, err := srv.WriteToUDPAddrPort([]byte("welcome"), from); err != nil {
			return err
		}
		_ = cl.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, rfrom, err := cl.ReadFromUDPAddrPort(buf)
		if err != nil {
			return fmt.Errorf("no answer from the service: %w", err)
		}
		if string(buf[:n]) != "welcome" || rfrom.Addr().Unmap() != pub || rfrom.Port() != hostFwdPort {
			return fmt.Errorf("answer %q from %v, want from %v", buf[:n], rfrom, to)
		}
		return nil
	}
	return fmt.Errorf("nothing reached the service on %v", to)
}

// hostUnsolicited sends n datagrams from the Internet host to the public
// address's port (no forward, no mapping) and checks that a listener on
// that port in the router's namespace gets none, and that the NAT dropped
// them all.
func (l *Lab) hostUnsolicited(pub netip.Addr, port uint16, n int) error {
	var srv *net.UDPConn
	err := l.Router.Do(func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{Port: int(port)})
		return err
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	before := l.R.Engine().Totals().Drops[dataplane.DropNAT]
	if err := l.sendUnsolicited("udp4", netip.AddrPortFrom(pub, port), n); err != nil {
		return err
	}
	_ = srv.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 64)
	if k, from, err := srv.ReadFromUDPAddrPort(buf); err == nil {
		return fmt.Errorf("unsolicited %q from %v reached the router's host stack", buf[:k], from)
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l.R.Engine().Totals().Drops[dataplane.DropNAT]-before >= uint64(n) {
			return nil
		}
	}
	return fmt.Errorf("unsolicited datagrams not counted as NAT drops: %v", l.R.Engine().Totals().DropMap())
}

// hostIPv6 waits for the LAN prefix and gives the host TAP its router
// address and a default route, as lan.ipv6_script would.
func (l *Lab) hostIPv6() error {
	deadline := time.Now().Add(15 * time.Second)
	for l.R.Engine().LAN6() == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("no LAN prefix after 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := l.Router.Sysctl("net.ipv6.conf.pppfwd0.disable_ipv6", "0"); err != nil {
		return err
	}
	r6 := netip.AddrFrom16(l.R.Engine().LAN6().Router)
	if out, err := l.Router.Exec("ip", "-6", "addr", "add", netip.PrefixFrom(r6, 64).String(), "dev", "pppfwd0", "nodad"); err != nil {
		return fmt.Errorf("router address: %v: %s", err, out)
	}
	if out, err := l.Router.Exec("ip", "-6", "route", "add", "default", "dev", "pppfwd0"); err != nil {
		return fmt.Errorf("IPv6 default route: %v: %s", err, out)
	}
	return nil
}
