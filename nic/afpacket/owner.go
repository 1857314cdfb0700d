package afpacket

import (
	"encoding/binary"
	"fmt"
)

// OwnerSpec describes the owner function the fanout eBPF program computes
// (Config.FanoutOwner): which queue of a LAN port receives each frame, so
// that every frame reaches the worker owning its flow. It is plain data:
// the router fills it from its NAT configuration, and afpacket imports
// nothing above nic.
//
// The function, which Queue states in Go and the program in eBPF, bit for
// bit:
//
//   - IPv4, by the LAN endpoint (source address, and TCP/UDP source port
//     or ICMP echo request id; for an ICMP error, the quoted packet's
//     destination address and port or echo id), with the header's own
//     length (options) and total length honoured: the Forwards entry
//     matching the endpoint, or else PortQueue(port, Workers), the
//     queue of the worker whose NAT port range holds the port.
//     A first fragment is steered as the whole packet would be (the
//     fragment holds the transport header), except an ICMP error.
//     Packets without an endpoint (later fragments, other protocols,
//     malformed headers) go to EndpointHash(0, source, 0, Workers): any
//     worker will do for them, and one host's stay together.
//   - IPv6, by the pair of source and destination address (FlowHash6).
//     A malformed header goes to queue 0.
//   - Anything else (ARP, VLAN-tagged frames, IPv4 frames too short for
//     a header) goes to queue 0.
type OwnerSpec struct {
	// Workers is the number of queues (and workers), 2 to 256.
	Workers int
	// Forwards are LAN endpoints owned by a given queue (port forwards),
	// matched in order before the hash.
	Forwards []OwnerForward
}

// OwnerForward is a LAN endpoint with a fixed owner.
type OwnerForward struct {
	Proto uint8  // IP protocol (TCP or UDP)
	Addr  uint32 // LAN address, big-endian as a uint32
	Port  uint16 // LAN port
	Queue int    // the owning queue, in [0, Workers)
}

// maxOwnerForwards bounds the forwards compiled into the program (each
// costs a few instructions on every frame's path).
const maxOwnerForwards = 4096

// Validate reports whether the program can implement s.
func (s *OwnerSpec) Validate() error {
	if s.Workers < 2 || s.Workers > 256 {
		return fmt.Errorf("afpacket: owner fanout for %d workers: want 2 to 256", s.Workers)
	}
	if len(s.Forwards) > maxOwnerForwards {
		return fmt.Errorf("afpacket: owner fanout: %d forwards, at most %d", len(s.Forwards), maxOwnerForwards)
	}
	for _, f := range s.Forwards {
		if f.Queue < 0 || f.Queue >= s.Workers {
			return fmt.Errorf("afpacket: owner fanout: forward %d/%d to queue %d of %d", f.Proto, f.Port, f.Queue, s.Workers)
		}
	}
	return nil
}

// PortQueue is the owner of the IPv4 LAN endpoint with port (TCP/UDP
// source port, ICMP echo id) among workers: port/2 mod workers, the same
// function as the NAT's port owner (nat.PortOwner), which the router's
// tests hold it to.
func PortQueue(port uint16, workers int) int { return int(port>>1) % workers }

// Hash constants of EndpointHash and FlowHash6.
const (
	golden = 0x9e3779b97f4a7c15
	mixA   = 0xbf58476d1ce4e5b9
	mixB   = 0x94d049bb133111eb
)

// EndpointHash spreads IPv4 packets without an endpoint (proto, addr,
// port) among workers: the fallback queue of OwnerSpec.
func EndpointHash(proto uint8, addr uint32, port uint16, workers int) int {
	h := (uint64(addr)<<24 | uint64(port)<<8 | uint64(proto)) * golden
	h ^= h >> 29
	h *= mixA
	h ^= h >> 32
	return int((h & 0xffffffff) * uint64(workers) >> 32)
}

