package nat

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/hdr"
)

// Ownership.
//
// Every port / ICMP echo id p belongs to the worker PortOwner(p, workers):
// ports are interleaved by pairs. A worker's Range holds its ports of the
// configured span [Lo, Hi) and its low share of [1, LowHi()).
//
// WAN side: p is steered to the Worker of a forward on p, or otherwise
// to PortOwner(p) (unowned ports, traffic that is dropped or Local
// anyway, go there too). OwnerTable precomputes that for the steering
// stage, which looks up:
//   - TCP/UDP: the destination port;
//   - ICMP echo reply/request: the echo id;
//   - ICMP errors: the embedded header's source port (TCP/UDP) or echo id.
//
// LAN side: a LAN endpoint (proto, address, port or echo id) belongs to
// EndpointOwner's worker, PortOwner(port): the worker whose range (or
// low share, for ports below 1024) holds the port, so that it can keep
// the port; or to the forward's Worker when it is a forward's LAN
// endpoint. Outbound answers Redirect for endpoints of another worker;
// LANSteer.Owner gives the owner from a packet so the LAN RX stage can
// steer there directly.

// PortOwner returns the worker among workers owning port / ICMP id p:
// (p / 2) mod workers. Both ports of a pair share the owner.
func PortOwner(p uint16, workers int) int {
	if workers <= 1 {
		return 0
	}
	return int(p>>1) % workers
}

// AssignForwards sets fwds[i].Worker: PortOwner(ExtPort). Forwards
// sharing an ExtPort (TCP and UDP) get the same worker.
func AssignForwards(ranges []Range, fwds []Forward) {
	for i := range fwds {
		fwds[i].Worker = portOwner(ranges, fwds[i].ExtPort)
	}
}

// portOwner is the worker whose range or low share holds p, else
// PortOwner(p).
func portOwner(ranges []Range, p uint16) int {
	for j, r := range ranges {
		if r.Contains(p) || r.ContainsLow(p) {
			return j
		}
	}
	return PortOwner(p, len(ranges))
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
// (proto, addr, port) among workers (port = echo id for ICMP):
// PortOwner(port, workers), the worker of Partition's ranges that holds
// port. It depends on the port alone, so that LAN receive steering (the
// afpacket fanout program, NIC flow rules) computes it from a fixed
// offset. Forward LAN endpoints are owned by their forward's Worker
// instead (LANSteer).
func EndpointOwner(proto uint8, addr uint32, port uint16, workers int) int {
	return PortOwner(port, workers)
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
