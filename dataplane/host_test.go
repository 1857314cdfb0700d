package dataplane

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
)

// hostFrame builds an Ethernet frame the host stack (on a TAP with the
// router's MAC) sends to the router's MAC, as it does for a neighbour the
// control plane answered ARP for by proxy.
func hostFrame(t testing.TB, et layers.EthernetType, ls []gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: routerMAC[:], DstMAC: routerMAC[:], EthernetType: et}
	return serialize(t, append([]gopacket.SerializableLayer{eth}, ls...)...)
}

// fromHostNow injects b as the host stack's and steps the engine.
func (r *rig) fromHostNow(t *testing.T, b []byte) {
	t.Helper()
	if err := r.e.Send(FromHost, b); err != nil {
		t.Fatal(err)
	}
	r.step()
}

// exceptions collects the frames the workers handed the control plane.
func (r *rig) exceptions() (dirs []Dir, frames [][]byte) {
	r.e.PollControl(func(d Dir, b []byte) {
		dirs = append(dirs, d)
		frames = append(frames, append([]byte(nil), b...))
	})
	return dirs, frames
}

// oneToHost requires exactly one frame for the host stack on the
// exception links, addressed to the router's MAC, and returns its IP
// packet.
func (r *rig) oneToHost(t *testing.T, et uint16) []byte {
	t.Helper()
	dirs, frames := r.exceptions()
	if len(frames) != 1 || dirs[0] != ToHost {
		t.Fatalf("exceptions %v (%d frames), want one ToHost; drops %v", dirs, len(frames), r.e.Totals().DropMap())
	}
	b := frames[0]
	eth := hdr.Ethernet(b)
	if [6]byte(eth.Dst()) != routerMAC || [6]byte(eth.Src()) != routerMAC || eth.Type() != et {
		t.Fatalf("frame for the host: %x", b[:14])
	}
	if lan := r.drainLAN(); len(lan) != 0 {
		t.Fatalf("%d frames went out of the LAN port too", len(lan))
	}
	return b[hdr.EthernetLen:]
}

// TestHostThroughNAT: the host stack's UDP, TCP and ICMP echo from the
// router's LAN address leave translated to the public address and a port
// of the owner's range (handed over between workers where the owner is
// another), TCP SYNs clamped; the replies come back to the host stack, not
// out of the LAN port; unsolicited packets to the public address do not.
func TestHostThroughNAT(t *testing.T) {
	for _, workers := range []int{1, 3} {
		r := newRig(t, workers, nil)
		for i, c := range []pkt{
			{src: routerIP, dst: remoteIP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, payload: 20},
			{src: routerIP, dst: remoteIP, sport: 40001, dport: 443, proto: layers.IPProtocolTCP, syn: true, mss: 1460},
			{src: routerIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: hdr.ICMPEcho, icmpID: 77, payload: 8},
			{src: routerIP, dst: remoteIP, sport: 40003, dport: 53, proto: layers.IPProtocolUDP, payload: 20},
		} {
			owner := r.e.LANOwner(serialize(t, c.layers(t)...))
			r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, c.layers(t)))
			out := r.drainWAN()
			if len(out) != 1 {
				t.Fatalf("workers %d, packet %d: %d uplink frames; drops %v", workers, i, len(out), r.e.Totals().DropMap())
			}
			ipb := pppoePayload(t, out[0])
			p := decodeIPv4(t, ipb)
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if [4]byte(ip.SrcIP) != [4]byte(netIP(pubIP)) || ip.TTL != 63 {
				t.Fatalf("packet %d leaves from %v ttl %d", i, ip.SrcIP, ip.TTL)
			}
			var ext, reply uint16
			var back pkt
			switch c.proto {
			case layers.IPProtocolUDP:
				ext = uint16(p.Layer(layers.LayerTypeUDP).(*layers.UDP).SrcPort)
				back = pkt{src: remoteIP, dst: pubIP, sport: c.dport, dport: ext, proto: c.proto, payload: 30}
				reply = c.sport
			case layers.IPProtocolTCP:
				tc := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
				ext = uint16(tc.SrcPort)
				if mss := be16(tc.Options[0].OptionData); mss != 1452 {
					t.Fatalf("the host's SYN leaves with MSS %d, want 1452", mss)
				}
				back = pkt{src: remoteIP, dst: pubIP, sport: c.dport, dport: ext, proto: c.proto, syn: true}
				reply = c.sport
			case layers.IPProtocolICMPv4:
				ext = p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4).Id
				back = pkt{src: remoteIP, dst: pubIP, proto: c.proto, icmpType: hdr.ICMPEchoReply, icmpID: ext, payload: 8}
				reply = c.icmpID
			}
			if rg := r.e.Ranges(); owner >= 0 && !rg[owner].Contains(ext) && !rg[owner].ContainsLow(ext) {
				t.Fatalf("packet %d: external port %d not in owner %d's range %v", i, ext, owner, r.e.Ranges()[owner])
			}
			r.wan.Inject(0, wanFrame(t, back))
			r.step()
			in := decodeIPv4(t, r.oneToHost(t, hdr.EtherTypeIPv4))
			if d := in.Layer(layers.LayerTypeIPv4).(*layers.IPv4); [4]byte(d.DstIP) != [4]byte(netIP(routerIP)) {
				t.Fatalf("reply %d to %v", i, d.DstIP)
			}
			var got uint16
			switch c.proto {
			case layers.IPProtocolUDP:
				got = uint16(in.Layer(layers.LayerTypeUDP).(*layers.UDP).DstPort)
			case layers.IPProtocolTCP:
				got = uint16(in.Layer(layers.LayerTypeTCP).(*layers.TCP).DstPort)
			case layers.IPProtocolICMPv4:
				got = in.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4).Id
			}
			if got != reply {
				t.Fatalf("reply %d to port/id %d, want %d", i, got, reply)
			}
		}
		// Unsolicited: to a port no mapping holds, and an echo reply no
		// echo request asked for. Neither reaches the host stack.
		before := r.e.Totals().Drops[DropNAT]
		r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: 2999, proto: layers.IPProtocolUDP, payload: 8}))
		r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: hdr.ICMPEchoReply, icmpID: 4242, payload: 8}))
		r.step()
		if dirs, _ := r.exceptions(); len(dirs) != 0 {
			t.Fatalf("unsolicited packets reached the control plane: %v", dirs)
		}
		if d := r.e.Totals().Drops[DropNAT] - before; d != 2 {
			t.Fatalf("%d unsolicited packets counted as NAT drops, want 2: %v", d, r.e.Totals().DropMap())
		}
		if lan := r.drainLAN(); len(lan) != 0 {
			t.Fatalf("unsolicited packets went to the LAN")
		}
		c := r.e.Totals()
		if c.FromHost != 4 || c.ToHost != 4 {
			t.Fatalf("workers %d: from host %d, to host %d, want 4 and 4", workers, c.FromHost, c.ToHost)
		}
		// Send hands the host's frames to one worker; the flows' owners
		// are others, so they were handed over.
		if workers > 1 && c.Redirected == 0 {
			t.Fatalf("no hand-over with %d workers", workers)
		}
	}
}

