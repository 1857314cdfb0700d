package nat

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
)

// pkt is the parsed view of a TCP/UDP/ICMP-echo packet the fast path
// translates. It lives on the stack.
type pkt struct {
	v      hdr.IPv4
	l4     []byte
	pi     int
	src    uint32
	dst    uint32
	sport  uint16 // echo id for ICMP
	dport  uint16 // 0 for ICMP
	flags  uint8  // TCP flags
	icmpTy uint8
}

// parse validates ip and fills p. It returns a drop reason and false when
// the packet cannot be translated; ICMP errors come back with ok and
// p.icmpTy set (the caller branches on it).
func parse(ip []byte, p *pkt) (Reason, bool) {
	v := hdr.IPv4(ip)
	if !v.IsValid() {
		return ReasonMalformed, false
	}
	// A first fragment holds the transport header and is translated like
	// a whole packet (the checksum update is incremental, so the rest of
	// the datagram need not be here); later fragments are not ours.
	first := v.IsFragment()
	if first && v.FragOffset() != 0 {
		return ReasonFragment, false
	}
	p.v = v
	p.l4 = ip[v.HeaderLen():v.TotalLen()]
	p.src, p.dst = v.Src(), v.Dst()
	switch v.Protocol() {
	case hdr.ProtoTCP:
		tc := hdr.TCP(p.l4)
		if !tc.IsValid() {
			return ReasonMalformed, false
		}
		p.pi, p.sport, p.dport, p.flags = piTCP, tc.SrcPort(), tc.DstPort(), tc.Flags()
	case hdr.ProtoUDP:
		u := hdr.UDP(p.l4)
		// A first fragment's UDP length counts the whole datagram.
		if !u.IsValid() && !(first && len(p.l4) >= hdr.UDPLen && u.Length() > len(p.l4)) {
			return ReasonMalformed, false
		}
		p.pi, p.sport, p.dport = piUDP, u.SrcPort(), u.DstPort()
	case hdr.ProtoICMP:
		ic := hdr.ICMP(p.l4)
		if !ic.IsValid() {
			return ReasonMalformed, false
		}
		p.pi, p.icmpTy = piICMP, ic.Type()
		if ic.IsQuery() {
			p.sport = ic.ID()
		} else if first {
			return ReasonFragment, false // a fragmented ICMP error: its quote may be cut
		}
	default:
		return ReasonProto, false
	}
	return 0, true
}

// snat rewrites the source to the public address and port/id ext.
func (t *Table) snat(p *pkt, ext uint16) {
	switch p.pi {
	case piTCP:
		c := binary.BigEndian.Uint16(p.l4[16:])
		binary.BigEndian.PutUint16(p.l4[16:], updateAddrPort(c, p.src, t.pub, p.sport, ext))
		binary.BigEndian.PutUint16(p.l4, ext)
	case piUDP:
		if c := binary.BigEndian.Uint16(p.l4[6:]); c != 0 {
			binary.BigEndian.PutUint16(p.l4[6:], nonZero(updateAddrPort(c, p.src, t.pub, p.sport, ext)))
		}
		binary.BigEndian.PutUint16(p.l4, ext)
	default:
		setICMPID(p.l4, ext)
	}
	c := binary.BigEndian.Uint16(p.v[10:])
	binary.BigEndian.PutUint16(p.v[10:], updateAddr(c, p.src, t.pub))
	binary.BigEndian.PutUint32(p.v[12:], t.pub)
	p.src, p.sport = t.pub, ext
}

// dnat rewrites the destination to a LAN endpoint.
func (t *Table) dnat(p *pkt, lan uint32, lport uint16) {
	switch p.pi {
	case piTCP:
		c := binary.BigEndian.Uint16(p.l4[16:])
		binary.BigEndian.PutUint16(p.l4[16:], updateAddrPort(c, p.dst, lan, p.dport, lport))
		binary.BigEndian.PutUint16(p.l4[2:], lport)
	case piUDP:
		if c := binary.BigEndian.Uint16(p.l4[6:]); c != 0 {
			binary.BigEndian.PutUint16(p.l4[6:], nonZero(updateAddrPort(c, p.dst, lan, p.dport, lport)))
		}
		binary.BigEndian.PutUint16(p.l4[2:], lport)
	default:
		setICMPID(p.l4, lport)
	}
	c := binary.BigEndian.Uint16(p.v[10:])
	binary.BigEndian.PutUint16(p.v[10:], updateAddr(c, p.dst, lan))
	binary.BigEndian.PutUint32(p.v[16:], lan)
	p.dst, p.dport = lan, lport
}

