package control

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/ndp"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// The host stack's way out (Config.Host: a TAP, or netmap's host rings
// of the LAN interface): what it sends on the LAN goes out of the LAN
// port as it is; what it sends beyond the LAN goes to the fast path
// (dataplane.FromHost), which routes it into the session as a LAN host's,
// through the NAT. The host reaches the session by a default route on
// its port (`ip route add default dev TAP`, or via an on-link gateway
// outside the LAN prefix): for the addresses beyond the LAN, and for such
// a gateway, the control plane answers its ARP requests and neighbour
// solicitations with the gateway MAC (Config.HostGateway, RouterMAC by
// default: proxy ARP and ND), so its frames for them arrive addressed to
// it; they enter the fast path addressed to RouterMAC. What the session
// sends back to the router's own addresses comes from the fast path
// (dataplane.ToHost) and is written to the host port.

// hostVerdict is what becomes of a frame the host stack sent.
type hostVerdict uint8

const (
	hostToLAN    hostVerdict = iota // out of the LAN port as it is
	hostRoute                       // beyond the LAN: to the fast path (dataplane.FromHost)
	hostProxyARP                    // an ARP request for an address beyond the LAN
	hostProxyNS                     // a neighbour solicitation for an address beyond the LAN
)

// hostNet is the LAN addressing classifyHost judges by.
type hostNet struct {
	routerMAC       [6]byte
	gatewayMAC      [6]byte // the proxy answers' MAC (Config.HostGateway, or routerMAC)
	lanNet, lanMask uint32
	l6              *dataplane.LAN6 // nil: no IPv6 LAN prefix
}

// classifyHost judges the Ethernet frame b from the host stack (any
// bytes: it reads only what it has checked is there). A frame is routed
// only when it is unicast to RouterMAC or the gateway MAC and carries a valid IPv4 header to
// a unicast address outside the LAN prefix, or (with a LAN prefix) an
// IPv6 header to a beyondLAN6 address; an ARP request or neighbour
// solicitation is proxied only for such addresses. The rest goes to the
// LAN.
func classifyHost(b []byte, n *hostNet) hostVerdict {
	if len(b) < hdr.EthernetLen {
		return hostToLAN
	}
	eth := hdr.Ethernet(b)
	dst := [6]byte(eth.Dst())
	toUs := dst == n.routerMAC || dst == n.gatewayMAC
	switch eth.Type() {
	case hdr.EtherTypeARP:
		if len(b) < hdr.ARPLen {
			return hostToLAN
		}
		a := b[hdr.EthernetLen:]
		if binary.BigEndian.Uint32(a[0:]) != 0x00010800 || a[4] != 6 || a[5] != 4 || binary.BigEndian.Uint16(a[6:]) != 1 {
			return hostToLAN
		}
		if n.beyondLAN4(binary.BigEndian.Uint32(a[24:])) {
			return hostProxyARP
		}
	case hdr.EtherTypeIPv4:
		ip := hdr.IPv4(b[hdr.EthernetLen:])
		if toUs && ip.IsValid() && n.beyondLAN4(ip.Dst()) {
			return hostRoute
		}
	case hdr.EtherTypeIPv6:
		if n.l6 == nil || len(b) < hdr.EthernetLen+hdr.IPv6Len || b[hdr.EthernetLen]>>4 != 6 {
			return hostToLAN
		}
		ip := b[hdr.EthernetLen:]
		// A neighbour solicitation (no extension headers: ND has none),
		// multicast to resolve or unicast to confirm a neighbour.
		if len(ip) >= hdr.IPv6Len+24 && ip[6] == hdr.ProtoICMP6 && ip[hdr.IPv6Len] == hdr.ICMP6NeighborSol {
			if n.beyondLAN6((*hdr.Addr6)(ip[hdr.IPv6Len+8 : hdr.IPv6Len+24])) {
				return hostProxyNS
			}
			return hostToLAN
		}
		if toUs && n.beyondLAN6((*hdr.Addr6)(ip[24:40])) {
			return hostRoute
		}
	}
	return hostToLAN
}

// beyondLAN4 reports whether a is a unicast address outside the LAN
// prefix: not this network (0/8), loopback, multicast, reserved or
// broadcast.
func (n *hostNet) beyondLAN4(a uint32) bool {
	if a>>24 == 0 || a>>24 == 127 || a>>28 >= 0xe {
		return false
	}
	return a&n.lanMask != n.lanNet
}

// beyondLAN6 reports whether a is a unicast address outside the LAN
// prefix: not multicast, link-local, unspecified, loopback or
// IPv4-mapped.
func (n *hostNet) beyondLAN6(a *hdr.Addr6) bool {
	if hdr.IsMulticast6(a) || hdr.IsLinkLocal6(a) || n.l6.Contains(a) {
		return false
	}
	if binary.BigEndian.Uint64(a[:8]) == 0 && (binary.BigEndian.Uint64(a[8:]) <= 1 || binary.BigEndian.Uint32(a[8:]) == 0xffff) {
		return false
	}
	return true
}

// fromHost passes on one frame the host stack sent (Run's goroutine; f
// is the control plane's, b its data).
func (c *Control) fromHost(f *nic.Frame) {
	b := f.Data()
	n := hostNet{routerMAC: c.routerMAC, gatewayMAC: c.hostGW, lanNet: c.lanNet, lanMask: c.lanMask, l6: c.e.LAN6()}
	switch classifyHost(b, &n) {
	case hostRoute:
		copy(b[0:6], c.routerMAC[:]) // the workers take frames to RouterMAC only
		if c.e.Send(dataplane.FromHost, b) != nil {
			c.stats.hostDropped.Add(1)
			return
		}
		c.stats.fromHost.Add(1)
		c.stats.hostRouted.Add(1)
		return
	case hostProxyARP:
		tpa := binary.BigEndian.Uint32(b[hdr.EthernetLen+24:])
		if c.sendHost(hdr.ARPReplyInPlace(b, c.hostGW, tpa)) {
			c.stats.hostProxied.Add(1)
		}
		return
	case hostProxyNS:
		// The full checks of RFC 4861 7.1.1 before answering; an invalid
		// solicitation goes the way of anything else the host sends.
		if m, err := ndp.Parse(b); err == nil && m.Type == hdr.ICMP6NeighborSol {
			var out [128]byte
			if c.sendHost(ndp.AppendNA(out[:0], &m, m.Target, c.hostGW, true)) {
				c.stats.hostProxied.Add(1)
			}
			return
		}
	}
	if c.e.Send(dataplane.ToLAN, b) != nil {
		c.stats.hostDropped.Add(1)
		return
	}
	c.stats.fromHost.Add(1)
}

// toHostFrame writes a frame the fast path handed over for the host stack
// (dataplane.ToHost; the exception goroutine's).
func (c *Control) toHostFrame(b []byte) {
	if c.cfg.Host == nil {
		c.stats.ignored.Add(1)
		return
	}
	if !c.sendHost(b) {
		c.stats.hostDropped.Add(1)
	}
}

// sendHost writes the Ethernet frame b to the host port and counts it
// (ToHost). Run's goroutine (proxy answers) and the exception goroutine
// both write, and a port's queue takes one Send at a time: they take
// turns.
func (c *Control) sendHost(b []byte) bool {
	c.hostMu.Lock()
	defer c.hostMu.Unlock()
	if !c.hostTx[0].SetData(b) {
		return false
	}
	if n, err := c.cfg.Host.Send(0, c.hostTx); err != nil || n != 1 {
		return false
	}
	c.stats.toHost.Add(1)
	return true
}
