package control

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/ndp"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// ctl6Rig is a running one-worker engine with IPv6 on and its control
// plane.
type ctl6Rig struct {
	lan, wan *memport.Port
	e        *dataplane.Engine
	ctl      *Control
	l6       *dataplane.LAN6
	wan6     chan []byte
}

func newCtl6Rig(t *testing.T, sessionIPv6 bool) *ctl6Rig {
	r := &ctl6Rig{lan: memport.New("lan", 1, 256), wan: memport.New("wan", 1, 256), wan6: make(chan []byte, 8)}
	r.e = memEngine(t, r.lan, r.wan)
	s := testSession(sessionIPv6)
	s.LocalIfID = [8]byte{0, 0, 0, 0, 0, 0, 0x12, 0x34}
	r.e.SetSession(s)
	var err error
	if r.l6, err = dataplane.NewLAN6(lan6Prefix, 64, routerMAC); err != nil {
		t.Fatal(err)
	}
	r.e.SetLAN6(r.l6)
	r.ctl = New(r.e, Config{WANMAC: wanMAC, RA: RAConfig{DNS: []hdr.Addr6{remote6IP}},
		WAN6: func(ip []byte) { r.wan6 <- append([]byte(nil), ip...) }})
	startWith(t, r.e, r.ctl.Run)
	return r
}

// lanFrames drains the LAN and returns the IPv6 frames that parse as
// ICMPv6 (ND, echo) and the other IPv6 frames.
func (r *ctl6Rig) lanFrames() (icmp []ndp.Message, other [][]byte) {
	r.lan.Drain(0, func(b []byte) {
		if hdr.Ethernet(b).Type() != hdr.EtherTypeIPv6 {
			return
		}
		c := append([]byte(nil), b...)
		if m, err := ndp.Parse(c); err == nil {
			icmp = append(icmp, m)
		} else {
			other = append(other, c)
		}
	})
	return icmp, other
}

// waitRA waits for an RA on the LAN that satisfies ok and returns it.
func (r *ctl6Rig) waitRA(t *testing.T, what string, ok func(m *ndp.Message, ra *ndp.RA) bool) ndp.RA {
	t.Helper()
	var got ndp.RA
	waitFor(t, what, 5*time.Second, func() bool {
		ms, _ := r.lanFrames()
		for i := range ms {
			if ms[i].Type != hdr.ICMP6RouterAdv {
				continue
			}
			ra, err := ndp.ParseRA(ms[i].Body)
			if err != nil {
				t.Fatalf("RA does not parse: %v", err)
			}
			if ok(&ms[i], &ra) {
				got = ra
				return true
			}
		}
		return false
	})
	return got
}

// hostNS is an NS from the LAN host (global address, its MAC in the
// source link-layer option) for target.
func hostNS(target hdr.Addr6) []byte {
	b := ndp.AppendNS(nil, host6IP, target, hostMAC)
	copy(b[0:6], routerMAC[:]) // unicast to the router, as a host revalidating does
	return b
}

