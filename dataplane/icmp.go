package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
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
