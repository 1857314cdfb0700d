package dataplane

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

var (
	lan6Prefix = netip.MustParseAddr("2001:db8:0:1::").As16()
	host6IP    = netip.MustParseAddr("2001:db8:0:1::10").As16()
	remote6IP  = netip.MustParseAddr("2001:db8:ffff::9").As16()
	routerLL6  = netip.MustParseAddr("fe80::ff:fe00:1").As16() // EUI-64 of routerMAC
)

func testSession6() *hdr.Session {
	s := testSession()
	s.IPv6 = true
	return s
}

// rig6 is a rig with IPv6 on: the LAN prefix, an IPv6 session, and the
// host known.
func rig6(t testing.TB, workers int, mod func(*Config)) *rig {
	r := newRig(t, workers, mod)
	l6, err := NewLAN6(lan6Prefix, 64, routerMAC)
	if err != nil {
		t.Fatal(err)
	}
	r.e.SetLAN6(l6)
	r.e.SetSession(testSession6())
	r.e.SetNeighbor6(host6IP, hostMAC)
	return r
}

type pkt6 struct {
	src, dst     [16]byte
	sport, dport uint16
	proto        layers.IPProtocol
	hop          uint8
	payload      int
	syn, rst     bool
	mss          uint16
	tc           uint8
	// ICMPv6: the type (echo request if 0), the echo id, or the whole
	// message after the checksum (raw).
	echoType uint8
	echoID   uint16
	raw      []byte
}

func (p pkt6) layers(t testing.TB) []gopacket.SerializableLayer {
	hop := p.hop
	if hop == 0 {
		hop = 64
	}
	ip := &layers.IPv6{Version: 6, HopLimit: hop, NextHeader: p.proto, SrcIP: p.src[:], DstIP: p.dst[:], TrafficClass: p.tc}
	pl := gopacket.Payload(make([]byte, p.payload))
	switch p.proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		u.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{ip, u, pl}
	case layers.IPProtocolTCP:
		tc := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport), SYN: p.syn, RST: p.rst, ACK: !p.syn, Window: 1000, Seq: 1}
		if p.mss != 0 {
			tc.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{byte(p.mss >> 8), byte(p.mss)}}}
		}
		tc.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{ip, tc, pl}
	case layers.IPProtocolICMPv6:
		typ := p.echoType
		if typ == 0 {
			typ = hdr.ICMP6EchoRequest
		}
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		ic.SetNetworkLayerForChecksum(ip)
		if p.raw != nil {
			return []gopacket.SerializableLayer{ip, ic, gopacket.Payload(p.raw)}
		}
		echo := []byte{byte(p.echoID >> 8), byte(p.echoID), 0, 1}
		return []gopacket.SerializableLayer{ip, ic, gopacket.Payload(append(echo, make([]byte, p.payload)...))}
	}
	t.Fatalf("proto %v", p.proto)
	return nil
}

func lanFrame6(t testing.TB, p pkt6) []byte {
	eth := &layers.Ethernet{SrcMAC: hostMAC[:], DstMAC: routerMAC[:], EthernetType: layers.EthernetTypeIPv6}
	return serialize(t, append([]gopacket.SerializableLayer{eth}, p.layers(t)...)...)
}

func wanFrame6(t testing.TB, p pkt6) []byte { return wanIPFrame(t, serialize(t, p.layers(t)...)) }

// decodeIPv6 checks the L4 checksum of an IPv6 packet and returns it
// decoded.
func decodeIPv6(t testing.TB, b []byte) gopacket.Packet {
	t.Helper()
	ip := hdr.IPv6(b)
	if !ip.IsValid() || ip.TotalLen() != len(b) {
		t.Fatalf("invalid IPv6 %x", b)
	}
	src, dst := ip.Src(), ip.Dst()
	if s := hdr.PseudoSum6(&src, &dst, ip.NextHeader(), ip.PayloadLen()); hdr.Fold(hdr.Sum(ip.Payload(), s)) != 0xffff {
		t.Fatalf("bad L4 checksum (next header %d)", ip.NextHeader())
	}
	return gopacket.NewPacket(b, layers.LayerTypeIPv6, gopacket.Default)
}

// wan6Payload checks an uplink frame is PPPoE carrying PPP IPv6 and
// returns the IPv6 packet.
func wan6Payload(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(b) < 22 || be16(b[12:]) != hdr.EtherTypePPPoESess || be16(b[18:]) != uint16(len(b)-20) || be16(b[20:]) != hdr.PPPIPv6 {
		t.Fatalf("not PPPoE/PPP IPv6: %x", b)
	}
	if [6]byte(b[0:6]) != acMAC || [6]byte(b[6:12]) != wanMAC || be16(b[16:]) != sessionID {
		t.Fatalf("framing %x", b[:22])
	}
	return b[22:]
}