// TestControl6Advertises: the router advertises the LAN prefix for SLAAC
// with the DNS servers, as the default router only while the session
// carries IPv6, answers a router solicitation, and after a prefix change
// keeps announcing the old prefix with lifetimes 0 so hosts deprecate it.
func TestControl6Advertises(t *testing.T) {
	r := newCtl6Rig(t, false)
	ra := r.waitRA(t, "the first RA", func(m *ndp.Message, ra *ndp.RA) bool { return true })
	if len(ra.Prefixes) != 1 || ra.Prefixes[0].Prefix != lan6Prefix || ra.Prefixes[0].Bits != 64 ||
		!ra.Prefixes[0].Autonomous || !ra.Prefixes[0].OnLink || ra.Prefixes[0].Valid != 24*time.Hour {
		t.Fatalf("RA prefixes %+v", ra.Prefixes)
	}
	if ra.RouterLifetime != 0 || len(ra.RDNSS) != 1 || ra.RDNSS[0] != remote6IP || ra.SrcMAC != routerMAC {
		t.Fatalf("RA without IPv6 on the session: %+v", ra)
	}
	// IPv6CP opens: an RA at once makes the router the default router.
	r.e.SetSession(testSession(true))
	r.waitRA(t, "an RA with a router lifetime", func(m *ndp.Message, ra *ndp.RA) bool {
		return ra.RouterLifetime == 1800*time.Second && m.Src == r.l6.LinkLocal && m.Dst == ndp.AllNodes()
	})
	// A host solicits: the answer goes to it.
	rs := rsFrame(t)
	r.lan.Inject(0, rs)
	r.waitRA(t, "the solicited RA", func(m *ndp.Message, ra *ndp.RA) bool { return m.Dst == host6IP && m.DstMAC == hostMAC })
	if st := r.ctl.Stats6(); st.RSReceived != 1 || st.RASent < 3 {
		t.Fatalf("stats %+v", st)
	}
	// Renumbered: the new prefix, and the old one with lifetimes 0.
	next := netip.MustParseAddr("2001:db8:0:2::").As16()
	l, _ := dataplane.NewLAN6(next, 64, routerMAC)
	r.e.SetLAN6(l)
	ra = r.waitRA(t, "the renumbering RA", func(m *ndp.Message, ra *ndp.RA) bool { return len(ra.Prefixes) == 2 })
	if ra.Prefixes[0].Prefix != next || ra.Prefixes[0].Preferred == 0 || ra.Prefixes[1].Prefix != lan6Prefix ||
		ra.Prefixes[1].Valid != 0 || ra.Prefixes[1].Preferred != 0 {
		t.Fatalf("renumbering RA prefixes %+v", ra.Prefixes)
	}
}

// rsFrame is a router solicitation from the host (with its link-layer
// address), built with gopacket.
func rsFrame(t *testing.T) []byte {
	allRouters := ndp.AllRouters()
	eth := &layers.Ethernet{SrcMAC: hostMAC[:], DstMAC: []byte{0x33, 0x33, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: host6IP[:], DstIP: allRouters[:]}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(hdr.ICMP6RouterSol, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	rs := &layers.ICMPv6RouterSolicitation{Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: hostMAC[:]}}}
	return serialize(t, eth, ip, ic, rs)
}

