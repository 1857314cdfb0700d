package nat

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
)

// Ownership.
//
// WAN side: every external port / ICMP echo id p belongs to one worker:
// the worker whose Range contains p, the Worker of a forward on p, or
// otherwise (unowned ports, traffic that is dropped or Local anyway)
// p % workers. OwnerTable precomputes that for the steering stage, which
// looks up:
//   - TCP/UDP: the destination port;
//   - ICMP echo reply/request: the echo id;
//   - ICMP errors: the embedded header's source port (TCP/UDP) or echo id.
//
// LAN side: a LAN endpoint (proto, address, port or echo id) belongs to
// EndpointOwner's worker, or to the forward's Worker when it is a forward's
// LAN endpoint. Outbound answers Redirect for endpoints of another worker;
// LANSteer.Owner gives the owner from a packet so the LAN RX stage can
// steer there directly.

// AssignForwards sets fwds[i].Worker: the worker whose range holds ExtPort,
// else ExtPort % len(ranges). Forwards sharing an ExtPort (TCP and UDP)
// get the same worker.
func AssignForwards(ranges []Range, fwds []Forward) {
	for i := range fwds {
		fwds[i].Worker = portOwner(ranges, fwds[i].ExtPort)
	}
}

func portOwner(ranges []Range, p uint16) int {
	for j, r := range ranges {
		if r.Contains(p) {
			return j
		}
	}
	return int(p) % len(ranges)
}

// OwnerTable returns the WAN steering table: owner worker by external
// port / ICMP id, forwards included (at their Worker). Workers <= 256.
func OwnerTable(ranges []Range, fwds []Forward) *[65536]uint8 {
	out := new([65536]uint8)
	for p := range out {
		out[p] = uint8(portOwner(ranges, uint16(p)))
	}
	for _, f := range fwds {
		out[f.ExtPort] = uint8(f.Worker)
	}
	return out
}

// EndpointOwner returns the worker owning the mapping of LAN endpoint
// (proto, addr, port) among workers (port = echo id for ICMP). Forward
// LAN endpoints are owned by their forward's Worker instead (LANSteer).
func EndpointOwner(proto uint8, addr uint32, port uint16, workers int) int {
	if workers <= 1 {
		return 0
	}
	h := (uint64(addr)<<24 | uint64(port)<<8 | uint64(proto)) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	return int((h & 0xffffffff) * uint64(workers) >> 32)
}

// LANSteer computes the owning worker of LAN packets.
type LANSteer struct {
	workers int
	fwds    []Forward
}

// NewLANSteer returns a steering helper for workers workers and forwards.
func NewLANSteer(workers int, fwds []Forward) *LANSteer {
	return &LANSteer{workers: workers, fwds: append([]Forward(nil), fwds...)}
}

// Owner returns the worker whose Table owns the LAN IPv4 packet ip (TCP/UDP:
// the source endpoint; ICMP echo request: the source and id; ICMP error:
// the embedded destination endpoint), or -1 when any worker will do (the
// Table drops or passes it without state). It never allocates and is safe
// for concurrent use.
func (s *LANSteer) Owner(ip []byte) int {
	v := hdr.IPv4(ip)
	if !v.IsValid() || v.IsFragment() {
		return -1
	}
	l4 := ip[v.HeaderLen():v.TotalLen()]
	proto := v.Protocol()
	addr := v.Src()
	var port uint16
	switch proto {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		if len(l4) < 4 {
			return -1
		}
		port = binary.BigEndian.Uint16(l4)
	case hdr.ProtoICMP:
		if len(l4) < hdr.ICMPLen {
			return -1
		}
		ic := hdr.ICMP(l4)
		switch {
		case ic.Type() == hdr.ICMPEcho:
			port = ic.ID()
		case ic.IsError():
			in := ic.Inner()
			if len(in) < hdr.IPv4MinLen || in[0]>>4 != 4 {
				return -1
			}
			ihl := int(in[0]&0xf) * 4
			if ihl < hdr.IPv4MinLen || len(in) < ihl+4 {
				return -1
			}
			proto = in[9]
			addr = binary.BigEndian.Uint32(in[16:])
			switch proto {
			case hdr.ProtoTCP, hdr.ProtoUDP:
				port = binary.BigEndian.Uint16(in[ihl+2:])
			case hdr.ProtoICMP:
				if len(in) < ihl+hdr.ICMPLen {
					return -1
				}
				port = binary.BigEndian.Uint16(in[ihl+4:])
			default:
				return -1
			}
		default:
			return -1
		}
	default:
		return -1
	}
	for i := range s.fwds {
		f := &s.fwds[i]
		if f.Proto == proto && f.LANAddr == addr && f.LANPort == port {
			return f.Worker
		}
	}
	return EndpointOwner(proto, addr, port, s.workers)
}
