// The downlink path: a frame steering handed this worker, from the
// session to the LAN, in the order it meets each stage (IPv4 and IPv6
// side by side): decapsulation, checks and martian sources, NAT or the
// IPv6 firewall, fragments, the downlink shaper, the neighbour lookup and
// the LAN TX queue.

package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// fromWAN handles a PPPoE frame steered to this worker.
func (w *Worker) fromWAN(f *nic.Frame) {
	w.enter(StageParse)
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	switch s.Decap(f) {
	case hdr.DecapIPv4:
	case hdr.DecapWrongSession:
		w.drop(f, DropWrongSession)
		return
	case hdr.DecapIPv6:
		w.inbound6(f)
		return
	case hdr.DecapNotPPPoE:
		w.drop(f, DropUnsupported)
		return
	case hdr.DecapControl:
		w.toException(f, FromWAN)
		return
	default:
		w.drop(f, DropBadPPPoE)
		return
	}
	w.inbound(f, false)
}

// inbound continues fromWAN at the IPv4 header; redirected is set for
// frames another worker handed over (they are not redirected again).
func (w *Worker) inbound(f *nic.Frame, redirected bool) {
	ip := hdr.IPv4(f.Data())
	if r, ok := checkIPv4(ip); !ok {
		w.drop(f, r)
		return
	}
	f.Truncate(ip.TotalLen())
	ip = ip[:ip.TotalLen()]
	if ip.Dst() != w.pubAddr {
		w.drop(f, DropNotForUs)
		return
	}
	if w.martianFromWAN(ip.Src()) {
		w.drop(f, DropMartian)
		return
	}
	first := false
	if ip.IsFragment() {
		if laterFragment(ip) {
			w.laterFragmentIn(f, ip)
			return
		}
		first = true
	}
	if ip.TTL() <= 1 {
		// The router's own traffic is received whatever its TTL (RFC 1812
		// 5.3.1): an echo request to the session address is answered.
		if ic := hdr.ICMP(ip[hdr.IPv4MinLen:]); ip.Protocol() == hdr.ProtoICMP && ic.IsValid() && ic.Type() == hdr.ICMPEcho {
			w.toException(f, FromWANIP)
			return
		}
		w.c.Drops[DropTTLExceeded]++
		w.icmpToWAN(f, hdr.ICMPTimeExceeded, hdr.ICMPCodeTTLExceeded)
		return
	}
	allocs := w.natBegin()
	v := w.nat.Inbound(ip, w.now)
	w.natDone(allocs)
	switch v {
	case nat.Pass:
	case nat.Redirect:
		// Steering chose by port; the NAT knows better (e.g. a forward
		// whose state lives elsewhere). Hand it over once.
		if redirected {
			w.drop(f, DropNAT)
			return
		}
		w.redirect(f, w.nat.RedirectTarget(), true)
		return
	case nat.Local:
		w.toException(f, FromWANIP)
		return
	default:
		w.drop(f, DropNAT)
		return
	}
	if first {
		w.frags.put(ip, ip.Dst(), w.now) // the LAN host, translated
		w.fragsSeen.put(ip, w.steerClock()+fragTimeout)
	}
	w.forwardIP(ip)
	w.downstream(f, ip)
}

// martianFromWAN reports a source no packet from the session may claim
// (RFC 1812 5.3.7, as the kernel's rp_filter and pf's antispoof rules
// drop them): this network (0/8), loopback (127/8), multicast and
// reserved (224/4, 240/4 and the broadcast address), the LAN's own
// prefix and the router's addresses, and the session's public address.
func (w *Worker) martianFromWAN(src uint32) bool {
	switch {
	case src>>24 == 0, src>>24 == 127, src>>28 >= 0xe:
		return true
	}
	return src&w.lanMask == w.cfg.LANNet || src == w.cfg.RouterAddr || src == w.pubAddr
}

// laterFragmentIn sends a downlink fragment other than the first to the
// LAN host its datagram's first fragment was translated for.
func (w *Worker) laterFragmentIn(f *nic.Frame, ip hdr.IPv4) {
	host, ok := w.frags.get(ip, w.now)
	if !ok || overlapsTCPHeader(ip) {
		w.drop(f, DropFragment)
		return
	}
	if ip.TTL() <= 1 {
		w.drop(f, DropTTLExceeded)
		return
	}
	ip.SetDst(host)
	w.forwardIP(ip)
	w.downstream(f, ip)
}

