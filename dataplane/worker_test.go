package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

func TestOutboundInboundUDP(t *testing.T) {
	r := newRig(t, 1, nil)
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}))
	r.step()
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("WAN frames %d, want 1; drops %v", len(out), r.e.Totals().DropMap())
	}
	ipb := pppoePayload(t, out[0])
	p := decodeIPv4(t, ipb)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ip.SrcIP.Equal(netIP(pubIP)) || !ip.DstIP.Equal(netIP(remoteIP)) || ip.TTL != 63 || udp.DstPort != 53 {
		t.Fatalf("translated %v:%d -> %v:%d ttl %d", ip.SrcIP, udp.SrcPort, ip.DstIP, udp.DstPort, ip.TTL)
	}
	ext := uint16(udp.SrcPort)
	if ext < 1024 {
		t.Fatalf("external port %d outside the worker range", ext)
	}
	// The reply comes back to the mapped port and reaches the host.
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
	r.step()
	back := r.drainLAN()
	if len(back) != 1 {
		t.Fatalf("LAN frames %d, want 1; drops %v", len(back), r.e.Totals().DropMap())
	}
	eth := hdr.Ethernet(back[0])
	if [6]byte(eth.Dst()) != hostMAC || [6]byte(eth.Src()) != routerMAC || eth.Type() != hdr.EtherTypeIPv4 {
		t.Fatalf("LAN Ethernet header %x", back[0][:14])
	}
	p = decodeIPv4(t, back[0][14:])
	ip = p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp = p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ip.DstIP.Equal(netIP(hostIP)) || udp.DstPort != 5000 || ip.TTL != 63 {
		t.Fatalf("reply to %v:%d ttl %d", ip.DstIP, udp.DstPort, ip.TTL)
	}
	c := r.e.Totals()
	if c.RxLAN != 1 || c.TxWAN != 1 || c.RxWAN != 1 || c.TxLAN != 1 || c.TotalDrops() != 0 {
		t.Fatalf("counters %+v drops %v", c, c.DropMap())
	}
}

func TestTTLExceededICMP(t *testing.T) {
	r := newRig(t, 1, nil)
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 33434, proto: layers.IPProtocolUDP, ttl: 1, payload: 12}))
	r.step()
	if n := len(r.drainWAN()); n != 0 {
		t.Fatalf("%d frames leaked to WAN", n)
	}
	back := r.drainLAN()
	if len(back) != 1 {
		t.Fatalf("want one ICMP error, got %d", len(back))
	}
	if [6]byte(back[0][0:6]) != hostMAC {
		t.Fatalf("ICMP not sent to the host MAC")
	}
	p := decodeIPv4(t, back[0][14:])
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if !ip.SrcIP.Equal(netIP(routerIP)) || !ip.DstIP.Equal(netIP(hostIP)) ||
		ic.TypeCode != layers.CreateICMPv4TypeCode(layers.ICMPv4TypeTimeExceeded, 0) {
		t.Fatalf("ICMP %v -> %v %v", ip.SrcIP, ip.DstIP, ic.TypeCode)
	}
	// The quote is the original IP header + 8 bytes, untranslated.
	q := hdr.IPv4(ic.Payload)
	if len(ic.Payload) != 28 || q.Src() != hostIP || q.Dst() != remoteIP || be16(ic.Payload[20:]) != 5000 {
		t.Fatalf("quote %x", ic.Payload)
	}
	if d := r.e.Totals().Drops[DropTTLExceeded]; d != 1 {
		t.Fatalf("ttl drops %d", d)
	}
}

