package iobench

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pppfwd/pppfwd/bench/pipeline"
	"github.com/pppfwd/pppfwd/hdr"
)

// Flow is one flow of the generated traffic. For ICMP flows SrcPort is the
// echo identifier and DstPort is unused.
type Flow struct {
	Proto   uint8 // hdr.ProtoUDP, hdr.ProtoTCP or hdr.ProtoICMP
	Host    uint32
	HostMAC [6]byte
	Remote  uint32
	SrcPort uint16
	DstPort uint16
}

// Hosts is the number of LAN hosts the flows come from (each needs a
// neighbour entry in the kernel baseline).
const Hosts = 32

// Flows returns udp UDP flows, then tcp TCP flows, then icmp ICMP echo
// flows, from Hosts LAN hosts in pipeline.LANNet towards documentation
// addresses (203.0.113.0/24). Every flow has a distinct LAN endpoint.
func Flows(udp, tcp, icmp int) []Flow {
	var out []Flow
	add := func(proto uint8, n int) {
		for i := 0; i < n; i++ {
			k := len(out)
			h := k % Hosts
			out = append(out, Flow{
				Proto:   proto,
				Host:    pipeline.LANNet | uint32(2+h),
				HostMAC: [6]byte{0x02, 0x60, 0, 0, byte(h >> 8), byte(h)},
				Remote:  0xcb007100 | uint32(1+k%200), // 203.0.113.x
				SrcPort: uint16(20000 + k/Hosts),
				DstPort: uint16(443 + k%7),
			})
		}
	}
	add(hdr.ProtoUDP, udp)
	add(hdr.ProtoTCP, tcp)
	add(hdr.ProtoICMP, icmp)
	return out
}

const (
	tcpAck = 0x10
	tcpPsh = 0x08
)

// Uplink builds flow f's LAN frame of frameLen bytes (Ethernet, without
// FCS) addressed to dstMAC, with the flow index idx in the IPv4 id so that
// the far end can tell the flows apart after translation. UDP frames come
// from pipeline.LANFrame; TCP frames are ACK|PSH data segments, ICMP frames
// echo requests.
func Uplink(f Flow, idx, frameLen int, dstMAC [6]byte) ([]byte, error) {
	if frameLen < 64 || frameLen > 1514 {
		return nil, fmt.Errorf("frame size %d: want 64..1514", frameLen)
	}
	var b []byte
	if f.Proto == hdr.ProtoUDP {
		var err error
		b, err = pipeline.LANFrame(pipeline.Flow{Host: f.Host, Remote: f.Remote, HostMAC: f.HostMAC,
			SrcPort: f.SrcPort, DstPort: f.DstPort}, frameLen)
		if err != nil {
			return nil, err
		}
	} else {
		b = make([]byte, frameLen)
		copy(b[6:12], f.HostMAC[:])
		binary.BigEndian.PutUint16(b[12:], hdr.EtherTypeIPv4)
		ip := b[hdr.EthernetLen:]
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		ip[6] = 0x40 // DF
		ip[8] = 64
		ip[9] = f.Proto
		binary.BigEndian.PutUint32(ip[12:], f.Host)
		binary.BigEndian.PutUint32(ip[16:], f.Remote)
		l4 := ip[hdr.IPv4MinLen:]
		for i := range l4 {
			l4[i] = byte(idx + i)
		}
		switch f.Proto {
		case hdr.ProtoTCP:
			binary.BigEndian.PutUint16(l4, f.SrcPort)
			binary.BigEndian.PutUint16(l4[2:], f.DstPort)
			binary.BigEndian.PutUint32(l4[4:], uint32(1000+idx))
			binary.BigEndian.PutUint32(l4[8:], uint32(5000+idx))
			l4[12] = 5 << 4
			l4[13] = tcpAck | tcpPsh
			binary.BigEndian.PutUint16(l4[14:], 65535)
			binary.BigEndian.PutUint32(l4[16:], 0) // checksum, urgent
		case hdr.ProtoICMP:
			l4[0], l4[1] = hdr.ICMPEcho, 0
			binary.BigEndian.PutUint16(l4[4:], f.SrcPort)
			binary.BigEndian.PutUint16(l4[6:], uint16(idx))
		default:
			return nil, fmt.Errorf("protocol %d not generated", f.Proto)
		}
		setL4Checksum(hdr.IPv4(ip))
	}
	copy(b[0:6], dstMAC[:])
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	binary.BigEndian.PutUint16(ip[4:], uint16(idx))
	ip.ComputeChecksum()
	return b, nil
}

