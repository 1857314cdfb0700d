package control

import (
	"encoding/binary"
	"net/netip"
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

// ctlFuzz is a control plane over an engine that is not started. The
// fuzz targets call its handler on their own goroutine, not through the
// exception queue, and step the engine with Poll: what an input did is
// done when the next one comes.
type ctlFuzz struct {
	lan, wan, host *memport.Port
	e              *dataplane.Engine
	ctl            *Control
	l6             *dataplane.LAN6
	session        bool // the session is up (IPv4 and IPv6)
	buf            []byte
}

var fuzzWANIfID = [8]byte{0, 0, 0, 0, 0, 0, 0x12, 0x34}

func newCtlFuzz(tb testing.TB, withHost bool) *ctlFuzz {
	tb.Helper()
	r := &ctlFuzz{lan: memport.New("lan", 1, 1024), wan: memport.New("wan", 1, 1024), buf: make([]byte, nic.BufSize)}
	r.e = memEngine(tb, r.lan, r.wan)
	var err error
	if r.l6, err = dataplane.NewLAN6(lan6Prefix, 64, routerMAC); err != nil {
		tb.Fatal(err)
	}
	r.e.SetLAN6(r.l6)
	r.setSession(true)
	cfg := Config{WANMAC: wanMAC, RA: RAConfig{DNS: []hdr.Addr6{remote6IP}}, WAN6: func([]byte) {}}
	if withHost {
		r.host = memport.New("host", 1, 1024)
		cfg.Host = r.host
	}
	r.ctl = New(r.e, cfg)
	return r
}

func (r *ctlFuzz) setSession(up bool) {
	if up == r.session {
		return
	}
	r.session = up
	if !up {
		r.e.SetSession(nil)
		return
	}
	s := testSession(true)
	s.LocalIfID = fuzzWANIfID
	r.e.SetSession(s)
}

// handle gives b to the control plane as the exception goroutine would:
// a frame holding a copy of b behind nic.Headroom, in a reused buffer
// that still holds the previous frame's bytes.
func (r *ctlFuzz) handle(d dataplane.Dir, b []byte) {
	f := nic.Frame{Buf: r.buf, Off: nic.Headroom}
	if !f.SetData(b) {
		return
	}
	r.ctl.handle(d, &f)
}

// pump runs what Control.Run does between frames (hold expiry, RAs,
// neighbour sweep), lets worker 0 send what the control plane queued, and
// checks and discards every frame that left on a port.
func (r *ctlFuzz) pump(t *testing.T) {
	now := time.Now()
	r.ctl.hold.expire(now)
	r.ctl.hold6.expire(now)
	r.ctl.advertise(now)
	r.ctl.sweepNeighbors(now)
	for sim, i := dataplane.Simulate(r.e), 0; i < 4 && sim.Poll() > 0; i++ {
	}
	r.lan.Drain(0, func(b []byte) {
		if len(b) < hdr.EthernetLen || [6]byte(b[6:12]) != routerMAC {
			t.Fatalf("LAN frame not from the router's MAC: %x", b[:min(len(b), 14)])
		}
	})
	r.wan.Drain(0, func(b []byte) {
		if len(b) < hdr.EthernetLen || [6]byte(b[6:12]) != wanMAC {
			t.Fatalf("WAN frame not from the WAN MAC: %x", b[:min(len(b), 14)])
		}
	})
	if r.host != nil {
		r.host.Drain(0, func([]byte) {})
	}
}

// check asserts the control plane's invariants: the neighbour tables hold
// only unicast, non-zero LAN addresses at unicast, non-zero MACs; the
// hold queues stay within HoldHosts, HoldPerHost and their free-list
// bound, and their books balance; the rate-limit maps stay bounded.
func (r *ctlFuzz) check(t *testing.T) {
	t.Helper()
	cfg := r.e.Config()
	mask := cfg.LANMask()
	for ip, mac := range r.e.Neighbors().Map() {
		// The subnet's network and broadcast addresses are no host's
		// (RFC 919, RFC 922), but on a /31 both are (RFC 3021).
		netOrBcast := cfg.LANBits <= 30 && (ip == cfg.LANNet || ip == cfg.LANNet|^mask)
		if ip == 0 || ip&mask != cfg.LANNet || ip == cfg.RouterAddr || netOrBcast {
			t.Errorf("IPv4 neighbour %s is not a unicast LAN host address", netIP(ip))
		}
		if !unicastMAC(mac) {
			t.Errorf("IPv4 neighbour %s at MAC %x", netIP(ip), mac)
		}
	}
	for ip, mac := range r.e.Neighbors6().Map() {
		// The subnet-router anycast address (the prefix with a zero
		// interface id, RFC 4291 2.6.1) is the router's, no host's.
		anycast := binary.BigEndian.Uint64(ip[8:]) == 0
		if ip == (hdr.Addr6{}) || hdr.IsMulticast6(&ip) || !r.l6.Contains(&ip) || ip == r.l6.Router || anycast {
			t.Errorf("IPv6 neighbour %s is not a unicast LAN host address", netip.AddrFrom16(ip))
		}
		if !unicastMAC(mac) {
			t.Errorf("IPv6 neighbour %s at MAC %x", netip.AddrFrom16(ip), mac)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if n := r.e.Neighbors().Len(); n > MaxNeighbors {
		t.Fatalf("%d IPv4 neighbours, at most %d", n, MaxNeighbors)
	}
	if n := r.e.Neighbors6().Len(); n > MaxNeighbors {
		t.Fatalf("%d IPv6 neighbours, at most %d", n, MaxNeighbors)
	}
	holdBounded(t, "IPv4", &r.ctl.hold)
	holdBounded(t, "IPv6", &r.ctl.hold6)
	if st := r.ctl.Stats(); st.Held != st.HeldSent+st.HeldDropped+uint64(st.HeldWaiting) {
		t.Fatalf("hold books: held %d != sent %d + dropped %d + waiting %d", st.Held, st.HeldSent, st.HeldDropped, st.HeldWaiting)
	}
	c := r.ctl
	c.arpMu.Lock()
	defer c.arpMu.Unlock()
	if len(c.lastARP) > 4097 || len(c.v6.lastNS) > 4097 || len(c.lastMove) > MaxNeighbors || len(c.lastMove6) > MaxNeighbors {
		t.Fatalf("rate-limit maps grew: lastARP %d lastNS %d lastMove %d lastMove6 %d",
			len(c.lastARP), len(c.v6.lastNS), len(c.lastMove), len(c.lastMove6))
	}
}

func unicastMAC(m [6]byte) bool { return m[0]&1 == 0 && m != [6]byte{} }

func holdBounded[K comparable](t *testing.T, name string, h *holdQueue[K]) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.m) > HoldHosts {
		t.Fatalf("%s hold queue: %d addresses wait, at most %d", name, len(h.m), HoldHosts)
	}
	for k, e := range h.m {
		if len(e.frames) == 0 || len(e.frames) > HoldPerHost {
			t.Fatalf("%s hold queue: %v holds %d frames, want 1..%d", name, k, len(e.frames), HoldPerHost)
		}
		for _, b := range e.frames {
			if len(b) > nic.MaxData || cap(b) > nic.BufSize {
				t.Fatalf("%s hold queue: a held frame of %d bytes (cap %d)", name, len(b), cap(b))
			}
		}
	}
	if len(h.free) > HoldPerHost*HoldHosts {
		t.Fatalf("%s hold queue: %d free buffers, at most %d", name, len(h.free), HoldPerHost*HoldHosts)
	}
}

// Frames for the seeds.

var (
	bcastMAC  = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	otherMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x42}
	quietIP   = ip4(192, 168, 1, 77)
	quiet6IP  = netip.MustParseAddr("2001:db8:0:1::77").As16()
	quietMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x77}
	dhcp6Srv  = netip.MustParseAddr("fe80::1").As16()
	fuzzWANLL = WANLinkLocal(fuzzWANIfID)
)

