package dataplane

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// l4Of returns the TCP or UDP segment of an Ethernet frame (IPv4, or
// IPv6 with extension headers walk6 steps over), its protocol and its
// pseudo-header's sum; ok false for anything else.
func l4Of(b []byte) (seg []byte, proto uint8, pseudo uint32, ok bool) {
	if len(b) < hdr.EthernetLen {
		return nil, 0, 0, false
	}
	switch hdr.Ethernet(b).Type() {
	case hdr.EtherTypeIPv4:
		ip := hdr.IPv4(b[hdr.EthernetLen:])
		if !ip.IsValid() || ip.IsFragment() {
			return nil, 0, 0, false
		}
		seg, proto = ip[ip.HeaderLen():ip.TotalLen()], ip.Protocol()
		pseudo = hdr.PseudoSum(ip[12:16], ip[16:20], proto, len(seg))
	case hdr.EtherTypeIPv6:
		ip := hdr.IPv6(b[hdr.EthernetLen:])
		if !ip.IsValid() {
			return nil, 0, 0, false
		}
		ip = ip[:ip.TotalLen()]
		c := walk6(ip)
		if !c.ok || c.frag != fragWhole {
			return nil, 0, 0, false
		}
		seg, proto = ip[c.off:], c.proto
		pseudo = hdr.PseudoSum6((*hdr.Addr6)(ip[8:24]), (*hdr.Addr6)(ip[24:40]), proto, len(seg))
	default:
		return nil, 0, 0, false
	}
	switch {
	case proto == hdr.ProtoTCP && len(seg) >= hdr.TCPMinLen, proto == hdr.ProtoUDP && len(seg) >= hdr.UDPLen:
		return seg, proto, pseudo, true
	}
	return nil, 0, 0, false
}

func csumOff(proto uint8) int {
	if proto == hdr.ProtoUDP {
		return 6
	}
	return 16
}

// fullChecksum is the slow obvious checksum of a frame's TCP or UDP
// segment: field zeroed, pseudo-header plus every byte, complemented,
// and a UDP result of 0 sent as 0xffff.
func fullChecksum(t testing.TB, b []byte) uint16 {
	t.Helper()
	seg, proto, pseudo, ok := l4Of(b)
	if !ok {
		t.Fatalf("no TCP or UDP segment in %x", b)
	}
	c := append([]byte(nil), seg...)
	off := csumOff(proto)
	c[off], c[off+1] = 0, 0
	s := uint64(pseudo)
	for i := 0; i < len(c); i += 2 {
		s += uint64(c[i]) << 8
		if i+1 < len(c) {
			s += uint64(c[i+1])
		}
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	if r := ^uint16(s); r != 0 || proto != hdr.ProtoUDP {
		return r
	}
	return 0xffff
}

func l4Checksum(b []byte) uint16 {
	seg, proto, _, _ := l4Of(b)
	return binary.BigEndian.Uint16(seg[csumOff(proto):])
}

// unfinish returns a copy of the frame b whose TCP or UDP checksum field
// holds only the pseudo-header's sum, as a sender with checksum offload
// hands it over.
func unfinish(t testing.TB, b []byte) []byte {
	t.Helper()
	b = append([]byte(nil), b...)
	seg, proto, pseudo, ok := l4Of(b)
	if !ok {
		t.Fatalf("no TCP or UDP segment in %x", b)
	}
	binary.BigEndian.PutUint16(seg[csumOff(proto):], hdr.Fold(pseudo))
	return b
}

// zeroSumUDP is a LAN UDP frame whose checksum computes to 0: its last
// payload bytes are chosen for it.
func zeroSumUDP(t testing.TB) []byte {
	b := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 10})
	seg, _, pseudo, _ := l4Of(b)
	seg[6], seg[7], seg[16], seg[17] = 0, 0, 0, 0
	binary.BigEndian.PutUint16(seg[16:], ^hdr.Fold(hdr.Sum(seg, pseudo)))
	binary.BigEndian.PutUint16(seg[6:], 0xffff)
	return b
}

// withDestOpts inserts an empty destination options header (8 bytes)
// in front of the upper layer of an Ethernet+IPv6 frame.
func withDestOpts(b []byte) []byte {
	ip := b[hdr.EthernetLen:]
	next := ip[6]
	out := append([]byte(nil), b[:hdr.EthernetLen+hdr.IPv6Len]...)
	out[hdr.EthernetLen+6] = protoDestOpts
	binary.BigEndian.PutUint16(out[hdr.EthernetLen+4:], uint16(len(ip)-hdr.IPv6Len+8))
	out = append(out, next, 0, 1, 4, 0, 0, 0, 0) // PadN of 4
	return append(out, ip[hdr.IPv6Len:]...)
}

