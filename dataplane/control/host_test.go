package control

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/ndp"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// fromHostStack puts ls in an Ethernet frame from the host stack (its TAP
// has the router's MAC) to dst.
func fromHostStack(tb testing.TB, dst [6]byte, et layers.EthernetType, ls []gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: routerMAC[:], DstMAC: dst[:], EthernetType: et}
	return serialize(tb, append([]gopacket.SerializableLayer{eth}, ls...)...)
}

// hostRig is a running engine and control plane with a host port, a
// session (IPv4 and IPv6) and a LAN prefix; the AC's side of the WAN is
// the wan port's TX queue (what the router sends) and RX queue
// (fromAC frames the test injects).
type hostRig struct {
	lan, wan, host *memport.Port
	e              *dataplane.Engine
	ctl            *Control
	l6             *dataplane.LAN6
}

func newHostRig(t *testing.T, gateway ...[6]byte) *hostRig {
	r := &hostRig{lan: memport.New("lan", 1, 256), wan: memport.New("wan", 1, 256), host: memport.New("host", 1, 256)}
	r.e = memEngine(t, r.lan, r.wan)
	var err error
	if r.l6, err = dataplane.NewLAN6(lan6Prefix, 64, routerMAC); err != nil {
		t.Fatal(err)
	}
	r.e.SetLAN6(r.l6)
	r.e.SetSession(testSession(true))
	cfg := Config{WANMAC: wanMAC, Host: r.host}
	if len(gateway) > 0 {
		cfg.HostGateway = gateway[0]
	}
	r.ctl = New(r.e, cfg)
	startWith(t, r.e, r.ctl.Run)
	return r
}

// await drains p's TX queue until a frame for which want reports true
// has come (frames before it are dropped) and returns it.
func await(t *testing.T, what string, p *memport.Port, want func(b []byte) bool) []byte {
	t.Helper()
	var got []byte
	waitFor(t, what, 5*time.Second, func() bool {
		p.Drain(0, func(b []byte) {
			if got == nil && want(b) {
				got = append([]byte(nil), b...)
			}
		})
		return got != nil
	})
	return got
}

func isType(et uint16) func([]byte) bool {
	return func(b []byte) bool { return len(b) >= hdr.EthernetLen && hdr.Ethernet(b).Type() == et }
}