// TestIPv6ForwardBothWays: LAN -> session and session -> LAN, routed (no
// translation), hop limit decremented, TCP SYNs clamped for the MTU, with
// one and two workers.
func TestIPv6ForwardBothWays(t *testing.T) {
	for _, workers := range []int{1, 2} {
		r := rig6(t, workers, nil)
		up := pkt6{src: host6IP, dst: remote6IP, sport: 5000, dport: 443, proto: layers.IPProtocolTCP, syn: true, mss: 1460, hop: 64}
		r.lan.Inject(0, lanFrame6(t, up))
		r.step()
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("%d workers: %d uplink frames; drops %v", workers, len(out), r.e.Totals().DropMap())
		}
		p := decodeIPv6(t, wan6Payload(t, out[0]))
		ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		tc := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if [16]byte(ip.SrcIP) != host6IP || [16]byte(ip.DstIP) != remote6IP || ip.HopLimit != 63 || tc.SrcPort != 5000 {
			t.Fatalf("uplink %v", p)
		}
		if mss := be16(tc.Options[0].OptionData); mss != 1492-60 {
			t.Fatalf("MSS %d, want %d", mss, 1492-60)
		}
		// 64 flows down, to 64 remotes: every one reaches the host,
		// whichever worker steering picked (the host opened each first:
		// the firewall).
		remote := func(i int) [16]byte { a := remote6IP; a[14] = byte(i); return a }
		for i := 0; i < 64; i++ {
			r.lan.Inject(0, lanFrame6(t, pkt6{src: host6IP, dst: remote(i), sport: uint16(6000 + i), dport: 443, proto: layers.IPProtocolUDP}))
		}
		r.step()
		if n := len(r.drainWAN()); n != 64 {
			t.Fatalf("%d of 64 uplink frames", n)
		}
		for i := 0; i < 64; i++ {
			r.wan.Inject(0, wanFrame6(t, pkt6{src: remote(i), dst: host6IP, sport: 443, dport: uint16(6000 + i), proto: layers.IPProtocolUDP, payload: 100}))
		}
		r.step()
		got := r.drainLAN()
		if len(got) != 64 {
			t.Fatalf("%d workers: %d of 64 downlink frames; drops %v", workers, len(got), r.e.Totals().DropMap())
		}
		for _, b := range got {
			if [6]byte(b[0:6]) != hostMAC || [6]byte(b[6:12]) != routerMAC || be16(b[12:]) != hdr.EtherTypeIPv6 {
				t.Fatalf("downlink Ethernet %x", b[:14])
			}
			p := decodeIPv6(t, b[14:])
			if ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ip.HopLimit != 63 || [16]byte(ip.DstIP) != host6IP {
				t.Fatalf("downlink %v", p)
			}
		}
		if c := r.e.Totals(); c.IPv6Up != 65 || c.IPv6Down != 64 || c.TotalDrops() != 0 {
			t.Fatalf("%d workers: counters %+v", workers, c)
		}
		if workers == 2 {
			// Steering spread the 64 flows over both workers.
			for _, w := range r.e.workers {
				if w.Counters().IPv6Down == 0 {
					t.Fatalf("worker %d got no downlink flow", w.id)
				}
			}
		}
	}
}