// TestHostFramesStayOffTheLAN: only the host stack may send from the
// router's address (a LAN host that does is a martian), and a host frame
// the fast path would give the control plane (for the LAN, the router, not
// IP) is dropped, not handed back.
func TestHostFramesStayOffTheLAN(t *testing.T) {
	r := newRig(t, 1, nil)
	spoof := pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, payload: 8}
	r.lan.Inject(0, lanFrame(t, spoof))
	r.step()
	if n := len(r.drainWAN()); n != 0 || r.e.Totals().Drops[DropMartian] != 1 {
		t.Fatalf("a LAN host sending from the router's address: %d uplink frames, drops %v", n, r.e.Totals().DropMap())
	}
	// Nor may the host stack send from another address (a LAN host's).
	r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP}.layers(t)))
	if n := len(r.drainWAN()); n != 0 || r.e.Totals().Drops[DropMartian] != 2 {
		t.Fatalf("the host stack sending from a LAN host's address: %d uplink frames, drops %v", n, r.e.Totals().DropMap())
	}
	for _, p := range []pkt{
		{src: routerIP, dst: hostIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP},
		{src: routerIP, dst: routerIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP},
		{src: routerIP, dst: pubIP, proto: layers.IPProtocolICMPv4, icmpType: hdr.ICMPEcho, icmpID: 3}, // the public address: Local
	} {
		r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, p.layers(t)))
	}
	arp := make([]byte, hdr.ARPLen)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(arp[6:], routerMAC[:])
	hdr.Ethernet(arp).SetType(hdr.EtherTypeARP)
	r.fromHostNow(t, arp)
	if dirs, _ := r.exceptions(); len(dirs) != 0 {
		t.Fatalf("host frames handed back to the control plane: %v", dirs)
	}
	if n := len(r.drainWAN()) + len(r.drainLAN()); n != 0 {
		t.Fatalf("%d host frames sent", n)
	}
	if d := r.e.Totals().Drops[DropHostLocal]; d != 4 {
		t.Fatalf("%d host_local drops, want 4: %v", d, r.e.Totals().DropMap())
	}
}

