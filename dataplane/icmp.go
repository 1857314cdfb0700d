package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// icmpQuote is how much of the offending datagram an ICMP error carries:
// the IP header plus 8 bytes (RFC 792), as routers send by default.
const icmpQuote = 8

// makeICMPError turns the IPv4 packet at the front of f into an ICMP error
// about it, in place: it pushes a new IP + ICMP header into the headroom
// and trims the quoted datagram. src is the router address that sends the
// error; mtu is the next-hop MTU for fragmentation-needed (else 0).
// It returns false if the packet must not get an error (RFC 1812 4.3.2.7:
// not about an ICMP error, a fragment other than the first, or a
// non-unicast source) or the frame lacks headroom.
func makeICMPError(f *nic.Frame, src uint32, typ, code uint8, mtu uint16) bool {
	ip := hdr.IPv4(f.Data())
	if ip.FragOffset() != 0 {
		return false
	}
	s := ip.Src()
	if s == 0 || s>>24 == 127 || s>>28 == 0xe || s == 0xffffffff {
		return false
	}
	hl := ip.HeaderLen()
	if ip.Protocol() == hdr.ProtoICMP {
		if ip.TotalLen() < hl+1 {
			return false
		}
		if t := ip[hl]; t != hdr.ICMPEcho && t != hdr.ICMPEchoReply {
			return false
		}
	}
	q := hl + icmpQuote
	if q > ip.TotalLen() {
		q = ip.TotalLen()
	}
	b := f.Push(hdr.IPv4MinLen + hdr.ICMPLen)
	if b == nil {
		return false
	}
	f.Truncate(hdr.IPv4MinLen + hdr.ICMPLen + q)
	total := hdr.IPv4MinLen + hdr.ICMPLen + q
	b[0], b[1] = 0x45, 0xc0
	binary.BigEndian.PutUint16(b[2:], uint16(total))
	binary.BigEndian.PutUint32(b[4:], 0) // id, flags, fragment offset
	b[8], b[9] = 64, hdr.ProtoICMP
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], s)
	hdr.IPv4(b).ComputeChecksum()
	ic := f.Data()[hdr.IPv4MinLen:]
	ic[0], ic[1] = typ, code
	ic[2], ic[3] = 0, 0
	binary.BigEndian.PutUint16(ic[4:], 0)
	binary.BigEndian.PutUint16(ic[6:], mtu)
	hdr.ICMP(ic).SetChecksum(hdr.Checksum(ic, 0))
	return true
}

// tokenBucket rate-limits ICMP errors per worker (RFC 1812 4.3.2.8).
type tokenBucket struct {
	tokens, burst float64
	rate          float64 // tokens per ns
	last          int64
}

func newTokenBucket(perSecond, burst int) tokenBucket {
	return tokenBucket{tokens: float64(burst), burst: float64(burst), rate: float64(perSecond) / 1e9}
}

func (t *tokenBucket) allow(now int64) bool {
	if now > t.last {
		t.tokens += float64(now-t.last) * t.rate
		if t.tokens > t.burst {
			t.tokens = t.burst
		}
		t.last = now
	}
	if t.tokens >= 1 {
		t.tokens--
		return true
	}
	return false
}

// icmpToLAN replaces the LAN frame f (Ethernet at the front) by an ICMP
// error to its sender, rate-limited.
func (w *Worker) icmpToLAN(f *nic.Frame, typ, code uint8, mtu uint16) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	srcMAC := [6]byte(f.Data()[6:12])
	f.Pull(hdr.EthernetLen)
	if !makeICMPError(f, w.cfg.RouterAddr, typ, code, mtu) {
		w.pool.Put(f)
		return
	}
	w.errorBackToLAN(f, srcMAC, hdr.EtherTypeIPv4)
}

// icmpToWAN replaces the WAN packet f (IPv4 at the front) by an ICMP error
// to its sender over the session, rate-limited.
func (w *Worker) icmpToWAN(f *nic.Frame, typ, code uint8) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	if !makeICMPError(f, w.pubAddr, typ, code, 0) {
		w.pool.Put(f)
		return
	}
	w.c.ICMPSent++
	w.toWAN(f)
}

