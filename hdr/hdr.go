package hdr

import "encoding/binary"

// EtherTypes and protocol numbers used by pppfwd.
const (
	EtherTypeIPv4      = 0x0800
	EtherTypeARP       = 0x0806
	EtherTypeVLAN      = 0x8100
	EtherTypeIPv6      = 0x86dd
	EtherTypePPPoEDisc = 0x8863
	EtherTypePPPoESess = 0x8864

	PPPIPv4   = 0x0021
	PPPIPv6   = 0x0057
	PPPIPCP   = 0x8021
	PPPIPv6CP = 0x8057
	PPPLCP    = 0xc021
	PPPPAP    = 0xc023
	PPPCHAP   = 0xc223

	ProtoICMP = 1
	ProtoTCP  = 6
	ProtoUDP  = 17

	EthernetLen = 14
	VLANLen     = 4
	PPPoELen    = 6 // PPPoE header without the PPP protocol field
	PPPLen      = 2
	IPv4MinLen  = 20
	UDPLen      = 8
	TCPMinLen   = 20
	ICMPLen     = 8
)

// Ethernet is a view of an Ethernet II header.
type Ethernet []byte

// IsValid reports whether b is long enough for an Ethernet header.
func (b Ethernet) IsValid() bool { return len(b) >= EthernetLen }

// Dst returns the destination MAC.
func (b Ethernet) Dst() []byte { return b[0:6] }

// Src returns the source MAC.
func (b Ethernet) Src() []byte { return b[6:12] }

// Type returns the EtherType.
func (b Ethernet) Type() uint16 { return binary.BigEndian.Uint16(b[12:]) }

// SetType sets the EtherType.
func (b Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(b[12:], t) }

// SetAddrs writes destination and source MAC.
func (b Ethernet) SetAddrs(dst, src [6]byte) { copy(b[0:6], dst[:]); copy(b[6:12], src[:]) }

// VLAN is a view of an 802.1Q tag following the source MAC (TCI + inner type).
type VLAN []byte

// IsValid reports whether the tag is complete.
func (b VLAN) IsValid() bool { return len(b) >= VLANLen }

// ID returns the VLAN id.
func (b VLAN) ID() uint16 { return binary.BigEndian.Uint16(b) & 0x0fff }

// PCP returns the 802.1p priority.
func (b VLAN) PCP() uint8 { return b[0] >> 5 }

// Type returns the encapsulated EtherType.
func (b VLAN) Type() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// PPPoE is a view of a PPPoE header (RFC 2516) and its payload.
type PPPoE []byte

// IsValid checks version/type 1/1, and that the length field fits b.
func (b PPPoE) IsValid() bool {
	return len(b) >= PPPoELen && b[0] == 0x11 && int(b.Length()) <= len(b)-PPPoELen
}

// Code returns the PPPoE code (0 for session data).
func (b PPPoE) Code() uint8 { return b[1] }

// SessionID returns the session id.
func (b PPPoE) SessionID() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// Length returns the payload length field.
func (b PPPoE) Length() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// PPPProto returns the PPP protocol of a session frame (needs Length >= 2).
func (b PPPoE) PPPProto() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// SetSession writes a session-stage header for payload bytes of PPP data
// (protocol field included in payload).
func (b PPPoE) SetSession(session uint16, payload int) {
	b[0], b[1] = 0x11, 0
	binary.BigEndian.PutUint16(b[2:], session)
	binary.BigEndian.PutUint16(b[4:], uint16(payload))
}

// IPv4 is a view of an IPv4 packet.
type IPv4 []byte

// IsValid checks version, header length and total length against b.
func (b IPv4) IsValid() bool {
	if len(b) < IPv4MinLen || b[0]>>4 != 4 {
		return false
	}
	ihl := int(b[0]&0xf) * 4
	tl := int(binary.BigEndian.Uint16(b[2:]))
	return ihl >= IPv4MinLen && tl >= ihl && tl <= len(b)
}