// TestHostStackReachesSession: the host stack resolves addresses beyond
// the LAN to the router's MAC (proxy ARP and ND, answered to it, not sent
// on the LAN), its packets to them leave over the session through the
// NAT (IPv4) or routed (IPv6), and the replies come back to it; ARP and
// ND for LAN addresses still go to the LAN.
func TestHostStackReachesSession(t *testing.T) {
	r := newHostRig(t)
	// ARP for a remote: answered to the host stack with the router's MAC.
	r.host.Inject(0, arpFrame(1, bcastMAC, routerMAC, routerIP, remoteIP))
	rep := await(t, "proxy ARP reply", r.host, isType(hdr.EtherTypeARP))
	a := rep[hdr.EthernetLen:]
	if binary.BigEndian.Uint16(a[6:]) != 2 || [6]byte(a[8:14]) != routerMAC || binary.BigEndian.Uint32(a[14:]) != remoteIP ||
		[6]byte(rep[0:6]) != routerMAC {
		t.Fatalf("proxy ARP reply %x", rep)
	}
	// ARP for a LAN host: out on the LAN, not answered.
	r.host.Inject(0, arpFrame(1, bcastMAC, routerMAC, routerIP, hostIP))
	lanARP := await(t, "ARP for a LAN host on the LAN", r.lan, isType(hdr.EtherTypeARP))
	if binary.BigEndian.Uint32(lanARP[38:]) != hostIP {
		t.Fatalf("ARP on the LAN %x", lanARP)
	}

	// UDP to the remote: translated to the public address.
	r.host.Inject(0, fromHostStack(t, routerMAC, layers.EthernetTypeIPv4,
		pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 123, proto: layers.IPProtocolUDP, payload: 48}.layers(t)))
	up := await(t, "the host's NTP query at the AC", r.wan, isType(hdr.EtherTypePPPoESess))
	ip := hdr.IPv4(up[22:])
	if ip.Src() != pubIP || ip.Dst() != remoteIP {
		t.Fatalf("uplink %x", up)
	}
	ext := be16(up[22+20:])
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 123, dport: ext, proto: layers.IPProtocolUDP, payload: 48}))
	down := await(t, "the reply at the host stack", r.host, isType(hdr.EtherTypeIPv4))
	p := decodeIPv4(t, down[14:])
	if u := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 40000 || [6]byte(down[0:6]) != routerMAC {
		t.Fatalf("reply to port %d MAC %x", u.DstPort, down[0:6])
	}

	// IPv6: a solicitation for a remote is answered to the host stack;
	// one for a LAN host goes to the LAN.
	r.host.Inject(0, ndp.AppendNS(nil, r.l6.Router, remote6IP, routerMAC))
	na := await(t, "proxy NA", r.host, func(b []byte) bool {
		m, err := ndp.Parse(b)
		return err == nil && m.Type == hdr.ICMP6NeighborAdv
	})
	if m, _ := ndp.Parse(na); m.Target != remote6IP || !m.HasTargetLL || m.TargetLL != routerMAC || !m.Solicited || m.Dst != r.l6.Router {
		t.Fatalf("proxy NA %+v", m)
	}
	r.host.Inject(0, ndp.AppendNS(nil, r.l6.Router, host6IP, routerMAC))
	await(t, "NS for a LAN host on the LAN", r.lan, func(b []byte) bool {
		m, err := ndp.Parse(b)
		return err == nil && m.Type == hdr.ICMP6NeighborSol && m.Target == host6IP
	})
	r.host.Inject(0, fromHostStack(t, routerMAC, layers.EthernetTypeIPv6,
		pkt6{src: r.l6.Router, dst: remote6IP, sport: 40001, dport: 53, proto: layers.IPProtocolUDP, payload: 30}.layers(t)))
	up6 := wan6Payload(t, await(t, "the host's IPv6 at the AC", r.wan, isType(hdr.EtherTypePPPoESess)))
	if s := hdr.IPv6(up6).Src(); s != r.l6.Router {
		t.Fatalf("IPv6 uplink from %x", s)
	}
	r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: r.l6.Router, sport: 53, dport: 40001, proto: layers.IPProtocolUDP, payload: 30}))
	d6 := await(t, "the IPv6 reply at the host stack", r.host, isType(hdr.EtherTypeIPv6))
	if u := decodeIPv6(t, d6[14:]).Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 40001 {
		t.Fatalf("IPv6 reply to port %d", u.DstPort)
	}
	st := r.ctl.Stats()
	if st.HostRouted != 2 || st.HostProxied != 2 || st.ToHost < 4 || st.HostDropped != 0 {
		t.Fatalf("control stats %+v", st)
	}
	// The LAN saw neither the host's packets nor the answers to them.
	r.lan.Drain(0, func(b []byte) {
		if et := hdr.Ethernet(b).Type(); et == hdr.EtherTypeIPv4 || et == hdr.EtherTypeARP {
			t.Errorf("on the LAN: %x", b)
		}
	})
}

// TestHostGatewayMAC: with Config.HostGateway (a host port on the LAN
// interface itself, whose stack owns RouterMAC), the proxy answers give
// the host stack the gateway MAC, never RouterMAC, and what it then
// sends to the gateway MAC reaches the session through the NAT.
func TestHostGatewayMAC(t *testing.T) {
	r := newHostRig(t, gatewayMAC)
	r.host.Inject(0, arpFrame(1, bcastMAC, routerMAC, routerIP, remoteIP))
	rep := await(t, "proxy ARP reply", r.host, isType(hdr.EtherTypeARP))
	if a := rep[hdr.EthernetLen:]; [6]byte(a[8:14]) != gatewayMAC || [6]byte(rep[6:12]) != gatewayMAC || [6]byte(rep[0:6]) != routerMAC {
		t.Fatalf("proxy ARP reply %x", rep)
	}
	r.host.Inject(0, ndp.AppendNS(nil, r.l6.Router, remote6IP, routerMAC))
	na := await(t, "proxy NA", r.host, func(b []byte) bool {
		m, err := ndp.Parse(b)
		return err == nil && m.Type == hdr.ICMP6NeighborAdv
	})
	if m, _ := ndp.Parse(na); !m.HasTargetLL || m.TargetLL != gatewayMAC {
		t.Fatalf("proxy NA %+v", m)
	}
	r.host.Inject(0, fromHostStack(t, gatewayMAC, layers.EthernetTypeIPv4,
		pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 123, proto: layers.IPProtocolUDP, payload: 48}.layers(t)))
	up := await(t, "the host's NTP query at the AC", r.wan, isType(hdr.EtherTypePPPoESess))
	if ip := hdr.IPv4(up[22:]); ip.Src() != pubIP || ip.Dst() != remoteIP {
		t.Fatalf("uplink %x", up)
	}
	if st := r.ctl.Stats(); st.HostRouted != 1 || st.HostProxied != 2 {
		t.Fatalf("control stats %+v", st)
	}
}

