package dataplane

import (
	"encoding/binary"
	"errors"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/pppoe"
)

// IPv6 is routed, not translated: the LAN gets a /64 of the prefix the ISP
// delegates (or one configured), hosts number themselves from the router's
// advertisements, and the workers forward between the LAN prefix and the
// session (PPP protocol 0x0057) with a hop-limit decrement, MSS clamping,
// the shapers, and ICMPv6 errors (time exceeded, packet too big) where a
// router must send them. There is no state per flow, so any worker can
// forward any packet: uplink packets stay on the worker RSS gave them,
// downlink ones are steered by a hash of their addresses and ports (one
// flow, one worker, one shaper queue).

// LAN6 is the LAN's IPv6 configuration the workers read: an immutable
// snapshot published with SetLAN6.
type LAN6 struct {
	Prefix hdr.Addr6 // the LAN prefix (low bits zero)
	Bits   int       // its length, 64 for SLAAC
	// Router is the router's global address on the LAN (the source of
	// ICMPv6 errors), LinkLocal its link-local one.
	Router, LinkLocal hdr.Addr6
}

// Contains reports whether a lies in the LAN prefix.
func (l *LAN6) Contains(a *hdr.Addr6) bool { return hdr.InPrefix6(a, &l.Prefix, l.Bits) }

// NewLAN6 returns the snapshot for prefix/bits: the router takes the
// prefix's ::1 and the EUI-64 link-local address of mac.
func NewLAN6(prefix hdr.Addr6, bits int, mac [6]byte) (*LAN6, error) {
	if bits < 1 || bits > 64 {
		return nil, errors.New("dataplane: the IPv6 LAN prefix must be /1 to /64")
	}
	if prefix == (hdr.Addr6{}) || hdr.IsMulticast6(&prefix) || hdr.IsLinkLocal6(&prefix) {
		return nil, errors.New("dataplane: the IPv6 LAN prefix must be a global unicast prefix")
	}
	l := &LAN6{Bits: bits, LinkLocal: hdr.LinkLocalEUI64(mac)}
	for i := range prefix {
		keep := min(max(bits-8*i, 0), 8)
		l.Prefix[i] = prefix[i] & byte(0xff<<(8-keep))
	}
	l.Router = l.Prefix
	l.Router[15] |= 1
	return l, nil
}

// SetLAN6 publishes the LAN's IPv6 configuration (nil: IPv6 is not
// forwarded). Workers pick it up at their next step.
func (e *Engine) SetLAN6(l *LAN6) { e.lan6.Store(l) }

// LAN6Owner returns the worker owning the flow of the uplink IPv6 packet
// ip (its firewall state lives there; a packet RSS gives another worker
// is handed over).
func (e *Engine) LAN6Owner(ip []byte) int {
	if !hdr.IPv6(ip).IsValid() {
		return 0
	}
	return flowOwner6(hdr.IPv6(ip), true, e.cfg.Workers)
}

// LAN6 returns the current IPv6 configuration (nil when off).
func (e *Engine) LAN6() *LAN6 { return e.lan6.Load() }