// The checksum updates below fold with a fixed number of steps (their
// sums stay below 2^19): hdr's loop folds until the sum fits, a branch
// that goes either way from packet to packet.

// updateAddr is hdr.Update32: checksum c after a 32-bit field (an address)
// changes from a0 to a1.
func updateAddr(c uint16, a0, a1 uint32) uint16 {
	s := uint32(^c) + uint32(^uint16(a0>>16)) + uint32(^uint16(a0)) +
		uint32(uint16(a1>>16)) + uint32(uint16(a1))
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return ^uint16(s)
}

// setICMPID is hdr.ICMP.SetID: the echo id and the ICMP checksum.
func setICMPID(ic []byte, id uint16) {
	c := binary.BigEndian.Uint16(ic[2:])
	s := uint32(^c) + uint32(^binary.BigEndian.Uint16(ic[4:])) + uint32(id)
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	binary.BigEndian.PutUint16(ic[2:], ^uint16(s))
	binary.BigEndian.PutUint16(ic[4:], id)
}

// updateAddrPort is RFC 1624 eqn. 3 for a pseudo-header address change
// a0 -> a1 and a port change p0 -> p1 in one fold; the result is the one
// hdr.Update32 followed by hdr.Update16 gives (both are exact one's
// complement sums, folded to a non-zero value unless every term is zero).
func updateAddrPort(c uint16, a0, a1 uint32, p0, p1 uint16) uint16 {
	s := uint32(^c) + uint32(^uint16(a0>>16)) + uint32(^uint16(a0)) +
		uint32(uint16(a1>>16)) + uint32(uint16(a1)) + uint32(^p0) + uint32(p1)
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return ^uint16(s)
}

// nonZero maps a computed UDP checksum of 0 to 0xffff (0 means none).
func nonZero(c uint16) uint16 {
	if c == 0 {
		return 0xffff
	}
	return c
}

func (t *Table) isLAN(a uint32) bool { return (a^t.cfg.LANAddr)&t.lanM == 0 }

func (t *Table) redirectTo(w int) Verdict {
	t.redirect = w
	t.stats.Redirects++
	return Redirect
}

// Outbound translates a LAN->WAN IPv4 packet (ip[0] is the IP header) in
// place. The worker calls it for packets routed to the WAN or addressed
// to the public address, and for packets another worker redirected to it.
func (t *Table) Outbound(ip []byte, now int64) Verdict {
	if t.outboundFast(ip, nowSec(now)) {
		return Pass
	}
	var p pkt
	if r, ok := parse(ip, &p); !ok {
		return t.drop(r)
	}
	if t.pub == 0 {
		return t.drop(ReasonNoAddr)
	}
	s := nowSec(now)
	if p.src == t.pub {
		if p.dst == t.pub && p.pi != piICMP {
			// Second half of a hairpin handed over by another worker.
			return t.hairpinIn(&p, s)
		}
		return t.drop(ReasonNotLAN)
	}
	if !t.isLAN(p.src) {
		return t.drop(ReasonNotLAN)
	}
	if p.pi == piICMP {
		switch {
		case p.icmpTy == hdr.ICMPEcho:
			if p.dst == t.pub {
				t.stats.Locals++
				return Local
			}
		case hdr.ICMP(p.l4).IsError():
			return t.icmpErrorOut(&p)
		default:
			return t.drop(ReasonICMPType)
		}
	}
	target := -1
	if p.dst == t.pub {
		if target = t.extOwner(p.pi, p.dport); target < 0 {
			t.stats.Locals++
			return Local
		}
	}
	if f := t.fwdByLAN(p.pi, p.src, p.sport); f != nil {
		if f.Worker != t.cfg.Worker {
			return t.redirectTo(f.Worker)
		}
		// A hairpinned packet never crosses the WAN: no ICMP error
		// from there can quote it.
		if target < 0 {
			t.trackFwd(f, p.pi, p.dst, p.dport, p.flags, s)
		}
		t.snat(&p, f.ExtPort)
	} else {
		if w := t.endpointOwner(p.pi, p.src, p.sport); w != t.cfg.Worker {
			return t.redirectTo(w)
		}
		i := t.lookupFlow(p.pi, p.src, p.sport, p.dst, p.dport, s)
		if i < 0 {
			if p.pi == piTCP && p.flags&hdr.TCPRst != 0 {
				return t.drop(ReasonNoState)
			}
			var r Reason
			if i, r = t.createFlow(p.pi, p.src, p.sport, p.dst, p.dport); i < 0 {
				return t.reject(r)
			}
		}
		e := &t.slots[i]
		t.touch(e, p.pi, p.flags, true, s)
		t.snat(&p, e.ext)
	}
	if target < 0 {
		return Pass
	}
	if target != t.cfg.Worker {
		return t.redirectTo(target)
	}
	return t.hairpinIn(&p, s)
}