// TestControl6NeighborDiscovery: the router answers an NS for its
// addresses and learns the asker; a downlink packet for an unknown host
// is held while the router solicits it, and delivered to the MAC the
// host's NA gives.
func TestControl6NeighborDiscovery(t *testing.T) {
	r := newCtl6Rig(t, true)
	for _, target := range []hdr.Addr6{r.l6.Router, r.l6.LinkLocal} {
		r.lan.Inject(0, hostNS(target))
		var na *ndp.Message
		waitFor(t, "NA", 5*time.Second, func() bool {
			ms, _ := r.lanFrames()
			for i := range ms {
				if ms[i].Type == hdr.ICMP6NeighborAdv {
					na = &ms[i]
				}
			}
			return na != nil
		})
		if na.Target != target || na.TargetLL != routerMAC || !na.Router || !na.Solicited || na.Dst != host6IP || na.DstMAC != hostMAC {
			t.Fatalf("NA %+v", na)
		}
	}
	if mac, ok := r.e.Neighbors6().Lookup(&host6IP); !ok || mac != hostMAC {
		t.Fatalf("asker not learned: %x %v", mac, ok)
	}
	// A quiet host: the reply from the Internet waits for its NA.
	quiet := netip.MustParseAddr("2001:db8:0:1::77").As16()
	quietMAC := [6]byte{0x02, 0, 0, 0, 0, 0x77}
	// (It opened the flow a while ago: the firewall lets the reply in.)
	r.lan.Inject(0, lanFrame6(t, pkt6{src: quiet, dst: remote6IP, sport: 5000, dport: 443, proto: layers.IPProtocolUDP}))
	waitFor(t, "the quiet host's uplink", 5*time.Second, func() bool {
		n := 0
		r.wan.Drain(0, func([]byte) { n++ })
		return n > 0
	})
	for i := 0; i < 2; i++ {
		r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: quiet, sport: 443, dport: 5000, proto: layers.IPProtocolUDP, payload: 10 + i}))
	}
	var ns *ndp.Message
	waitFor(t, "NS for the quiet host", 5*time.Second, func() bool {
		ms, other := r.lanFrames()
		if len(other) != 0 {
			t.Fatalf("a packet left before the host was resolved")
		}
		for i := range ms {
			if ms[i].Type == hdr.ICMP6NeighborSol && ms[i].Target == quiet {
				ns = &ms[i]
			}
		}
		return ns != nil && r.ctl.Stats().Held == 2
	})
	if ns.Dst != hdr.SolicitedNode(&quiet) || ns.DstMAC != hdr.MulticastMAC(&ns.Dst) || ns.SourceLL != routerMAC {
		t.Fatalf("NS %+v", ns)
	}
	// The host answers (solicited, to the router's link-local address).
	na := ndp.AppendNA(nil, ns, quiet, quietMAC, false)
	r.lan.Inject(0, na)
	var got [][]byte
	waitFor(t, "held packets delivered", 5*time.Second, func() bool {
		_, other := r.lanFrames()
		got = append(got, other...)
		return len(got) >= 2
	})
	for i, b := range got {
		if [6]byte(b[0:6]) != quietMAC || [6]byte(b[6:12]) != routerMAC {
			t.Fatalf("frame %d to %x from %x", i, b[0:6], b[6:12])
		}
		p := decodeIPv6(t, b[14:])
		if u := p.Layer(layers.LayerTypeUDP).(*layers.UDP); len(u.Payload) != 10+i {
			t.Fatalf("frame %d: payload %d, want %d (order kept)", i, len(u.Payload), 10+i)
		}
	}
	if st := r.ctl.Stats(); st.HeldSent != 2 || st.IPv6.Learned != 2 || st.IPv6.NSSent != 1 {
		t.Fatalf("stats %+v", st)
	}
	// An unsolicited NA from an unknown host teaches nothing. (The NS
	// after it is answered in order: once its NA is out, the NA before
	// was handled.)
	stranger := netip.MustParseAddr("2001:db8:0:1::88").As16()
	r.lan.Inject(0, ndp.AppendUnsolicitedNA(nil, stranger, [6]byte{2, 0, 0, 0, 0, 0x88}, false))
	replies := r.ctl.Stats6().NSReplies
	r.lan.Inject(0, hostNS(r.l6.Router))
	waitFor(t, "the NS after it answered", 5*time.Second, func() bool { return r.ctl.Stats6().NSReplies > replies })
	if _, ok := r.e.Neighbors6().Lookup(&stranger); ok {
		t.Fatal("learned a host from an unsolicited NA")
	}
}