// fromLAN6 forwards an Ethernet+IPv6 frame addressed to the router's MAC
// upstream, or hands it to the control plane when it is for the router
// (ND, its own addresses, link-local or multicast destinations).
func (w *Worker) fromLAN6(f *nic.Frame) {
	l6 := w.lan6
	if l6 == nil {
		w.toException(f, FromLAN) // the host stack's, if anyone's
		return
	}
	ip := hdr.IPv6(f.Data()[hdr.EthernetLen:])
	if !ip.IsValid() {
		w.drop(f, DropBadIPv6)
		return
	}
	f.Truncate(hdr.EthernetLen + ip.TotalLen())
	ip = ip[:ip.TotalLen()]
	dst := (*hdr.Addr6)(ip[24:40])
	if hdr.IsMulticast6(dst) || hdr.IsLinkLocal6(dst) || *dst == l6.Router || l6.Contains(dst) {
		w.toException(f, FromLAN)
		return
	}
	src := (*hdr.Addr6)(ip[8:24])
	if !l6.Contains(src) || *src == l6.Router {
		w.drop(f, DropMartian)
		return
	}
	s := w.sess
	if s == nil || !s.IPv6 {
		w.drop(f, DropNoSession)
		return
	}
	mtu := sessionMTU(s)
	if ip.HopLimit() <= 1 {
		w.c.Drops[DropTTLExceeded]++
		w.icmp6ToLAN(f, hdr.ICMP6TimeExceeded, hdr.ICMP6CodeHopLimit, 0)
		return
	}
	if ip.TotalLen() > mtu {
		w.c.Drops[DropTooBig]++
		w.icmp6ToLAN(f, hdr.ICMP6PacketTooBig, 0, uint32(mtu))
		return
	}
	// The flow's owner keeps its firewall state: hand the packet over
	// once if that is another worker.
	if !w.cfg.NoFirewall6 {
		if o := flowOwner6(ip, true, w.cfg.Workers); o != w.id && f.Aux&auxRedirected == 0 {
			w.redirect(f, o, false)
			return
		}
	}
	// One hash of the flow serves the firewall and the shaper.
	p := fw6Flow(ip, true, false)
	h := w.fw6.hash(&p.key)
	if !w.cfg.NoFirewall6 {
		w.fw6.touchOut(&p, h, w.now)
	}
	w.forwardIP6(ip, mtu)
	f.Pull(hdr.EthernetLen)
	w.c.IPv6Up++
	w.upstream(f, h, host6(src))
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
	if hdr.IsMulticast6(dst) || hdr.IsLinkLocal6(dst) || l6 != nil && *dst == l6.Router {
		w.toException(f, FromWANIP) // DHCPv6, the ISP's RAs, echo to the router
		return
	}
	if l6 == nil {
		w.drop(f, DropUnsupported)
		return
	}
	// Only the LAN prefix is routed to the LAN; the rest of a delegated
	// prefix has nowhere to go (and must not loop back upstream).
	if !l6.Contains(dst) {
		w.drop(f, DropNotForUs)
		return
	}
	// No packet from the session may claim a source that cannot be there
	// (RFC 4291: multicast, unspecified, loopback, link-local; RFC 6092
	// 3.1: the LAN's own prefix).
	if src := (*hdr.Addr6)(ip[8:24]); hdr.IsMulticast6(src) || hdr.IsLinkLocal6(src) || l6.Contains(src) ||
		binary.BigEndian.Uint64(src[:8]) == 0 && binary.BigEndian.Uint64(src[8:]) <= 1 {
		w.drop(f, DropMartian)
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
	mac, ok := w.neigh6.Lookup(dst)
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
	if w.down != nil {
		w.down.EnqueueAt(f, h, host6(dst), w.now)
		return
	}
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// sessionMTU is the session's PPP MTU (1492 when unknown).
func sessionMTU(s *pppoe.Session) int {
	if s == nil || s.MTU <= 0 {
		return 1492
	}
	return s.MTU
}

// forwardIP6 is what every forwarded IPv6 packet gets: the hop-limit
// decrement and, for a TCP SYN right behind the fixed header, MSS
// clamping to the session MTU.
func (w *Worker) forwardIP6(ip hdr.IPv6, mtu int) {
	ip.DecHopLimit()
	if w.cfg.NoMSSClamp || ip.NextHeader() != hdr.ProtoTCP {
		return
	}
	if t := hdr.TCP(ip[hdr.IPv6Len:]); t.IsValid() && t.ClampMSS(uint16(mtu-hdr.IPv6Len-hdr.TCPMinLen)) {
		w.c.Clamped++
	}
}

// icmp6ToLAN replaces the LAN frame f (Ethernet + IPv6) by an ICMPv6
// error to its sender, rate-limited.
func (w *Worker) icmp6ToLAN(f *nic.Frame, typ, code uint8, param uint32) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	srcMAC := [6]byte(f.Data()[6:12])
	f.Pull(hdr.EthernetLen)
	if !makeICMP6Error(f, &w.lan6.Router, typ, code, param) {
		w.pool.Put(f)
		return
	}
	w.errorBackToLAN(f, srcMAC, hdr.EtherTypeIPv6)
}

// icmp6ToWAN replaces the WAN packet f (IPv6 at the front) by an ICMPv6
// error to its sender over the session, rate-limited.
func (w *Worker) icmp6ToWAN(f *nic.Frame, typ, code uint8) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	if !makeICMP6Error(f, &w.lan6.Router, typ, code, 0) {
		w.pool.Put(f)
		return
	}
	w.c.ICMPSent++
	w.toWAN(f)
}

// icmp6Max is the most an ICMPv6 error may be: the minimum IPv6 MTU
// (RFC 4443 2.4 (c)).
const icmp6Max = hdr.ICMP6MinMTU

// makeICMP6Error turns the IPv6 packet at the front of f into an ICMPv6
// error about it, in place: a new IPv6 + ICMPv6 header goes into the
// headroom and the quoted packet is cut so the whole fits in 1280 bytes.
// param is the MTU of a packet-too-big (else 0). It returns false where
// RFC 4443 2.4 (e) forbids an error: about an ICMPv6 error or a
// redirect (behind extension headers too, and about a packet whose
// header chain cannot be followed), or from a source that is not a
// unicast address; or when the frame lacks headroom.
func makeICMP6Error(f *nic.Frame, src *hdr.Addr6, typ, code uint8, param uint32) bool {
	ip := hdr.IPv6(f.Data())
	to := ip.Src()
	if to == (hdr.Addr6{}) || hdr.IsMulticast6(&to) {
		return false
	}
	if d := ip.Dst(); hdr.IsMulticast6(&d) && typ != hdr.ICMP6PacketTooBig {
		return false
	}
	// Behind its extension headers: an error or redirect hides there as
	// well as right behind the fixed header, and a chain that cannot be
	// followed gets no answer.
	c := walk6(ip)
	if !c.ok {
		return false
	}
	if c.proto == hdr.ProtoICMP6 {
		if c.off >= len(ip) {
			return false
		}
		if t := ip[c.off]; t < 128 || t == 137 { // errors, and redirects
			return false
		}
	}
	const head = hdr.IPv6Len + hdr.ICMP6ErrorHeaderBytes
	b := f.Push(head)
	if b == nil {
		return false
	}
	if f.Len > icmp6Max {
		f.Truncate(icmp6Max)
	}
	msg := f.Data()[hdr.IPv6Len:]
	hdr.IPv6(b).SetHeader(hdr.ProtoICMP6, 64, len(msg), src, &to)
	msg[0], msg[1] = typ, code
	binary.BigEndian.PutUint32(msg[4:], param)
	hdr.ICMP6Checksum(msg, src, &to)
	return true
}

// host6 is a LAN host's key for the shaper's per-host fairness: its
// interface identifier folded to 32 bits.
func host6(a *hdr.Addr6) uint32 {
	return binary.BigEndian.Uint32(a[8:]) ^ binary.BigEndian.Uint32(a[12:])
}

// steer6 picks the worker for a PPPoE frame carrying IPv6 (ip is the
// offset of its IPv6 header): the flow's owner (flowOwner6), which also
// handles its uplink packets.
func steer6(b []byte, ip, workers int) int {
	if workers == 1 || len(b) < ip+hdr.IPv6Len {
		return 0
	}
	return flowOwner6(hdr.IPv6(b[ip:]), false, workers)
}