// TestHostForward: a forward to the router's own address (nat.forward ...
// host) delivers to the host stack; the service's answers leave from the
// forward's port; a LAN host reaching it by the public address (hairpin)
// gets there too.
func TestHostForward(t *testing.T) {
	for _, workers := range []int{1, 2} {
		r := newRig(t, workers, func(c *Config) {
			c.NAT.Forwards = []nat.Forward{{Proto: hdr.ProtoUDP, ExtPort: 51820, LANAddr: routerIP, LANPort: 51820}}
		})
		r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 3333, dport: 51820, proto: layers.IPProtocolUDP, payload: 40}))
		r.step()
		in := decodeIPv4(t, r.oneToHost(t, hdr.EtherTypeIPv4))
		if u := in.Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 51820 || [4]byte(in.Layer(layers.LayerTypeIPv4).(*layers.IPv4).DstIP) != [4]byte(netIP(routerIP)) {
			t.Fatalf("forwarded to %v", in)
		}
		r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: remoteIP, sport: 51820, dport: 3333, proto: layers.IPProtocolUDP, payload: 40}.layers(t)))
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("answer: %d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
		}
		if u := decodeIPv4(t, pppoePayload(t, out[0])).Layer(layers.LayerTypeUDP).(*layers.UDP); u.SrcPort != 51820 {
			t.Fatalf("the service answers from port %d", u.SrcPort)
		}
		// Hairpin: a LAN host to public:51820.
		fr := lanFrame(t, pkt{src: hostIP, dst: pubIP, sport: 5555, dport: 51820, proto: layers.IPProtocolUDP, payload: 8})
		r.lan.Inject(max(r.e.LANOwner(fr[14:]), 0), fr)
		r.step()
		h := decodeIPv4(t, r.oneToHost(t, hdr.EtherTypeIPv4)).Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if [4]byte(h.SrcIP) != [4]byte(netIP(pubIP)) || [4]byte(h.DstIP) != [4]byte(netIP(routerIP)) {
			t.Fatalf("hairpin to the host: %v -> %v", h.SrcIP, h.DstIP)
		}
	}
}

// TestHostShapedAndErrors: with the downlink shaped, the host's replies
// wait in the shaper and then go to the host stack, not the LAN; ICMP
// errors about a host frame (too big for the session with DF) go to the
// host stack too.
func TestHostShapedAndErrors(t *testing.T) {
	r := newRig(t, 1, func(c *Config) {
		c.Down.Rate = 100e6
		c.Up.Rate = 100e6
	})
	r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}.layers(t)))
	r.clock.t += 1e6
	r.step()
	out := r.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
	}
	ext := be16(pppoePayload(t, out[0])[20:])
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 100}))
	r.step()
	r.clock.t += 1e6
	r.step()
	if u := decodeIPv4(t, r.oneToHost(t, hdr.EtherTypeIPv4)).Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 40000 {
		t.Fatalf("shaped reply to port %d", u.DstPort)
	}
	// 1500 bytes with DF over a 1492 session: fragmentation needed.
	r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv4, pkt{src: routerIP, dst: remoteIP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, df: true, payload: 1472}.layers(t)))
	ic := decodeIPv4(t, r.oneToHost(t, hdr.EtherTypeIPv4)).Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
	if ic.TypeCode != layers.CreateICMPv4TypeCode(hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded) {
		t.Fatalf("ICMP %v, want fragmentation needed", ic.TypeCode)
	}
	if n := len(r.drainWAN()); n != 0 {
		t.Fatalf("%d too-big frames left", n)
	}
}

// TestHostIPv6: the host stack's IPv6 from the LAN prefix's router address
// leaves over the session; the reply passes the firewall to the host
// stack; what nobody on the router asked for is dropped by the firewall;
// echo requests to the router's address are still the control plane's.
func TestHostIPv6(t *testing.T) {
	for _, workers := range []int{1, 3} {
		r := rig6(t, workers, nil)
		l6 := r.e.LAN6()
		up := pkt6{src: l6.Router, dst: remote6IP, sport: 40000, dport: 53, proto: layers.IPProtocolUDP, payload: 20}
		r.fromHostNow(t, hostFrame(t, layers.EthernetTypeIPv6, up.layers(t)))
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("%d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
		}
		ip := decodeIPv6(t, wan6Payload(t, out[0])).Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		if [16]byte(ip.SrcIP) != l6.Router || ip.HopLimit != 63 {
			t.Fatalf("leaves from %v hop limit %d", ip.SrcIP, ip.HopLimit)
		}
		r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: l6.Router, sport: 53, dport: 40000, proto: layers.IPProtocolUDP, payload: 30}))
		r.step()
		p := decodeIPv6(t, r.oneToHost(t, hdr.EtherTypeIPv6))
		if u := p.Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 40000 {
			t.Fatalf("reply to port %d", u.DstPort)
		}
		before := r.e.Totals().Drops[DropFirewall]
		r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: l6.Router, sport: 53, dport: 40999, proto: layers.IPProtocolUDP, payload: 30}))
		r.step()
		if dirs, _ := r.exceptions(); len(dirs) != 0 || r.e.Totals().Drops[DropFirewall] != before+1 {
			t.Fatalf("unsolicited IPv6 to the router: exceptions %v, drops %v", dirs, r.e.Totals().DropMap())
		}
		r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: l6.Router, proto: layers.IPProtocolICMPv6, echoID: 5, payload: 8}))
		r.step()
		if dirs, _ := r.exceptions(); len(dirs) != 1 || dirs[0] != FromWANIP {
			t.Fatalf("echo request to the router: %v", dirs)
		}
		// A LAN host may not send from the router's address.
		r.lan.Inject(0, lanFrame6(t, up))
		r.step()
		if n := len(r.drainWAN()); n != 0 {
			t.Fatalf("a LAN host sent from the router's IPv6 address")
		}
	}
}