func TestFragNeededAndMSSClamp(t *testing.T) {
	r := newRig(t, 1, nil)
	// 1500-byte DF packet over a 1492 session.
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 4000, dport: 80, proto: layers.IPProtocolTCP, df: true, payload: 1460}))
	// SYN with MSS 1460 must leave with 1452.
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 4001, dport: 80, proto: layers.IPProtocolTCP, syn: true, mss: 1460}))
	r.step()
	back := r.drainLAN()
	if len(back) != 1 {
		t.Fatalf("want one ICMP frag-needed, got %d", len(back))
	}
	p := decodeIPv4(t, back[0][14:])
	ic := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode != layers.CreateICMPv4TypeCode(3, 4) || ic.Seq != 1492 {
		t.Fatalf("ICMP %v next-hop MTU %d", ic.TypeCode, ic.Seq)
	}
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("want the SYN on the WAN, got %d frames", len(out))
	}
	p = decodeIPv4(t, pppoePayload(t, out[0]))
	tcp := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if len(tcp.Options) == 0 || tcp.Options[0].OptionType != layers.TCPOptionKindMSS || be16(tcp.Options[0].OptionData) != 1452 {
		t.Fatalf("MSS not clamped: %v", tcp.Options)
	}
	if r.e.Totals().Clamped != 1 {
		t.Fatal("clamp not counted")
	}
}

func TestInboundSYNACKClamped(t *testing.T) {
	r := newRig(t, 1, nil)
	ext := r.outbound(t, pkt{src: hostIP, dst: remoteIP, sport: 4001, dport: 80, proto: layers.IPProtocolTCP, syn: true})
	// SYN-ACK with MSS 1460 from the server.
	l := pkt{src: remoteIP, dst: pubIP, sport: 80, dport: ext, proto: layers.IPProtocolTCP, syn: true, mss: 1460}
	r.wan.Inject(0, wanFrame(t, l))
	r.step()
	back := r.drainLAN()
	if len(back) != 1 {
		t.Fatalf("SYN-ACK not delivered: %v", r.e.Totals().DropMap())
	}
	p := decodeIPv4(t, back[0][14:])
	tcp := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if be16(tcp.Options[0].OptionData) != 1452 {
		t.Fatalf("inbound MSS %d", be16(tcp.Options[0].OptionData))
	}
}

// TestMalformedDropped feeds one malformed frame of each kind and checks
// it is dropped and counted under the expected reason.
func TestMalformedDropped(t *testing.T) {
	good := func() []byte {
		return lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 8})
	}
	goodWAN := func() []byte {
		return wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 2000, proto: layers.IPProtocolUDP, payload: 8})
	}
	mut := func(b []byte, fn func([]byte) []byte) []byte { return fn(b) }
	fixIPSum := func(b []byte, off int) {
		hdr.IPv4(b[off:]).ComputeChecksum()
	}
	cases := []struct {
		name   string
		wan    bool
		frame  []byte
		reason Reason
	}{
		{"short ethernet", false, good()[:10], DropBadEthernet},
		{"other mac", false, mut(good(), func(b []byte) []byte { b[5] = 0x77; return b }), DropNotOurMAC},
		{"truncated ip", false, good()[:14+12], DropBadIPv4},
		{"total length beyond frame", false, mut(good(), func(b []byte) []byte { b[16] = 0x10; fixIPSum(b, 14); return b }), DropBadIPv4},
		{"bad ip checksum", false, mut(good(), func(b []byte) []byte { b[24] ^= 0xff; return b }), DropBadChecksum},
		{"ip options", false, mut(good(), func(b []byte) []byte { b[14] = 0x46; fixIPSum(b, 14); return b }), DropIPOptions},
		{"later fragment of a hairpin", false, mut(good(), func(b []byte) []byte {
			b[20], b[21] = 0x20, 0x10
			copy(b[30:34], []byte{198, 51, 100, 7}) // to the public address
			fixIPSum(b, 14)
			return b
		}), DropFragment},
		{"martian source", false, mut(good(), func(b []byte) []byte { b[26] = 10; fixIPSum(b, 14); return b }), DropMartian},
		{"ipv4 version 6", false, mut(good(), func(b []byte) []byte { b[14] = 0x65; return b }), DropBadIPv4},
		{"unknown ethertype", false, mut(good(), func(b []byte) []byte { b[12], b[13] = 0x88, 0xb5; return b }), DropUnsupported},
		{"wan wrong session", true, mut(goodWAN(), func(b []byte) []byte { b[17] ^= 1; return b }), DropWrongSession},
		{"wan wrong AC mac", true, mut(goodWAN(), func(b []byte) []byte { b[11] ^= 1; return b }), DropWrongSession},
		{"wan bad pppoe version", true, mut(goodWAN(), func(b []byte) []byte { b[14] = 0x21; return b }), DropBadPPPoE},
		{"wan pppoe length too long", true, mut(goodWAN(), func(b []byte) []byte { b[18] = 0xff; return b }), DropBadPPPoE},
		{"wan truncated", true, goodWAN()[:20], DropBadPPPoE},
		{"wan not for us", true, mut(goodWAN(), func(b []byte) []byte { b[22+19] ^= 1; fixIPSum(b, 22); return b }), DropNotForUs},
		{"wan bad ip checksum", true, mut(goodWAN(), func(b []byte) []byte { b[22+8] ^= 0x10; return b }), DropBadChecksum},
		{"wan later fragment without its first", true, mut(goodWAN(), func(b []byte) []byte { b[22+6], b[22+7] = 0x20, 0x10; fixIPSum(b, 22); return b }), DropFragment},
		{"wan ipv6 protocol, ipv4 inside", true, mut(goodWAN(), func(b []byte) []byte { b[21] = 0x57; return b }), DropBadIPv6},
		{"wan unsolicited", true, goodWAN(), DropNAT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 1, nil)
			if c.wan {
				r.wan.Inject(0, c.frame)
			} else {
				r.lan.Inject(0, c.frame)
			}
			r.step()
			tot := r.e.Totals()
			if tot.Drops[c.reason] != 1 || tot.TotalDrops() != 1 {
				t.Fatalf("drops %v, want one %s", tot.DropMap(), c.reason)
			}
			if n := len(r.drainWAN()) + len(r.drainLAN()); n != 0 {
				t.Fatalf("%d frames forwarded", n)
			}
		})
	}
}