// inbound6 forwards a decapsulated IPv6 packet from the session to the
// LAN prefix, or hands it to the control plane when it is for the router.
func (w *Worker) inbound6(f *nic.Frame) {
	ip := hdr.IPv6(f.Data())
	if !ip.IsValid() {
		w.drop(f, DropBadIPv6)
		return
	}
	f.Truncate(ip.TotalLen())
	ip = ip[:ip.TotalLen()]
	dst := (*hdr.Addr6)(ip[24:40])
	l6 := w.lan6
	// Link-scope traffic is the router's before there is a LAN prefix too:
	// DHCPv6 brings the prefix.
	if hdr.IsMulticast6(dst) || hdr.IsLinkLocal6(dst) {
		w.toException(f, FromWANIP) // DHCPv6, the ISP's RAs
		return
	}
	if l6 == nil {
		w.drop(f, DropUnsupported)
		return
	}
	// No packet from the session may claim a source that cannot be there
	// (RFC 4291: multicast, unspecified, loopback, link-local, IPv4-mapped;
	// RFC 6092 3.1: the LAN's own prefix).
	if src := (*hdr.Addr6)(ip[8:24]); hdr.IsMulticast6(src) || hdr.IsLinkLocal6(src) || l6.Contains(src) ||
		binary.BigEndian.Uint64(src[:8]) == 0 && (binary.BigEndian.Uint64(src[8:]) <= 1 || binary.BigEndian.Uint32(src[8:]) == 0xffff) {
		w.drop(f, DropMartian)
		return
	}
	toHost := *dst == l6.Router
	if toHost {
		// The control plane answers echo requests; the rest is the host
		// stack's (host.go), past the firewall as a LAN host's.
		if ip.NextHeader() == hdr.ProtoICMP6 && len(ip) > hdr.IPv6Len && ip[hdr.IPv6Len] == hdr.ICMP6EchoRequest {
			w.toException(f, FromWANIP)
			return
		}
	} else if !l6.Contains(dst) {
		// Only the LAN prefix is routed to the LAN; the rest of a delegated
		// prefix has nowhere to go (and must not loop back upstream).
		w.drop(f, DropNotForUs)
		return
	}
	p := fw6Flow(ip, false, false)
	h := w.fw6.hash(&p.key) // the firewall's and the shaper's
	if !w.fw6Inbound(ip, &p, h) {
		w.drop(f, DropFirewall)
		return
	}
	if ip.HopLimit() <= 1 {
		w.c.Drops[DropTTLExceeded]++
		w.icmp6ToWAN(f, hdr.ICMP6TimeExceeded, hdr.ICMP6CodeHopLimit)
		return
	}
	w.forwardIP6(ip, sessionMTU(w.sess))
	if f.Push(hdr.EthernetLen) == nil {
		w.drop(f, DropHeadroom)
		return
	}
	mac, ok := w.cfg.RouterMAC, true
	if toHost {
		f.Flags |= flagToHost
	} else {
		mac, ok = w.neigh6.Lookup(dst)
	}
	if !ok {
		eth := hdr.Ethernet(f.Data())
		eth.SetAddrs([6]byte{}, w.cfg.RouterMAC)
		eth.SetType(hdr.EtherTypeIPv6)
		w.c.Unresolved++
		w.toException(f, Unresolved)
		return
	}
	eth := hdr.Ethernet(f.Data())
	eth.SetAddrs(mac, w.cfg.RouterMAC)
	eth.SetType(hdr.EtherTypeIPv6)
	w.c.IPv6Down++
	w.c.BytesDown += uint64(len(ip))
	if w.down != nil {
		w.down.EnqueueAt(f, h, host6(dst), w.now)
		return
	}
	if toHost {
		w.handToHost(f)
		return
	}
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// downstream hands a translated downlink IPv4 packet to the shaper, or
// straight to the LAN when the downlink is not shaped.
func (w *Worker) downstream(f *nic.Frame, ip hdr.IPv4) {
	w.c.BytesDown += uint64(f.Len)
	dst := ip.Dst()
	if f.Push(hdr.EthernetLen) == nil {
		w.drop(f, DropHeadroom)
		return
	}
	if w.down != nil {
		w.enter(StageEncap)
		mac, ok := w.cfg.RouterMAC, true
		if dst == w.cfg.RouterAddr {
			f.Flags |= flagToHost // the router's own: for the host stack
		} else {
			mac, ok = w.neigh.Lookup(dst)
		}
		if !ok {
			w.unresolved(f)
			return
		}
		eth := hdr.Ethernet(f.Data())
		eth.SetAddrs(mac, w.cfg.RouterMAC)
		eth.SetType(hdr.EtherTypeIPv4)
		w.enter(StageShaperEnq)
		w.down.EnqueueAt(f, flowHash(ip), dst, w.now)
		return
	}
	w.toLAN(f, dst, dst)
}

// toLAN writes the Ethernet header for an IPv4 packet at the front of f
// (or already behind an Ethernet header when f starts with one: hasEth)
// addressed to LAN host dst and queues it; host is the LAN host for
// fairness. A packet for the router's own address goes to the host stack.
func (w *Worker) toLAN(f *nic.Frame, dst, host uint32) {
	w.enter(StageEncap)
	b := f.Data()
	if len(b) < hdr.EthernetLen {
		w.drop(f, DropBadEthernet)
		return
	}
	if dst == w.cfg.RouterAddr {
		w.toHost(f, hdr.EtherTypeIPv4)
		return
	}
	eth := hdr.Ethernet(b)
	mac, ok := w.neigh.Lookup(dst)
	if !ok {
		w.unresolved(f)
		return
	}
	eth.SetAddrs(mac, w.cfg.RouterMAC)
	eth.SetType(hdr.EtherTypeIPv4)
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// unresolved hands an Ethernet+IPv4 frame whose LAN next hop is unknown
// to the control plane, which resolves it (ARP).
func (w *Worker) unresolved(f *nic.Frame) {
	eth := hdr.Ethernet(f.Data())
	eth.SetAddrs([6]byte{}, w.cfg.RouterMAC)
	eth.SetType(hdr.EtherTypeIPv4)
	w.c.Unresolved++
	w.toException(f, Unresolved)
}