// TestIPv6Exceptions: what is not routed is dropped by reason or goes to
// the control plane, and ICMPv6 errors go back where a router must send
// them.
func TestIPv6Exceptions(t *testing.T) {
	other := netip.MustParseAddr("2001:db8:0:2::5").As16() // in the delegated /48, not the LAN /64
	llHost := netip.MustParseAddr("fe80::10").As16()
	allNodes := netip.MustParseAddr("ff02::1").As16()
	cases := []struct {
		name    string
		fromLAN bool
		p       pkt6
		drop    Reason // or numReasons: none
		exc     bool   // to the control plane
		icmp    uint8  // ICMPv6 error type sent back (0: none)
		open    bool   // the LAN host opened the flow first
	}{
		{"martian source", true, pkt6{src: other, dst: remote6IP, proto: layers.IPProtocolUDP}, DropMartian, false, 0, false},
		{"link-local source off-link", true, pkt6{src: llHost, dst: remote6IP, proto: layers.IPProtocolUDP}, DropMartian, false, 0, false},
		{"to the router", true, pkt6{src: host6IP, dst: netip.MustParseAddr("2001:db8:0:1::1").As16(), proto: layers.IPProtocolICMPv6}, numReasons, true, 0, false},
		{"link-local", true, pkt6{src: llHost, dst: netip.MustParseAddr("fe80::1").As16(), proto: layers.IPProtocolICMPv6}, numReasons, true, 0, false},
		{"hop limit 1", true, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, hop: 1}, DropTTLExceeded, false, hdr.ICMP6TimeExceeded, false},
		{"too big", true, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, payload: 1492 - 48 + 1}, DropTooBig, false, hdr.ICMP6PacketTooBig, false},
		{"just fits", true, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, payload: 1492 - 48}, numReasons, false, 0, false},
		{"down: outside the LAN prefix", false, pkt6{src: remote6IP, dst: other, proto: layers.IPProtocolUDP}, DropNotForUs, false, 0, false},
		{"down: hop limit 1", false, pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolUDP, hop: 1}, DropTTLExceeded, false, hdr.ICMP6TimeExceeded, true},
		{"down: unsolicited", false, pkt6{src: remote6IP, dst: host6IP, sport: 53, dport: 9999, proto: layers.IPProtocolUDP}, DropFirewall, false, 0, false},
		{"down: source in the LAN prefix", false, pkt6{src: netip.MustParseAddr("2001:db8:0:1::20").As16(), dst: host6IP, proto: layers.IPProtocolICMPv6}, DropMartian, false, 0, false},
		{"down: link-local source", false, pkt6{src: netip.MustParseAddr("fe80::1").As16(), dst: host6IP, proto: layers.IPProtocolICMPv6}, DropMartian, false, 0, false},
		{"down: loopback source", false, pkt6{src: netip.MustParseAddr("::1").As16(), dst: host6IP, proto: layers.IPProtocolICMPv6}, DropMartian, false, 0, false},
		{"down: multicast", false, pkt6{src: netip.MustParseAddr("fe80::1").As16(), dst: allNodes, proto: layers.IPProtocolICMPv6}, numReasons, true, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rig6(t, 1, nil)
			if c.open {
				p := c.p
				p.src, p.dst, p.sport, p.dport, p.hop = c.p.dst, c.p.src, c.p.dport, c.p.sport, 0
				r.lan.Inject(0, lanFrame6(t, p))
				r.step()
				if len(r.drainWAN()) != 1 {
					t.Fatal("the opening packet did not go up")
				}
				// Count only the case itself.
				r.e.workers[0].c = Counters{}
				r.e.workers[0].pub.publish(&r.e.workers[0].c)
			}
			if c.fromLAN {
				r.lan.Inject(0, lanFrame6(t, c.p))
			} else {
				r.wan.Inject(0, wanFrame6(t, c.p))
			}
			r.step()
			tot := r.e.Totals()
			if c.drop != numReasons && tot.Drops[c.drop] != 1 {
				t.Fatalf("drops %v, want %s", tot.DropMap(), c.drop)
			}
			if c.drop == numReasons && tot.TotalDrops() != 0 {
				t.Fatalf("drops %v, want none", tot.DropMap())
			}
			if got := tot.Exception; got != map[bool]uint64{true: 1}[c.exc] {
				t.Fatalf("%d exceptions", got)
			}
			var back [][]byte
			if c.fromLAN {
				back = r.drainLAN()
			} else {
				for _, b := range r.drainWAN() {
					back = append(back, append(make([]byte, 14), wan6Payload(t, b)...))
				}
			}
			if c.icmp == 0 {
				if !c.fromLAN || c.exc || c.drop != numReasons {
					if len(back) != 0 {
						t.Fatalf("%d frames sent back", len(back))
					}
				}
				return
			}
			if len(back) != 1 {
				t.Fatalf("%d frames back, want an ICMPv6 error", len(back))
			}
			p := decodeIPv6(t, back[0][14:])
			ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			ic := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
			if ic == nil || ic.TypeCode.Type() != c.icmp || [16]byte(ip.DstIP) != c.p.src || [16]byte(ip.SrcIP) != netip.MustParseAddr("2001:db8:0:1::1").As16() {
				t.Fatalf("error %v", p)
			}
			if len(back[0][14:]) > hdr.ICMP6MinMTU {
				t.Fatalf("ICMPv6 error of %d bytes", len(back[0][14:]))
			}
			if c.icmp == hdr.ICMP6PacketTooBig {
				if mtu := be32(ic.Payload[0:4]); mtu != 1492 {
					t.Fatalf("packet too big says MTU %d", mtu)
				}
			}
			if c.fromLAN && [6]byte(back[0][0:6]) != hostMAC {
				t.Fatalf("error to %x", back[0][0:6])
			}
		})
	}
}