func TestExceptionPath(t *testing.T) {
	r := newRig(t, 1, nil)
	arp := make([]byte, 42)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(arp[6:], hostMAC[:])
	arp[12], arp[13] = 0x08, 0x06
	r.lan.Inject(0, arp)
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: routerIP, sport: 5, dport: 53, proto: layers.IPProtocolUDP}))
	// An LCP echo on the WAN goes to the control plane.
	lcp := wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP})
	lcp[20], lcp[21] = 0xc0, 0x21
	r.wan.Inject(0, lcp)
	r.step()
	var lan, wan int
	r.e.PollControl(func(d Dir, b []byte) {
		if d == FromLAN {
			lan++
		} else {
			wan++
		}
	})
	if lan != 2 || wan != 1 {
		t.Fatalf("exceptions lan %d wan %d", lan, wan)
	}
	// The control plane can answer on either side through worker 0.
	if err := r.e.Send(ToWAN, lcp); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Send(ToLAN, arp); err != nil {
		t.Fatal(err)
	}
	r.step()
	if len(r.drainWAN()) != 1 || len(r.drainLAN()) != 1 {
		t.Fatal("injected frames not sent")
	}
}

func TestNoSessionDrops(t *testing.T) {
	r := newRig(t, 1, nil)
	r.e.SetSession(nil)
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP}))
	r.step()
	if r.e.Totals().Drops[DropNoSession] != 1 {
		t.Fatalf("drops %v", r.e.Totals().DropMap())
	}
}