// icmp6Frame is an ICMPv6 message (type typ, body after the checksum)
// from src at srcMAC to dst at dstMAC, hop limit 255.
func icmp6Frame(tb testing.TB, srcMAC, dstMAC [6]byte, src, dst hdr.Addr6, typ uint8, body []byte) []byte {
	eth := &layers.Ethernet{SrcMAC: srcMAC[:], DstMAC: dstMAC[:], EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: src[:], DstIP: dst[:]}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		tb.Fatal(err)
	}
	return serialize(tb, eth, ip, ic, gopacket.Payload(body))
}

// llOpt is an ND link-layer address option (1 source, 2 target).
func llOpt(typ uint8, mac [6]byte) []byte { return append([]byte{typ, 1}, mac[:]...) }

// unresolvedFrame is what a worker hands the control plane for a LAN
// host it has no MAC for: Ethernet (zero destination) and the packet.
func unresolvedFrame(et uint16, ipb []byte) []byte {
	b := make([]byte, hdr.EthernetLen, hdr.EthernetLen+len(ipb))
	copy(b[6:12], routerMAC[:])
	binary.BigEndian.PutUint16(b[12:], et)
	return append(b, ipb...)
}

func controlLANSeeds(f *testing.F) {
	l6, err := dataplane.NewLAN6(lan6Prefix, 64, routerMAC)
	if err != nil {
		f.Fatal(err)
	}
	allRouters, allNodes := ndp.AllRouters(), ndp.AllNodes()
	add := func(host bool, fs ...[]byte) {
		for len(fs) < 3 {
			fs = append(fs, nil)
		}
		f.Add(fs[0], fs[1], fs[2], host)
	}
	for _, host := range []bool{false, true} {
		// ARP: a request for the router (learned, answered), a reply to
		// it, a gratuitous ARP moving the address, then a quick second
		// move (locktime).
		add(host, arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP),
			arpFrame(2, routerMAC, hostMAC, hostIP, routerIP),
			arpFrame(1, bcastMAC, otherMAC, hostIP, hostIP))
		add(host, arpFrame(2, routerMAC, otherMAC, hostIP+7, routerIP),
			arpFrame(2, routerMAC, hostMAC, hostIP+7, routerIP),
			arpFrame(1, bcastMAC, quietMAC, quietIP, quietIP))
		// ARP that must teach nothing: a probe from 0.0.0.0, the router's
		// own address, the subnet broadcast and network addresses, a
		// multicast or zero sender MAC, a sender outside the LAN, and a
		// truncated one.
		add(host, arpFrame(1, bcastMAC, hostMAC, 0, routerIP),
			arpFrame(1, bcastMAC, hostMAC, routerIP, routerIP),
			arpFrame(1, bcastMAC, hostMAC, ip4(192, 168, 1, 255), routerIP))
		add(host, arpFrame(1, bcastMAC, hostMAC, lanNet, routerIP),
			arpFrame(1, bcastMAC, [6]byte{0x01, 0, 0x5e, 0, 0, 1}, hostIP+3, routerIP),
			arpFrame(1, bcastMAC, [6]byte{}, hostIP+4, routerIP))
		add(host, arpFrame(1, bcastMAC, hostMAC, remoteIP, routerIP),
			arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP)[:30])
		// ND: an NS for each router address (learned, answered), a DAD NS
		// from ::, a solicited NA, an unsolicited NA with and without
		// override, from the subnet-router anycast address and the router's.
		add(host, hostNS(l6.Router), hostNS(l6.LinkLocal),
			ndp.AppendNS(nil, hdr.Addr6{}, l6.Router, hostMAC))
		ns := ndp.Message{Src: l6.LinkLocal, SrcMAC: routerMAC, HasSourceLL: true, SourceLL: routerMAC}
		add(host, ndp.AppendNA(nil, &ns, quiet6IP, quietMAC, false),
			ndp.AppendUnsolicitedNA(nil, host6IP, otherMAC, false),
			icmp6Frame(f, hostMAC, routerMAC, host6IP, routerLL6, hdr.ICMP6NeighborAdv,
				append(append([]byte{0x40, 0, 0, 0}, host6IP[:]...), llOpt(2, quietMAC)...))) // no override
		add(host, ndp.AppendUnsolicitedNA(nil, lan6Prefix, otherMAC, false),
			ndp.AppendUnsolicitedNA(nil, l6.Router, otherMAC, true),
			icmp6Frame(f, hostMAC, routerMAC, host6IP, l6.Router, hdr.ICMP6NeighborSol,
				append(append([]byte{0, 0, 0, 0}, l6.Router[:]...), llOpt(1, [6]byte{0x33, 0x33, 0, 0, 0, 1})...)))
		// NS that must teach nothing: a zero source link-layer address,
		// from the subnet-router anycast address, from outside the prefix.
		nsBody := func(mac [6]byte) []byte { return append(append([]byte{0, 0, 0, 0}, l6.Router[:]...), llOpt(1, mac)...) }
		add(host, icmp6Frame(f, hostMAC, routerMAC, netip.MustParseAddr("2001:db8:0:1::66").As16(), l6.Router, hdr.ICMP6NeighborSol, nsBody([6]byte{})),
			icmp6Frame(f, hostMAC, routerMAC, lan6Prefix, l6.Router, hdr.ICMP6NeighborSol, nsBody(hostMAC)),
			icmp6Frame(f, hostMAC, routerMAC, remote6IP, l6.Router, hdr.ICMP6NeighborSol, nsBody(hostMAC)))
		// RS with and without a source link-layer option (and from ::),
		// an RA from a LAN host.
		add(host, icmp6Frame(f, hostMAC, ndp.AllRoutersMAC(), host6IP, allRouters, hdr.ICMP6RouterSol, append([]byte{0, 0, 0, 0}, llOpt(1, hostMAC)...)),
			icmp6Frame(f, hostMAC, ndp.AllRoutersMAC(), hdr.Addr6{}, allRouters, hdr.ICMP6RouterSol, []byte{0, 0, 0, 0}),
			ndp.AppendRA(nil, &ndp.RA{SrcMAC: hostMAC, Src: netip.MustParseAddr("fe80::10").As16(), Dst: allNodes, DstMAC: ndp.AllNodesMAC(),
				CurHopLimit: 64, RouterLifetime: time.Hour, Prefixes: []ndp.PrefixInfo{{Prefix: lan6Prefix, Bits: 64, OnLink: true, Autonomous: true, Valid: time.Hour, Preferred: time.Hour}}}))
		// Echo to the router: IPv4 on its LAN and session addresses, a
		// fragment, ICMPv6 on its global and link-local addresses.
		frag := lanFrame(f, pkt{src: hostIP, dst: routerIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 1, payload: 16})
		binary.BigEndian.PutUint16(frag[14+6:], 0x2000)
		hdr.IPv4(frag[14:]).ComputeChecksum()
		add(host, lanFrame(f, pkt{src: hostIP, dst: routerIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 1, payload: 16}),
			lanFrame(f, pkt{src: hostIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 2, payload: 56}), frag)
		add(host, lanFrame6(f, pkt6{src: host6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6, echoID: 3, payload: 12}),
			lanFrame6(f, pkt6{src: netip.MustParseAddr("fe80::10").As16(), dst: routerLL6, proto: layers.IPProtocolICMPv6, echoID: 4}),
			lanFrame6(f, pkt6{src: host6IP, dst: allNodes, proto: layers.IPProtocolICMPv6, echoID: 5}))
		// Other exceptions (DHCP to the router) and runts.
		add(host, lanFrame(f, pkt{src: 0, dst: 0xffffffff, sport: 68, dport: 67, proto: layers.IPProtocolUDP, payload: 240}),
			[]byte{1, 2, 3}, arpFrame(1, bcastMAC, hostMAC, hostIP, routerIP)[:14])
	}
}

