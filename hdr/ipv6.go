package hdr

import "encoding/binary"

// IPv6 and ICMPv6 constants.
const (
	IPv6Len    = 40
	ProtoICMP6 = 58

	ICMP6DestUnreach  = 1
	ICMP6PacketTooBig = 2
	ICMP6TimeExceeded = 3
	ICMP6ParamProblem = 4
	ICMP6EchoRequest  = 128
	ICMP6EchoReply    = 129
	ICMP6RouterSol    = 133
	ICMP6RouterAdv    = 134
	ICMP6NeighborSol  = 135
	ICMP6NeighborAdv  = 136

	ICMP6CodeNoRoute      = 0
	ICMP6CodeAdminProhib  = 1
	ICMP6CodeAddrUnreach  = 3
	ICMP6CodeHopLimit     = 0
	ICMP6MinMTU           = 1280
	ICMP6ErrorHeaderBytes = 8
)

// Addr6 is an IPv6 address.
type Addr6 = [16]byte

// IPv6 is a view of an IPv6 header (extension headers, if any, follow it
// and are not parsed here).
type IPv6 []byte

// IsValid checks the fixed header fits, the version is 6 and the payload
// length fits in b.
func (b IPv6) IsValid() bool {
	return len(b) >= IPv6Len && b[0]>>4 == 6 && IPv6Len+int(binary.BigEndian.Uint16(b[4:])) <= len(b)
}

// PayloadLen returns the payload length field.
func (b IPv6) PayloadLen() int { return int(binary.BigEndian.Uint16(b[4:])) }

// TotalLen returns the header plus the payload length.
func (b IPv6) TotalLen() int { return IPv6Len + b.PayloadLen() }

// SetPayloadLen stores the payload length field.
func (b IPv6) SetPayloadLen(n int) { binary.BigEndian.PutUint16(b[4:], uint16(n)) }

// NextHeader returns the next header field.
func (b IPv6) NextHeader() uint8 { return b[6] }

// HopLimit returns the hop limit.
func (b IPv6) HopLimit() uint8 { return b[7] }

// DecHopLimit decrements the hop limit (IPv6 has no header checksum).
func (b IPv6) DecHopLimit() { b[7]-- }

// Src returns the source address.
func (b IPv6) Src() Addr6 { return Addr6(b[8:24]) }

// Dst returns the destination address.
func (b IPv6) Dst() Addr6 { return Addr6(b[24:40]) }

// Payload returns what follows the fixed header, up to the payload length.
func (b IPv6) Payload() []byte { return b[IPv6Len:b.TotalLen()] }

// SetECNCE sets the ECN bits of the traffic class to CE (11) if the packet
// is ECN-capable and reports whether it did (or was already CE).
func (b IPv6) SetECNCE() bool {
	ecn := b[1] >> 4 & 3
	if ecn == 0 {
		return false
	}
	b[1] |= 3 << 4
	return true
}

// SetHeader writes a fixed IPv6 header: traffic class and flow label zero.
func (b IPv6) SetHeader(next, hopLimit uint8, payloadLen int, src, dst *Addr6) {
	b[0], b[1], b[2], b[3] = 0x60, 0, 0, 0
	b.SetPayloadLen(payloadLen)
	b[6], b[7] = next, hopLimit
	copy(b[8:24], src[:])
	copy(b[24:40], dst[:])
}

// PseudoSum6 returns the unfolded sum of the IPv6 pseudo-header (RFC 8200
// 8.1) for an upper-layer packet of length bytes.
func PseudoSum6(src, dst *Addr6, next uint8, length int) uint32 {
	s := Sum(src[:], 0)
	s = Sum(dst[:], s)
	return s + uint32(length>>16) + uint32(length&0xffff) + uint32(next)
}

// ICMP6Checksum computes the ICMPv6 checksum of msg (its checksum field
// zeroed first) as carried between src and dst, and stores it.
func ICMP6Checksum(msg []byte, src, dst *Addr6) {
	msg[2], msg[3] = 0, 0
	binary.BigEndian.PutUint16(msg[2:], Checksum(msg, PseudoSum6(src, dst, ProtoICMP6, len(msg))))
}

// ICMP6ChecksumOK verifies msg's ICMPv6 checksum.
func ICMP6ChecksumOK(msg []byte, src, dst *Addr6) bool {
	return Fold(Sum(msg, PseudoSum6(src, dst, ProtoICMP6, len(msg)))) == 0xffff
}

// IsMulticast6 reports whether a is a multicast address (ff00::/8).
func IsMulticast6(a *Addr6) bool { return a[0] == 0xff }

// IsLinkLocal6 reports whether a is a link-local unicast address (fe80::/10).
func IsLinkLocal6(a *Addr6) bool { return a[0] == 0xfe && a[1]&0xc0 == 0x80 }

// InPrefix6 reports whether a lies in prefix/bits.
func InPrefix6(a, prefix *Addr6, bits int) bool {
	hi, phi := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(prefix[:8])
	lo, plo := binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(prefix[8:])
	switch {
	case bits <= 0:
		return true
	case bits < 64:
		return (hi^phi)>>(64-bits) == 0
	case bits == 64:
		return hi == phi
	case bits < 128:
		return hi == phi && (lo^plo)>>(128-bits) == 0
	}
	return hi == phi && lo == plo
}

// LinkLocalEUI64 returns the link-local address fe80::/64 with the
// modified EUI-64 interface identifier of mac (RFC 4291 appendix A).
func LinkLocalEUI64(mac [6]byte) Addr6 {
	var a Addr6
	a[0], a[1] = 0xfe, 0x80
	a[8], a[9], a[10] = mac[0]^2, mac[1], mac[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = mac[3], mac[4], mac[5]
	return a
}

// SolicitedNode returns the solicited-node multicast address of a
// (ff02::1:ffXX:XXXX, RFC 4291 2.7.1).
func SolicitedNode(a *Addr6) Addr6 {
	return Addr6{0xff, 0x02, 10: 0, 11: 0x01, 12: 0xff, 13: a[13], 14: a[14], 15: a[15]}
}

// MulticastMAC returns the Ethernet address of IPv6 multicast group a
// (33:33 and its low 32 bits, RFC 2464 7).
func MulticastMAC(a *Addr6) [6]byte { return [6]byte{0x33, 0x33, a[12], a[13], a[14], a[15]} }