// hairpinIn finishes a hairpin: the packet (src = public:X) goes to the
// LAN endpoint behind public:dport as if it came from the WAN.
func (t *Table) hairpinIn(p *pkt, s uint32) Verdict {
	if w := t.extOwner(p.pi, p.dport); w >= 0 && w != t.cfg.Worker {
		return t.redirectTo(w)
	}
	v := t.inboundL4(p, s)
	if v == Pass {
		t.stats.Hairpins++
		return Hairpin
	}
	return v
}

// Inbound translates a WAN->LAN IPv4 packet in place.
func (t *Table) Inbound(ip []byte, now int64) Verdict {
	if t.inboundFast(ip, nowSec(now)) {
		return Pass
	}
	var p pkt
	if r, ok := parse(ip, &p); !ok {
		return t.drop(r)
	}
	if t.pub == 0 {
		return t.drop(ReasonNoAddr)
	}
	if p.dst != t.pub {
		return t.drop(ReasonNotPublic)
	}
	s := nowSec(now)
	if p.pi != piICMP {
		return t.inboundL4(&p, s)
	}
	switch {
	case p.icmpTy == hdr.ICMPEcho:
		t.stats.Locals++
		return Local
	case p.icmpTy == hdr.ICMPEchoReply:
		id := p.sport
		xi := t.px.index(id)
		if xi >= t.px.span {
			return t.drop(ReasonNoMapping)
		}
		m := t.ports[piICMP][xi]
		if m == 0 || m == portReserved {
			return t.drop(ReasonNoMapping)
		}
		me := t.slots[m-1]
		i := t.lookupFlow(piICMP, me.lan, me.lport, p.src, 0, s)
		if i < 0 {
			return t.drop(t.goneReason(piICMP, id))
		}
		t.touch(&t.slots[i], piICMP, 0, false, s)
		t.dnat(&p, me.lan, me.lport)
		return Pass
	case hdr.ICMP(p.l4).IsError():
		return t.icmpErrorIn(&p, s)
	}
	return t.drop(ReasonICMPType)
}

// goneReason is the drop reason when the flow looked up through the
// mapping of ext is missing: the lookup may have expired the mapping's
// last flow, and then the packet is unsolicited.
func (t *Table) goneReason(pi int, ext uint16) Reason {
	if t.ports[pi][t.px.index(ext)] == 0 {
		return ReasonNoMapping
	}
	return ReasonNoState
}

