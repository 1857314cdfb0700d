// The uplink path: a frame from the LAN to the session, in the order it
// meets each stage (IPv4 and IPv6 side by side): checks, NAT or the IPv6
// firewall, TTL and MSS clamping, the uplink shaper, fragmenting for the
// PPPoE MTU, encapsulation and the WAN TX queue.

package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// fromLAN handles a frame received on the LAN (Ethernet at the front).
func (w *Worker) fromLAN(f *nic.Frame) {
	w.enter(StageParse)
	if f.Rx != 0 && !w.finishCsum(f) { // a checksum left unfinished (csum.go)
		return
	}
	b := f.Data()
	if len(b) < hdr.EthernetLen {
		w.drop(f, DropBadEthernet)
		return
	}
	eth := hdr.Ethernet(b)
	if b[0]&1 != 0 { // broadcast / multicast: ARP, DHCP, ND... for the host
		w.lanException(f)
		return
	}
	if [6]byte(eth.Dst()) != w.cfg.RouterMAC {
		w.drop(f, DropNotOurMAC)
		return
	}
	switch eth.Type() {
	case hdr.EtherTypeIPv4:
	case hdr.EtherTypeIPv6:
		w.fromLAN6(f)
		return
	case hdr.EtherTypeARP:
		w.lanException(f)
		return
	default:
		w.drop(f, DropUnsupported)
		return
	}
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	if r, ok := checkIPv4(ip); !ok {
		w.drop(f, r)
		return
	}
	f.Truncate(hdr.EthernetLen + ip.TotalLen()) // strip Ethernet padding
	ip = ip[:ip.TotalLen()]
	dst, src := ip.Dst(), ip.Src()
	if dst == w.cfg.RouterAddr {
		w.lanException(f)
		return
	}
	// A redirected hairpin may already carry the public source address.
	if !w.lanSource(f, src) && f.Flags&flagRedirected == 0 {
		w.drop(f, DropMartian)
		return
	}
	if dst&w.lanMask == w.cfg.LANNet || dst>>28 == 0xe || dst == 0xffffffff {
		w.lanException(f) // same-subnet or multicast: the host stack decides
		return
	}
	later := laterFragment(ip)
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	mtu := sessionMTU(s)
	// To the public address: a hairpin or the router itself. Neither
	// crosses the session, so neither is checked against its MTU, and the
	// router's own traffic is received whatever its TTL (RFC 1812 5.3.1).
	toPublic := dst == w.pubAddr
	if !toPublic {
		if ip.TTL() <= 1 {
			w.c.Drops[DropTTLExceeded]++
			w.icmpToLAN(f, hdr.ICMPTimeExceeded, hdr.ICMPCodeTTLExceeded, 0)
			return
		}
		if ip.TotalLen() > mtu && ip.DF() {
			w.c.Drops[DropTooBig]++
			w.icmpToLAN(f, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded, uint16(mtu))
			return
		}
	}
	flow := flowHash(ip)
	if later {
		// No ports here: the public source address is all it needs (a
		// hairpin's would need state, and is dropped).
		if toPublic || overlapsTCPHeader(ip) {
			w.drop(f, DropFragment)
			return
		}
		ip.SetSrc(w.pubAddr)
		w.forwardIP(ip)
		f.Pull(hdr.EthernetLen)
		if ip.TotalLen() > mtu {
			w.fragment(f, mtu, flow, src)
			return
		}
		w.upstream(f, flow, src)
		return
	}
	allocs := w.natBegin()
	v := w.nat.Outbound(ip, w.now)
	w.natDone(allocs)
	switch v {
	case nat.Pass:
	case nat.Hairpin:
		if ip.TTL() <= 1 { // already translated: no ICMP quoting it
			w.drop(f, DropTTLExceeded)
			return
		}
		ip.DecTTL()
		w.toLAN(f, ip.Dst(), src)
		return
	case nat.Reject:
		w.c.Drops[DropNATReject]++
		w.icmpToLAN(f, hdr.ICMPDestUnreach, hdr.ICMPCodeAdminProhib, 0)
		return
	case nat.Redirect:
		// A frame is handed over at most twice: to the worker owning its
		// LAN endpoint, and for a hairpin (now from the public address)
		// on to the worker owning the external port it is sent to.
		if f.Flags&flagRedirected2 != 0 || (f.Flags&flagRedirected != 0 && !toPublic) {
			w.drop(f, DropNAT)
			return
		}
		w.redirect(f, w.nat.RedirectTarget(), false)
		return
	case nat.Local:
		w.lanException(f)
		return
	default:
		w.drop(f, DropNAT)
		return
	}
	w.forwardIP(ip)
	f.Pull(hdr.EthernetLen)
	if ip.TotalLen() > mtu { // DF clear (checked above): fragment
		w.fragment(f, mtu, flow, src)
		return
	}
	w.upstream(f, flow, src)
}