// TestClassifyHost: the table of what becomes of the host stack's frames.
func TestClassifyHost(t *testing.T) {
	l6, err := dataplane.NewLAN6(lan6Prefix, 64, routerMAC)
	if err != nil {
		t.Fatal(err)
	}
	n := &hostNet{routerMAC: routerMAC, gatewayMAC: gatewayMAC, lanNet: lanNet, lanMask: 0xffffff00, l6: l6}
	udp4 := func(dst uint32, mac [6]byte) []byte {
		return fromHostStack(t, mac, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: dst, sport: 1, dport: 2, proto: layers.IPProtocolUDP}.layers(t))
	}
	udp6 := func(dst [16]byte, mac [6]byte) []byte {
		return fromHostStack(t, mac, layers.EthernetTypeIPv6, pkt6{src: l6.Router, dst: dst, sport: 1, dport: 2, proto: layers.IPProtocolUDP}.layers(t))
	}
	nsTo := func(target [16]byte) []byte { return ndp.AppendNS(nil, l6.Router, target, routerMAC) }
	for _, c := range []struct {
		name string
		b    []byte
		want hostVerdict
	}{
		{"udp to a remote", udp4(remoteIP, routerMAC), hostRoute},
		{"udp to a remote at the gateway MAC", udp4(remoteIP, gatewayMAC), hostRoute},
		{"udp to a LAN host at the gateway MAC", udp4(hostIP, gatewayMAC), hostToLAN},
		{"udp to the public address", udp4(pubIP, routerMAC), hostRoute},
		{"udp to a LAN host", udp4(hostIP, hostMAC), hostToLAN},
		{"udp to a LAN host at the router's MAC", udp4(hostIP, routerMAC), hostToLAN},
		{"udp to a remote at another MAC", udp4(remoteIP, hostMAC), hostToLAN},
		{"udp to the broadcast address", udp4(0xffffffff, bcastMAC), hostToLAN},
		{"udp to multicast at the router's MAC", udp4(ip4(224, 0, 0, 251), routerMAC), hostToLAN},
		{"udp to loopback", udp4(ip4(127, 0, 0, 1), routerMAC), hostToLAN},
		{"truncated IPv4", udp4(remoteIP, routerMAC)[:30], hostToLAN},
		{"ARP for a remote", arpFrame(1, bcastMAC, routerMAC, routerIP, remoteIP), hostProxyARP},
		{"unicast ARP for a remote", arpFrame(1, routerMAC, routerMAC, routerIP, remoteIP), hostProxyARP},
		{"ARP for a LAN host", arpFrame(1, bcastMAC, routerMAC, routerIP, hostIP), hostToLAN},
		{"ARP reply", arpFrame(2, hostMAC, routerMAC, routerIP, remoteIP), hostToLAN},
		{"ARP for 0.0.0.0", arpFrame(1, bcastMAC, routerMAC, routerIP, 0), hostToLAN},
		{"short ARP", arpFrame(1, bcastMAC, routerMAC, routerIP, remoteIP)[:40], hostToLAN},
		{"IPv6 to a remote", udp6(remote6IP, routerMAC), hostRoute},
		{"IPv6 to a remote at the gateway MAC", udp6(remote6IP, gatewayMAC), hostRoute},
		{"IPv6 to a LAN host", udp6(host6IP, routerMAC), hostToLAN},
		{"IPv6 to link-local", udp6(routerLL6, routerMAC), hostToLAN},
		{"IPv6 to multicast", udp6(ndp.AllNodes(), ndp.AllNodesMAC()), hostToLAN},
		{"IPv6 to ::1", udp6(hdr.Addr6{15: 1}, routerMAC), hostToLAN},
		{"NS for a remote", nsTo(remote6IP), hostProxyNS},
		{"NS for a LAN host", nsTo(host6IP), hostToLAN},
		{"NS for a link-local address", nsTo(routerLL6), hostToLAN},
		{"runt", []byte{1, 2, 3}, hostToLAN},
	} {
		if got := classifyHost(c.b, n); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	// Without a LAN prefix IPv6 is never routed or proxied.
	n.l6 = nil
	if v := classifyHost(udp6(remote6IP, routerMAC), n); v != hostToLAN {
		t.Errorf("IPv6 without a LAN prefix: %d", v)
	}
	if v := classifyHost(nsTo(remote6IP), n); v != hostToLAN {
		t.Errorf("NS without a LAN prefix: %d", v)
	}
}

