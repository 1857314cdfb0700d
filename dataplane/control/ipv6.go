package control

import (
	"errors"
	"hash/maphash"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/ndp"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// The control plane's IPv6 side, on while the engine has a LAN prefix
// (Engine.SetLAN6): Neighbor Discovery on the LAN (answering
// solicitations for the router's addresses, learning and resolving hosts,
// holding packets for unresolved ones as ARP does), Router Advertisements
// (periodic and solicited) that give hosts the prefix (SLAAC), the
// default route while the session carries IPv6 and the DNS servers, and
// ICMPv6 echo for the router. IPv6 for the router from the session that
// it does not answer itself (DHCPv6) goes to Config.WAN6.

// RAConfig is what the router advertises on the LAN.
type RAConfig struct {
	// Interval between unsolicited RAs (default 200 s; the first three
	// come 16 s apart, RFC 4861 6.2.4).
	Interval time.Duration
	// RouterLifetime while the session carries IPv6 (default 1800 s);
	// without it the router advertises 0, so hosts stop using it as their
	// default router (RFC 7084 L-13).
	RouterLifetime time.Duration
	// Prefix lifetimes (defaults 1 day and 4 hours for Config.RA;
	// SetRA takes them as given, so a deprecated delegated prefix goes out
	// with Preferred 0).
	Valid, Preferred time.Duration
	// DNS servers (RFC 8106 RDNSS), e.g. those DHCPv6 brought.
	DNS []hdr.Addr6
}

// setDefaults fills in the intervals, and with lifetimes also the prefix
// lifetimes when Valid is 0.
func (r *RAConfig) setDefaults(lifetimes bool) {
	if r.Interval <= 0 {
		r.Interval = 200 * time.Second
	}
	if r.RouterLifetime <= 0 {
		r.RouterLifetime = 1800 * time.Second
	}
	if lifetimes && r.Valid <= 0 {
		r.Valid, r.Preferred = 24*time.Hour, 4*time.Hour
	}
	r.Preferred = min(max(r.Preferred, 0), r.Valid)
}

// Initial RAs (RFC 4861 10: MAX_INITIAL_RTR_ADVERTISEMENTS and
// MAX_INITIAL_RTR_ADVERT_INTERVAL) and the least time between RAs to the
// all-nodes group (MIN_DELAY_BETWEEN_RAS).
const (
	raInitialCount    = 3
	raInitialInterval = 16 * time.Second
	raMinDelay        = 3 * time.Second
	// raDeprecateCount: RAs that still carry a prefix the LAN no longer
	// uses, with lifetimes 0, so hosts deprecate their addresses in it.
	raDeprecateCount = 3
	// NSRate bounds the neighbour solicitations the router sends to
	// resolve LAN hosts (a scan of the /64 from the Internet must not
	// become a flood of multicast on the LAN, RFC 6583).
	NSRate = 100
	// NeighborTTL: a neighbour no ARP or ND confirmed for this long is
	// dropped (traffic to a host dropped is held while it is asked for
	// again), as are IPv6 neighbours outside the LAN prefix after
	// renumbering.
	NeighborTTL = 30 * time.Minute
	// NeighborProbe: in the last NeighborProbe of its NeighborTTL, a
	// learned neighbour is asked for by unicast once a minute (an ARP
	// request or a neighbour solicitation to the MAC the router has for
	// it, as Linux's NUD probes): its answer confirms it, so a host that
	// is there never has its traffic held for the lack of ARP from it,
	// and one that is gone is dropped at NeighborTTL all the same.
	NeighborProbe = 3 * time.Minute
	// ProbeBatch bounds the probes of each family one sweep sends: hosts
	// learned together reach the window together, and the LAN port's
	// queue must not overflow with their probes (an entry not probed, or
	// whose probe the port refused, is probed at a later sweep of its
	// window).
	ProbeBatch = 64
)

// Stats6 are the IPv6 control counters.
type Stats6 struct {
	NSReplies   uint64 `json:"ns_replies"`  // NAs sent for the router's addresses
	NSSent      uint64 `json:"ns_sent"`     // NSs sent to resolve LAN hosts and to probe them (NeighborProbe)
	Learned     uint64 `json:"learned"`     // IPv6 neighbours learned or moved
	RASent      uint64 `json:"ra_sent"`     // router advertisements
	RSReceived  uint64 `json:"rs_received"` // router solicitations
	EchoReplies uint64 `json:"echo_replies"`
	ToWAN6      uint64 `json:"wan6_delivered"` // IPv6 from the session handed to WAN6 (DHCPv6)
	Invalid     uint64 `json:"invalid"`        // ND/ICMPv6 that failed RFC 4861/4443 checks
	// SourceLimited: packets from the session for a LAN address not yet
	// resolved that were dropped because their source (its /64) asked
	// for too many new addresses (srcRate).
	SourceLimited uint64 `json:"source_limited"`
}

type control6 struct {
	mu       sync.Mutex
	ra       RAConfig
	nextRA   time.Time
	initial  int             // initial RAs still to send
	lastMcRA time.Time       // last RA to all-nodes
	lastUp   bool            // the router lifetime last advertised was non-zero
	lastPfx  *dataplane.LAN6 // the LAN6 last advertised
	old      []oldPrefix
	lastNS   map[hdr.Addr6]time.Time
	nsLimit  dataplane.TokenBucket // NSs per second, all targets together (arpMu)
	// seen: when each IPv6 neighbour was last learned or confirmed by ND
	// (arpMu); entries not confirmed for NeighborTTL are dropped.
	seen      map[hdr.Addr6]time.Time
	lastSweep time.Time
	// seen4: the same for IPv4 neighbours and ARP.
	seen4   map[uint32]time.Time
	rand    *rand.Rand
	srcSeed maphash.Seed // keys srcLimit's buckets: an outsider cannot aim at one
	buf     []byte

	// srcLimit bounds, per remote /64 (hashed into srcBuckets buckets),
	// the new LAN addresses the session's packets make the router hold
	// frames for and solicit (srcMu).
	srcMu    sync.Mutex
	srcLimit [srcBuckets]dataplane.TokenBucket

	nsReplies, nsSent, learned, raSent, rsRecv, echo, toWAN6, invalid, srcLimited atomic.Uint64
}

// Per-source limits on resolving new LAN addresses: a remote sending to
// random addresses of the LAN /64 (echo requests pass the firewall) takes
// at most srcBurst hold slots and solicitations at once and srcRate more
// a second, whatever the global NSRate and HoldHosts leave.
const (
	srcBuckets = 256
	srcRate    = 4
	srcBurst   = 8
)

// sourceAllowed reports whether src (its /64) may make the router
// resolve one more new LAN address now.
func (v *control6) sourceAllowed(src *hdr.Addr6, now time.Time) bool {
	i := maphash.Bytes(v.srcSeed, src[:8]) % srcBuckets
	v.srcMu.Lock()
	defer v.srcMu.Unlock()
	return v.srcLimit[i].Allow(now.UnixNano())
}

type oldPrefix struct {
	l    *dataplane.LAN6
	left int
}

// SetRA sets what the router advertises and sends an RA at once.
func (c *Control) SetRA(ra RAConfig) {
	ra.setDefaults(false)
	ra.DNS = append([]hdr.Addr6(nil), ra.DNS...)
	c.v6.mu.Lock()
	c.v6.ra = ra
	c.v6.nextRA = time.Time{}
	c.v6.mu.Unlock()
}

// Stats6 returns the IPv6 control counters.
func (c *Control) Stats6() Stats6 {
	v := &c.v6
	return Stats6{NSReplies: v.nsReplies.Load(), NSSent: v.nsSent.Load(), Learned: v.learned.Load(),
		RASent: v.raSent.Load(), RSReceived: v.rsRecv.Load(), EchoReplies: v.echo.Load(),
		ToWAN6: v.toWAN6.Load(), Invalid: v.invalid.Load(), SourceLimited: v.srcLimited.Load()}
}

// advertise sends the periodic RA when it is due, or at once when the
// prefix or the session's IPv6 state changed. Run calls it every loop.
func (c *Control) advertise(now time.Time) {
	l6 := c.e.LAN6()
	v := &c.v6
	v.mu.Lock()
	defer v.mu.Unlock()
	if l6 == nil && v.lastPfx == nil {
		return
	}
	up := c.sessionIPv6()
	changed := l6 != v.lastPfx || up != v.lastUp
	if !changed && now.Before(v.nextRA) {
		return
	}
	if changed && v.lastPfx != nil && (l6 == nil || l6.Prefix != v.lastPfx.Prefix || l6.Bits != v.lastPfx.Bits) {
		v.old = append(v.old, oldPrefix{v.lastPfx, raDeprecateCount})
		if len(v.old) > 4 {
			v.old = v.old[1:]
		}
	}
	if changed && v.lastPfx == nil {
		v.initial = raInitialCount
	}
	// A prefix back in use is no longer deprecated.
	if l6 != nil {
		keep := v.old[:0]
		for _, o := range v.old {
			if o.l.Prefix != l6.Prefix || o.l.Bits != l6.Bits {
				keep = append(keep, o)
			}
		}
		v.old = keep
	}
	v.lastPfx, v.lastUp = l6, up
	if l6 == nil && len(v.old) == 0 {
		return
	}
	c.sendRALocked(ndp.AllNodes(), ndp.AllNodesMAC(), now)
	interval := v.ra.Interval
	if v.initial > 0 {
		v.initial--
		interval = min(interval, raInitialInterval)
	}
	// Jitter the interval down by up to a quarter (RFC 4861 6.2.4 picks
	// uniformly between MinRtrAdvInterval and MaxRtrAdvInterval).
	v.nextRA = now.Add(interval - time.Duration(v.rand.Int64N(int64(interval)/4+1)))
}

func (c *Control) sessionIPv6() bool {
	s := c.e.Session()
	return s != nil && s.IPv6
}

// sendRALocked sends an RA to dst (v.mu held).
func (c *Control) sendRALocked(dst hdr.Addr6, dstMAC [6]byte, now time.Time) {
	v := &c.v6
	l6 := v.lastPfx
	mac := c.routerMAC
	ra := ndp.RA{SrcMAC: mac, Src: hdr.LinkLocalEUI64(mac), Dst: dst, DstMAC: dstMAC, CurHopLimit: 64,
		RDNSS: v.ra.DNS, RDNSSLifetime: 3 * v.ra.Interval}
	if l6 != nil {
		if v.lastUp {
			ra.RouterLifetime = v.ra.RouterLifetime
		}
		ra.Prefixes = append(ra.Prefixes, ndp.PrefixInfo{Prefix: l6.Prefix, Bits: uint8(l6.Bits), OnLink: true,
			Autonomous: l6.Bits == 64, Valid: v.ra.Valid, Preferred: v.ra.Preferred})
	}
	// Old prefixes count down only on RAs every host hears.
	mc := hdr.IsMulticast6(&dst)
	keep := v.old[:0]
	for _, o := range v.old {
		ra.Prefixes = append(ra.Prefixes, ndp.PrefixInfo{Prefix: o.l.Prefix, Bits: uint8(o.l.Bits), OnLink: true, Autonomous: o.l.Bits == 64})
		if mc {
			o.left--
		}
		if o.left > 0 {
			keep = append(keep, o)
		}
	}
	v.old = keep
	if len(ra.RDNSS) == 0 {
		ra.RDNSSLifetime = 0
	}
	v.buf = ndp.AppendRA(v.buf[:0], &ra)
	if c.e.Send(dataplane.ToLAN, v.buf) == nil {
		v.raSent.Add(1)
		if hdr.IsMulticast6(&dst) {
			v.lastMcRA = now
		}
	}
}

// fromLAN6 handles an IPv6 frame from the LAN for the router. It returns
// false when the host stack (Config.Host) should have it too or
// instead: anything but ND and echo, and with a host stack also NS, NA and
// RA (the control plane learns from them, the host keeps its own
// neighbour cache) and echo requests.
func (c *Control) fromLAN6(b []byte) bool {
	l6 := c.e.LAN6()
	if l6 == nil {
		return false
	}
	m, err := ndp.Parse(b)
	if err != nil {
		if err != ndp.ErrNotICMPv6 && err != ndp.ErrExtHeader {
			c.v6.invalid.Add(1)
		}
		return false
	}
	mac := c.routerMAC
	ours := func(a *hdr.Addr6) bool { return *a == l6.Router || *a == l6.LinkLocal }
	var out [256]byte
	switch m.Type {
	case hdr.ICMP6NeighborSol:
		if ours(&m.Target) {
			c.learn6(l6, &m.Src, m.SourceLL, m.HasSourceLL, true, false)
			if c.e.Send(dataplane.ToLAN, ndp.AppendNA(out[:0], &m, m.Target, mac, true)) == nil {
				c.v6.nsReplies.Add(1)
			}
		}
		return c.cfg.Host == nil
	case hdr.ICMP6NeighborAdv:
		if !m.HasTargetLL && m.Solicited && m.DstMAC == mac {
			// The answer to a unicast solicitation (NeighborProbe) may
			// leave the target's link-layer address out (RFC 4861
			// 7.2.4; Linux does): it confirms a neighbour known at the
			// MAC it came from.
			if old, ok := c.e.Neighbors6().Lookup(&m.Target); ok && old == m.SrcMAC {
				c.seenND(m.Target, false)
			}
			return c.cfg.Host == nil
		}
		asked := c.askedFor(m.Target)
		c.learn6(l6, &m.Target, m.TargetLL, m.HasTargetLL, asked || (m.Solicited && m.DstMAC == mac), !m.Override)
		return c.cfg.Host == nil
	case hdr.ICMP6RouterSol:
		c.v6.rsRecv.Add(1)
		now := time.Now()
		c.v6.mu.Lock()
		if c.v6.lastPfx != nil {
			// To the host when it said who it is, else to all nodes (no
			// more than once per MIN_DELAY_BETWEEN_RAS).
			if m.Src != (hdr.Addr6{}) && m.HasSourceLL {
				c.sendRALocked(m.Src, m.SourceLL, now)
			} else if now.Sub(c.v6.lastMcRA) >= raMinDelay {
				c.sendRALocked(ndp.AllNodes(), ndp.AllNodesMAC(), now)
			}
		}
		c.v6.mu.Unlock()
		return true
	case hdr.ICMP6RouterAdv:
		return c.cfg.Host == nil // another router's: not ours to act on
	case hdr.ICMP6EchoRequest:
		if c.cfg.Host != nil || !ours(&m.Dst) {
			return false
		}
		if c.e.Send(dataplane.ToLAN, ndp.AppendEchoReply(out[:0:0], &m, m.Dst, mac)) == nil {
			c.v6.echo.Add(1)
		}
		return true
	}
	return false
}

// learn6 records that LAN host ip is at mac: a host the router does not
// know is learned only from ND about the router (aboutUs), a known one is
// updated when its MAC changes (not within a second of the last change,
// and never by an NA without the override flag). Then what was held for
// it is sent.
func (c *Control) learn6(l6 *dataplane.LAN6, ip *hdr.Addr6, mac [6]byte, has, aboutUs, noOverride bool) {
	// Neither the router's addresses, nor the subnet-router anycast
	// address (the prefix itself, RFC 4291 2.6.1), nor a multicast or
	// zero MAC is a neighbour.
	if !has || !l6.Contains(ip) || *ip == l6.Router || *ip == l6.Prefix || mac[0]&1 != 0 || mac == [6]byte{} {
		return
	}
	n := c.e.Neighbors6()
	old, known := n.Lookup(ip)
	learned := false
	switch {
	case known && old != mac && !noOverride && c.moveAllowed6(*ip):
		c.e.SetNeighbor6(*ip, mac)
		c.v6.learned.Add(1)
		learned = true
	case !known && aboutUs && n.Len() < MaxNeighbors:
		c.e.SetNeighbor6(*ip, mac)
		c.v6.learned.Add(1)
		known, learned = true, true
	}
	if known {
		c.seenND(*ip, learned)
		if m, ok := c.e.Neighbors6().Lookup(ip); ok {
			c.sendHeld6(*ip, m)
		}
	}
}

// moveAllowed6 is moveAllowed for IPv6 neighbours (locktime 1 s).
func (c *Control) moveAllowed6(ip hdr.Addr6) bool {
	now := time.Now()
	c.arpMu.Lock()
	defer c.arpMu.Unlock()
	if c.lastMove6 == nil {
		c.lastMove6 = map[hdr.Addr6]time.Time{}
	}
	if t, ok := c.lastMove6[ip]; ok && now.Sub(t) < time.Second {
		return false
	}
	if len(c.lastMove6) >= MaxNeighbors {
		clear(c.lastMove6)
	}
	c.lastMove6[ip] = now
	return true
}

// askedFor reports whether the router solicited ip in the last 3 s.
func (c *Control) askedFor(ip hdr.Addr6) bool {
	c.arpMu.Lock()
	defer c.arpMu.Unlock()
	t, ok := c.v6.lastNS[ip]
	return ok && time.Since(t) < HoldTimeout
}

// resolve6 sends a Neighbor Solicitation for a LAN address (at most once
// a second).
func (c *Control) resolve6(ip hdr.Addr6) {
	now := time.Now()
	c.arpMu.Lock()
	if c.v6.lastNS == nil {
		c.v6.lastNS = map[hdr.Addr6]time.Time{}
	}
	if t, ok := c.v6.lastNS[ip]; ok && now.Sub(t) < time.Second || !c.v6.nsLimit.Allow(now.UnixNano()) {
		c.arpMu.Unlock()
		return
	}
	if len(c.v6.lastNS) > 4096 {
		clear(c.v6.lastNS)
	}
	c.v6.lastNS[ip] = now
	c.arpMu.Unlock()
	mac := c.routerMAC
	var out [128]byte
	if c.e.Send(dataplane.ToLAN, ndp.AppendNS(out[:0], hdr.LinkLocalEUI64(mac), ip, mac)) == nil {
		c.v6.nsSent.Add(1)
	}
}

// unresolved6 holds an Ethernet+IPv6 frame for a LAN host whose MAC is
// unknown and asks for it.
func (c *Control) unresolved6(b []byte) {
	if len(b) < hdr.EthernetLen+hdr.IPv6Len {
		c.stats.ignored.Add(1)
		return
	}
	ip := hdr.IPv6(b[hdr.EthernetLen:])
	dst, now := ip.Dst(), time.Now()
	l6, src := c.e.LAN6(), ip.Src()
	if (l6 == nil || !l6.Contains(&src)) && !c.hold6.waiting(dst) && !c.v6.sourceAllowed(&src, now) {
		c.v6.srcLimited.Add(1)
		return
	}
	if !c.hold6.add(dst, b, now) {
		return // HoldHosts addresses wait already: no more solicitations
	}
	c.resolve6(dst)
	if mac, ok := c.e.Neighbors6().Lookup(&dst); ok {
		c.sendHeld6(dst, mac)
	}
}

// seenARP records that ARP confirmed IPv4 neighbour ip (learned: the
// control plane just learned or moved it).
func (c *Control) seenARP(ip uint32, learned bool) {
	c.arpMu.Lock()
	markSeen(&c.v6.seen4, ip, learned)
	c.arpMu.Unlock()
}

// seenND records that ND confirmed IPv6 neighbour ip (learned: the
// control plane just learned or moved it).
func (c *Control) seenND(ip hdr.Addr6, learned bool) {
	c.arpMu.Lock()
	markSeen(&c.v6.seen, ip, learned)
	c.arpMu.Unlock()
}

// markSeen stamps a neighbour the control plane learned (learned), or
// one it learned before (then in *m); entries set from outside are not in
// *m and never age. arpMu held.
func markSeen[K comparable](m *map[K]time.Time, k K, learned bool) {
	if *m == nil {
		*m = map[K]time.Time{}
	}
	if _, ok := (*m)[k]; ok || learned {
		(*m)[k] = time.Now()
	}
}

// sweepNeighbors drops the neighbours the control plane learned that no
// ARP or ND confirmed for NeighborTTL, and IPv6 ones outside the LAN
// prefix, and probes those in the last NeighborProbe of their TTL (Run
// calls it; it works once a minute). Entries set from outside
// (Engine.SetNeighbor) stay and are not probed.
func (c *Control) sweepNeighbors(now time.Time) {
	probe4, probe6 := c.sweepLocked(now)
	for _, ip := range probe4 {
		if mac, ok := c.e.Neighbors().Lookup(ip); ok && c.sendARPRequest(ip, mac) {
			c.stats.neighProbes.Add(1)
		}
	}
	if len(probe6) == 0 {
		return
	}
	src := hdr.LinkLocalEUI64(c.routerMAC)
	var out [128]byte
	for _, ip := range probe6 {
		if mac, ok := c.e.Neighbors6().Lookup(&ip); ok &&
			c.e.Send(dataplane.ToLAN, ndp.AppendUnicastNS(out[:0], src, ip, mac, c.routerMAC)) == nil {
			c.v6.nsSent.Add(1)
			c.stats.neighProbes.Add(1)
		}
	}
}

// sweepLocked is sweepNeighbors' work under arpMu (held to the end: an
// ARP or NA moving a neighbour meanwhile must not be undone by the
// deletion); it returns the neighbours to probe.
func (c *Control) sweepLocked(now time.Time) (probe4 []uint32, probe6 []hdr.Addr6) {
	c.arpMu.Lock()
	defer c.arpMu.Unlock()
	if now.Sub(c.v6.lastSweep) < time.Minute {
		return nil, nil
	}
	c.v6.lastSweep = now
	l6 := c.e.LAN6()
	gone, probe6 := ageSeen(c.v6.seen, now, func(ip hdr.Addr6) bool { return l6 == nil || !l6.Contains(&ip) })
	gone4, probe4 := ageSeen(c.v6.seen4, now, func(uint32) bool { return false })
	if len(gone) > 0 {
		c.e.DeleteNeighbors6(gone)
	}
	if len(gone4) > 0 {
		c.e.DeleteNeighbors(gone4)
	}
	return probe4, probe6
}

// ageSeen deletes from seen the neighbours no ARP or ND confirmed for
// NeighborTTL, and those drop names, returning them (gone), and returns
// up to ProbeBatch of the others in the last NeighborProbe of their TTL
// (probe).
func ageSeen[K comparable](seen map[K]time.Time, now time.Time, drop func(K) bool) (gone, probe []K) {
	for k, t := range seen {
		switch age := now.Sub(t); {
		case age > NeighborTTL || drop(k):
			gone = append(gone, k)
			delete(seen, k)
		case age > NeighborTTL-NeighborProbe && len(probe) < ProbeBatch:
			probe = append(probe, k)
		}
	}
	return gone, probe
}

// sendHeld6 sends the frames held for ip, now that its MAC is known.
func (c *Control) sendHeld6(ip hdr.Addr6, mac [6]byte) { sendHeldFrom(c, &c.hold6, ip, mac) }

// fromWAN6 handles an IPv6 packet for the router from the session (f
// holds it, with headroom): echo requests to its addresses are answered,
// the rest goes to Config.WAN6.
func (c *Control) fromWAN6(f *nic.Frame) bool {
	ip := hdr.IPv6(f.Data())
	if !ip.IsValid() {
		return false
	}
	ip = ip[:ip.TotalLen()]
	f.Truncate(len(ip))
	dst := ip.Dst()
	if l6 := c.e.LAN6(); ip.NextHeader() == hdr.ProtoICMP6 && len(ip) >= hdr.IPv6Len+8 && ip[hdr.IPv6Len] == hdr.ICMP6EchoRequest &&
		(l6 != nil && dst == l6.Router || dst == c.wanLinkLocal()) {
		src := ip.Src()
		if !hdr.ICMP6ChecksumOK(ip[hdr.IPv6Len:], &src, &dst) {
			c.v6.invalid.Add(1)
			return false
		}
		copy(ip[8:24], dst[:])
		copy(ip[24:40], src[:])
		ip[7] = 64
		ip[hdr.IPv6Len] = hdr.ICMP6EchoReply
		hdr.ICMP6Checksum(ip[hdr.IPv6Len:], &dst, &src)
		if c.SendWAN6(ip) == nil {
			c.v6.echo.Add(1)
			return true
		}
		return false
	}
	if c.cfg.WAN6 == nil {
		return false
	}
	// Counted first: whoever receives the packet sees it counted.
	c.v6.toWAN6.Add(1)
	c.cfg.WAN6(ip)
	return true
}

// wanLinkLocal is the router's link-local address on the session
// (fe80:: and the interface identifier IPv6CP negotiated).
func (c *Control) wanLinkLocal() hdr.Addr6 {
	s := c.e.Session()
	if s == nil || !s.IPv6 {
		return hdr.Addr6{0xff} // matches nothing a packet to us carries
	}
	return WANLinkLocal(s.LocalIfID)
}

// WANLinkLocal returns fe80::/64 with interface identifier id.
func WANLinkLocal(id [8]byte) hdr.Addr6 {
	a := hdr.Addr6{0: 0xfe, 1: 0x80}
	copy(a[8:], id[:])
	return a
}

// SendWAN6 sends the IPv6 packet ip over the session (for DHCPv6 and the
// control plane's own replies). It fails while IPv6CP is not open.
func (c *Control) SendWAN6(ip []byte) error {
	s := c.e.Session()
	if s == nil || !s.IPv6 {
		return errNoIPv6
	}
	f := nic.NewFrame()
	if !f.SetData(ip) || !s.Encap(f) {
		return errTooBig
	}
	return c.e.Send(dataplane.ToWAN, f.Data())
}

var (
	errNoIPv6 = errors.New("control: the session does not carry IPv6")
	errTooBig = errors.New("control: packet too large")
)
