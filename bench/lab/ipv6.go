package lab

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/ndp"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// The lab's IPv6: the ISP delegates a /56 from PDPool to the router over
// the session (DHCPv6-PD, dhcp6.Server behind the AC), the router
// advertises a /64 of it on the LAN, the LAN host numbers itself (SLAAC)
// and reaches the Internet host at Remote6Addr, routed end to end with no
// NAT. The ISP's kernel routes the delegated prefix into the upstream TAP,
// where the lab answers its neighbour solicitations for the prefix (proxy
// ND) and hands the packets to the session.
var (
	PDPool      = netip.MustParsePrefix("2001:db8:100::/40")
	ISPInet6    = netip.MustParsePrefix("2001:db8:ffff::1/64")
	Remote6Net  = netip.MustParsePrefix("2001:db8:ffff::7/64")
	Remote6Addr = Remote6Net.Addr()
	DNS6Addr    = netip.MustParseAddr("2001:db8:ffff::53")
	// acLL is the AC's link-local address on the session and the TAP.
	acLL = netip.MustParseAddr("fe80::ac").As16()
)

// lab6 is the ISP side's IPv6 state, owned by the forwarding goroutine
// (delegated is read by tests).
type lab6 struct {
	srv       *dhcp6.Server
	session   atomic.Uint32 // the session IPv6 goes to
	delegated atomic.Pointer[netip.Prefix]
	routed    netip.Prefix
	buf       []byte
}

func (l *Lab) setupIPv6() error {
	for _, s := range []struct {
		ns interface {
			AddAddr(string, netip.Prefix) error
		}
		ifn string
		p   netip.Prefix
	}{{l.ISP, "isp1", ISPInet6}, {l.Inet, "inet0", Remote6Net}} {
		if err := s.ns.AddAddr(s.ifn, s.p); err != nil {
			return err
		}
	}
	if _, err := l.Inet.Exec("ip", "-6", "route", "add", "default", "via", ISPInet6.Addr().String()); err != nil {
		return err
	}
	if err := l.ISP.Sysctl("net.ipv6.conf.all.forwarding", "1"); err != nil {
		return err
	}
	srv, err := dhcp6.NewServer(dhcp6.ServerConfig{MAC: acMAC, Pool: PDPool.Addr().As16(), PoolBits: PDPool.Bits(),
		Delegate: 56, Valid: 2 * time.Hour, Preferred: time.Hour, DNS: []hdr.Addr6{DNS6Addr.As16()}})
	if err != nil {
		return err
	}
	l.v6.srv = srv
	l.echo6, err = l.startEcho("udp6", Remote6Addr)
	return err
}

// Delegated returns the prefix the ISP delegated to the router, if any.
func (l *Lab) Delegated() (netip.Prefix, bool) {
	p := l.v6.delegated.Load()
	if p == nil {
		return netip.Prefix{}, false
	}
	return *p, true
}

// upstream6 handles an IPv6 packet from the subscriber: DHCPv6 to the
// lab's server, the rest into the ISP's kernel.
func (l *Lab) upstream6(ip []byte, out []*nic.Frame) {
	v := hdr.IPv6(ip)
	dst := v.Dst()
	if hdr.IsMulticast6(&dst) {
		src, _, sport, dport, payload, ok := dhcp6.DecodeUDP6(ip)
		if !ok || sport != dhcp6.ClientPort || dport != dhcp6.ServerPort {
			return // RS, MLD...: nothing the lab answers
		}
		reply := l.v6.srv.Handle(payload, time.Now())
		if reply == nil {
			return
		}
		l.noteDelegation(reply)
		l.v6.buf = dhcp6.EncodeUDP6(l.v6.buf[:0], &acLL, &src, 255, dhcp6.ServerPort, dhcp6.ClientPort, reply)
		if ac := l.acp.Load(); ac != nil {
			_ = ac.SendIPv6(uint16(l.v6.session.Load()), l.v6.buf)
		}
		return
	}
	if hdr.IsLinkLocal6(&dst) {
		return
	}
	l.toTAP(out, hdr.EtherTypeIPv6, ip)
}