func be32(b []byte) uint32 { return uint32(be16(b))<<16 | uint32(be16(b[2:])) }

// TestIPv6Off: without a LAN prefix, IPv6 from the LAN goes to the host
// stack as before and IPv6 from the session is dropped as unsupported;
// without IPv6CP open the uplink has no session.
func TestIPv6Off(t *testing.T) {
	r := newRig(t, 1, nil)
	r.lan.Inject(0, lanFrame6(t, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP}))
	r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolUDP}))
	r.step()
	if c := r.e.Totals(); c.Exception != 1 || c.Drops[DropUnsupported] != 1 || c.IPv6Up+c.IPv6Down != 0 {
		t.Fatalf("counters %+v", c)
	}
	// Link-scope IPv6 from the session (a DHCPv6 reply bringing the
	// prefix) reaches the control plane before there is a LAN prefix.
	r.wan.Inject(0, wanFrame6(t, pkt6{src: netip.MustParseAddr("fe80::1").As16(), dst: netip.MustParseAddr("fe80::2").As16(),
		sport: 547, dport: 546, proto: layers.IPProtocolUDP}))
	r.step()
	if c := r.e.Totals(); c.Exception != 2 {
		t.Fatalf("link-local from the session not for the control plane: %+v", c)
	}
	r = rig6(t, 1, nil)
	r.e.SetSession(testSession()) // IPv6CP not open
	r.lan.Inject(0, lanFrame6(t, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP}))
	r.step()
	if c := r.e.Totals(); c.Drops[DropNoSession] != 1 || len(r.drainWAN()) != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestIPv6UnresolvedToControl: a downlink packet for a host with no
// neighbour entry goes to the control plane as Ethernet+IPv6.
func TestIPv6UnresolvedToControl(t *testing.T) {
	r := rig6(t, 1, nil)
	quiet := netip.MustParseAddr("2001:db8:0:1::99").As16()
	r.lan.Inject(0, lanFrame6(t, pkt6{src: quiet, dst: remote6IP, proto: layers.IPProtocolUDP}))
	r.step()
	r.drainWAN()
	r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: quiet, proto: layers.IPProtocolUDP, payload: 10}))
	r.step()
	var got [][]byte
	r.e.PollControl(func(d Dir, b []byte) {
		if d == Unresolved {
			got = append(got, append([]byte(nil), b...))
		}
	})
	if len(got) != 1 || be16(got[0][12:]) != hdr.EtherTypeIPv6 || hdr.IPv6(got[0][14:]).Dst() != quiet {
		t.Fatalf("unresolved frames %x; counters %+v", got, r.e.Totals())
	}
}

// TestIPv6MarkCE: the shapers' CE marking finds an IPv6 packet's ECN bits
// in its traffic class (no checksum to fix), and leaves not-ECT alone.
func TestIPv6MarkCE(t *testing.T) {
	f := nic.NewFrame()
	b := serialize(t, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, tc: 0x02}.layers(t)...) // ECT(0)
	f.SetData(b)
	if !markCE(f.Data()) || hdr.IPv6(f.Data())[1]>>4&3 != 3 {
		t.Fatalf("not marked: %x", f.Data()[:4])
	}
	p := decodeIPv6(t, f.Data())
	if ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ip.TrafficClass != 0x03 {
		t.Fatalf("traffic class %#x", ip.TrafficClass)
	}
	f.SetData(serialize(t, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP}.layers(t)...))
	if markCE(f.Data()) {
		t.Fatal("a not-ECT packet was marked")
	}
}