// TestTwoWorkersSteering checks that LAN packets reach the worker owning
// their LAN endpoint (redirected when they arrive elsewhere) and replies
// are steered to the worker owning the external port, for TCP, UDP, ICMP
// echo and an ICMP error about a flow.
func TestTwoWorkersSteering(t *testing.T) {
	r := newRig(t, 2, nil)
	type flow struct {
		proto layers.IPProtocol
		sport uint16
	}
	flows := []flow{{layers.IPProtocolUDP, 1000}, {layers.IPProtocolUDP, 1001}, {layers.IPProtocolTCP, 1002}, {layers.IPProtocolTCP, 1003}, {layers.IPProtocolICMPv4, 77}, {layers.IPProtocolUDP, 1004}, {layers.IPProtocolUDP, 1005}}
	ext := make([]uint16, len(flows))
	owner := make([]int, len(flows))
	redirects := 0
	for i, f := range flows {
		p := pkt{src: hostIP, dst: remoteIP, sport: f.sport, dport: 80, proto: f.proto, icmpType: 8, icmpID: f.sport}
		fr := lanFrame(t, p)
		owner[i] = r.e.LANOwner(fr[14:])
		in := i % 2
		if in != owner[i] {
			redirects++
		}
		r.lan.Inject(in, fr)
		r.step()
		r.step()
		var out [][]byte
		r.wan.Drain(owner[i], func(b []byte) { out = append(out, append([]byte(nil), b...)) })
		if len(out) != 1 {
			t.Fatalf("flow %d: %d frames on WAN queue %d; drops %v", i, len(out), owner[i], r.e.Totals().DropMap())
		}
		ipb := pppoePayload(t, out[0])
		if f.proto == layers.IPProtocolICMPv4 {
			ext[i] = be16(ipb[24:])
		} else {
			ext[i] = be16(ipb[20:])
		}
		if got := int(r.e.Owner()[ext[i]]); got != owner[i] {
			t.Fatalf("flow %d mapped to port %d owned by worker %d, want %d", i, ext[i], got, owner[i])
		}
	}
	if redirects == 0 || r.e.Totals().Redirected != uint64(redirects) {
		t.Fatalf("redirected %d, want %d (>0)", r.e.Totals().Redirected, redirects)
	}
	for i, f := range flows {
		p := pkt{src: remoteIP, dst: pubIP, sport: 80, dport: ext[i], proto: f.proto, icmpType: 0, icmpID: ext[i]}
		fr := wanFrame(t, p)
		if w, _ := classify(fr, r.e.Owner()); w != owner[i] {
			t.Fatalf("flow %d steered to %d, want %d", i, w, owner[i])
		}
		r.wan.Inject(0, fr)
		r.step()
		var back [][]byte
		r.lan.Drain(owner[i], func(b []byte) { back = append(back, b) })
		if len(back) != 1 {
			t.Fatalf("flow %d: reply not on LAN queue %d; drops %v", i, owner[i], r.e.Totals().DropMap())
		}
	}
	// An ICMP port-unreachable about flow 1 (UDP, worker 1) quotes our
	// translated packet: steering must follow the quoted source port.
	quote := serialize(t, pkt{src: pubIP, dst: remoteIP, sport: ext[1], dport: 80, proto: layers.IPProtocolUDP}.layers(t)...)
	icmpPkt := pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 3}
	fr := wanFrame(t, icmpPkt)
	_ = quote
	fr = append(fr[:22+20+8:22+20+8], quote[:28]...)
	fr[22+20], fr[22+21] = 3, 3
	if w, _ := classify(fr, r.e.Owner()); w != owner[1] {
		t.Fatalf("ICMP error steered to %d, want %d", w, owner[1])
	}
}

func TestReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		n := r.String()
		if n == "" || n == "unknown" || seen[n] {
			t.Fatalf("reason %d has name %q (empty, unknown or repeated)", r, n)
		}
		seen[n] = true
	}
	if DropShaper.String() != "shaper" || DropHeadroom.String() != "headroom" {
		t.Fatalf("names out of step with the enum: %s %s", DropShaper, DropHeadroom)
	}
}