// uplinks builds every flow's uplink frame (Uplink), frame i of size(i)
// bytes, addressed to dst.
func uplinks(flows []Flow, dst [6]byte, size func(i int) int) ([][]byte, error) {
	out := make([][]byte, len(flows))
	for i, f := range flows {
		b, err := Uplink(f, i, size(i), dst)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// fixedSize is the size function of frames all n bytes long.
func fixedSize(n int) func(int) int { return func(int) int { return n } }

// setL4Checksum computes the transport checksum of a complete IPv4 packet
// (no options).
func setL4Checksum(ip hdr.IPv4) {
	l4 := ip[ip.HeaderLen():ip.TotalLen()]
	switch ip.Protocol() {
	case hdr.ProtoUDP:
		binary.BigEndian.PutUint16(l4[6:], 0)
		c := hdr.Checksum(l4, hdr.PseudoSum(ip[12:16], ip[16:20], hdr.ProtoUDP, len(l4)))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	case hdr.ProtoTCP:
		binary.BigEndian.PutUint16(l4[16:], 0)
		binary.BigEndian.PutUint16(l4[16:], hdr.Checksum(l4, hdr.PseudoSum(ip[12:16], ip[16:20], hdr.ProtoTCP, len(l4))))
	case hdr.ProtoICMP:
		binary.BigEndian.PutUint16(l4[2:], 0)
		binary.BigEndian.PutUint16(l4[2:], hdr.Checksum(l4, 0))
	}
}

// Packet is what Parse found in a frame.
type Packet struct {
	DstMAC, SrcMAC [6]byte
	PPPoE          bool   // carried in a PPPoE session frame
	Session        uint16 // PPPoE session id
	Proto          uint8
	Src, Dst       uint32
	SrcPort        uint16 // ICMP: echo id
	DstPort        uint16
	ID             uint16 // IPv4 id (the flow index)
	TTL            uint8
	ICMPType       uint8
	IPOff, IPLen   int // where the IPv4 packet is in the frame
}

// Parse errors.
var (
	ErrNotIPv4     = errors.New("not an IPv4 (or PPPoE IPv4) frame")
	ErrTruncated   = errors.New("truncated packet")
	ErrIPChecksum  = errors.New("bad IPv4 header checksum")
	ErrL4Checksum  = errors.New("bad transport checksum")
	ErrUnsupported = errors.New("unsupported transport protocol")
)

// Parse decodes an Ethernet frame carrying IPv4 directly or in a PPPoE
// session, verifying the IPv4 header checksum and the UDP, TCP or ICMP
// checksum. It never panics on bad input.
func Parse(b []byte) (Packet, error) {
	var p Packet
	if len(b) < hdr.EthernetLen {
		return p, ErrTruncated
	}
	copy(p.DstMAC[:], b[0:6])
	copy(p.SrcMAC[:], b[6:12])
	off := hdr.EthernetLen
	switch binary.BigEndian.Uint16(b[12:]) {
	case hdr.EtherTypeIPv4:
	case hdr.EtherTypePPPoESess:
		pp := hdr.PPPoE(b[off:])
		if len(pp) < hdr.PPPoELen+hdr.PPPLen {
			return p, ErrTruncated
		}
		if pp[0] != 0x11 || pp.Code() != 0 || pp.PPPProto() != hdr.PPPIPv4 {
			return p, ErrNotIPv4
		}
		if !pp.IsValid() || int(pp.Length()) < hdr.PPPLen {
			return p, ErrTruncated
		}
		p.PPPoE, p.Session = true, pp.SessionID()
		off += hdr.PPPoELen + hdr.PPPLen
		// The IPv4 packet must fit in the PPPoE payload.
		b = b[:off-hdr.PPPLen+int(pp.Length())]
	default:
		return p, ErrNotIPv4
	}
	ip := hdr.IPv4(b[off:])
	if !ip.IsValid() {
		return p, ErrTruncated
	}
	if !ip.HeaderChecksumOK() {
		return p, ErrIPChecksum
	}
	ip = ip[:ip.TotalLen()]
	p.IPOff, p.IPLen = off, len(ip)
	p.Proto, p.Src, p.Dst, p.ID, p.TTL = ip.Protocol(), ip.Src(), ip.Dst(), ip.ID(), ip.TTL()
	if ip.IsFragment() {
		return p, ErrUnsupported
	}
	l4 := ip[ip.HeaderLen():]
	switch p.Proto {
	case hdr.ProtoUDP:
		u := hdr.UDP(l4)
		if !u.IsValid() || u.Length() != len(l4) {
			return p, ErrTruncated
		}
		p.SrcPort, p.DstPort = u.SrcPort(), u.DstPort()
		if u.Checksum() != 0 && hdr.Fold(hdr.Sum(l4, hdr.PseudoSum(ip[12:16], ip[16:20], hdr.ProtoUDP, len(l4)))) != 0xffff {
			return p, ErrL4Checksum
		}
	case hdr.ProtoTCP:
		t := hdr.TCP(l4)
		if !t.IsValid() {
			return p, ErrTruncated
		}
		p.SrcPort, p.DstPort = t.SrcPort(), t.DstPort()
		if hdr.Fold(hdr.Sum(l4, hdr.PseudoSum(ip[12:16], ip[16:20], hdr.ProtoTCP, len(l4)))) != 0xffff {
			return p, ErrL4Checksum
		}
	case hdr.ProtoICMP:
		c := hdr.ICMP(l4)
		if !c.IsValid() {
			return p, ErrTruncated
		}
		p.ICMPType, p.SrcPort = c.Type(), c.ID()
		if hdr.Fold(hdr.Sum(l4, 0)) != 0xffff {
			return p, ErrL4Checksum
		}
	default:
		return p, ErrUnsupported
	}
	return p, nil
}

// Reply builds the answer a far-end host gives to a received frame: MACs,
// addresses and ports swapped, TCP sequence and acknowledgement numbers
// swapped, an ICMP echo request turned into a reply, TTL 64, checksums
// recomputed; a PPPoE session frame is answered in the same session. The
// IPv4 id (the flow index) is kept. It fails on frames Parse rejects.
func Reply(rx []byte) ([]byte, error) {
	p, err := Parse(rx)
	if err != nil {
		return nil, err
	}
	if p.Proto == hdr.ProtoICMP && p.ICMPType != hdr.ICMPEcho {
		return nil, fmt.Errorf("ICMP type %d: only echo requests are answered", p.ICMPType)
	}
	out := append([]byte(nil), rx[:p.IPOff+p.IPLen]...)
	copy(out[0:6], p.SrcMAC[:])
	copy(out[6:12], p.DstMAC[:])
	if p.PPPoE {
		binary.BigEndian.PutUint16(out[p.IPOff-hdr.PPPLen-2:], uint16(hdr.PPPLen+p.IPLen))
	}
	ip := hdr.IPv4(out[p.IPOff:])
	binary.BigEndian.PutUint32(ip[12:], p.Dst)
	binary.BigEndian.PutUint32(ip[16:], p.Src)
	ip[8] = 64
	ip.ComputeChecksum()
	l4 := ip[ip.HeaderLen():]
	switch p.Proto {
	case hdr.ProtoUDP, hdr.ProtoTCP:
		binary.BigEndian.PutUint16(l4, p.DstPort)
		binary.BigEndian.PutUint16(l4[2:], p.SrcPort)
		if p.Proto == hdr.ProtoTCP {
			seq, ack := binary.BigEndian.Uint32(l4[4:]), binary.BigEndian.Uint32(l4[8:])
			binary.BigEndian.PutUint32(l4[4:], ack)
			binary.BigEndian.PutUint32(l4[8:], seq)
		}
	case hdr.ProtoICMP:
		l4[0] = hdr.ICMPEchoReply
	}
	setL4Checksum(ip)
	return out, nil
}
