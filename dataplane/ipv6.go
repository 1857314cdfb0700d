package dataplane

import (
	"errors"

	"github.com/pppfwd/pppfwd/hdr"
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
// The control plane is woken: it advertises a new prefix at once.
func (e *Engine) SetLAN6(l *LAN6) {
	e.lan6.Store(l)
	e.ctlWaker.wake()
}

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
