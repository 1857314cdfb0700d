package abvm

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/bench/iobench"
	"github.com/pppfwd/pppfwd/hdr"
)

// probeBase..probeBase+probeIDs are the IPv4 ids of probe frames (load
// frames carry their flow index, below Flows).
const probeBase, probeIDs = 60000, 4096

// arpReply answers an Ethernet ARP request for one of hosts.
func arpReply(f []byte, hosts map[uint32][6]byte) ([]byte, bool) {
	const l = hdr.EthernetLen
	if len(f) < l+28 || binary.BigEndian.Uint16(f[12:]) != hdr.EtherTypeARP {
		return nil, false
	}
	a := f[l:]
	if binary.BigEndian.Uint16(a[0:]) != 1 || binary.BigEndian.Uint16(a[2:]) != hdr.EtherTypeIPv4 ||
		a[4] != 6 || a[5] != 4 || binary.BigEndian.Uint16(a[6:]) != 1 {
		return nil, false
	}
	target := binary.BigEndian.Uint32(a[24:])
	mac, ok := hosts[target]
	if !ok {
		return nil, false
	}
	r := make([]byte, 60)
	copy(r[0:6], a[8:14]) // the asker's MAC
	copy(r[6:12], mac[:])
	binary.BigEndian.PutUint16(r[12:], hdr.EtherTypeARP)
	ra := r[l:]
	copy(ra[0:6], a[0:6])
	binary.BigEndian.PutUint16(ra[6:], 2)
	copy(ra[8:14], mac[:])
	binary.BigEndian.PutUint32(ra[14:], target)
	copy(ra[18:28], a[8:18]) // the asker's MAC and address
	return r, true
}

// skipProbes makes probe frames (IPv4 id in the probe range) Other.
func skipProbes(m iobench.Match) iobench.Match {
	return func(b []byte) int {
		if id, ok := ipID(b); ok && id >= probeBase {
			return iobench.Other
		}
		return m(b)
	}
}

// ipID returns the IPv4 id of an untagged IPv4 or PPPoE-IPv4 frame.
func ipID(b []byte) (uint16, bool) {
	if len(b) < hdr.EthernetLen {
		return 0, false
	}
	off := hdr.EthernetLen
	switch binary.BigEndian.Uint16(b[12:]) {
	case hdr.EtherTypeIPv4:
	case hdr.EtherTypePPPoESess:
		off += hdr.PPPoELen + hdr.PPPLen
		if len(b) < off || binary.BigEndian.Uint16(b[off-2:]) != 0x0021 {
			return 0, false
		}
	default:
		return 0, false
	}
	if len(b) < off+hdr.IPv4MinLen {
		return 0, false
	}
	return binary.BigEndian.Uint16(b[off+4:]), true
}

// pppIPv4 is PPP's protocol number of IPv4.
const pppIPv4 = 0x0021

// sessionIPv4 returns the IPv4 packet an untagged PPPoE session frame of
// session id carries (the PPPoE payload, which must hold the datagram's
// total length exactly; what follows it is the frame's padding), or nil
// when f is not one.
func sessionIPv4(f []byte, id uint16) []byte {
	if len(f) < hdr.EthernetLen || hdr.Ethernet(f).Type() != hdr.EtherTypePPPoESess {
		return nil
	}
	p := hdr.PPPoE(f[hdr.EthernetLen:])
	if !p.IsValid() || p.Code() != 0 || p.SessionID() != id || p.Length() < hdr.PPPLen || p.PPPProto() != pppIPv4 {
		return nil
	}
	ip := hdr.IPv4(p[hdr.PPPoELen+hdr.PPPLen : hdr.PPPoELen+int(p.Length())])
	if !ip.IsValid() || int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
		return nil // a session payload is the datagram, no more, no less
	}
	return ip
}

// appendSessionIPv4 appends to b the untagged PPPoE session frame of
// session id from src to dst that carries ip.
func appendSessionIPv4(b []byte, dst, src [6]byte, id uint16, ip []byte) []byte {
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	b = binary.BigEndian.AppendUint16(b, hdr.EtherTypePPPoESess)
	b = append(b, 0x11, 0)
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, uint16(hdr.PPPLen+len(ip)))
	b = binary.BigEndian.AppendUint16(b, pppIPv4)
	return append(b, ip...)
}
