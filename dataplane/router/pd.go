package router

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/control"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// Lifetimes advertised for a delegated prefix are capped as RFC 9096
// recommends (ND_PREFERRED_LIMIT, ND_VALID_LIMIT), so that hosts drop a
// prefix the ISP renumbered away within an hour and a half.
const (
	pdPreferredLimit = 2700 * time.Second
	pdValidLimit     = 5400 * time.Second
)

// pd runs the DHCPv6 prefix-delegation client over the session: it asks
// when IPv6CP opens, renews on its own timers, and gives the LAN /64
// number Config.LAN6Subnet of what the ISP delegates. run drives the
// client (stats reads it too, under cliMu); the control plane hands it
// packets through input.
type pd struct {
	r     *Router
	cliMu sync.Mutex // held around every call into cli (onLease runs inside)
	cli   *dhcp6.Client
	in    chan []byte
	wake  chan struct{}

	mu     sync.Mutex
	up     bool   // the session carries IPv6 (latest)
	ups    uint64 // times it started to (a flap between two wakes is not lost)
	lanErr string
	buf    []byte
	// notLinkLocal counts DHCPv6 replies dropped for a source outside
	// fe80::/10 (RFC 8415 section 18.2.10 has servers and relays answer
	// from a link-local address: anything else did not come from the
	// link's peer).
	notLinkLocal uint64
}

// PDStats describe the delegation.
type PDStats struct {
	Delegated string  `json:"delegated,omitempty"` // prefix/len
	LAN       string  `json:"lan,omitempty"`       // the LAN's /64 of it
	ValidLeft float64 `json:"valid_left_s,omitempty"`
	Error     string  `json:"error,omitempty"`
	// NotLinkLocal counts replies dropped for a source outside fe80::/10.
	NotLinkLocal uint64            `json:"not_link_local"`
	Client       dhcp6.ClientStats `json:"client"`
}

func newPD(r *Router) *pd {
	p := &pd{r: r, in: make(chan []byte, 16), wake: make(chan struct{}, 1)}
	p.cli = dhcp6.NewClient(dhcp6.ClientConfig{MAC: r.wanMAC, PrefixLen: r.cfg.PDHint, Send: p.send, OnLease: p.onLease,
		Logf: func(format string, args ...any) { r.logf("pppfwd: "+format, args...) }})
	return p
}

// input takes an IPv6 packet for the router from the session (the
// control plane's WAN6 hook, on its slow-path pool): DHCPv6 to the client
// port from a link-local source is queued for the client, from any other
// source dropped and counted; anything else is left.
func (p *pd) input(ip []byte) {
	src, _, sport, dport, payload, ok := dhcp6.DecodeUDP6(ip)
	if !ok || sport != dhcp6.ServerPort || dport != dhcp6.ClientPort {
		return
	}
	if src[0] != 0xfe || src[1]&0xc0 != 0x80 {
		p.mu.Lock()
		p.notLinkLocal++
		p.mu.Unlock()
		return
	}
	p.r.traceDHCP6("rcvd", payload)
	select {
	case p.in <- append([]byte(nil), payload...):
	default: // a flood: the client's retransmissions recover
	}
}