// errorBackToLAN queues the ICMP or ICMPv6 error in f (IP at the front)
// on the LAN to the host at mac that caused it, or for the host stack
// when it sent the frame (flagFromHost).
func (w *Worker) errorBackToLAN(f *nic.Frame, mac [6]byte, et uint16) {
	eth := hdr.Ethernet(f.Push(hdr.EthernetLen))
	w.c.ICMPSent++
	if f.Flags&flagFromHost != 0 {
		w.toHost(f, et)
		return
	}
	eth.SetAddrs(mac, w.cfg.RouterMAC)
	eth.SetType(et)
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// icmp6ToLAN replaces the LAN frame f (Ethernet + IPv6) by an ICMPv6
// error to its sender, rate-limited.
func (w *Worker) icmp6ToLAN(f *nic.Frame, typ, code uint8, param uint32) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	srcMAC := [6]byte(f.Data()[6:12])
	f.Pull(hdr.EthernetLen)
	if !makeICMP6Error(f, &w.lan6.Router, typ, code, param) {
		w.pool.Put(f)
		return
	}
	w.errorBackToLAN(f, srcMAC, hdr.EtherTypeIPv6)
}

// icmp6ToWAN replaces the WAN packet f (IPv6 at the front) by an ICMPv6
// error to its sender over the session, rate-limited.
func (w *Worker) icmp6ToWAN(f *nic.Frame, typ, code uint8) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	if !makeICMP6Error(f, &w.lan6.Router, typ, code, 0) {
		w.pool.Put(f)
		return
	}
	w.c.ICMPSent++
	w.toWAN(f)
}

// icmp6Max is the most an ICMPv6 error may be: the minimum IPv6 MTU
// (RFC 4443 2.4 (c)).
const icmp6Max = hdr.ICMP6MinMTU

// makeICMP6Error turns the IPv6 packet at the front of f into an ICMPv6
// error about it, in place: a new IPv6 + ICMPv6 header goes into the
// headroom and the quoted packet is cut so the whole fits in 1280 bytes.
// param is the MTU of a packet-too-big (else 0). It returns false where
// RFC 4443 2.4 (e) forbids an error: about an ICMPv6 error or a
// redirect (behind extension headers too, and about a packet whose
// header chain cannot be followed), or from a source that is not a
// unicast address; or when the frame lacks headroom.
func makeICMP6Error(f *nic.Frame, src *hdr.Addr6, typ, code uint8, param uint32) bool {
	ip := hdr.IPv6(f.Data())
	to := ip.Src()
	if to == (hdr.Addr6{}) || hdr.IsMulticast6(&to) {
		return false
	}
	if d := ip.Dst(); hdr.IsMulticast6(&d) && typ != hdr.ICMP6PacketTooBig {
		return false
	}
	// Behind its extension headers: an error or redirect hides there as
	// well as right behind the fixed header, and a chain that cannot be
	// followed gets no answer.
	c := walk6(ip)
	if !c.ok {
		return false
	}
	if c.proto == hdr.ProtoICMP6 {
		if c.off >= len(ip) {
			return false
		}
		if t := ip[c.off]; t < 128 || t == 137 { // errors, and redirects
			return false
		}
	}
	const head = hdr.IPv6Len + hdr.ICMP6ErrorHeaderBytes
	b := f.Push(head)
	if b == nil {
		return false
	}
	if f.Len > icmp6Max {
		f.Truncate(icmp6Max)
	}
	msg := f.Data()[hdr.IPv6Len:]
	hdr.IPv6(b).SetHeader(hdr.ProtoICMP6, 64, len(msg), src, &to)
	msg[0], msg[1] = typ, code
	binary.BigEndian.PutUint32(msg[4:], param)
	hdr.ICMP6Checksum(msg, src, &to)
	return true
}
