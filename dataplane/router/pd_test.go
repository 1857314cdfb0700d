package router

import (
	"context"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/control"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// pdRig runs the DHCPv6-PD runner over a one-worker engine on memports;
// the test plays the ISP's DHCPv6 server on the WAN port.
type pdRig struct {
	r    *Router
	p    *pd
	wan  *memport.Port
	srv  *dhcp6.Server
	sess *hdr.Session
	mu   sync.Mutex
	seen []dhcp6.MsgType
	drop bool // the server does not answer
}

func newPDRig(t *testing.T, valid time.Duration, ipv6Script string) *pdRig {
	lan, wan := memport.New("lan", 1, 256), memport.New("wan", 1, 256)
	lanMAC, wanMAC := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	e, err := dataplane.New(dataplane.Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: lanMAC,
		RouterAddr: 0xc0a80101, LANNet: 0xc0a80100, LANBits: 24})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{PD: true, LAN6Subnet: 3, IPv6Script: ipv6Script, LANInterface: "lan0"}
	pr := &pdRig{wan: wan, r: &Router{cfg: cfg, e: e, lanMAC: lanMAC, wanMAC: wanMAC, logf: t.Logf}}
	pr.r.hooks = newHooks(cfg, t.Logf)
	pr.p = newPD(pr.r)
	pr.r.ctl = control.New(e, control.Config{WANMAC: wanMAC, WAN6: pr.p.input})
	pr.srv, err = dhcp6.NewServer(dhcp6.ServerConfig{MAC: [6]byte{2, 0xac, 0, 0, 0, 1},
		Pool: netip.MustParseAddr("2001:db8:100::").As16(), PoolBits: 40, Delegate: 56, Valid: valid, Preferred: valid / 2})
	if err != nil {
		t.Fatal(err)
	}
	pr.sess = &hdr.Session{ID: 7, LocalMAC: wanMAC, PeerMAC: [6]byte{2, 0, 0, 0, 0, 3}, LocalAddr: 0x0a000002,
		PeerAddr: 0x0a000001, MTU: 1492, IPv6: true, LocalIfID: [8]byte{7: 9}, PeerIfID: [8]byte{7: 1}}
	ctx, cancel := context.WithCancel(context.Background())
	e.Start()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = pr.r.ctl.Run(ctx) }()
	go func() { defer wg.Done(); pr.p.run(ctx) }()
	go func() { defer wg.Done(); pr.serve(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait(); _ = e.Stop(); pr.r.hooks.close() })
	return pr
}

// serve answers the client's messages from the WAN port with the server,
// as the ISP would over the session.
func (pr *pdRig) serve(ctx context.Context) {
	for ctx.Err() == nil {
		pr.wan.Drain(0, func(b []byte) {
			if len(b) < 22 || be16(b[20:]) != hdr.PPPIPv6 {
				return
			}
			src, _, sport, dport, msg, ok := dhcp6.DecodeUDP6(b[22:])
			m, err := dhcp6.Parse(msg)
			if !ok || err != nil || sport != dhcp6.ClientPort || dport != dhcp6.ServerPort {
				return
			}
			pr.mu.Lock()
			pr.seen = append(pr.seen, m.Type)
			drop := pr.drop
			pr.mu.Unlock()
			if drop {
				return
			}
			if reply := pr.srv.Handle(msg, time.Now()); reply != nil {
				ll := netip.MustParseAddr("fe80::1").As16()
				pr.p.input(dhcp6.EncodeUDP6(nil, &ll, &src, 64, dhcp6.ServerPort, dhcp6.ClientPort, reply))
			}
		})
		time.Sleep(time.Millisecond)
	}
}