// FuzzFromHost feeds arbitrary frames to a worker as the host stack's
// (Send FromHost): it must never panic, every frame must be accounted for
// (sent to the session, handed to the host stack, dropped under a
// reason), none may leave on the LAN port, and none may reach the control
// plane other than for the host stack (ToHost).
func FuzzFromHost(f *testing.F) {
	r := rig6(f, 1, nil)
	l6 := r.e.LAN6()
	for _, p := range []pkt{
		{src: routerIP, dst: remoteIP, sport: 1, dport: 53, proto: layers.IPProtocolUDP, payload: 8},
		{src: routerIP, dst: remoteIP, sport: 2, dport: 443, proto: layers.IPProtocolTCP, syn: true, mss: 1460},
		{src: routerIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: hdr.ICMPEcho, icmpID: 9},
		{src: routerIP, dst: pubIP, sport: 3, dport: 1024, proto: layers.IPProtocolUDP},
		{src: routerIP, dst: hostIP, sport: 3, dport: 4, proto: layers.IPProtocolUDP},
		{src: routerIP, dst: remoteIP, sport: 5, dport: 6, proto: layers.IPProtocolUDP, ttl: 1},
		{src: routerIP, dst: remoteIP, sport: 5, dport: 6, proto: layers.IPProtocolUDP, df: true, payload: 1600},
		{src: routerIP, dst: remoteIP, sport: 5, dport: 6, proto: layers.IPProtocolUDP, payload: 1600},
	} {
		f.Add(hostFrame(f, layers.EthernetTypeIPv4, p.layers(f)))
	}
	for _, p := range []pkt6{
		{src: l6.Router, dst: remote6IP, sport: 1, dport: 53, proto: layers.IPProtocolUDP, payload: 8},
		{src: l6.Router, dst: remote6IP, proto: layers.IPProtocolICMPv6, echoID: 3},
		{src: l6.Router, dst: host6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP},
		{src: l6.Router, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, hop: 1},
		{src: l6.Router, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 1500},
	} {
		f.Add(hostFrame(f, layers.EthernetTypeIPv6, p.layers(f)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1800 {
			return
		}
		before := r.e.Totals()
		if r.e.Send(FromHost, b) != nil {
			return
		}
		r.step()
		r.drainWAN()
		var other []Dir
		r.e.PollControl(func(d Dir, _ []byte) {
			if d != ToHost {
				other = append(other, d)
			}
		})
		c := r.e.Totals()
		if len(other) != 0 || len(r.drainLAN()) != 0 || c.TxLAN != before.TxLAN {
			t.Fatalf("a host frame reached the LAN or the control plane (%v)", other)
		}
		// An ICMP error about the frame goes to the host stack beside the
		// drop it is counted under.
		out := c.TxWAN - before.TxWAN + (c.Exception - c.ICMPSent) - (before.Exception - before.ICMPSent) + c.TotalDrops() - before.TotalDrops()
		if fr := c.Fragments - before.Fragments; fr > 0 {
			out -= fr - 1
		}
		if out != 1 || c.FromHost-before.FromHost != 1 {
			t.Fatalf("frame accounting: %d outcomes for one frame (%+v)", out, c)
		}
	})
}

// TestHostIPv6Allow: ipv6.allow with the interface id ::1 opens a port
// of the router's own host stack (prefix::1) over IPv6.
func TestHostIPv6Allow(t *testing.T) {
	r := rig6(t, 1, func(c *Config) {
		c.Allow6 = []Allow6{{Proto: hdr.ProtoUDP, Port: 51820, Host: hdr.Addr6{15: 1}}}
	})
	l6 := r.e.LAN6()
	r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: l6.Router, sport: 9, dport: 51820, proto: layers.IPProtocolUDP, payload: 30}))
	r.step()
	if u := decodeIPv6(t, r.oneToHost(t, hdr.EtherTypeIPv6)).Layer(layers.LayerTypeUDP).(*layers.UDP); u.DstPort != 51820 {
		t.Fatalf("to port %d", u.DstPort)
	}
}