// FuzzControlLAN feeds the control plane LAN exception frames, three at a
// time (ARP, ND, RS/RA, echo to the router, anything), without and with a
// host stack: it must never panic, learn only unicast LAN hosts at
// unicast MACs, and keep its hold queues and maps within their bounds.
func FuzzControlLAN(f *testing.F) {
	controlLANSeeds(f)
	rigs := [2]*ctlFuzz{newCtlFuzz(f, false), newCtlFuzz(f, true)}
	f.Fuzz(func(t *testing.T, a, b, c []byte, host bool) {
		i := 0
		if host {
			i = 1
		}
		r := rigs[i]
		// State carries over between inputs (sequences matter); after a
		// failure the next input starts afresh, so one bad state does not
		// fail every input after it.
		defer func() {
			if t.Failed() {
				rigs[i] = newCtlFuzz(t, host)
			}
		}()
		for _, fr := range [][]byte{a, b, c} {
			if fr == nil {
				continue
			}
			r.handle(dataplane.FromLAN, fr)
			r.pump(t)
		}
		r.check(t)
	})
}

func controlWANSeeds(f *testing.F) {
	l6, err := dataplane.NewLAN6(lan6Prefix, 64, routerMAC)
	if err != nil {
		f.Fatal(err)
	}
	// dirs: two bits per frame (0 FromWANIP, 1 Unresolved, 2 FromLAN,
	// 3 Unresolved); bit 6 takes the session down for the input.
	const (
		wip, unres, lan = 0, 1, 2
	)
	dirs := func(d ...uint8) uint8 {
		var v uint8
		for i, x := range d {
			v |= x << (2 * i)
		}
		return v
	}
	add := func(d uint8, fs ...[]byte) {
		for len(fs) < 3 {
			fs = append(fs, nil)
		}
		f.Add(fs[0], fs[1], fs[2], d)
	}
	ip4b := func(p pkt) []byte { return serialize(f, p.layers(f)...) }
	ip6b := func(p pkt6) []byte { return serialize(f, p.layers(f)...) }
	// Echo over the session: IPv4 to the session address (TTL 1 too),
	// IPv6 to the LAN prefix's router address and the WAN link-local.
	echo4 := ip4b(pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 7, payload: 32})
	add(dirs(wip, wip, wip), echo4,
		ip6b(pkt6{src: remote6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6, echoID: 8, payload: 20}),
		ip6b(pkt6{src: remote6IP, dst: fuzzWANLL, proto: layers.IPProtocolICMPv6, echoID: 9}))
	add(dirs(wip, wip, wip)|1<<6, echo4,
		ip6b(pkt6{src: remote6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6, echoID: 8, payload: 20}))
	bad := append([]byte(nil), echo4...)
	bad[len(bad)-1] ^= 0xff // ICMP checksum wrong
	frag := append([]byte(nil), echo4...)
	binary.BigEndian.PutUint16(frag[6:], 0x2000)
	hdr.IPv4(frag).ComputeChecksum()
	add(dirs(wip, wip, wip), ip4b(pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 7, ttl: 1}), bad, frag)
	// DHCPv6 to the WAN link-local (to WAN6), an echo reply and a
	// truncated IPv6 header.
	add(dirs(wip, wip, wip), ip6b(pkt6{src: dhcp6Srv, dst: fuzzWANLL, sport: 547, dport: 546, proto: layers.IPProtocolUDP, payload: 30}),
		ip6b(pkt6{src: remote6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoReply}),
		ip6b(pkt6{src: remote6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6})[:30])
	// Held while unresolved, then the host answers ARP / NA.
	down4 := unresolvedFrame(hdr.EtherTypeIPv4, ip4b(pkt{src: remoteIP, dst: quietIP, sport: 53, dport: 4000, proto: layers.IPProtocolUDP, payload: 30}))
	add(dirs(unres, unres, lan), down4, down4, arpFrame(2, routerMAC, quietMAC, quietIP, routerIP))
	down6 := unresolvedFrame(hdr.EtherTypeIPv6, ip6b(pkt6{src: remote6IP, dst: quiet6IP, sport: 443, dport: 5000, proto: layers.IPProtocolUDP, payload: 10}))
	ns := ndp.Message{Src: l6.LinkLocal, SrcMAC: routerMAC, HasSourceLL: true, SourceLL: routerMAC}
	add(dirs(unres, unres, lan), down6, down6, ndp.AppendNA(nil, &ns, quiet6IP, quietMAC, false))
	// Unresolved frames that are short or for odd destinations.
	add(dirs(unres, unres, unres), down4[:20], down6[:40],
		unresolvedFrame(hdr.EtherTypeIPv4, ip4b(pkt{src: remoteIP, dst: ip4(192, 168, 1, 255), sport: 53, dport: 4000, proto: layers.IPProtocolUDP})))
	add(dirs(unres, unres, unres),
		unresolvedFrame(hdr.EtherTypeIPv6, ip6b(pkt6{src: remote6IP, dst: hdr.Addr6{}, proto: layers.IPProtocolUDP})),
		unresolvedFrame(hdr.EtherTypeIPv6, ip6b(pkt6{src: remote6IP, dst: ndp.AllNodes(), proto: layers.IPProtocolUDP})),
		unresolvedFrame(hdr.EtherTypeIPv4, ip4b(pkt{src: remoteIP, dst: 0, sport: 53, dport: 4000, proto: layers.IPProtocolUDP})))
}