func TestFinishL4(t *testing.T) {
	v4 := func(p pkt) []byte { p.src, p.dst = hostIP, remoteIP; return lanFrame(t, p) }
	v6 := func(p pkt6) []byte { p.src, p.dst = host6IP, remote6IP; return lanFrame6(t, p) }
	tcp4 := v4(pkt{sport: 40000, dport: 80, proto: layers.IPProtocolTCP, syn: true, mss: 1460})
	tcp4data := v4(pkt{sport: 40000, dport: 80, proto: layers.IPProtocolTCP, payload: 1399})
	udp4 := v4(pkt{sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 33})
	tcp6 := v6(pkt6{sport: 40000, dport: 443, proto: layers.IPProtocolTCP, syn: true, mss: 1440})
	udp6 := v6(pkt6{sport: 4000, dport: 443, proto: layers.IPProtocolUDP, payload: 1201})
	udp6opts := withDestOpts(udp6)
	zero := zeroSumUDP(t)
	for _, c := range []struct {
		name string
		b    []byte // a frame with a finished checksum
	}{
		{"ipv4/tcp syn", tcp4}, {"ipv4/tcp data", tcp4data}, {"ipv4/udp", udp4},
		{"ipv4/udp sum 0", zero}, {"ipv6/tcp syn", tcp6}, {"ipv6/udp", udp6},
		{"ipv6/udp behind destination options", udp6opts},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := fullChecksum(t, c.b)
			if got := l4Checksum(c.b); got != want {
				t.Fatalf("fixture's checksum %#04x, recomputed %#04x", got, want)
			}
			partial := unfinish(t, c.b)
			for _, rx := range []nic.RxInfo{nic.RxCsumPartial, nic.RxCsumUnknown, nic.RxCsumPartial | nic.RxCsumUnknown} {
				b := append([]byte(nil), partial...)
				if r := finishL4(b, rx); r != csumFinished {
					t.Fatalf("rx %b: %d, want finished", rx, r)
				}
				if !bytes.Equal(b, c.b) {
					t.Fatalf("rx %b: finished %#04x, recomputed %#04x\n got %x\nwant %x", rx, l4Checksum(b), want, b, c.b)
				}
			}
			// Without a mark the frame is not touched: it pays nothing
			// and keeps its unfinished checksum.
			b := append([]byte(nil), partial...)
			if r := finishL4(b, 0); r != csumAsIs || !bytes.Equal(b, partial) {
				t.Fatalf("unmarked: %d, changed %v", r, !bytes.Equal(b, partial))
			}
			// A port that cannot tell leaves a finished checksum alone.
			b = append([]byte(nil), c.b...)
			if r := finishL4(b, nic.RxCsumUnknown); r != csumAsIs || !bytes.Equal(b, c.b) {
				t.Fatalf("finished frame marked unknown: %d, changed %v", r, !bytes.Equal(b, c.b))
			}
		})
	}
	if got := l4Checksum(zero); got != 0xffff {
		t.Fatalf("UDP checksum computing to 0 sent as %#04x, want 0xffff", got)
	}
}

// TestFinishL4Stuck: a frame marked unfinished that is not a TCP or UDP
// segment the fast path can finish is stuck (dropped by the worker);
// from a port that cannot tell, it is left as it is. Neither is changed.
func TestFinishL4Stuck(t *testing.T) {
	icmp := lanFrame(t, pkt{src: hostIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 5})
	frag := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 16})
	frag[hdr.EthernetLen+6] |= 0x20 // MF
	short := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true})
	short = short[:hdr.EthernetLen+20+10]
	binary.BigEndian.PutUint16(short[hdr.EthernetLen+2:], 30)
	arp := append(append(append([]byte(nil), routerMAC[:]...), hostMAC[:]...), 0x08, 0x06)
	arp = append(arp, make([]byte, 28)...)
	noUDPSum := lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 8})
	noUDPSum[hdr.EthernetLen+26], noUDPSum[hdr.EthernetLen+27] = 0, 0
	for _, c := range []struct {
		name  string
		b     []byte
		known csumResult // with nic.RxCsumPartial
	}{
		{"icmp", icmp, csumStuck}, {"fragment", frag, csumStuck}, {"cut tcp", short, csumStuck},
		{"arp", arp, csumStuck}, {"runt", arp[:10], csumStuck},
		{"udp without checksum (finished only when marked unfinished)", noUDPSum, csumFinished},
	} {
		for _, rx := range []nic.RxInfo{nic.RxCsumPartial, nic.RxCsumUnknown} {
			want := c.known
			if rx == nic.RxCsumUnknown {
				want = csumAsIs
			}
			b := append([]byte(nil), c.b...)
			r := finishL4(b, rx)
			if r != want {
				t.Errorf("%s, rx %b: %d, want %d", c.name, rx, r, want)
			}
			if r != csumFinished && !bytes.Equal(b, c.b) {
				t.Errorf("%s, rx %b: changed", c.name, rx)
			}
		}
	}
}