// noteDelegation routes a prefix a reply delegates into the TAP.
func (l *Lab) noteDelegation(reply []byte) {
	m, err := dhcp6.Parse(reply)
	if err != nil || m.Type != dhcp6.MsgReply {
		return
	}
	for _, ia := range m.IAPD {
		for _, p := range ia.Prefixes {
			if p.Valid == 0 {
				continue
			}
			pfx := netip.PrefixFrom(netip.AddrFrom16(p.Prefix), p.Bits)
			if pfx == l.v6.routed {
				continue
			}
			if _, err := l.ISP.Exec("ip", "-6", "route", "replace", pfx.String(), "dev", upstreamIf); err != nil {
				continue
			}
			l.v6.routed = pfx
			l.v6.delegated.Store(&pfx)
		}
	}
}

// fromKernel6 handles what the ISP's kernel sends into the TAP: its
// solicitations for addresses in the delegated prefix are answered for
// the router (proxy ND), packets to the AC's MAC go into the session.
func (l *Lab) fromKernel6(b []byte) {
	eth := hdr.Ethernet(b)
	if m, err := ndp.Parse(b); err == nil && m.Type == hdr.ICMP6NeighborSol {
		d := l.v6.delegated.Load()
		if d == nil || (!d.Contains(netip.AddrFrom16(m.Target)) && m.Target != acLL) {
			return
		}
		out := nic.NewFrames(1)
		out[0].SetData(ndp.AppendNA(nil, &m, m.Target, acMAC, true))
		_, _ = l.up.Send(0, out)
		return
	}
	if [6]byte(eth.Dst()) != acMAC || len(b) < hdr.EthernetLen+hdr.IPv6Len {
		return
	}
	ip := hdr.IPv6(b[hdr.EthernetLen:])
	if !ip.IsValid() {
		return
	}
	if ac := l.acp.Load(); ac != nil {
		_ = ac.SendIPv6(uint16(l.v6.session.Load()), ip[:ip.TotalLen()])
	}
}

// WaitAddr6 waits for the LAN host to number itself in the prefix the
// router advertises and returns its global address.
func (l *Lab) WaitAddr6(timeout time.Duration) (netip.Addr, error) {
	deadline := time.Now().Add(timeout)
	for {
		out, err := l.LAN.Exec("ip", "-6", "-o", "addr", "show", "dev", "lan0", "scope", "global")
		if err == nil {
			for _, f := range strings.Fields(out) {
				if p, perr := netip.ParsePrefix(f); perr == nil && p.Addr().Is6() {
					return p.Addr(), nil
				}
			}
		}
		if time.Now().After(deadline) {
			d, _ := l.Delegated()
			return netip.Addr{}, fmt.Errorf("no global IPv6 address on the LAN host after %v (delegated %v, router LAN6 %v): %s",
				timeout, d, l.R.Engine().LAN6() != nil, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Ping6 pings dst over IPv6 from the LAN namespace.
func (l *Lab) Ping6(dst string, count int) (string, error) {
	return l.LAN.Exec("ping", "-6", "-c", fmt.Sprint(count), "-i", "0.2", "-w", "15", dst)
}

// UDPEcho6 is UDPEcho over IPv6, to Remote6Addr's echo service.
func (l *Lab) UDPEcho6(flows, per int) (int, error) {
	return l.udpEcho("udp6", netip.AddrPortFrom(Remote6Addr, 7), flows, per)
}

// sendUnsolicited sends n UDP datagrams "unsolicited" from the Internet
// host to dst over network (udp4 or udp6).
func (l *Lab) sendUnsolicited(network string, dst netip.AddrPort, n int) error {
	return l.Inet.Do(func() error {
		c, err := net.Dial(network, dst.String())
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < n; i++ {
			if _, err := c.Write([]byte("unsolicited")); err != nil {
				return err
			}
		}
		return nil
	})
}

// Unsolicited6 sends n UDP datagrams from the Internet host to the LAN
// host's address to (nothing on the LAN asked for them) and reports
// whether pppfwd's IPv6 firewall dropped all n.
func (l *Lab) Unsolicited6(to netip.Addr, n int) (bool, error) {
	before := l.R.Engine().Totals().Drops[dataplane.DropFirewall]
	if err := l.sendUnsolicited("udp6", netip.AddrPortFrom(to, 9), n); err != nil {
		return false, err
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l.R.Engine().Totals().Drops[dataplane.DropFirewall]-before >= uint64(n) {
			return true, nil
		}
	}
	return false, nil
}