// FuzzClassifyHost: whatever the host stack sends, classifyHost never
// panics and routes or proxies only what it may (routed: unicast to the
// router's or the gateway MAC, a valid IP header to an address beyond the LAN; proxied:
// a request for such an address), and the control plane passes any of it
// on without panicking.
func FuzzClassifyHost(f *testing.F) {
	r := newCtlFuzz(f, true)
	l6 := r.l6
	f.Add(fromHostStack(f, routerMAC, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP}.layers(f)))
	f.Add(fromHostStack(f, routerMAC, layers.EthernetTypeIPv6, pkt6{src: l6.Router, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP}.layers(f)))
	f.Add(arpFrame(1, bcastMAC, routerMAC, routerIP, remoteIP))
	f.Add(arpFrame(1, bcastMAC, routerMAC, routerIP, hostIP))
	f.Add(ndp.AppendNS(nil, l6.Router, remote6IP, routerMAC))
	f.Add(ndp.AppendNS(nil, hdr.Addr6{}, remote6IP, routerMAC))
	f.Add(ndp.AppendNS(nil, l6.Router, host6IP, routerMAC))
	n := &hostNet{routerMAC: routerMAC, gatewayMAC: gatewayMAC, lanNet: lanNet, lanMask: 0xffffff00, l6: l6}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := classifyHost(b, n)
		switch v {
		case hostRoute:
			if dst := [6]byte(b[0:6]); dst != routerMAC && dst != gatewayMAC {
				t.Fatalf("routed a frame to %x", b[0:6])
			}
			switch hdr.Ethernet(b).Type() {
			case hdr.EtherTypeIPv4:
				ip := hdr.IPv4(b[hdr.EthernetLen:])
				if !ip.IsValid() || !n.beyondLAN4(ip.Dst()) || ip.Dst()&n.lanMask == n.lanNet {
					t.Fatalf("routed IPv4 to %x", ip.Dst())
				}
			case hdr.EtherTypeIPv6:
				dst := (*hdr.Addr6)(b[hdr.EthernetLen+24 : hdr.EthernetLen+40])
				if l6.Contains(dst) || hdr.IsMulticast6(dst) || hdr.IsLinkLocal6(dst) {
					t.Fatalf("routed IPv6 to %x", dst)
				}
			default:
				t.Fatalf("routed EtherType %#x", hdr.Ethernet(b).Type())
			}
		case hostProxyARP:
			if len(b) < hdr.ARPLen || binary.BigEndian.Uint32(b[38:])&n.lanMask == n.lanNet {
				t.Fatalf("proxied ARP %x", b)
			}
		case hostProxyNS:
			if len(b) < hdr.EthernetLen+hdr.IPv6Len+24 || l6.Contains((*hdr.Addr6)(b[62:78])) {
				t.Fatalf("proxied NS %x", b)
			}
		}
		if len(b) < hdr.EthernetLen || len(b) > 1800 {
			return
		}
		// The host's port has the router's MAC: every frame it sends is
		// from it.
		fr := r.ctl.hostRx[0]
		fr.Reset()
		if !fr.SetData(b) {
			return
		}
		copy(fr.Data()[6:12], routerMAC[:])
		r.ctl.fromHost(fr)
		r.pump(t)
	})
}

// TestFromHostAllocs: passing on what the host stack sends (classifying
// it, readdressing a frame to the gateway MAC, handing it to the fast
// path) allocates nothing.
func TestFromHostAllocs(t *testing.T) {
	r := newHostRig(t, gatewayMAC)
	up := fromHostStack(t, gatewayMAC, layers.EthernetTypeIPv4,
		pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 123, proto: layers.IPProtocolUDP, payload: 48}.layers(t))
	f := nic.NewFrame()
	if a := testing.AllocsPerRun(200, func() {
		f.Reset()
		f.SetData(up)
		r.ctl.fromHost(f)
	}); a != 0 {
		t.Errorf("fromHost allocates %v", a)
	}
	if st := r.ctl.Stats(); st.HostRouted+st.HostDropped < 200 {
		t.Errorf("control stats %+v", st)
	}
}