// session records whether the session carries IPv6 (publish calls it).
func (p *pd) session(up bool) {
	p.mu.Lock()
	if up && !p.up {
		p.ups++
	}
	p.up = up
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// send frames a DHCPv6 message from the session's link-local address to
// All_DHCP_Relay_Agents_and_Servers and sends it (lost while the session
// is down: the client retransmits).
func (p *pd) send(msg []byte) {
	s := p.r.e.Session()
	if s == nil || !s.IPv6 {
		return
	}
	src := control.WANLinkLocal(s.LocalIfID)
	p.buf = dhcp6.EncodeUDP6(p.buf[:0], &src, &dhcp6.AllDHCPRelayAgentsAndServers, 1, dhcp6.ClientPort, dhcp6.ServerPort, msg)
	p.r.traceDHCP6("sent", msg)
	if err := p.r.ctl.SendWAN6(p.buf); err != nil {
		p.r.logf("pppfwd: dhcpv6: %v", err)
	}
}

// onLease publishes the LAN prefix a lease gives (or withdraws it).
func (p *pd) onLease(l dhcp6.Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lanErr = ""
	if l.Valid <= 0 {
		p.r.logf("pppfwd: dhcpv6: delegated prefix lost; IPv6 off on the LAN")
		p.r.e.SetLAN6(nil)
		p.r.ctl.SetRA(control.RAConfig{DNS: p.r.cfg.dns6()}) // its DNS servers go with it
		p.r.hooks.publish6(nil)
		return
	}
	lan, err := lanSubnet(l.Prefix, l.Bits, p.r.cfg.LAN6Subnet)
	var l6 *dataplane.LAN6
	if err == nil {
		l6, err = dataplane.NewLAN6(lan, 64, p.r.lanMAC)
	}
	if err != nil {
		p.lanErr = err.Error()
		p.r.logf("pppfwd: dhcpv6: %s/%d: %v", addr6String(l.Prefix), l.Bits, err)
		p.r.e.SetLAN6(nil)
		p.r.hooks.publish6(nil)
		return
	}
	p.r.logf("pppfwd: dhcpv6: delegated %s/%d, LAN %s/64", addr6String(l.Prefix), l.Bits, addr6String(lan))
	dns := append(p.r.cfg.dns6(), l.DNS...)
	p.r.ctl.SetRA(control.RAConfig{Valid: min(l.Valid, pdValidLimit), Preferred: min(l.Preferred, pdPreferredLimit), DNS: dns})
	p.r.e.SetLAN6(l6)
	p.r.hooks.publish6(lan6Hook(l6, netip.PrefixFrom(netip.AddrFrom16(l.Prefix), l.Bits).String(), dns))
}

// lanSubnet returns /64 number n of prefix/bits.
func lanSubnet(prefix hdr.Addr6, bits, n int) (hdr.Addr6, error) {
	if bits > 64 {
		return hdr.Addr6{}, errors.New("a delegated prefix longer than /64 leaves no /64 for the LAN")
	}
	if n >= 1<<(64-bits) {
		return hdr.Addr6{}, errors.New("lan.ipv6_subnet does not fit the delegated prefix")
	}
	hi := binary.BigEndian.Uint64(prefix[:8]) | uint64(n)
	var a hdr.Addr6
	binary.BigEndian.PutUint64(a[:8], hi)
	return a, nil
}

// run drives the client until ctx is done. The lease is not released at
// shutdown: ISPs hand the same prefix back to the same DUID, and hosts
// keep their addresses across a restart.
func (p *pd) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var seen uint64
	for {
		p.mu.Lock()
		up, ups := p.up, p.ups
		p.mu.Unlock()
		now := time.Now()
		p.cliMu.Lock()
		if up && ups != seen {
			p.cli.Start(now) // a new session: ask (again), hinting a lease held
		}
		seen = ups
		if next := p.cli.Next(); !next.IsZero() && !now.Before(next) {
			p.cli.Tick(now)
		}
		wait := time.Hour
		if next := p.cli.Next(); !next.IsZero() {
			wait = max(time.Until(next), time.Millisecond)
		}
		p.cliMu.Unlock()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case msg := <-p.in:
			p.cliMu.Lock()
			p.cli.Input(msg, time.Now())
			p.cliMu.Unlock()
		case <-p.wake:
		case <-t.C:
		}
	}
}

// stats returns the delegation's figures.
func (p *pd) stats() *PDStats {
	p.cliMu.Lock()
	cs := p.cli.Stats()
	l, have := p.cli.Lease() // renewed in place: onLease sees only changes
	p.cliMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &PDStats{Client: cs, Error: p.lanErr, NotLinkLocal: p.notLinkLocal}
	if have {
		s.Delegated = netip.PrefixFrom(netip.AddrFrom16(l.Prefix), l.Bits).String()
		s.ValidLeft = time.Until(l.Obtained.Add(l.Valid)).Seconds()
		if l6 := p.r.e.LAN6(); l6 != nil {
			s.LAN = netip.PrefixFrom(netip.AddrFrom16(l6.Prefix), l6.Bits).String()
		}
	}
	return s
}

func addr6String(a hdr.Addr6) string { return netip.AddrFrom16(a).String() }

// lan6Hook describes the LAN's IPv6 prefix for lan.ipv6_script.
func lan6Hook(l6 *dataplane.LAN6, delegated string, dns []hdr.Addr6) *lan6Event {
	ev := &lan6Event{prefix: netip.PrefixFrom(netip.AddrFrom16(l6.Prefix), l6.Bits).String(),
		router: addr6String(l6.Router), delegated: delegated}
	for _, a := range dns {
		ev.dns = append(ev.dns, addr6String(a))
	}
	return ev
}

// dns6 returns lan.ipv6_dns as addresses.
func (c *Config) dns6() []hdr.Addr6 {
	out := make([]hdr.Addr6, 0, len(c.LAN6DNS))
	for _, a := range c.LAN6DNS {
		out = append(out, a.As16())
	}
	return out
}