// inboundL4 translates a TCP/UDP packet to public:dport (from the WAN or
// the second half of a hairpin).
func (t *Table) inboundL4(p *pkt, s uint32) Verdict {
	if f := t.fwdByExt(p.pi, p.dport); f != nil {
		if f.Worker != t.cfg.Worker {
			return t.drop(ReasonNotOwner)
		}
		// The state only refreshes here (it tells ICMP errors which
		// remotes the server talks to); the packet passes either way.
		if i := t.lookupFwd(p.pi, f.LANAddr, f.LANPort, p.src, p.sport, s); i >= 0 {
			t.touch(&t.slots[i], p.pi, p.flags, false, s)
		}
		t.dnat(p, f.LANAddr, f.LANPort)
		return Pass
	}
	idx := t.px.index(p.dport)
	if idx >= t.px.span {
		if t.cfg.LocalPorts.Contains(p.dport) {
			t.stats.Locals++
			return Local
		}
		for j, r := range t.cfg.Ranges {
			if (r.Contains(p.dport) || r.ContainsLow(p.dport)) && j != t.cfg.Worker {
				return t.drop(ReasonNotOwner)
			}
		}
		return t.drop(ReasonNoMapping)
	}
	m := t.ports[p.pi][idx]
	if m == portReserved {
		if t.cfg.LocalPorts.Contains(p.dport) {
			t.stats.Locals++
			return Local
		}
		return t.drop(ReasonNoMapping)
	}
	if m == 0 {
		return t.drop(ReasonNoMapping)
	}
	lan, lport := t.slots[m-1].lan, t.slots[m-1].lport
	i := t.lookupFlow(p.pi, lan, lport, p.src, p.sport, s)
	if i >= 0 {
		t.touch(&t.slots[i], p.pi, p.flags, false, s)
	} else {
		// The lookup may have expired the mapping's last flow.
		if t.ports[p.pi][idx] == 0 {
			return t.drop(ReasonNoMapping)
		}
		if t.cfg.Filtering == AddressDependent && t.findPerm(p.pi, lan, lport, p.src) < 0 {
			return t.drop(ReasonFiltered)
		}
	}
	t.dnat(p, lan, lport)
	return Pass
}

// inner is the embedded datagram of an ICMP error.
type inner struct {
	ip  []byte // embedded IP header + what follows
	l4  []byte // embedded transport bytes (at least 8)
	pi  int
	src uint32
	dst uint32
	sp  uint16 // source port / echo id
	dp  uint16
}

// parseInner validates the embedded datagram of ICMP error ic: a full
// IPv4 header and 8 transport bytes, not a fragment with offset.
func parseInner(ic []byte, in *inner) (Reason, bool) {
	b := ic[hdr.ICMPLen:]
	if len(b) < hdr.IPv4MinLen || b[0]>>4 != 4 {
		return ReasonMalformed, false
	}
	ihl := int(b[0]&0xf) * 4
	if ihl < hdr.IPv4MinLen || len(b) < ihl+8 {
		return ReasonMalformed, false
	}
	if binary.BigEndian.Uint16(b[6:])&0x1fff != 0 {
		return ReasonFragment, false
	}
	in.ip, in.l4 = b, b[ihl:]
	in.src, in.dst = binary.BigEndian.Uint32(b[12:]), binary.BigEndian.Uint32(b[16:])
	switch b[9] {
	case hdr.ProtoTCP:
		in.pi = piTCP
	case hdr.ProtoUDP:
		in.pi = piUDP
	case hdr.ProtoICMP:
		in.pi = piICMP
		// Only echo requests leave through the NAT, so only they can be
		// quoted back (inbound) or replies (outbound).
		in.sp = binary.BigEndian.Uint16(in.l4[4:])
		return 0, true
	default:
		return ReasonProto, false
	}
	in.sp, in.dp = binary.BigEndian.Uint16(in.l4), binary.BigEndian.Uint16(in.l4[2:])
	return 0, true
}

// icmpErrorIn translates a WAN ICMP error about a packet the NAT sent out
// (a live flow, or a live forward state for a forward's port):
// outer destination, embedded source address and port/id, and the embedded
// IP, embedded transport and ICMP checksums.
func (t *Table) icmpErrorIn(p *pkt, s uint32) Verdict {
	var in inner
	if r, ok := parseInner(p.l4, &in); !ok {
		return t.drop(r)
	}
	if in.src != t.pub {
		return t.drop(ReasonNoState)
	}
	if in.pi == piICMP && in.l4[0] != hdr.ICMPEcho {
		return t.drop(ReasonICMPType)
	}
	var lan uint32
	var lport uint16
	if f := t.fwdByExt(in.pi, in.sp); f != nil {
		if f.Worker != t.cfg.Worker {
			return t.drop(ReasonNotOwner)
		}
		lan, lport = f.LANAddr, f.LANPort
		// The quote must be a packet the server sent to that remote.
		if t.lookupFwd(in.pi, lan, lport, in.dst, in.dp, s) < 0 {
			return t.drop(ReasonNoState)
		}
	} else {
		idx := t.px.index(in.sp)
		if idx >= t.px.span {
			return t.drop(ReasonNoMapping)
		}
		m := t.ports[in.pi][idx]
		if m == 0 || m == portReserved {
			return t.drop(ReasonNoMapping)
		}
		lan, lport = t.slots[m-1].lan, t.slots[m-1].lport
		if t.lookupFlow(in.pi, lan, lport, in.dst, in.dp, s) < 0 {
			return t.drop(t.goneReason(in.pi, in.sp))
		}
	}
	rewriteInner(p.l4, &in, true, lan, lport)
	p.v.SetDst(lan)
	return Pass
}