// FuzzControlWAN feeds the control plane what the workers hand it from
// the session: IPv4 and IPv6 for the router (FromWANIP: echo, DHCPv6,
// anything), and downlink frames for LAN hosts not resolved yet
// (Unresolved, held while ARP/ND asks), mixed with LAN frames that
// resolve them. It must never panic and keep its bounds.
func FuzzControlWAN(f *testing.F) {
	controlWANSeeds(f)
	r := newCtlFuzz(f, false)
	f.Fuzz(func(t *testing.T, a, b, c []byte, dirs uint8) {
		defer func() {
			if t.Failed() {
				r = newCtlFuzz(t, false)
			}
		}()
		r.setSession(dirs&(1<<6) == 0)
		for i, fr := range [][]byte{a, b, c} {
			if fr == nil {
				continue
			}
			d := [4]dataplane.Dir{dataplane.FromWANIP, dataplane.Unresolved, dataplane.FromLAN, dataplane.Unresolved}[dirs>>(2*i)&3]
			if d == dataplane.Unresolved && len(fr) >= hdr.EthernetLen {
				// The worker writes an Unresolved frame's Ethernet header
				// (worker.unresolved, inbound6): no destination yet, the
				// router's MAC, IPv4 or IPv6.
				fr = append([]byte(nil), fr...)
				eth := hdr.Ethernet(fr)
				if eth.Type() != hdr.EtherTypeIPv6 {
					eth.SetType(hdr.EtherTypeIPv4)
				}
				eth.SetAddrs([6]byte{}, routerMAC)
			}
			r.handle(d, fr)
			r.pump(t)
		}
		r.check(t)
	})
}