// TestControl6Echo: the router answers ICMPv6 echo on its LAN addresses
// and, over the session, on its LAN address and its link-local; other
// IPv6 for it from the session (DHCPv6) goes to WAN6.
func TestControl6Echo(t *testing.T) {
	r := newCtl6Rig(t, true)
	r.e.SetNeighbor6(host6IP, hostMAC)
	r.lan.Inject(0, lanFrame6(t, pkt6{src: host6IP, dst: r.l6.Router, proto: layers.IPProtocolICMPv6, payload: 12}))
	waitFor(t, "LAN echo reply", 5*time.Second, func() bool {
		ms, _ := r.lanFrames()
		for _, m := range ms {
			if m.Type == hdr.ICMP6EchoReply && m.Src == r.l6.Router && m.Dst == host6IP && m.DstMAC == hostMAC {
				return true
			}
		}
		return false
	})
	wanLL := WANLinkLocal([8]byte{0, 0, 0, 0, 0, 0, 0x12, 0x34})
	for _, dst := range []hdr.Addr6{r.l6.Router, wanLL} {
		r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: dst, proto: layers.IPProtocolICMPv6, payload: 20}))
		var reply []byte
		waitFor(t, "WAN echo reply", 5*time.Second, func() bool {
			r.wan.Drain(0, func(b []byte) {
				if len(b) > 22 && be16(b[20:]) == hdr.PPPIPv6 {
					reply = append([]byte(nil), b...)
				}
			})
			return reply != nil
		})
		p := decodeIPv6(t, wan6Payload(t, reply))
		ip := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		ic := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
		if ic.TypeCode.Type() != hdr.ICMP6EchoReply || [16]byte(ip.SrcIP) != dst || [16]byte(ip.DstIP) != remote6IP {
			t.Fatalf("WAN echo reply %v", p)
		}
	}
	// A DHCPv6 reply to the link-local address: handed over as is.
	r.wan.Inject(0, wanFrame6(t, pkt6{src: netip.MustParseAddr("fe80::1").As16(), dst: wanLL, sport: 547, dport: 546, proto: layers.IPProtocolUDP, payload: 30}))
	select {
	case ip := <-r.wan6:
		if hdr.IPv6(ip).Dst() != wanLL || len(ip) != 40+8+30 {
			t.Fatalf("WAN6 got %x", ip)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the DHCPv6 packet did not reach WAN6")
	}
	if st := r.ctl.Stats6(); st.EchoReplies != 3 || st.ToWAN6 != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestControl6Lifetimes: SetRA's lifetimes go out as given (a deprecated
// delegated prefix with preferred 0), and after renumbering the old prefix
// rides on the next raDeprecateCount RAs to all nodes, however many
// solicited RAs go out between them.
func TestControl6Lifetimes(t *testing.T) {
	r := newCtl6Rig(t, true)
	r.waitRA(t, "the first RA", func(m *ndp.Message, ra *ndp.RA) bool { return true })
	r.ctl.SetRA(RAConfig{Valid: 5400 * time.Second, Preferred: 0})
	r.waitRA(t, "an RA deprecating the prefix", func(m *ndp.Message, ra *ndp.RA) bool {
		return len(ra.Prefixes) == 1 && ra.Prefixes[0].Preferred == 0 && ra.Prefixes[0].Valid == 5400*time.Second
	})
	next := netip.MustParseAddr("2001:db8:0:2::").As16()
	l, _ := dataplane.NewLAN6(next, 64, routerMAC)
	r.e.SetLAN6(l)
	multicastWithOld := 0
	for round := 0; round < raDeprecateCount+1; round++ {
		if round > 0 {
			// Solicited RAs first: they carry the old prefix but do not
			// count.
			for i := 0; i < 3; i++ {
				r.lan.Inject(0, rsFrame(t))
				r.waitRA(t, "a solicited RA", func(m *ndp.Message, ra *ndp.RA) bool { return m.Dst == host6IP })
			}
			// Toggling IPv6 makes an RA to all nodes at once.
			r.e.SetSession(testSession(round%2 == 0))
		}
		ra := r.waitRA(t, "an RA to all nodes", func(m *ndp.Message, ra *ndp.RA) bool { return m.Dst == ndp.AllNodes() })
		if len(ra.Prefixes) == 2 {
			multicastWithOld++
		}
	}
	if multicastWithOld != raDeprecateCount {
		t.Fatalf("old prefix on %d RAs to all nodes, want %d", multicastWithOld, raDeprecateCount)
	}
}

// TestControl6NSRateLimited: a scan of the LAN prefix from the Internet
// (echo requests pass the firewall) turns into at most NSRate
// solicitations, not one per packet.
func TestControl6NSRateLimited(t *testing.T) {
	r := newCtl6Rig(t, true)
	for i := 0; i < 300; i++ {
		dst := lan6Prefix
		dst[13], dst[14], dst[15] = 0x5c, byte(i>>8), byte(i)
		for !r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: dst, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest})) {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(t, "the scan handled", 5*time.Second, func() bool { return r.e.Totals().Unresolved == 300 })
	time.Sleep(100 * time.Millisecond)
	ns := 0
	r.lan.Drain(0, func(b []byte) {
		if m, err := ndp.Parse(b); err == nil && m.Type == hdr.ICMP6NeighborSol {
			ns++
		}
	})
	if ns == 0 || ns > NSRate+5 {
		t.Fatalf("%d solicitations for 300 addresses, want 1..%d", ns, NSRate+5)
	}
	if st := r.ctl.Stats6(); st.NSSent != uint64(ns) {
		t.Fatalf("ns_sent %d, %d seen", st.NSSent, ns)
	}
}

