// Checksums a LAN sender left unfinished. A LAN host that is a VM or a
// container (a veth or tap peer with tx checksum offload on) hands over
// TCP and UDP segments whose checksum field holds only the sum of the
// pseudo-header: Linux's CHECKSUM_PARTIAL, which the offload would have
// finished. The kernel's forwarding path finishes them; a userspace
// fast path must too, or every such segment leaves with a checksum the
// receiver drops (NAT's incremental update keeps it wrong).
//
// The LAN port says so in Frame.Rx: afpacket per frame
// (nic.RxCsumPartial), afxdp in copy mode only that it cannot tell
// (nic.RxCsumUnknown: XDP has no checksum state). fromLAN finishes the
// checksum first of all, before the NAT rewrites addresses and ports
// (its incremental update then holds), the MSS clamp, a hairpin or the
// hand-over to the host stack; a frame with Rx 0 pays one branch.
// Finishing sums the segment as the offload would have, from the
// transport header on, that field included (hdr.FinishPartial).

package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// csumResult is what finishL4 did.
type csumResult uint8

const (
	csumAsIs     csumResult = iota // nothing to finish: left as it is
	csumFinished                   // the TCP or UDP checksum was finished
	csumStuck                      // marked unfinished, but not a segment the fast path can finish
)

// finishCsum acts on f.Rx (not 0) of a LAN frame: it finishes an
// unfinished TCP or UDP checksum (counted in CsumCompleted) and clears
// f.Rx, or drops f (DropCsumPartial) and reports false when f is marked
// unfinished but is not a TCP or UDP segment it can finish.
func (w *Worker) finishCsum(f *nic.Frame) bool {
	switch finishL4(f.Data(), f.Rx) {
	case csumFinished:
		w.c.CsumCompleted++
	case csumStuck:
		w.drop(f, DropCsumPartial)
		return false
	}
	f.Rx = 0
	return true
}

// finishL4 finishes the TCP or UDP checksum of the Ethernet frame b
// (IPv4 or IPv6, not a fragment) when rx says it is unfinished
// (nic.RxCsumPartial), or when rx says the port cannot tell
// (nic.RxCsumUnknown) and the checksum field holds exactly the
// pseudo-header's sum while the segment does not verify. Nothing past
// the IP packet's length is read, nothing but the checksum field is
// written, and a malformed frame is left as it is (csumAsIs, or
// csumStuck if rx says it is unfinished).
func finishL4(b []byte, rx nic.RxInfo) csumResult {
	known := rx&nic.RxCsumPartial != 0
	if !known && rx&nic.RxCsumUnknown == 0 {
		return csumAsIs
	}
	stuck := csumAsIs
	if known {
		stuck = csumStuck
	}
	if len(b) < hdr.EthernetLen {
		return stuck
	}
	var seg []byte
	var proto uint8
	var pseudo uint32
	switch hdr.Ethernet(b).Type() {
	case hdr.EtherTypeIPv4:
		ip := hdr.IPv4(b[hdr.EthernetLen:])
		if !ip.IsValid() || ip.IsFragment() {
			return stuck
		}
		proto = ip.Protocol()
		seg = ip[ip.HeaderLen():ip.TotalLen()]
		if !known {
			pseudo = hdr.PseudoSum(ip[12:16], ip[16:20], proto, len(seg))
		}
	case hdr.EtherTypeIPv6:
		ip := hdr.IPv6(b[hdr.EthernetLen:])
		if !ip.IsValid() {
			return stuck
		}
		ip = ip[:ip.TotalLen()]
		c := walk6(ip)
		if !c.ok || c.frag != fragWhole {
			return stuck
		}
		proto = c.proto
		seg = ip[c.off:]
		if !known {
			// The fixed header's destination: with a routing header
			// the pseudo-header's is the final one, which does not
			// match, and the frame is left as it is.
			pseudo = hdr.PseudoSum6((*hdr.Addr6)(ip[8:24]), (*hdr.Addr6)(ip[24:40]), proto, len(seg))
		}
	default:
		return stuck
	}
	var off int
	switch {
	case proto == hdr.ProtoTCP && len(seg) >= hdr.TCPMinLen:
		off = 16
	case proto == hdr.ProtoUDP && len(seg) >= hdr.UDPLen:
		off = 6
	default:
		return stuck
	}
	if !known && binary.BigEndian.Uint16(seg[off:]) != hdr.Fold(pseudo) {
		return csumAsIs
	}
	s := hdr.Sum(seg, 0)
	// A finished checksum equals the pseudo-header's sum about once in
	// 65535 segments: then the segment verifies, and stays as it is.
	if !known && hdr.Fold(s+pseudo) == 0xffff {
		return csumAsIs
	}
	hdr.FinishPartialSum(seg, off, proto == hdr.ProtoUDP, s)
	return csumFinished
}