// HeaderLen returns the header length in bytes.
func (b IPv4) HeaderLen() int { return int(b[0]&0xf) * 4 }

// TotalLen returns the total length field.
func (b IPv4) TotalLen() int { return int(binary.BigEndian.Uint16(b[2:])) }

// ID returns the identification field.
func (b IPv4) ID() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// DF reports whether Don't Fragment is set.
func (b IPv4) DF() bool { return b[6]&0x40 != 0 }

// IsFragment reports whether the packet is a fragment (MF or offset != 0).
func (b IPv4) IsFragment() bool { return binary.BigEndian.Uint16(b[6:])&0x3fff != 0 }

// MoreFragments reports whether the MF flag is set.
func (b IPv4) MoreFragments() bool { return b[6]&0x20 != 0 }

// FragOffset returns the fragment offset in bytes.
func (b IPv4) FragOffset() int { return int(binary.BigEndian.Uint16(b[6:])&0x1fff) * 8 }

// TOS returns the DS field + ECN byte.
func (b IPv4) TOS() uint8 { return b[1] }

// TTL returns the time to live.
func (b IPv4) TTL() uint8 { return b[8] }

// Protocol returns the transport protocol number.
func (b IPv4) Protocol() uint8 { return b[9] }

// Checksum returns the header checksum field.
func (b IPv4) Checksum() uint16 { return binary.BigEndian.Uint16(b[10:]) }

// SetChecksum stores the header checksum field.
func (b IPv4) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[10:], c) }

// Src returns the source address as a big-endian uint32.
func (b IPv4) Src() uint32 { return binary.BigEndian.Uint32(b[12:]) }

// Dst returns the destination address as a big-endian uint32.
func (b IPv4) Dst() uint32 { return binary.BigEndian.Uint32(b[16:]) }

// Payload returns the bytes after the header, up to TotalLen.
func (b IPv4) Payload() []byte { return b[b.HeaderLen():b.TotalLen()] }

// HeaderChecksumOK verifies the header checksum.
func (b IPv4) HeaderChecksumOK() bool { return Fold(Sum(b[:b.HeaderLen()], 0)) == 0xffff }

// ComputeChecksum recomputes and stores the header checksum.
func (b IPv4) ComputeChecksum() {
	b[10], b[11] = 0, 0
	b.SetChecksum(Checksum(b[:b.HeaderLen()], 0))
}

// DecTTL decrements TTL, updating the checksum incrementally.
func (b IPv4) DecTTL() {
	old := binary.BigEndian.Uint16(b[8:])
	b[8]--
	b.SetChecksum(Update16(b.Checksum(), old, binary.BigEndian.Uint16(b[8:])))
}

// SetSrc rewrites the source address, updating the header checksum.
func (b IPv4) SetSrc(a uint32) {
	b.SetChecksum(Update32(b.Checksum(), b.Src(), a))
	binary.BigEndian.PutUint32(b[12:], a)
}

// SetDst rewrites the destination address, updating the header checksum.
func (b IPv4) SetDst(a uint32) {
	b.SetChecksum(Update32(b.Checksum(), b.Dst(), a))
	binary.BigEndian.PutUint32(b[16:], a)
}

// SetECNCE sets the ECN field to CE (11) if the packet is ECN-capable and
// reports whether it did (or was already CE).
func (b IPv4) SetECNCE() bool {
	ecn := b[1] & 3
	if ecn == 0 {
		return false
	}
	if ecn == 3 {
		return true
	}
	old := binary.BigEndian.Uint16(b[0:])
	b[1] |= 3
	b.SetChecksum(Update16(b.Checksum(), old, binary.BigEndian.Uint16(b[0:])))
	return true
}

// Ports is a view of the first four bytes of a TCP or UDP header.
type Ports []byte

// Src returns the source port.
func (b Ports) Src() uint16 { return binary.BigEndian.Uint16(b) }

// Dst returns the destination port.
func (b Ports) Dst() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// UDP is a view of a UDP header.
type UDP []byte

