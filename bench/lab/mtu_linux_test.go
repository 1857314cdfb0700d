package lab

import (
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// TestIntegrationRFC4638: with pppoe.mtu 1500 against an AC that allows
// it (PPP-Max-Payload), the router raises its WAN veth from 1500 to 1508
// (1512 with wan.vlan 7) and says so, the session's MTU becomes 1500 on
// both sides once the echo probe crossed, and a 1500-byte ping and UDP
// datagram from the LAN host with DF set cross unfragmented both ways.
func TestIntegrationRFC4638(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	nettest.RequireCmd(t, "ping")
	for _, c := range []struct {
		vlan    uint16
		wanMTU  string
		logLine string
	}{
		{0, "1508", "pppfwd: wan.interface rwan: MTU 1500 -> 1508 for pppoe.mtu 1500 (RFC 4638)"},
		{7, "1512", "pppfwd: wan.interface rwan: MTU 1500 -> 1512 for pppoe.mtu 1500 with wan.vlan 7 (RFC 4638)"},
	} {
		t.Run(map[bool]string{true: "vlan7", false: "untagged"}[c.vlan != 0], func(t *testing.T) {
			log := &logLines{t: t}
			l, err := Start(Options{MTU: 1500, VLAN: c.vlan, Logf: log.logf})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.WaitUp(15 * time.Second); err != nil {
				t.Fatal(err)
			}
			if log.count(c.logLine) != 1 {
				t.Errorf("no line %q in:\n%s", c.logLine, log)
			}
			if out, err := l.Router.Exec("cat", "/sys/class/net/"+WANInterface+"/mtu"); err != nil || strings.TrimSpace(out) != c.wanMTU {
				t.Fatalf("rwan MTU %q (%v), want %s", out, err, c.wanMTU)
			}
			// The probe (a full-size LCP echo each way) proves the path;
			// until then both sides stay at 1492.
			deadline := time.Now().Add(15 * time.Second)
			for {
				s := l.R.Engine().Session()
				ss := l.AC.Sessions()
				if s != nil && s.MTU == 1500 && len(ss) == 1 && ss[0].MTU == 1500 && ss[0].MaxPayload {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("session MTU not 1500: router %+v, AC %+v, client %+v", s, ss, l.R.Client().Status())
				}
				time.Sleep(20 * time.Millisecond)
			}
			frags := l.R.Engine().Totals().Fragments
			// 1472 bytes of ICMP data: a 1500-byte IPv4 packet, DF set.
			out, err := l.LAN.Exec("ping", "-M", "do", "-s", "1472", "-c", "3", "-i", "0.2", "-w", "10", RemoteAddr.String())
			if err != nil || !strings.Contains(out, " 0% packet loss") {
				t.Fatalf("1500-byte ping with DF: %v\n%s\ncounters %+v", err, out, l.R.Engine().Totals())
			}
			if got, err := l.udpEchoDF(1472, 5); err != nil || got != 5 {
				t.Fatalf("1500-byte UDP with DF: %d of 5 echoed (%v); counters %+v", got, err, l.R.Engine().Totals())
			}
			if n := l.R.Engine().Totals().Fragments - frags; n != 0 {
				t.Fatalf("the router made %d fragments of 1500-byte packets", n)
			}
		})
	}
}

// udpEchoDF sends n datagrams of size bytes with DF set (IP_PMTUDISC_DO:
// the LAN host's kernel neither fragments them nor lets the router) from
// the LAN host to the Internet host's echo service and counts the
// echoes that come back intact.
func (l *Lab) udpEchoDF(size, n int) (got int, err error) {
	var c *net.UDPConn
	err = l.LAN.Do(func() error {
		uc, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(RemoteAddr, 7)))
		if err != nil {
			return err
		}
		c = uc
		rc, err := uc.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
		}); err != nil {
			return err
		}
		return serr
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return 0, err
	}
	defer c.Close()
	return udpEchoConn(c, n, size)
}