// TestNeighbors6: the table finds what it holds and nothing else, at any size.
func TestNeighbors6(t *testing.T) {
	m := map[hdr.Addr6][6]byte{}
	for i := 0; i < 300; i++ {
		a := lan6Prefix
		a[13], a[14], a[15] = 1, byte(i>>8), byte(i)
		m[a] = [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)}
	}
	n := NewNeighbors6(m)
	if n.Len() != 300 {
		t.Fatalf("len %d", n.Len())
	}
	for a, mac := range m {
		if got, ok := n.Lookup(&a); !ok || got != mac {
			t.Fatalf("lookup %x: %x %v", a, got, ok)
		}
	}
	for _, a := range []hdr.Addr6{{}, remote6IP, lan6Prefix} {
		if _, ok := n.Lookup(&a); ok {
			t.Fatalf("found %x", a)
		}
	}
	if len(n.Map()) != 300 {
		t.Fatal("map lost entries")
	}
	// Hosts that differ in a few bits of the interface id (numbered
	// in sequence, or by IPv4-like suffixes) must not cluster: every
	// entry lies close to its home slot.
	for _, shift := range []int{0, 8, 24} {
		m := map[hdr.Addr6][6]byte{}
		for i := 0; i < 10000; i++ {
			a := lan6Prefix
			binary.BigEndian.PutUint32(a[12:], 0xc0a80000|uint32(i)<<shift)
			m[a] = hostMAC
		}
		n := NewNeighbors6(m)
		worst := 0
		for k := range m {
			home := neigh6Hash(&k) & n.mask
			i := n.index(&k)
			worst = max(worst, int((i-home)&n.mask))
		}
		if worst > 64 {
			t.Fatalf("ids differing in bits %d..: an entry %d slots from home", shift, worst)
		}
	}
}

func TestNewLAN6(t *testing.T) {
	l, err := NewLAN6(netip.MustParseAddr("2001:db8:0:1:ffff::").As16(), 64, routerMAC)
	if err != nil || l.Prefix != lan6Prefix || l.Router != netip.MustParseAddr("2001:db8:0:1::1").As16() ||
		l.LinkLocal != netip.MustParseAddr("fe80::ff:fe00:1").As16() {
		t.Fatalf("%+v %v", l, err)
	}
	for _, bad := range []struct {
		p    string
		bits int
	}{{"2001:db8::", 65}, {"2001:db8::", 0}, {"fe80::", 64}, {"ff02::", 16}, {"::", 48}} {
		if _, err := NewLAN6(netip.MustParseAddr(bad.p).As16(), bad.bits, routerMAC); err == nil {
			t.Errorf("%s/%d accepted", bad.p, bad.bits)
		}
	}
}

// TestIPv6ZeroAlloc: worker steps forwarding IPv6 both ways through both
// shapers over 256 flows, and making an ICMPv6 error, allocate nothing.
func TestIPv6ZeroAlloc(t *testing.T) {
	r := rig6(t, 2, func(c *Config) { c.Up.Rate, c.Down.Rate = 1e10, 1e10 })
	var up [2][][]byte
	var down [][]byte
	for i := 0; i < 256; i++ {
		h := host6IP
		h[14], h[15] = 1, byte(i)
		r.e.SetNeighbor6(h, [6]byte{2, 0, 0, 0, 1, byte(i)})
		up[i%2] = append(up[i%2], lanFrame6(t, pkt6{src: h, dst: remote6IP, sport: uint16(1000 + i), dport: 443, proto: layers.IPProtocolUDP, payload: 20}))
		down = append(down, wanFrame6(t, pkt6{src: remote6IP, dst: h, sport: 443, dport: uint16(1000 + i), proto: layers.IPProtocolUDP, payload: 20}))
	}
	for q := 0; q < 2; q++ { // the hosts open their flows (the firewall)
		for _, b := range up[q] {
			r.lan.Inject(q, b)
		}
	}
	r.step()
	r.drainWAN()
	for q := 0; q < 2; q++ {
		r.lan.Replay(q, up[q])
		r.lan.Sink(q, nil)
		r.wan.Sink(q, nil)
	}
	r.wan.Replay(0, down)
	step := func() { r.clock.t += 1e6; r.step() } // 1 ms a step: the shapers release
	for i := 0; i < 20; i++ {
		step()
	}
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Fatalf("IPv6 worker step allocates %.1f times", a)
	}
	if c := r.e.Totals(); c.IPv6Up == 0 || c.IPv6Down == 0 || c.TotalDrops() != 0 {
		t.Fatalf("counters %+v drops %v", c, c.DropMap())
	}
	lf := lanFrame6(t, pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolUDP, payload: 1400})
	f := nic.NewFrame()
	router := r.e.LAN6().Router
	if a := testing.AllocsPerRun(1000, func() {
		f.SetData(lf[14:])
		makeICMP6Error(f, &router, hdr.ICMP6PacketTooBig, 0, 1492)
	}); a != 0 {
		t.Fatalf("ICMPv6 error allocs %.1f", a)
	}
	n := r.e.Neighbors6()
	if a := testing.AllocsPerRun(1000, func() { n.Lookup(&host6IP) }); a != 0 {
		t.Fatalf("neighbour lookup allocs %.1f", a)
	}
}