// IsValid checks the header fits and the length field is sane.
func (b UDP) IsValid() bool {
	return len(b) >= UDPLen && int(binary.BigEndian.Uint16(b[4:])) >= UDPLen &&
		int(binary.BigEndian.Uint16(b[4:])) <= len(b)
}

// SrcPort returns the source port.
func (b UDP) SrcPort() uint16 { return binary.BigEndian.Uint16(b) }

// DstPort returns the destination port.
func (b UDP) DstPort() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// Length returns the length field.
func (b UDP) Length() int { return int(binary.BigEndian.Uint16(b[4:])) }

// Checksum returns the checksum field (0 means none over IPv4).
func (b UDP) Checksum() uint16 { return binary.BigEndian.Uint16(b[6:]) }

// SetChecksum stores the checksum field.
func (b UDP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[6:], c) }

// SetSrcPort rewrites the source port, updating a present checksum.
func (b UDP) SetSrcPort(p uint16) {
	if c := b.Checksum(); c != 0 {
		b.SetChecksum(nonZero(Update16(c, b.SrcPort(), p)))
	}
	binary.BigEndian.PutUint16(b, p)
}

// SetDstPort rewrites the destination port, updating a present checksum.
func (b UDP) SetDstPort(p uint16) {
	if c := b.Checksum(); c != 0 {
		b.SetChecksum(nonZero(Update16(c, b.DstPort(), p)))
	}
	binary.BigEndian.PutUint16(b[2:], p)
}

// UpdateAddr adjusts a present checksum for an address change in the
// pseudo-header.
func (b UDP) UpdateAddr(old, new uint32) {
	if c := b.Checksum(); c != 0 {
		b.SetChecksum(nonZero(Update32(c, old, new)))
	}
}

func nonZero(c uint16) uint16 {
	if c == 0 {
		return 0xffff
	}
	return c
}

// TCP flags.
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
)

// TCP is a view of a TCP header.
type TCP []byte

// IsValid checks the fixed header and data offset fit.
func (b TCP) IsValid() bool {
	return len(b) >= TCPMinLen && int(b[12]>>4)*4 >= TCPMinLen && int(b[12]>>4)*4 <= len(b)
}

// SrcPort returns the source port.
func (b TCP) SrcPort() uint16 { return binary.BigEndian.Uint16(b) }

// DstPort returns the destination port.
func (b TCP) DstPort() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// HeaderLen returns the data offset in bytes.
func (b TCP) HeaderLen() int { return int(b[12]>>4) * 4 }

// Flags returns the flag byte.
func (b TCP) Flags() uint8 { return b[13] }

// Checksum returns the checksum field.
func (b TCP) Checksum() uint16 { return binary.BigEndian.Uint16(b[16:]) }

// SetChecksum stores the checksum field.
func (b TCP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[16:], c) }

// SetSrcPort rewrites the source port, updating the checksum.
func (b TCP) SetSrcPort(p uint16) {
	b.SetChecksum(Update16(b.Checksum(), b.SrcPort(), p))
	binary.BigEndian.PutUint16(b, p)
}

// SetDstPort rewrites the destination port, updating the checksum.
func (b TCP) SetDstPort(p uint16) {
	b.SetChecksum(Update16(b.Checksum(), b.DstPort(), p))
	binary.BigEndian.PutUint16(b[2:], p)
}

// UpdateAddr adjusts the checksum for a pseudo-header address change.
func (b TCP) UpdateAddr(old, new uint32) { b.SetChecksum(Update32(b.Checksum(), old, new)) }