// fromLAN6 forwards an Ethernet+IPv6 frame addressed to the router's MAC
// upstream, or hands it to the control plane when it is for the router
// (ND, its own addresses, link-local or multicast destinations).
func (w *Worker) fromLAN6(f *nic.Frame) {
	l6 := w.lan6
	if l6 == nil {
		w.lanException(f) // the host stack's, if anyone's
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
		w.lanException(f)
		return
	}
	src := (*hdr.Addr6)(ip[8:24])
	if f.Flags&flagFromHost == 0 && (!l6.Contains(src) || *src == l6.Router) || f.Flags&flagFromHost != 0 && *src != l6.Router {
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
		if o := flowOwner6(ip, true, w.cfg.Workers); o != w.id && f.Flags&flagRedirected == 0 {
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

// checkIPv4 validates an IPv4 header for forwarding: lengths, no
// options (not handled on the fast path), header checksum.
func checkIPv4(ip hdr.IPv4) (Reason, bool) {
	switch {
	case !ip.IsValid():
		return DropBadIPv4, false
	case ip.HeaderLen() != hdr.IPv4MinLen:
		return DropIPOptions, false
	case !ip.HeaderChecksumOK():
		return DropBadChecksum, false
	}
	return 0, true
}

// forwardIP does what every forwarded packet gets after NAT: TTL
// decrement and TCP MSS clamping to the session MTU.
func (w *Worker) forwardIP(ip hdr.IPv4) {
	ip.DecTTL()
	if !w.cfg.NoMSSClamp && ip.Protocol() == hdr.ProtoTCP && !laterFragment(ip) {
		if t := hdr.TCP(ip[hdr.IPv4MinLen:]); t.IsValid() && t.ClampMSS(w.mss) {
			w.c.Clamped++
		}
	}
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

// flowHash hashes the 5-tuple of a valid IPv4 packet for the shaper
// (addresses and protocol only for a fragment: every fragment of a
// datagram lands in the same queue).
func flowHash(ip hdr.IPv4) uint32 {
	h := ip.Src()*0x9e3779b1 ^ ip.Dst()*0x85ebca77 ^ uint32(ip.Protocol())
	if p := ip.Protocol(); (p == hdr.ProtoTCP || p == hdr.ProtoUDP) && len(ip) >= hdr.IPv4MinLen+4 && !ip.IsFragment() {
		h ^= binary.BigEndian.Uint32(ip[hdr.IPv4MinLen:]) * 0xc2b2ae3d
	}
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	return h
}

// host6 is a LAN host's key for the shaper's per-host fairness: its
// interface identifier folded to 32 bits.
func host6(a *hdr.Addr6) uint32 {
	return binary.BigEndian.Uint32(a[8:]) ^ binary.BigEndian.Uint32(a[12:])
}

// upstream hands an IPv4 packet bound for the session to the shaper, or
// straight to the WAN when the uplink is not shaped.
func (w *Worker) upstream(f *nic.Frame, flow, host uint32) {
	w.c.BytesUp += uint64(f.Len)
	if w.up != nil {
		w.enter(StageShaperEnq)
		w.up.EnqueueAt(f, flow, host, w.now)
		return
	}
	w.toWAN(f)
}

// fragment splits the IPv4 packet in f (DF clear, no options; it may be
// a fragment itself) into fragments that fit mtu (RFC 791), the first in
// f and the rest in frames from the pool, and sends them upstream in
// order.
func (w *Worker) fragment(f *nic.Frame, mtu int, flow, host uint32) {
	ip := hdr.IPv4(f.Data())
	payload := ip.Payload()
	base, more := ip.FragOffset(), ip.MoreFragments()
	chunk := (mtu - hdr.IPv4MinLen) &^ 7
	if chunk <= 0 {
		w.drop(f, DropTooBig)
		return
	}
	// Build the later fragments first: they copy from f before f is cut.
	if (len(payload)+chunk-1)/chunk > maxFragments+1 {
		w.drop(f, DropTooBig) // an MTU this small is not worth fragmenting for
		return
	}
	var rest [maxFragments]*nic.Frame
	n := 0
	for off := chunk; off < len(payload); off += chunk {
		g := w.pool.Get()
		if g == nil || n == len(rest) {
			if g != nil {
				w.pool.Put(g)
			}
			w.pool.PutN(rest[:n])
			w.drop(f, DropNoBuffer)
			return
		}
		end := min(off+chunk, len(payload))
		b := g.Extend(hdr.IPv4MinLen + end - off)
		copy(b, ip[:hdr.IPv4MinLen])
		copy(b[hdr.IPv4MinLen:], payload[off:end])
		setFragment(hdr.IPv4(b), base+off, end < len(payload) || more)
		rest[n] = g
		n++
	}
	f.Truncate(hdr.IPv4MinLen + chunk)
	setFragment(hdr.IPv4(f.Data()), base, true)
	w.c.Fragments += uint64(n + 1)
	w.upstream(f, flow, host)
	for _, g := range rest[:n] {
		w.upstream(g, flow, host)
	}
}

// maxFragments bounds the fragments of one packet (a 1920-byte frame over
// an MTU of 576 makes 4).
const maxFragments = 8

// setFragment writes a fragment's length, offset and MF flag and its
// header checksum.
func setFragment(ip hdr.IPv4, off int, more bool) {
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	v := uint16(off / 8)
	if more {
		v |= 0x2000
	}
	binary.BigEndian.PutUint16(ip[6:], v)
	ip.ComputeChecksum()
}

// toWAN encapsulates an IPv4 packet for the session and queues it.
func (w *Worker) toWAN(f *nic.Frame) {
	w.enter(StageEncap)
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	if !s.Encap(f) {
		w.drop(f, DropHeadroom)
		return
	}
	w.wanQ = append(w.wanQ, f)
	if len(w.wanQ) == cap(w.wanQ) {
		w.flushWAN()
	}
}

// sessionMTU is the session's PPP MTU (1492 when unknown).
func sessionMTU(s *hdr.Session) int {
	if s == nil || s.MTU <= 0 {
		return 1492
	}
	return s.MTU
}