// resetSweep lets the next sweepNeighbors run at once (Run sweeps too).
func resetSweep(c *Control) {
	c.arpMu.Lock()
	c.v6.lastSweep = time.Time{}
	c.arpMu.Unlock()
}

// TestControl6NeighborProbe: a learned IPv6 neighbour in the last
// NeighborProbe of its NeighborTTL is sent a neighbour solicitation to
// its own address and MAC; a solicited NA without the target's
// link-layer address (as Linux answers a unicast one) confirms it when it
// comes from the MAC the router has, not from another.
func TestControl6NeighborProbe(t *testing.T) {
	r := newCtl6Rig(t, true)
	r.lan.Inject(0, hostNS(r.l6.Router))
	waitFor(t, "host learned", 5*time.Second, func() bool { _, ok := r.e.Neighbors6().Lookup(&host6IP); return ok })
	r.ctl.arpMu.Lock()
	r.ctl.v6.seen[host6IP] = time.Now().Add(-(NeighborTTL - 2*time.Minute))
	r.ctl.arpMu.Unlock()
	resetSweep(r.ctl)
	r.ctl.sweepNeighbors(time.Now())
	var probe ndp.Message
	waitFor(t, "a probe", 5*time.Second, func() bool {
		ms, _ := r.lanFrames()
		for _, m := range ms {
			if m.Type == hdr.ICMP6NeighborSol {
				probe = m
			}
		}
		return probe.Type == hdr.ICMP6NeighborSol && r.ctl.Stats().NeighborProbes == 1
	})
	if probe.Dst != host6IP || probe.DstMAC != hostMAC || probe.Target != host6IP || probe.Src != routerLL6 ||
		probe.SrcMAC != routerMAC || !probe.HasSourceLL || probe.SourceLL != routerMAC {
		t.Fatalf("probe %+v: want an NS for and to the host, at its MAC, from the router's link-local address", probe)
	}
	confirmed := func() bool {
		r.ctl.arpMu.Lock()
		defer r.ctl.arpMu.Unlock()
		return time.Since(r.ctl.v6.seen[host6IP]) < time.Minute
	}
	// An answer from another MAC, then a marker (a router solicitation,
	// which does not touch the entry's age): the answer changed nothing.
	r.lan.Inject(0, bareNA(t, [6]byte{0x02, 0, 0, 0, 0, 0x66}))
	before := r.ctl.Stats6().RSReceived
	r.lan.Inject(0, rsFrame(t))
	waitFor(t, "the marker", 5*time.Second, func() bool { return r.ctl.Stats6().RSReceived > before })
	if confirmed() {
		t.Fatal("an NA from another MAC confirmed the neighbour")
	}
	r.lan.Inject(0, bareNA(t, hostMAC))
	waitFor(t, "the answer seen", 5*time.Second, confirmed)
	resetSweep(r.ctl)
	r.ctl.sweepNeighbors(time.Now().Add(3 * time.Minute))
	if _, ok := r.e.Neighbors6().Lookup(&host6IP); !ok {
		t.Fatal("a neighbour that answered its probe was dropped")
	}
}