// TestCsumPartialPipeline: LAN frames with unfinished checksums leave
// with finished ones whichever way they go (through the NAT to the
// session, IPv4 and IPv6; to the router itself), each counted once;
// without the port's mark they are left as they are (what the NAT's
// incremental update makes of a checksum that did not verify still does
// not); one that cannot be finished is dropped by reason.
func TestCsumPartialPipeline(t *testing.T) {
	r := rig6(t, 2, nil)
	up := []struct {
		name string
		b    []byte
	}{
		{"ipv4 tcp", lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 40000, dport: 80, proto: layers.IPProtocolTCP, syn: true, mss: 1460})},
		{"ipv4 udp", lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 41})},
		{"ipv4 udp sum 0", zeroSumUDP(t)},
		{"ipv6 tcp", lanFrame6(t, pkt6{src: host6IP, dst: remote6IP, sport: 40001, dport: 443, proto: layers.IPProtocolTCP, syn: true, mss: 1440})},
		{"ipv6 udp", lanFrame6(t, pkt6{src: host6IP, dst: remote6IP, sport: 4001, dport: 443, proto: layers.IPProtocolUDP, payload: 99})},
	}
	for _, c := range up {
		for _, rx := range []nic.RxInfo{nic.RxCsumPartial, nic.RxCsumUnknown, 0} {
			before := r.e.Totals()
			r.lan.InjectRx(0, unfinish(t, c.b), rx)
			r.step()
			out := r.drainWAN()
			if len(out) != 1 {
				t.Fatalf("%s, rx %b: %d uplink frames; drops %v", c.name, rx, len(out), r.e.Totals().DropMap())
			}
			ip := out[0][22:]
			v6 := ip[0]>>4 == 6
			var seg []byte
			var pseudo uint32
			if v6 {
				seg = ip[hdr.IPv6Len:]
				pseudo = hdr.PseudoSum6((*hdr.Addr6)(ip[8:24]), (*hdr.Addr6)(ip[24:40]), ip[6], len(seg))
			} else {
				seg = ip[20:]
				pseudo = hdr.PseudoSum(ip[12:16], ip[16:20], ip[9], len(seg))
			}
			ok := hdr.Fold(hdr.Sum(seg, pseudo)) == 0xffff
			done := r.e.Totals().CsumCompleted - before.CsumCompleted
			if rx == 0 {
				if ok || done != 0 {
					t.Fatalf("%s unmarked: verifies %v, counted %d: the fast path touched it", c.name, ok, done)
				}
				continue
			}
			if !ok || done != 1 {
				t.Fatalf("%s, rx %b: the session gets a checksum that verifies: %v; counted %d, want 1", c.name, rx, ok, done)
			}
			if v6 {
				decodeIPv6(t, ip)
			} else {
				decodeIPv4(t, ip)
			}
		}
	}
	// To the router itself (the host stack checks what it is given).
	local := lanFrame(t, pkt{src: hostIP, dst: routerIP, sport: 4000, dport: 53, proto: layers.IPProtocolUDP, payload: 30})
	r.lan.InjectRx(0, unfinish(t, local), nic.RxCsumPartial)
	r.step()
	if _, fs := r.exceptions(); len(fs) != 1 || !bytes.Equal(fs[0], local) {
		t.Fatalf("exception frames %x, want the finished frame %x", fs, local)
	}
	// Marked, but ICMP: nothing to finish; dropped by reason.
	icmp := lanFrame(t, pkt{src: hostIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 5})
	r.lan.InjectRx(0, icmp, nic.RxCsumPartial)
	r.step()
	if n := len(r.drainWAN()); n != 0 || r.e.Totals().Drops[DropCsumPartial] != 1 {
		t.Fatalf("marked ICMP: %d uplink frames, drops %v", n, r.e.Totals().DropMap())
	}
}