// TestFragmentation: a LAN packet larger than the PPPoE MTU without DF
// leaves as RFC 791 fragments that reassemble to the translated packet.
func TestFragmentation(t *testing.T) {
	r := newRig(t, 1, nil)
	r.lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 7000, dport: 4500, proto: layers.IPProtocolUDP, payload: 1472}))
	r.step()
	out := r.drainWAN()
	if len(out) != 2 {
		t.Fatalf("%d frames, want 2 fragments; drops %v", len(out), r.e.Totals().DropMap())
	}
	var whole []byte
	for i, fr := range out {
		ipb := pppoePayload(t, fr)
		ip := hdr.IPv4(ipb)
		if !ip.IsValid() || !ip.HeaderChecksumOK() || len(ipb) > 1492 || ip.Src() != pubIP || ip.ID() != 7 || ip.TTL() != 63 {
			t.Fatalf("fragment %d: %x", i, ipb[:20])
		}
		more := binary.BigEndian.Uint16(ipb[6:])&0x2000 != 0
		if ip.FragOffset() != len(whole) || more != (i == 0) {
			t.Fatalf("fragment %d: offset %d (want %d), MF %v", i, ip.FragOffset(), len(whole), more)
		}
		whole = append(whole, ip.Payload()...)
	}
	// Reassembled: a valid UDP datagram from the translated source.
	if len(whole) != 8+1472 || hdr.UDP(whole).Length() != len(whole) {
		t.Fatalf("reassembled %d bytes", len(whole))
	}
	pub := []byte{byte(pubIP >> 24), byte(pubIP >> 16), byte(pubIP >> 8), byte(pubIP)}
	rem := []byte{byte(remoteIP >> 24), byte(remoteIP >> 16), byte(remoteIP >> 8), byte(remoteIP)}
	if hdr.Fold(hdr.Sum(whole, hdr.PseudoSum(pub, rem, hdr.ProtoUDP, len(whole)))) != 0xffff {
		t.Fatal("reassembled UDP checksum wrong")
	}
	if c := r.e.Totals(); c.Fragments != 2 || c.TotalDrops() != 0 {
		t.Fatalf("counters %+v", c)
	}
	frame := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 7000, dport: 4500, proto: layers.IPProtocolUDP, payload: 1472})
	if a := testing.AllocsPerRun(50, func() {
		r.lan.Inject(0, frame)
		r.step()
		r.wan.Drain(0, func([]byte) {})
	}); a != 0 {
		t.Fatalf("fragmenting allocates %.1f times", a)
	}
}

// TestVLANSession: a VLAN-tagged WAN (e.g. VLAN 7 with priority) carries
// the session both ways: tagged on the way out, steered and decapsulated
// with the tag on the way in.
func TestVLANSession(t *testing.T) {
	r := newRig(t, 2, nil)
	s := testSession()
	s.VLAN, s.VLANPrio = 7, 5
	r.e.SetSession(s)
	lf := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 6000, dport: 53, proto: layers.IPProtocolUDP, payload: 20})
	q := r.e.LANOwner(lf[14:])
	r.lan.Inject(q, lf)
	r.step()
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d frames; drops %v", len(out), r.e.Totals().DropMap())
	}
	b := out[0]
	if be16(b[12:]) != hdr.EtherTypeVLAN || be16(b[14:])&0xfff != 7 || b[14]>>5 != 5 || be16(b[16:]) != hdr.EtherTypePPPoESess || be16(b[20:]) != sessionID {
		t.Fatalf("uplink header %x", b[:26])
	}
	ext := be16(b[26+20:])
	// The reply, tagged.
	reply := wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 20})
	tagged := append(append(append([]byte(nil), reply[:12]...), 0x81, 0x00, 0xa0, 0x07), reply[12:]...)
	if w, _ := classify(tagged, r.e.Owner()); w != q {
		t.Fatalf("tagged reply steered to %d, want %d", w, q)
	}
	r.wan.Inject(0, tagged)
	r.step()
	if back := r.drainLAN(); len(back) != 1 {
		t.Fatalf("tagged reply not delivered: %v", r.e.Totals().DropMap())
	}
	// Another VLAN is not our session.
	other := append(append(append([]byte(nil), reply[:12]...), 0x81, 0x00, 0x00, 0x08), reply[12:]...)
	r.wan.Inject(0, other)
	r.step()
	if n := len(r.drainLAN()); n != 0 || r.e.Totals().Drops[DropWrongSession] != 1 {
		t.Fatalf("frame on VLAN 8 delivered (%d) or not counted: %v", n, r.e.Totals().DropMap())
	}
}

// RFC 1812 5.3.1: a datagram addressed to the router itself must
// be received whatever its TTL. A WAN ping to the public address that
// arrives with TTL 1 (the last probe of a traceroute to the router) is
// answered, not met with Time Exceeded.
func TestTTL1ToRouterIsAnswered(t *testing.T) {
	r := newRig(t, 1, nil)
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 99, ttl: 1, payload: 8}))
	r.step()
	for _, b := range r.drainWAN() {
		ipb := pppoePayload(t, b)
		if ipb[9] == 1 && ipb[20] == 11 {
			t.Fatalf("router answered Time Exceeded to a TTL-1 ping addressed to itself")
		}
	}
	if c := r.e.Totals(); c.Exception != 1 {
		t.Fatalf("echo request not handed to the control plane: exceptions %d drops %v", c.Exception, c.DropMap())
	}
}