// FlowHash6 is the owner of the IPv6 flow between LAN host src and remote
// dst among workers: the same function as the IPv6 firewall's flow owner.
func FlowHash6(src, dst *[16]byte, workers int) int {
	w := mix64(addrWord6(src)) ^ addrWord6(dst)
	return int(uint64(uint32(mix64(w))) * uint64(workers) >> 32)
}

func addrWord6(a *[16]byte) uint64 {
	return binary.LittleEndian.Uint64(a[:8]) ^ binary.LittleEndian.Uint64(a[8:])*golden
}

func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= mixA
	h ^= h >> 27
	h *= mixB
	return h ^ h>>31
}

// Ethernet types the owner function reads.
const (
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
)

// Queue returns the queue frame (an Ethernet frame, untagged) belongs to.
// It never allocates.
func (s *OwnerSpec) Queue(frame []byte) int {
	if len(frame) < 14 {
		return 0
	}
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case etherIPv4:
		return s.queue4(ip)
	case etherIPv6:
		if len(ip) < 40 || ip[0]>>4 != 6 || 40+int(binary.BigEndian.Uint16(ip[4:])) > len(ip) {
			return 0
		}
		return FlowHash6((*[16]byte)(ip[8:24]), (*[16]byte)(ip[24:40]), s.Workers)
	}
	return 0
}

func (s *OwnerSpec) queue4(ip []byte) int {
	if len(ip) < 20 {
		return 0
	}
	src := binary.BigEndian.Uint32(ip[12:])
	proto, addr, port, ok := endpoint4(ip)
	if !ok {
		return EndpointHash(0, src, 0, s.Workers)
	}
	for _, f := range s.Forwards {
		if f.Proto == proto && f.Addr == addr && f.Port == port {
			return f.Queue
		}
	}
	return PortQueue(port, s.Workers)
}

// endpoint4 returns the LAN endpoint of IPv4 packet ip (len(ip) >= 20).
func endpoint4(ip []byte) (proto uint8, addr uint32, port uint16, ok bool) {
	ihl := int(ip[0]&0xf) * 4
	tl := int(binary.BigEndian.Uint16(ip[2:]))
	if ip[0]>>4 != 4 || ihl < 20 || tl < ihl || tl > len(ip) {
		return 0, 0, 0, false
	}
	frag := binary.BigEndian.Uint16(ip[6:]) & 0x3fff
	if frag&0x1fff != 0 {
		return 0, 0, 0, false // a later fragment: no transport header
	}
	l4 := ip[ihl:tl]
	proto, addr = ip[9], binary.BigEndian.Uint32(ip[12:])
	switch proto {
	case 6, 17: // TCP, UDP
		if len(l4) < 4 {
			return 0, 0, 0, false
		}
		return proto, addr, binary.BigEndian.Uint16(l4), true
	case 1: // ICMP
		if len(l4) < 8 {
			return 0, 0, 0, false
		}
		switch l4[0] {
		case 8: // echo request
			return proto, addr, binary.BigEndian.Uint16(l4[4:]), true
		case 3, 4, 5, 11, 12: // errors: the quoted packet's destination
			if frag != 0 {
				return 0, 0, 0, false
			}
			in := l4[8:]
			if len(in) < 20 || in[0]>>4 != 4 {
				return 0, 0, 0, false
			}
			iihl := int(in[0]&0xf) * 4
			if iihl < 20 || len(in) < iihl+4 {
				return 0, 0, 0, false
			}
			proto, addr = in[9], binary.BigEndian.Uint32(in[16:])
			switch proto {
			case 6, 17:
				return proto, addr, binary.BigEndian.Uint16(in[iihl+2:]), true
			case 1:
				if len(in) < iihl+8 {
					return 0, 0, 0, false
				}
				return proto, addr, binary.BigEndian.Uint16(in[iihl+4:]), true
			}
		}
	}
	return 0, 0, 0, false
}