// TestCsumPartialHairpin: a LAN host's unfinished SYN to a forward on
// the public address reaches the LAN server (a hairpin through both
// NATs, handed between workers) with a checksum that verifies.
func TestCsumPartialHairpin(t *testing.T) {
	r := forwardRig(t)
	b := lanFrame(t, pkt{src: hostIP, dst: pubIP, sport: 41000, dport: 443, proto: layers.IPProtocolTCP, syn: true})
	for q := 0; q < 2; q++ {
		r.lan.InjectRx(q, unfinish(t, b), nic.RxCsumPartial)
		r.step()
		r.step()
		hp := r.drainLAN()
		if len(hp) != 1 {
			t.Fatalf("queue %d: %d hairpin frames; drops %v", q, len(hp), r.e.Totals().DropMap())
		}
		decodeIPv4(t, hp[0][hdr.EthernetLen:])
	}
	if c := r.e.Totals(); c.CsumCompleted != 2 {
		t.Fatalf("CsumCompleted %d, want 2 (once a frame, however often it is handed over)", c.CsumCompleted)
	}
}

func TestCsumPartialZeroAlloc(t *testing.T) {
	r := newRig(t, 1, nil)
	partial := unfinish(t, lanFrame(t, pkt{src: hostIP, dst: remoteIP, sport: 40000, dport: 80, proto: layers.IPProtocolTCP, payload: 1400}))
	b := append([]byte(nil), partial...)
	if a := testing.AllocsPerRun(100, func() {
		copy(b, partial)
		finishL4(b, nic.RxCsumUnknown)
	}); a != 0 {
		t.Fatalf("finishL4 allocates %v", a)
	}
	r.lan.InjectRx(0, partial, nic.RxCsumPartial)
	r.step()
	r.drainWAN()
	if a := testing.AllocsPerRun(100, func() {
		r.lan.InjectRx(0, partial, nic.RxCsumPartial)
		r.step()
		r.wan.Drain(0, func([]byte) {})
	}); a != 0 {
		t.Fatalf("forwarding an unfinished frame allocates %v", a)
	}
	if c := r.e.Totals(); c.CsumCompleted < 100 || c.TotalDrops() != 0 {
		t.Fatalf("counters %+v, drops %v", c, c.DropMap())
	}
}

// FuzzFinishL4: whatever the frame and the port's mark, finishL4 never
// panics and writes nothing but the checksum field of a TCP or UDP
// segment. What it finishes holds the full recomputation when the field
// held the pseudo-header's sum (always so for a port that cannot tell,
// which leaves frames that verify as they are); a frame it does not
// finish is unchanged, and stuck only when marked unfinished.
func FuzzFinishL4(f *testing.F) {
	for _, b := range [][]byte{
		lanFrame(f, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true, mss: 1460}),
		lanFrame(f, pkt{src: hostIP, dst: remoteIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 9}),
		lanFrame(f, pkt{src: hostIP, dst: remoteIP, proto: layers.IPProtocolICMPv4, icmpType: 8, icmpID: 5}),
		lanFrame6(f, pkt6{src: host6IP, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolTCP, syn: true}),
		withDestOpts(lanFrame6(f, pkt6{src: host6IP, dst: remote6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP, payload: 3})),
	} {
		for _, rx := range []nic.RxInfo{nic.RxCsumPartial, nic.RxCsumUnknown} {
			if b[hdr.EthernetLen+9] != hdr.ProtoICMP {
				f.Add(unfinish(f, b), uint8(rx))
			}
			f.Add(b, uint8(rx))
		}
	}
	f.Add(zeroSumUDP(f), uint8(nic.RxCsumPartial))
	f.Fuzz(func(t *testing.T, b []byte, rx uint8) {
		in := append([]byte(nil), b...)
		seg, proto, pseudo, isL4 := l4Of(in)
		known := nic.RxInfo(rx)&nic.RxCsumPartial != 0
		r := finishL4(b, nic.RxInfo(rx))
		if r != csumFinished {
			if !bytes.Equal(b, in) {
				t.Fatalf("result %d, but the frame changed", r)
			}
			if r == csumStuck && !known {
				t.Fatalf("stuck without the partial mark")
			}
			return
		}
		if !isL4 {
			t.Fatalf("finished a frame without a TCP or UDP segment: %x", in)
		}
		field := cap(in) - cap(seg) + csumOff(proto) // seg is a slice of in
		for i := range b {
			if b[i] != in[i] && i != field && i != field+1 {
				t.Fatalf("byte %d changed (the checksum is at %d)", i, field)
			}
		}
		wasPseudo := binary.BigEndian.Uint16(in[field:]) == hdr.Fold(pseudo)
		if !known && (!wasPseudo || hdr.Fold(hdr.Sum(seg, pseudo)) == 0xffff) {
			t.Fatalf("finished a frame the port could not tell about that was not unfinished")
		}
		if got, want := l4Checksum(b), fullChecksum(t, b); wasPseudo && got != want {
			t.Fatalf("finished %#04x, recomputed %#04x", got, want)
		}
	})
}