// ClampMSS lowers a SYN's MSS option to mss if it is larger, updating the
// checksum, and reports whether it changed. Malformed options stop the walk.
func (b TCP) ClampMSS(mss uint16) bool {
	if b.Flags()&TCPSyn == 0 {
		return false
	}
	opts := b[TCPMinLen:b.HeaderLen()]
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0: // end of options
			return false
		case 1: // NOP
			i++
			continue
		}
		if i+1 >= len(opts) {
			return false
		}
		l := int(opts[i+1])
		if l < 2 || i+l > len(opts) {
			return false
		}
		if opts[i] == 2 && l == 4 {
			old := binary.BigEndian.Uint16(opts[i+2:])
			if old <= mss {
				return false
			}
			binary.BigEndian.PutUint16(opts[i+2:], mss)
			// The MSS value may sit at an odd offset relative to the
			// 16-bit checksum words; fold it as the words it touches.
			off := TCPMinLen + i + 2
			if off%2 == 0 {
				b.SetChecksum(Update16(b.Checksum(), old, mss))
			} else {
				b.SetChecksum(Update16(Update16(b.Checksum(),
					uint16(b[off-1])<<8|old>>8, uint16(b[off-1])<<8|mss>>8),
					old<<8|uint16(b[off+2]), mss<<8|uint16(b[off+2])))
			}
			return true
		}
		i += l
	}
	return false
}

// ICMP types.
const (
	ICMPEchoReply    = 0
	ICMPDestUnreach  = 3
	ICMPEcho         = 8
	ICMPTimeExceeded = 11
	ICMPParamProblem = 12

	ICMPCodeFragNeeded   = 4
	ICMPCodeAdminProhib  = 13
	ICMPCodeHostUnreach  = 1
	ICMPCodePortUnreach  = 3
	ICMPCodeTTLExceeded  = 0
	ICMPCodeNetUnreach   = 0
	ICMPCodeProtoUnreach = 2
)

// ICMP is a view of an ICMPv4 header.
type ICMP []byte

// IsValid checks the fixed header fits.
func (b ICMP) IsValid() bool { return len(b) >= ICMPLen }

// Type returns the ICMP type.
func (b ICMP) Type() uint8 { return b[0] }

// Code returns the ICMP code.
func (b ICMP) Code() uint8 { return b[1] }

// Checksum returns the checksum field.
func (b ICMP) Checksum() uint16 { return binary.BigEndian.Uint16(b[2:]) }

// SetChecksum stores the checksum field.
func (b ICMP) SetChecksum(c uint16) { binary.BigEndian.PutUint16(b[2:], c) }

// ID returns the echo identifier.
func (b ICMP) ID() uint16 { return binary.BigEndian.Uint16(b[4:]) }

// SetID rewrites the echo identifier, updating the checksum.
func (b ICMP) SetID(id uint16) {
	b.SetChecksum(Update16(b.Checksum(), b.ID(), id))
	binary.BigEndian.PutUint16(b[4:], id)
}

// IsQuery reports whether the type is an echo request or reply.
func (b ICMP) IsQuery() bool { return b[0] == ICMPEcho || b[0] == ICMPEchoReply }

// IsError reports whether the type carries an embedded datagram.
func (b ICMP) IsError() bool {
	return b[0] == ICMPDestUnreach || b[0] == ICMPTimeExceeded || b[0] == ICMPParamProblem || b[0] == 4 || b[0] == 5
}

// Inner returns the embedded IP datagram of an error message.
func (b ICMP) Inner() []byte { return b[ICMPLen:] }

// ARPLen is an Ethernet ARP request or reply for IPv4, without padding.
const ARPLen = EthernetLen + 28

// ARPReplyInPlace turns the ARP request frame b (at least ARPLen bytes,
// checked by the caller) into the reply that mac has ip, addressed to the
// asker, and returns the reply's ARPLen bytes.
func ARPReplyInPlace(b []byte, mac [6]byte, ip uint32) []byte {
	r := b[:ARPLen]
	a := r[EthernetLen:]
	var sha [6]byte
	copy(sha[:], a[8:14])
	spa := binary.BigEndian.Uint32(a[14:])
	Ethernet(r).SetAddrs(sha, mac)
	binary.BigEndian.PutUint16(a[6:], 2) // reply
	copy(a[8:14], mac[:])
	binary.BigEndian.PutUint32(a[14:], ip)
	copy(a[18:24], sha[:])
	binary.BigEndian.PutUint32(a[24:], spa)
	return r
}
