package nat

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
)

// The fast paths translate a TCP/UDP packet of an established flow in one
// pass over the headers: no parsed view is built, every check of the
// general path that this packet would pass is one compare, and any packet
// they do not recognise (ICMP, options the views reject, hairpins,
// forwards, another worker's endpoint, a missing or expired flow) leaves
// them untouched, with nothing changed in the table, for the general path
// in translate.go. The differential tests hold both paths to the model.

// l4Hdr checks the IPv4 header and the TCP/UDP header of ip the way parse
// does and returns the transport bytes, the protocol index and the TCP
// flags; ok is false for anything else (the general path decides).
func l4Hdr(ip []byte) (l4 []byte, pi int, flags uint8, ok bool) {
	if len(ip) < hdr.IPv4MinLen || ip[0]>>4 != 4 {
		return nil, 0, 0, false
	}
	hl := int(ip[0]&0xf) * 4
	tl := int(binary.BigEndian.Uint16(ip[2:]))
	if hl < hdr.IPv4MinLen || tl < hl || tl > len(ip) || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
		return nil, 0, 0, false
	}
	l4 = ip[hl:tl]
	switch ip[9] {
	case hdr.ProtoTCP:
		if len(l4) < hdr.TCPMinLen {
			return nil, 0, 0, false
		}
		if off := int(l4[12]>>4) * 4; off < hdr.TCPMinLen || off > len(l4) {
			return nil, 0, 0, false
		}
		return l4, piTCP, l4[13], true
	case hdr.ProtoUDP:
		if len(l4) < hdr.UDPLen {
			return nil, 0, 0, false
		}
		if n := int(binary.BigEndian.Uint16(l4[4:])); n < hdr.UDPLen || n > len(l4) {
			return nil, 0, 0, false
		}
		return l4, piUDP, 0, true
	}
	return nil, 0, 0, false
}

// outboundFast is Outbound for a TCP/UDP packet on a live flow of this
// table, not to the public address. It reports whether it translated the packet (verdict
// Pass).
func (t *Table) outboundFast(ip []byte, s uint32) bool {
	l4, pi, flags, ok := l4Hdr(ip)
	if !ok {
		return false
	}
	// The general path's other checks (public address known, source not
	// the public address, LAN source, forward endpoint, endpoint owner)
	// need no code here: createFlow only runs after all of them, and
	// SetPublicAddr flushes the table, so a flow of this table exists
	// only for a source that passes them; for any other the probe fails.
	// A flow to the public address is a hairpin's: the general path.
	src, dst := binary.BigEndian.Uint32(ip[12:]), binary.BigEndian.Uint32(ip[16:])
	if dst == t.pub {
		return false
	}
	sport, dport := binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	i := t.findFlow(pi, src, sport, dst, dport)
	if i < 0 {
		return false
	}
	e := &t.slots[i]
	if expired(e.exp, s) {
		return false
	}
	t.touch(e, pi, flags, true, s)
	rewriteL4(ip, l4, pi, 12, 0, src, t.pub, sport, e.ext)
	return true
}

// inboundFast is Inbound for a TCP/UDP packet to the public address on a
// live flow whose LAN endpoint the per-port array names. It reports
// whether it translated the packet (verdict Pass).
func (t *Table) inboundFast(ip []byte, s uint32) bool {
	l4, pi, flags, ok := l4Hdr(ip)
	if !ok {
		return false
	}
	// No flow exists while the public address is 0 (see outboundFast).
	dst := binary.BigEndian.Uint32(ip[16:])
	if dst != t.pub {
		return false
	}
	lo := t.lanOf[pi]
	dport := binary.BigEndian.Uint16(l4[2:])
	idx := t.px.index(dport)
	if idx >= uint32(len(lo)) {
		return false
	}
	v := lo[idx]
	if v == 0 { // never mapped: unsolicited, no probe
		return false
	}
	lan, lport := t.lanNet|v>>16, uint16(v)
	i := t.findFlow(pi, lan, lport, binary.BigEndian.Uint32(ip[12:]), binary.BigEndian.Uint16(l4))
	if i < 0 {
		return false
	}
	e := &t.slots[i]
	if e.ext != dport || expired(e.exp, s) {
		return false
	}
	t.touch(e, pi, flags, false, s)
	rewriteL4(ip, l4, pi, 16, 2, dst, lan, dport, lport)
	return true
}

// rewriteL4 replaces the IPv4 address at aoff (12 source, 16 destination)
// from a0 to a1 and the TCP/UDP port at poff (0 source, 2 destination)
// from p0 to p1, with the IP header and transport checksums.
func rewriteL4(ip, l4 []byte, pi int, aoff, poff int, a0, a1 uint32, p0, p1 uint16) {
	if pi == piTCP {
		c := binary.BigEndian.Uint16(l4[16:])
		binary.BigEndian.PutUint16(l4[16:], updateAddrPort(c, a0, a1, p0, p1))
	} else if c := binary.BigEndian.Uint16(l4[6:]); c != 0 {
		binary.BigEndian.PutUint16(l4[6:], nonZero(updateAddrPort(c, a0, a1, p0, p1)))
	}
	binary.BigEndian.PutUint16(l4[poff:], p1)
	c := binary.BigEndian.Uint16(ip[10:])
	binary.BigEndian.PutUint16(ip[10:], updateAddr(c, a0, a1))
	binary.BigEndian.PutUint32(ip[aoff:], a1)
}
