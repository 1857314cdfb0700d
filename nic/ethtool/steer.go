package ethtool

import "fmt"

// PortRule is one NIC flow-steering rule (ethtool's ntuple filters):
// IPv4 frames of protocol Proto (TCP or UDP) whose source address is Addr
// (0: any) and whose source port p has p&Mask == Port go to RX queue
// Queue. A NIC applies the first rule that matches (SteerPorts installs
// them in order, at locations 0, 1, ...) and RSS-hashes the rest.
type PortRule struct {
	Proto uint8
	Addr  uint32 // big-endian as a uint32; 0: any source address
	Port  uint16
	Mask  uint16 // bits of the source port compared
	Queue int
}

// PortPairRules returns the rules that deliver IPv4 TCP and UDP frames to
// the queue queues given by the port-pair owner function, (p>>1) % queues
// (nat.PortOwner), after the fixed owners in first (port forwards: exact
// address and port). Masks express the function only for a power-of-two
// number of queues: for others it returns an error and the caller falls
// back to RSS plus a hand-over between workers. ICMP, IPv6 and fragments
// are not matched by any rule: the NIC's RSS hash spreads them.
func PortPairRules(queues int, first []PortRule) ([]PortRule, error) {
	if queues < 2 || queues > 256 || queues&(queues-1) != 0 {
		return nil, fmt.Errorf("ethtool: steering by port pairs needs a power-of-two number of queues from 2 to 256, not %d", queues)
	}
	rules := append([]PortRule(nil), first...)
	mask := uint16(queues-1) << 1
	for _, proto := range []uint8{6, 17} {
		for q := 0; q < queues; q++ {
			rules = append(rules, PortRule{Proto: proto, Port: uint16(q) << 1, Mask: mask, Queue: q})
		}
	}
	return rules, nil
}

// Match returns the queue the first rule matching an IPv4 frame of
// protocol proto from addr and source port port names, as the NIC
// applies rules; ok is false when none matches (the NIC's RSS decides).
func Match(rules []PortRule, proto uint8, addr uint32, port uint16) (queue int, ok bool) {
	for _, r := range rules {
		if r.Proto == proto && (r.Addr == 0 || r.Addr == addr) && port&r.Mask == r.Port&r.Mask {
			return r.Queue, true
		}
	}
	return 0, false
}