func (pr *pdRig) sent(typ dhcp6.MsgType) int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	n := 0
	for _, s := range pr.seen {
		if s == typ {
			n++
		}
	}
	return n
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestPDSessionCycle: IPv6CP opening starts a Solicit; the lease gives the
// LAN /64 number lan.ipv6_subnet; the session flapping down and up, even
// between two turns of the runner, solicits again; stats follow the
// client's lease.
func TestPDSessionCycle(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events")
	script := filepath.Join(t.TempDir(), "hook6")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$1 $2 $PPPFWD_DELEGATED $PPPFWD_LAN6_ADDRESS\" >> "+log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pr := newPDRig(t, time.Hour, script)
	pr.r.e.SetSession(pr.sess)
	pr.p.session(true)
	waitUntil(t, "a LAN prefix", 5*time.Second, func() bool { return pr.r.e.LAN6() != nil })
	if l6 := pr.r.e.LAN6(); netip.AddrFrom16(l6.Prefix).String() != "2001:db8:100:3::" || l6.Bits != 64 {
		t.Fatalf("LAN6 %+v, want 2001:db8:100:3::/64", l6)
	}
	// lan.ipv6_script heard of it.
	waitUntil(t, "lan.ipv6_script", 5*time.Second, func() bool {
		b, _ := os.ReadFile(log)
		return string(b) == "ipv6-up 2001:db8:100:3::/64 2001:db8:100::/56 2001:db8:100:3::1\n"
	})
	st := pr.p.stats()
	if st.Delegated != "2001:db8:100::/56" || st.LAN != "2001:db8:100:3::/64" || st.ValidLeft < 3500 || st.Client.Leases != 1 {
		t.Fatalf("stats %+v", st)
	}
	solicits := pr.sent(dhcp6.MsgSolicit)
	// Down and up again before the runner looks: still a new Solicit.
	pr.p.session(false)
	pr.p.session(true)
	waitUntil(t, "a Solicit for the new session", 5*time.Second, func() bool { return pr.sent(dhcp6.MsgSolicit) > solicits })
	waitUntil(t, "the lease again", 5*time.Second, func() bool { return pr.p.stats().Client.Leases == 2 })
	if l6 := pr.r.e.LAN6(); l6 == nil || netip.AddrFrom16(l6.Prefix).String() != "2001:db8:100:3::" {
		t.Fatalf("LAN6 after the flap %+v (the same prefix comes back)", l6)
	}
}

// TestPDLeaseLost: when nobody renews the lease it runs out, and the LAN
// loses its IPv6 prefix (the router then advertises it deprecated).
func TestPDLeaseLost(t *testing.T) {
	pr := newPDRig(t, 4*time.Second, "")
	pr.r.e.SetSession(pr.sess)
	pr.p.session(true)
	waitUntil(t, "a LAN prefix", 5*time.Second, func() bool { return pr.r.e.LAN6() != nil })
	pr.mu.Lock()
	pr.drop = true
	pr.mu.Unlock()
	waitUntil(t, "the lease to run out", 10*time.Second, func() bool { return pr.r.e.LAN6() == nil })
	if pr.sent(dhcp6.MsgRenew) == 0 || pr.sent(dhcp6.MsgRebind) == 0 {
		t.Fatalf("no Renew or Rebind before the lease ran out: %v", pr.seen)
	}
	if st := pr.p.stats(); st.Delegated != "" || st.Client.Expirations != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestPDRepliesOnlyFromLinkLocal: a DHCPv6 reply from a source outside
// fe80::/10 (not the session's peer: forged or routed in) is dropped and
// counted; one from a link-local source is queued for the client.
func TestPDRepliesOnlyFromLinkLocal(t *testing.T) {
	p := newPD(&Router{cfg: &Config{PD: true}, logf: t.Logf})
	dst := netip.MustParseAddr("fe80::9").As16()
	msg := []byte{byte(dhcp6.MsgReply), 1, 2, 3}
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"fe80::1", true},
		{"febf:ffff::1", true},
		{"fec0::1", false},
		{"2001:db8::1", false},
		{"::1", false},
		{"ff02::1:2", false},
		{"::", false},
	} {
		src := netip.MustParseAddr(tc.src).As16()
		before, dropped := len(p.in), p.stats().NotLinkLocal
		p.input(dhcp6.EncodeUDP6(nil, &src, &dst, 64, dhcp6.ServerPort, dhcp6.ClientPort, msg))
		if got := len(p.in) == before+1; got != tc.want {
			t.Errorf("from %s: queued %v, want %v", tc.src, got, tc.want)
		}
		if n := p.stats().NotLinkLocal; n != dropped+map[bool]uint64{false: 1}[tc.want] {
			t.Errorf("from %s: dropped counter %d (was %d)", tc.src, n, dropped)
		}
	}
}
