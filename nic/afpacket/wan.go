package afpacket

import (
	"encoding/binary"
	"fmt"
)

// WANSpec describes the function the WAN fanout eBPF program computes
// (Config.FanoutWAN): which queue of a WAN port receives each PPPoE
// frame, so that every worker receives the downlink frames of the flows
// it owns on its own queue and none is handed over between cores. It is
// plain data, as OwnerSpec is.
//
// The function, which Queue states in Go and the program in eBPF, bit for
// bit, over an Ethernet frame with at most one 802.1Q tag (the kernel's
// receive path strips the tag before the program runs; the program reads
// one still in the frame too), a PPPoE session header (version and type
// 0x11, code 0) and the PPP protocol. Lengths are the frame's, as the
// dataplane's steering reads them:
//
//   - IPv4 without options (first byte 0x45) and not a fragment, with 8
//     bytes of transport header: the queue of the external port's owner,
//     for TCP and UDP the destination port, for ICMP echo request and
//     reply the id, for an ICMP error (destination unreachable, time
//     exceeded, parameter problem) quoting an IPv4 header without
//     options and 8 bytes after it, the quoted source port or echo id.
//     The owner is the Ports entry for the port, else PortQueue(port,
//     Workers): the dataplane's owner table (nat.OwnerTable).
//   - IPv6 with at least a 40-byte header whose next header is not an
//     extension header (hop-by-hop, routing, fragment, destination
//     options) and not an ICMPv6 error: FlowHash6(destination, source),
//     the flow's owner by the pair of LAN host and remote address.
//   - Anything else goes to queue 0: discovery and PPP control (the
//     control plane's), IPv4 fragments (queue 0's steering sends every
//     fragment of a datagram where its first went), IPv6 behind
//     extension headers and ICMPv6 errors (the dataplane walks those),
//     and frames the dataplane drops or cannot key cheaply.
//
// The dataplane's steering hands a frame that arrived on another
// worker's queue to its owner (Engine.WANOwner agrees with Queue wherever
// Queue keys a frame).
type WANSpec struct {
	// Workers is the number of queues (and workers), 2 to 256.
	Workers int
	// Ports are external ports whose owner is not PortQueue(port,
	// Workers), matched in order before it (port forwards the dataplane
	// assigned elsewhere).
	Ports []WANPort
}

// WANPort is an external port with a fixed owner.
type WANPort struct {
	Port  uint16
	Queue int // in [0, Workers)
}

// Validate reports whether the program can implement s.
func (s *WANSpec) Validate() error {
	if s.Workers < 2 || s.Workers > 256 {
		return fmt.Errorf("afpacket: WAN fanout for %d workers: want 2 to 256", s.Workers)
	}
	if len(s.Ports) > maxOwnerForwards {
		return fmt.Errorf("afpacket: WAN fanout: %d ports, at most %d", len(s.Ports), maxOwnerForwards)
	}
	for _, p := range s.Ports {
		if p.Queue < 0 || p.Queue >= s.Workers {
			return fmt.Errorf("afpacket: WAN fanout: port %d to queue %d of %d", p.Port, p.Queue, s.Workers)
		}
	}
	return nil
}

// Ethernet types and PPP protocols the WAN function reads.
const (
	etherVLAN     = 0x8100
	etherPPPoESes = 0x8864
	pppIPv4       = 0x0021
	pppIPv6       = 0x0057
)

// Queue returns the queue frame belongs to. It never allocates.
func (s *WANSpec) Queue(frame []byte) int {
	if len(frame) < 14 {
		return 0
	}
	o, et := 14, binary.BigEndian.Uint16(frame[12:])
	if et == etherVLAN {
		if len(frame) < 18 {
			return 0
		}
		o, et = 18, binary.BigEndian.Uint16(frame[16:])
	}
	if et != etherPPPoESes || len(frame) < o+8 || frame[o] != 0x11 || frame[o+1] != 0 {
		return 0
	}
	ip := frame[o+8:]
	switch binary.BigEndian.Uint16(frame[o+6:]) {
	case pppIPv4:
		port, ok := wanPort4(ip)
		if !ok {
			return 0
		}
		for _, p := range s.Ports {
			if p.Port == port {
				return p.Queue
			}
		}
		return PortQueue(port, s.Workers)
	case pppIPv6:
		if len(ip) < 40 {
			return 0
		}
		switch next := ip[6]; next {
		case 0, 43, 44, 60: // extension headers
			return 0
		case 58: // ICMPv6: errors quote the flow's packet
			if len(ip) < 41 || ip[40] < 128 {
				return 0
			}
		}
		return FlowHash6((*[16]byte)(ip[24:40]), (*[16]byte)(ip[8:24]), s.Workers)
	}
	return 0
}

// wanPort4 returns the external port (or echo id) IPv4 packet ip is
// steered by, as the dataplane's steering reads it.
func wanPort4(ip []byte) (uint16, bool) {
	if len(ip) < 28 || ip[0] != 0x45 || binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
		return 0, false
	}
	l4 := ip[20:]
	switch ip[9] {
	case 6, 17:
		return binary.BigEndian.Uint16(l4[2:]), true
	case 1:
		switch l4[0] {
		case 0, 8: // echo reply, request
			return binary.BigEndian.Uint16(l4[4:]), true
		case 3, 11, 12: // errors: the quoted packet's source
			in := l4[8:]
			if len(in) < 28 || in[0] != 0x45 {
				return 0, false
			}
			switch in[9] {
			case 6, 17:
				return binary.BigEndian.Uint16(in[20:]), true
			case 1:
				return binary.BigEndian.Uint16(in[24:]), true
			}
		}
	}
	return 0, false
}