// icmpErrorOut translates a LAN ICMP error about a packet the NAT
// delivered: outer source, embedded destination address and port/id, and
// the checksums.
func (t *Table) icmpErrorOut(p *pkt) Verdict {
	var in inner
	if r, ok := parseInner(p.l4, &in); !ok {
		return t.drop(r)
	}
	if p.dst == t.pub || in.src == t.pub || in.dst == t.pub {
		return t.drop(ReasonHairpinICMP)
	}
	if in.pi == piICMP {
		return t.drop(ReasonICMPType)
	}
	var ext uint16
	if f := t.fwdByLAN(in.pi, in.dst, in.dp); f != nil {
		if f.Worker != t.cfg.Worker {
			return t.redirectTo(f.Worker)
		}
		ext = f.ExtPort
	} else {
		if w := t.endpointOwner(in.pi, in.dst, in.dp); w != t.cfg.Worker {
			return t.redirectTo(w)
		}
		m := t.findMap(in.pi, in.dst, in.dp)
		if m < 0 {
			return t.drop(ReasonNoMapping)
		}
		ext = t.slots[m].ext
	}
	rewriteInner(p.l4, &in, false, t.pub, ext)
	p.v.SetSrc(t.pub)
	return Pass
}

// rewriteInner replaces the embedded source (src true) or destination
// address and port/id, fixing the embedded IP checksum, the embedded
// transport checksum when it was quoted, and the ICMP checksum. Every
// changed word is at an even offset of the ICMP message, so RFC 1624
// updates apply.
func rewriteInner(ic []byte, in *inner, src bool, addr uint32, port uint16) {
	c := hdr.ICMP(ic).Checksum()
	aoff, poff := 12, 0
	old, oldp := in.src, in.sp
	if !src {
		aoff, poff = 16, 2
		old, oldp = in.dst, in.dp
	}
	binary.BigEndian.PutUint32(in.ip[aoff:], addr)
	c = hdr.Update32(c, old, addr)
	ick := binary.BigEndian.Uint16(in.ip[10:])
	nick := hdr.Update32(ick, old, addr)
	binary.BigEndian.PutUint16(in.ip[10:], nick)
	c = hdr.Update16(c, ick, nick)
	put16 := func(b []byte, v uint16) {
		o := binary.BigEndian.Uint16(b)
		binary.BigEndian.PutUint16(b, v)
		c = hdr.Update16(c, o, v)
	}
	switch in.pi {
	case piTCP:
		put16(in.l4[poff:], port)
		if len(in.l4) >= 18 {
			k := binary.BigEndian.Uint16(in.l4[16:])
			put16(in.l4[16:], hdr.Update16(hdr.Update32(k, old, addr), oldp, port))
		}
	case piUDP:
		put16(in.l4[poff:], port)
		if k := binary.BigEndian.Uint16(in.l4[6:]); k != 0 {
			nk := hdr.Update16(hdr.Update32(k, old, addr), oldp, port)
			if nk == 0 {
				nk = 0xffff
			}
			put16(in.l4[6:], nk)
		}
	case piICMP:
		k := binary.BigEndian.Uint16(in.l4[2:])
		put16(in.l4[4:], port)
		put16(in.l4[2:], hdr.Update16(k, oldp, port))
	}
	hdr.ICMP(ic).SetChecksum(c)
}
