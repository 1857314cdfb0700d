package ndp

import (
	"encoding/binary"
	"slices"

	"github.com/pppfwd/pppfwd/hdr"
)

// The builders append one complete frame (Ethernet II, IPv6 with no
// extension headers, ICMPv6 with its checksum) to b and return the
// extended slice. The spare capacity of b must not overlap the Message or
// slices they read from (build the answer to a frame in a different
// buffer, or after the frame's end).

const headersLen = hdr.EthernetLen + hdr.IPv6Len

// maxICMP is the largest ICMPv6 message an IPv6 payload length can carry.
const maxICMP = 0xffff

// appendFrame appends the Ethernet and IPv6 headers of an ICMPv6 message
// of n bytes and n zero bytes for it; it returns the extended b and the
// message's bytes.
func appendFrame(b []byte, dstMAC, srcMAC [6]byte, src, dst *hdr.Addr6, hopLimit uint8, n int) ([]byte, []byte) {
	start := len(b)
	b = slices.Grow(b, headersLen+n)[:start+headersLen+n]
	f := b[start:]
	clear(f)
	eth := hdr.Ethernet(f)
	eth.SetAddrs(dstMAC, srcMAC)
	eth.SetType(hdr.EtherTypeIPv6)
	hdr.IPv6(f[hdr.EthernetLen:]).SetHeader(hdr.ProtoICMP6, hopLimit, n, src, dst)
	return b, f[headersLen:]
}

// putLLOption writes a link-layer address option (8 bytes).
func putLLOption(o []byte, typ uint8, mac [6]byte) {
	o[0], o[1] = typ, 1
	copy(o[2:8], mac[:])
}

// appendNA builds an NA with the given flags (naRouter, ...) and, when tll
// is not nil, a target link-layer option.
func appendNA(b []byte, dstMAC, srcMAC [6]byte, src, dst, target *hdr.Addr6, flags uint8, tll *[6]byte) []byte {
	n := 24
	if tll != nil {
		n += 8
	}
	b, msg := appendFrame(b, dstMAC, srcMAC, src, dst, NDHopLimit, n)
	msg[0] = hdr.ICMP6NeighborAdv
	msg[4] = flags
	copy(msg[8:24], target[:])
	if tll != nil {
		putLLOption(msg[24:], OptTargetLL, *tll)
	}
	hdr.ICMP6Checksum(msg, src, dst)
	return b
}

// appendNS builds an NS and, when sll is not nil, a source link-layer
// option.
func appendNS(b []byte, dstMAC, srcMAC [6]byte, src, dst, target *hdr.Addr6, sll *[6]byte) []byte {
	n := 24
	if sll != nil {
		n += 8
	}
	b, msg := appendFrame(b, dstMAC, srcMAC, src, dst, NDHopLimit, n)
	msg[0] = hdr.ICMP6NeighborSol
	copy(msg[8:24], target[:])
	if sll != nil {
		putLLOption(msg[24:], OptSourceLL, *sll)
	}
	hdr.ICMP6Checksum(msg, src, dst)
	return b
}

// AppendNA appends a Neighbor Advertisement answering the solicitation ns
// for target, an address of the router, whose link-layer address is mac
// (the Ethernet source and the target link-layer option). Override is
// set, Router as given. The NA comes from target itself (RFC 4861 7.2.4:
// an address of the interface). If ns came from a unicast address the NA
// is solicited and goes to that address, at ns's source link-layer option
// if it had one, else at its Ethernet source. If ns came from the
// unspecified address (DAD) the NA goes to all-nodes (ff02::1,
// 33:33:00:00:00:01) with Solicited clear, as RFC 4861 7.2.4 requires
// (a solicited NA to multicast is invalid).
func AppendNA(b []byte, ns *Message, target hdr.Addr6, mac [6]byte, router bool) []byte {
	flags := uint8(naOverride)
	if router {
		flags |= naRouter
	}
	var dst hdr.Addr6
	var dstMAC [6]byte
	if isUnspecified(&ns.Src) {
		dst, dstMAC = AllNodes(), AllNodesMAC()
	} else {
		flags |= naSolicited
		dst, dstMAC = ns.Src, ns.SrcMAC
		if ns.HasSourceLL {
			dstMAC = ns.SourceLL
		}
	}
	return appendNA(b, dstMAC, mac, &target, &dst, &target, flags, &mac)
}

// AppendUnsolicitedNA appends an unsolicited Neighbor Advertisement from
// and for target with link-layer address mac, to all-nodes, Override set,
// Solicited clear, Router as given (RFC 4861 7.2.6).
func AppendUnsolicitedNA(b []byte, target hdr.Addr6, mac [6]byte, router bool) []byte {
	flags := uint8(naOverride)
	if router {
		flags |= naRouter
	}
	dst := AllNodes()
	return appendNA(b, AllNodesMAC(), mac, &target, &dst, &target, flags, &mac)
}

// AppendNS appends a Neighbor Solicitation for target from src (a router
// address on the LAN) with link-layer address mac, to target's
// solicited-node group and its multicast MAC, hop limit 255, with a
// source link-layer option. If src is the unspecified address (the router
// running DAD for target) the option is left out, as RFC 4861 7.2.2
// requires.
func AppendNS(b []byte, src, target hdr.Addr6, mac [6]byte) []byte {
	dst := hdr.SolicitedNode(&target)
	var sll *[6]byte
	if !isUnspecified(&src) {
		sll = &mac
	}
	return appendNS(b, hdr.MulticastMAC(&dst), mac, &src, &dst, &target, sll)
}

// AppendUnicastNS appends a Neighbor Solicitation for target from src (a
// router address on the LAN) with link-layer address mac, sent to target
// itself at dstMAC, the link-layer address the router has for it: the
// unicast probe of neighbour unreachability detection (RFC 4861 7.3.3),
// with a source link-layer option.
func AppendUnicastNS(b []byte, src, target hdr.Addr6, dstMAC, mac [6]byte) []byte {
	return appendNS(b, dstMAC, mac, &src, &target, &target, &mac)
}

// AppendEchoReply appends the echo reply to the echo request m (as Parse
// returned it): from src, one of the router's addresses, with Ethernet
// source mac, to m's source address and Ethernet source, hop limit 64,
// with m's identifier, sequence number and data. The caller checks that m
// is an echo request to one of its addresses and picks a unicast src
// (also when m went to a multicast group). Data beyond what an IPv6
// payload can carry is cut.
func AppendEchoReply(b []byte, m *Message, src hdr.Addr6, mac [6]byte) []byte {
	var data []byte
	if len(m.Body) > 8 {
		data = m.Body[8:]
	}
	if len(data) > maxICMP-8 {
		data = data[:maxICMP-8]
	}
	b, msg := appendFrame(b, m.SrcMAC, mac, &src, &m.Src, EchoHopLimit, 8+len(data))
	msg[0] = hdr.ICMP6EchoReply
	binary.BigEndian.PutUint16(msg[4:], m.EchoID)
	binary.BigEndian.PutUint16(msg[6:], m.EchoSeq)
	copy(msg[8:], data)
	hdr.ICMP6Checksum(msg, &src, &m.Src)
	return b
}