// bareNA is a solicited NA for host6IP from Ethernet source mac to the
// router, without a target link-layer option.
func bareNA(t *testing.T, mac [6]byte) []byte {
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: 255, SrcIP: host6IP[:], DstIP: routerLL6[:]}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborAdvertisement, 0)}
	if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	return serialize(t, &layers.Ethernet{SrcMAC: mac[:], DstMAC: routerMAC[:], EthernetType: layers.EthernetTypeIPv6}, ip, icmp,
		&layers.ICMPv6NeighborAdvertisement{Flags: 0x40, TargetAddress: host6IP[:]})
}

// TestControl6NeighborsAge: a neighbour no ND confirmed for NeighborTTL
// is dropped, and so is one outside the prefix after renumbering.
func TestControl6NeighborsAge(t *testing.T) {
	r := newCtl6Rig(t, true)
	r.lan.Inject(0, hostNS(r.l6.Router))
	waitFor(t, "host learned", 5*time.Second, func() bool { _, ok := r.e.Neighbors6().Lookup(&host6IP); return ok })
	r.ctl.sweepNeighbors(time.Now().Add(NeighborTTL - time.Minute))
	if _, ok := r.e.Neighbors6().Lookup(&host6IP); !ok {
		t.Fatal("dropped before its time")
	}
	resetSweep(r.ctl)
	r.ctl.sweepNeighbors(time.Now().Add(NeighborTTL + time.Minute))
	if _, ok := r.e.Neighbors6().Lookup(&host6IP); ok {
		t.Fatal("kept past NeighborTTL")
	}
	r.lan.Inject(0, hostNS(r.l6.Router))
	waitFor(t, "host learned again", 5*time.Second, func() bool { _, ok := r.e.Neighbors6().Lookup(&host6IP); return ok })
	l, _ := dataplane.NewLAN6(netip.MustParseAddr("2001:db8:0:2::").As16(), 64, routerMAC)
	r.e.SetLAN6(l)
	resetSweep(r.ctl)
	r.ctl.sweepNeighbors(time.Now())
	if _, ok := r.e.Neighbors6().Lookup(&host6IP); ok {
		t.Fatal("a neighbour outside the new prefix kept")
	}
}

// TestControl6ScanLimitedPerSource: one remote scanning random addresses
// of the LAN /64 holds frames for, and solicits, at most srcBurst of
// them at once (counted as source_limited), so the hold queue keeps room
// and the solicitation budget stays for everyone else: a second remote's
// packet to a quiet LAN host right after is held and its host solicited.
func TestControl6ScanLimitedPerSource(t *testing.T) {
	r := newCtl6Rig(t, true)
	for i := 0; i < 200; i++ {
		dst := lan6Prefix
		dst[13], dst[14], dst[15] = 0x5c, byte(i>>8), byte(i)
		for !r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: dst, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest})) {
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(t, "the scan handled", 5*time.Second, func() bool { return r.ctl.Stats6().SourceLimited+uint64(r.ctl.Stats().Held) >= 200 })
	st := r.ctl.Stats()
	if st.HeldWaiting > srcBurst+srcRate {
		t.Errorf("one remote holds frames for %d addresses, want at most %d", st.HeldWaiting, srcBurst+srcRate)
	}
	if l := r.ctl.Stats6().SourceLimited; l < 200-srcBurst-2*srcRate {
		t.Errorf("source_limited %d of 200", l)
	}
	other := remote6IP
	other[7] ^= 1 // another /64
	quiet := lan6Prefix
	quiet[15] = 0x77
	r.lan.Drain(0, func([]byte) {})
	r.wan.Inject(0, wanFrame6(t, pkt6{src: other, dst: quiet, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest}))
	waitFor(t, "the other remote's host solicited", 5*time.Second, func() bool {
		found := false
		r.lan.Drain(0, func(b []byte) {
			if m, err := ndp.Parse(b); err == nil && m.Type == hdr.ICMP6NeighborSol && m.Target == quiet {
				found = true
			}
		})
		return found
	})
}
