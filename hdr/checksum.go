package hdr

import "encoding/binary"

// Sum adds b to a running one's-complement sum (not folded).
func Sum(b []byte, initial uint32) uint32 {
	s := uint64(initial)
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	s = (s >> 32) + (s & 0xffffffff)
	s = (s >> 32) + (s & 0xffffffff)
	return uint32(s>>16) + uint32(s&0xffff)
}

// Fold folds a running sum to 16 bits (not complemented).
func Fold(s uint32) uint16 {
	// Two steps fold any 32-bit sum: the first leaves at most 0x1fffe,
	// the second at most 0xffff. No data-dependent loop.
	s = (s >> 16) + (s & 0xffff)
	s = (s >> 16) + (s & 0xffff)
	return uint16(s)
}

// Checksum returns the Internet checksum of b (complemented, ready to store).
func Checksum(b []byte, initial uint32) uint16 { return ^Fold(Sum(b, initial)) }

// PseudoSum returns the unfolded sum of the IPv4 pseudo-header.
func PseudoSum(src, dst []byte, proto uint8, length int) uint32 {
	s := uint32(binary.BigEndian.Uint16(src)) + uint32(binary.BigEndian.Uint16(src[2:]))
	s += uint32(binary.BigEndian.Uint16(dst)) + uint32(binary.BigEndian.Uint16(dst[2:]))
	return s + uint32(proto) + uint32(length)
}

// Update16 returns checksum sum updated for a 16-bit field changing from old
// to new (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
func Update16(sum, old, new uint16) uint16 {
	s := uint32(^sum) + uint32(^old) + uint32(new)
	return ^Fold(s)
}

// Update32 is Update16 for a 32-bit field (an IPv4 address).
func Update32(sum uint16, old, new uint32) uint16 {
	s := uint32(^sum) + uint32(^uint16(old>>16)) + uint32(^uint16(old)) +
		uint32(uint16(new>>16)) + uint32(uint16(new))
	return ^Fold(s)
}

// FinishPartial finishes the checksum of the TCP or UDP segment seg whose
// checksum field, at off, holds only the sum of its pseudo-header (what a
// sender leaves for a checksum offload, Linux's CHECKSUM_PARTIAL): as the
// offload would, it sums seg from its start, that field included, and
// stores the complement in the field. With udp, a checksum that comes
// out 0 is stored as 0xffff: 0 means "no checksum" in UDP over IPv4
// (RFC 768) and is not allowed over IPv6 (RFC 8200 8.1). The caller
// checked that off+2 <= len(seg).
func FinishPartial(seg []byte, off int, udp bool) { FinishPartialSum(seg, off, udp, Sum(seg, 0)) }

// FinishPartialSum is FinishPartial for a caller that has summed seg
// already: sum is Sum(seg, 0).
func FinishPartialSum(seg []byte, off int, udp bool, sum uint32) {
	c := ^Fold(sum)
	if c == 0 && udp {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(seg[off:], c)
}
