package vmlab

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/rawsock"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/pppoe/dhcp6"
)

// The real DHCPv6 server: Kea (Debian's kea-dhcp6-server) on pppd's ppp
// interface, its subnet bound to that interface (direct clients on it get
// the subnet whatever their link-local source), delegating a /56.
const (
	dhcp6Subnet      = "2001:db8:ffff::/64"
	dhcp6Preferred   = 20 * time.Second
	dhcp6Valid       = 40 * time.Second
	dhcp6T1, dhcp6T2 = 5 * time.Second, 8 * time.Second
	keaDir           = "/var/lib/kea"
	keaLeases        = keaDir + "/dhcp6.leases"
	keaLog           = "/var/log/kea-dhcp6.log"
	keaLinkLocal     = "fe80::547"
)

var (
	// Each pool holds a single /56, so the prefix the server hands out
	// is known.
	dhcp6PoolA = netip.MustParsePrefix("2001:db8:a00::/56")
	dhcp6PoolB = netip.MustParsePrefix("2001:db8:b00::/56")
	dhcp6PoolC = netip.MustParsePrefix("2001:db8:c00::/56")
	dhcp6DNS   = []netip.Addr{netip.MustParseAddr("2001:db8:53::1"), netip.MustParseAddr("2001:db8:53::2")}
)

// keaConf is kea-dhcp6's configuration serving ifname and delegating
// pool's one prefix, with rapid commit (RFC 8415 18.3.1) or not. Leases go
// to a CSV file that is only appended to (no lease file cleanup), and
// packets are logged (debug level 40 logs each one received).
func keaConf(ifname string, pool netip.Prefix, rapidCommit bool) string {
	var dns []string
	for _, a := range dhcp6DNS {
		dns = append(dns, a.String())
	}
	type obj = map[string]any
	conf := obj{"Dhcp6": obj{
		"interfaces-config":  obj{"interfaces": []string{ifname}, "re-detect": false, "service-sockets-require-all": false},
		"data-directory":     keaDir,
		"lease-database":     obj{"type": "memfile", "name": keaLeases, "lfc-interval": 0},
		"renew-timer":        int(dhcp6T1 / time.Second),
		"rebind-timer":       int(dhcp6T2 / time.Second),
		"preferred-lifetime": int(dhcp6Preferred / time.Second),
		"valid-lifetime":     int(dhcp6Valid / time.Second),
		"option-data":        []obj{{"name": "dns-servers", "data": strings.Join(dns, ", ")}},
		"subnet6": []obj{{
			"id": 1, "subnet": dhcp6Subnet, "interface": ifname, "rapid-commit": rapidCommit,
			"pd-pools": []obj{{"prefix": pool.Addr().String(), "prefix-len": pool.Bits(), "delegated-len": pool.Bits()}},
		}},
		"loggers": []obj{{"name": "kea-dhcp6", "severity": "DEBUG", "debuglevel": 40,
			"output_options": []obj{{"output": "stdout"}}}},
	}}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// pdDriver runs pppfwd's DHCPv6-PD client over the PPPoE client's session
// the way the router's pd does: it starts (solicits) whenever a session
// with IPv6 comes up, sends from the session's link-local address to
// All_DHCP_Relay_Agents_and_Servers (PPP protocol 0x0057 on a raw socket),
// accepts replies only from a link-local source, and runs the client's
// timers.
type pdDriver struct {
	t      *testing.T
	client *pppoe.Client
	data   *rawsock.Conn

	mu      sync.Mutex // held around every call into cli (its callbacks run inside)
	cli     *dhcp6.Client
	leases  []dhcp6.Lease // every OnLease
	froms   map[hdr.Addr6]int
	notLL   int // replies from outside fe80::/10
	starts  int
	sendErr error

	in   chan []byte
	stop func() error
}

func startPD(t *testing.T, client *pppoe.Client, data *rawsock.Conn) *pdDriver {
	d := &pdDriver{t: t, client: client, data: data, froms: map[hdr.Addr6]int{}, in: make(chan []byte, 16)}
	d.cli = dhcp6.NewClient(dhcp6.ClientConfig{
		MAC: data.HardwareAddr(), PrefixLen: 56, Send: d.send,
		OnLease: func(l dhcp6.Lease) {
			d.leases = append(d.leases, l)
			t.Logf("OnLease: %v dns %v", l, addrs(l.DNS))
		},
		Logf: t.Logf,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.read(ctx) }()
	go func() { defer wg.Done(); d.run(ctx) }()
	var once sync.Once
	d.stop = func() error {
		once.Do(func() { cancel(); wg.Wait() })
		return nil
	}
	t.Cleanup(func() { _ = d.stop() })
	return d
}

func linkLocal6(ifid [8]byte) hdr.Addr6 {
	a := hdr.Addr6{0: 0xfe, 1: 0x80}
	copy(a[8:], ifid[:])
	return a
}

// send frames msg over the current session (lost while there is none
// with IPv6: the client retransmits).
func (d *pdDriver) send(msg []byte) {
	s := d.client.Session()
	if s == nil || !s.IPv6 {
		return
	}
	src := linkLocal6(s.LocalIfID)
	pkt := dhcp6.EncodeUDP6(nil, &src, &dhcp6.AllDHCPRelayAgentsAndServers, 1, dhcp6.ClientPort, dhcp6.ServerPort, msg)
	f := nic.NewFrame()
	f.SetData(pkt)
	if !s.Encap(f) {
		d.sendErr = errors.New("encap: no headroom")
		return
	}
	if err := d.data.WriteFrame(f.Data()); err != nil && d.sendErr == nil {
		d.sendErr = err
	}
}

// read takes DHCPv6 server messages off the session.
func (d *pdDriver) read(ctx context.Context) {
	buf := make([]byte, 2048)
	f := nic.NewFrame()
	for ctx.Err() == nil {
		n, err := d.data.ReadFrame(buf, 100*time.Millisecond)
		if errors.Is(err, rawsock.ErrTimeout) {
			continue
		}
		if err != nil {
			d.t.Errorf("reading the session: %v", err)
			return
		}
		s := d.client.Session()
		if s == nil {
			continue
		}
		f.SetData(buf[:n])
		if s.Decap(f) != hdr.DecapIPv6 {
			continue
		}
		src, dst, sport, dport, payload, ok := dhcp6.DecodeUDP6(f.Data())
		if !ok || sport != dhcp6.ServerPort || dport != dhcp6.ClientPort {
			continue
		}
		d.mu.Lock()
		d.froms[src]++
		ll := src[0] == 0xfe && src[1]&0xc0 == 0x80
		if !ll {
			d.notLL++
		}
		d.mu.Unlock()
		if !ll || dst != linkLocal6(s.LocalIfID) {
			continue
		}
		select {
		case d.in <- append([]byte(nil), payload...):
		case <-ctx.Done():
		}
	}
}

// run drives the client: Start on each new IPv6 session, Input, Tick.
func (d *pdDriver) run(ctx context.Context) {
	var id uint16
	up := false
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s := d.client.Session()
		now := time.Now()
		d.mu.Lock()
		if s != nil && s.IPv6 && (!up || s.ID != id) {
			d.starts++
			d.cli.Start(now) // a new session: ask again, hinting a lease held
		}
		up = s != nil && s.IPv6
		if up {
			id = s.ID
		}
		if next := d.cli.Next(); !next.IsZero() && !now.Before(next) {
			d.cli.Tick(now)
		}
		wait := 100 * time.Millisecond // also how often the session is looked at
		if next := d.cli.Next(); !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		d.mu.Unlock()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case msg := <-d.in:
			d.mu.Lock()
			d.cli.Input(msg, time.Now())
			d.mu.Unlock()
		case <-t.C:
		}
	}
}

// lease returns the client's lease, its stats and every OnLease so far.
func (d *pdDriver) lease() (dhcp6.Lease, bool, dhcp6.ClientStats, []dhcp6.Lease) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.cli.Lease()
	return l, ok, d.cli.Stats(), append([]dhcp6.Lease(nil), d.leases...)
}

func addrs(as []hdr.Addr6) []netip.Addr {
	var out []netip.Addr
	for _, a := range as {
		out = append(out, netip.AddrFrom16(a))
	}
	return out
}

func prefixOf(l dhcp6.Lease) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom16(l.Prefix), l.Bits)
}

// TestIntegrationRealDHCPv6PD runs pppfwd's DHCPv6 prefix-delegation client
// (pppoe/dhcp6, driven as the router drives it) over a PPPoE session with
// IPv6CP to pppd in the VM, against Kea (Debian's kea-dhcp6-server) on the
// session's ppp interface:
//  1. a /56 delegated with the server's lifetimes, T1/T2 and DNS servers
//     (Solicit, Advertise, Request, Reply);
//  2. renewals at T1 that the server logs and appends to its lease file,
//     each extending the lease;
//  3. the server renumbering under the live session (restarted with
//     another pool, no leases, a new DUID): the Renews go unanswered, and
//     the client's Rebind at T2 brings the new prefix;
//  4. pppd killed and the session back, the server restarted with a third
//     pool and rapid commit: the client solicits again and ends up with
//     the new prefix instead of the old;
//  5. a Release the server takes when the client stops.
func TestIntegrationRealDHCPv6PD(t *testing.T) {
	requireLab(t, true)
	t0 := time.Now()
	ns, vm := newLab(t)
	t.Logf("boot took %v", time.Since(t0).Round(time.Millisecond))
	startCapture(t, ns, "vmtap0", func(r *PcapReport) {
		for _, p := range []string{"pppoed", "ipv6cp", "ipv6", "dhcpv6"} {
			if !r.Has(p) {
				t.Errorf("capture has no %s frame: %s", p, r)
			}
		}
	})
	if out, err := vm.Run("kea-dhcp6 -v"); err != nil {
		t.Fatalf("no kea-dhcp6 in the image: %v %s", err, out)
	} else {
		t.Logf("server: kea-dhcp6 %s", strings.TrimSpace(out))
	}

	secrets := fmt.Sprintf("%s * \"%s\" *\n", brasUser, brasPass)
	opts := strings.Join([]string{"require-chap", "+ipv6", "lcp-echo-interval 1", "lcp-echo-failure 10",
		"debug", "logfile /var/log/pppd.log", ""}, "\n")
	for _, f := range []struct {
		path, body string
		perm       os.FileMode
	}{
		{"/etc/ppp/chap-secrets", secrets, 0o600},
		{"/etc/ppp/pppoe-server-options", opts, 0o644},
		// pppd runs ipv6-up with the interface as $1 once IPv6CP is
		// open. Its link-local address has the peer's as IFA_ADDRESS
		// (fe80::local peer fe80::remote), which Kea takes for the
		// interface's own and fails to bind: a second link-local
		// address gives Kea one to listen and answer on.
		{"/etc/ppp/ipv6-up", "#!/bin/sh\nip -6 addr add " + keaLinkLocal + "/64 dev \"$1\" nodad\necho \"$1\" >/tmp/ppp6-up\n", 0o755},
	} {
		if err := vm.WriteFile(f.path, []byte(f.body), f.perm); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := vm.Run("rm -f /tmp/ppp6-up; pppoe-server -I eth0 -C vmlab-bras -L " + brasLocal +
		" -R " + ipString(brasPool[0]) + " -N 4 -O /etc/ppp/pppoe-server-options"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := vm.Run("tail -n 80 " + keaLog + "; tail -n 20 " + keaLeases + "; tail -n 30 /var/log/pppd.log; ip -6 addr")
			t.Logf("kea, leases, pppd:\n%s", out)
		}
		_, _ = vm.Run("killall kea-dhcp6 pppoe-server pppd 2>/dev/null; true")
	})

	conn := openRaw(t, ns, "vmtap0", 0x8863, 0x8864)
	data := openRaw(t, ns, "vmtap0", 0x8864)
	client := pppoe.NewClient(pppoe.ClientConfig{
		Username: brasUser, Password: brasPass, Auth: pppoe.AuthAny, IPv6: true,
		EchoInterval: time.Second, EchoFailures: 10,
		HoldoffDelay: 200 * time.Millisecond, MaxHoldoff: time.Second,
		Logf: t.Logf,
	}, conn, nil)
	stopClient := runUntilStopped(t, "client", client.Run)

	// waitIPv6 waits for a session other than old with IPv6CP open and for
	// pppd's ipv6-up, and returns the session and pppd's interface.
	waitIPv6 := func(old uint16) (*hdr.Session, string) {
		t.Helper()
		var s *hdr.Session
		if !waitFor(60*time.Second, func() bool {
			s = client.Session()
			return s != nil && s.IPv6 && s.ID != old
		}) {
			t.Fatalf("no IPv6 session after 60 s; status %+v", client.Status())
		}
		var ifname string
		if !waitFor(20*time.Second, func() bool {
			out, err := vm.Run("cat /tmp/ppp6-up")
			ifname = strings.TrimSpace(out)
			return err == nil && ifname != ""
		}) {
			t.Fatal("pppd did not run ipv6-up within 20 s")
		}
		return s, ifname
	}
	serverLog := func() string {
		out, _ := vm.Run("cat " + keaLog)
		return out
	}
	// startServer (re)starts kea-dhcp6 with conf, without leases and with
	// a new server DUID, and waits until it serves.
	startServer := func(conf string) {
		t.Helper()
		if err := vm.WriteFile("/etc/kea/kea-dhcp6.conf", []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := vm.Run("killall kea-dhcp6 2>/dev/null; sleep 0.2; mkdir -p " + keaDir + "; rm -f " + keaDir + "/* " + keaLog +
			"; KEA_LOCKFILE_DIR=none KEA_PIDFILE_DIR=/tmp kea-dhcp6 -c /etc/kea/kea-dhcp6.conf >" + keaLog + " 2>&1 &"); err != nil {
			t.Fatalf("starting kea-dhcp6: %v %s", err, out)
		}
		if !waitFor(20*time.Second, func() bool { return strings.Contains(serverLog(), "DHCP6_STARTED") }) {
			t.Fatalf("kea-dhcp6 did not start in 20 s:\n%s", serverLog())
		}
	}

	// 1. A delegation through Solicit, Advertise, Request, Reply.
	s, ifname := waitIPv6(0)
	t.Logf("session %#04x with IPv6CP, pppd's interface %s", s.ID, ifname)
	startServer(keaConf(ifname, dhcp6PoolA, false))
	pd := startPD(t, client, data)
	var l dhcp6.Lease
	var st dhcp6.ClientStats
	if !waitFor(20*time.Second, func() bool {
		var ok bool
		l, ok, st, _ = pd.lease()
		return ok
	}) {
		t.Fatalf("no prefix delegated in 20 s; client stats %+v\nserver log:\n%s", st, serverLog())
	}
	t.Logf("delegated %v dns %v", l, addrs(l.DNS))
	if got := prefixOf(l); got != dhcp6PoolA {
		t.Errorf("delegated %s, want %s (the server's only prefix)", got, dhcp6PoolA)
	}
	if l.Preferred != dhcp6Preferred || l.Valid != dhcp6Valid || l.T1 != dhcp6T1 || l.T2 != dhcp6T2 {
		t.Errorf("lease %v, want preferred %v valid %v T1 %v T2 %v", l, dhcp6Preferred, dhcp6Valid, dhcp6T1, dhcp6T2)
	}
	if dns := addrs(l.DNS); fmt.Sprint(dns) != fmt.Sprint(dhcp6DNS) {
		t.Errorf("DNS servers %v, want %v", dns, dhcp6DNS)
	}
	if st.Sent[dhcp6.MsgSolicit] == 0 || st.Sent[dhcp6.MsgRequest] == 0 || st.Leases != 1 {
		t.Errorf("client stats %+v, want a Solicit and a Request (no rapid commit), one lease", st)
	}
	// Kea logs the client by its DUID (DUID-LL of the WAN MAC) and the
	// prefix it advertised, then allocated.
	duid := keaDUID(pd.cli.DUID())
	first := serverLog()
	for _, want := range []string{
		"received buffer from " + netip.AddrFrom16(linkLocal6(s.LocalIfID)).String() + ":546 to ff02::1:2",
		"DHCP6_PD_LEASE_ADVERT duid=[" + duid + "]",
		"lease for prefix " + dhcp6PoolA.String() + " and iaid=1 will be advertised",
		"DHCP6_PD_LEASE_ALLOC duid=[" + duid + "]",
		"lease for prefix " + dhcp6PoolA.String() + " and iaid=1 has been allocated for 40 seconds",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("server log lacks %q:\n%s", want, first)
		}
	}
	pd.mu.Lock()
	if want := netip.MustParseAddr(keaLinkLocal).As16(); pd.froms[want] == 0 || len(pd.froms) != 1 || pd.notLL != 0 {
		t.Errorf("replies came from %v (%d not link-local), want only the server's %s", pd.froms, pd.notLL, keaLinkLocal)
	}
	pd.mu.Unlock()

	// 2. Renewals at T1 (5 s): the server logs each Renew and writes the
	// extended lease; the client's lease keeps its lifetimes and moves
	// its start.
	obtained := l.Obtained
	if !waitFor(3*dhcp6T1, func() bool {
		l, _, st, _ = pd.lease()
		return st.Renewals >= 2
	}) {
		t.Fatalf("%d renewals in %v; client stats %+v\nserver log:\n%s", st.Renewals, 3*dhcp6T1, st, serverLog())
	}
	if got := prefixOf(l); got != dhcp6PoolA || l.Preferred != dhcp6Preferred || l.Valid != dhcp6Valid ||
		l.T1 != dhcp6T1 || l.T2 != dhcp6T2 || !l.Obtained.After(obtained.Add(dhcp6T1)) {
		t.Errorf("after renewals: lease %v obtained %v after the first, want %s with the same lifetimes, renewed after T1",
			l, l.Obtained.Sub(obtained), dhcp6PoolA)
	}
	if st.Sent[dhcp6.MsgRebind] != 0 || st.Expirations != 0 {
		t.Errorf("client stats %+v: rebinds or expirations with the server answering every Renew", st)
	}
	renewLog := serverLog()
	if n := strings.Count(renewLog, "DHCP6_PD_LEASE_RENEW duid=["+duid+"]"); n < 2 ||
		!strings.Contains(renewLog, "lease for prefix "+dhcp6PoolA.String()+" and iaid=1 has been allocated\n") {
		t.Errorf("server logged %d renewals of %s, want >= 2:\n%s", n, dhcp6PoolA, renewLog)
	}
	// Kea appends each lease change to its lease file: the allocation
	// and every renewal, each expiring later than the one before.
	exp := keaExpiries(t, vm, dhcp6PoolA)
	t.Logf("lease file: %s expires at %v (Unix s)", dhcp6PoolA, exp)
	if len(exp) < 3 || exp[len(exp)-1]-exp[0] < int64(dhcp6T1/time.Second) {
		t.Errorf("lease file's expiry times for %s: %v, want the allocation's extended by the renewals", dhcp6PoolA, exp)
	}
	for i := 1; i < len(exp); i++ {
		if exp[i] < exp[i-1] {
			t.Errorf("lease file's expiry times for %s go back: %v", dhcp6PoolA, exp)
		}
	}

	// 3. The server renumbers under the live session: restarted with pool
	// C, no leases and a new DUID. The Renews go unanswered (the new
	// server drops them: they name the old one); at T2 the client rebinds
	// and takes C in place of A.
	before := st
	startServer(keaConf(ifname, dhcp6PoolC, false))
	if !waitFor(3*dhcp6T2, func() bool {
		var ok bool
		l, ok, st, _ = pd.lease()
		return ok && prefixOf(l) == dhcp6PoolC
	}) {
		t.Fatalf("no %s delegated %v after the server renumbered; lease %v; client stats %+v\nserver log:\n%s",
			dhcp6PoolC, 3*dhcp6T2, l, st, serverLog())
	}
	_, _, st, leases := pd.lease()
	t.Logf("after renumbering: %v; client stats %+v", l, st)
	// (The old server may have answered one more Renew before it stopped.)
	if st.Sent[dhcp6.MsgRebind] == before.Sent[dhcp6.MsgRebind] || st.Renewals <= before.Renewals ||
		st.Leases != before.Leases || st.Expirations != 0 {
		t.Errorf("client stats %+v (before %+v), want C by a Rebind, without the lease expiring", st, before)
	}
	if last := leases[len(leases)-1]; prefixOf(last) != dhcp6PoolC || last.Valid != dhcp6Valid {
		t.Errorf("last OnLease %v, want %s valid %v", last, dhcp6PoolC, dhcp6Valid)
	}
	if third := serverLog(); !strings.Contains(third, "lease for prefix "+dhcp6PoolC.String()+" and iaid=1 has been allocated") {
		t.Errorf("server log lacks the allocation of %s:\n%s", dhcp6PoolC, third)
	}

	// 4. pppd killed: the session comes back (a new ppp interface); the
	// server restarts with pool B, no leases, a new DUID and rapid commit.
	// The client solicits again and takes B in place of C.
	before = st
	if out, err := vm.Run("rm -f /tmp/ppp6-up; killall kea-dhcp6; kill -KILL $(pidof pppd)"); err != nil {
		t.Fatalf("killing pppd: %v %s", err, out)
	}
	s2, ifname := waitIPv6(s.ID)
	t.Logf("session %#04x with IPv6CP, pppd's interface %s", s2.ID, ifname)
	startServer(keaConf(ifname, dhcp6PoolB, true))
	// The client has been soliciting since the session came back, with
	// retransmissions doubling from 1 s: the next may be 16 s away.
	if !waitFor(40*time.Second, func() bool {
		var ok bool
		l, ok, st, _ = pd.lease()
		return ok && prefixOf(l) == dhcp6PoolB
	}) {
		t.Fatalf("no %s delegated 40 s after the server restarted; lease %v; client stats %+v\nserver log:\n%s",
			dhcp6PoolB, l, st, serverLog())
	}
	_, _, st, leases = pd.lease()
	t.Logf("after the reconnect: %v; client stats %+v", l, st)
	if st.Leases != before.Leases+1 || st.Sent[dhcp6.MsgSolicit] == before.Sent[dhcp6.MsgSolicit] ||
		st.Sent[dhcp6.MsgRequest] != before.Sent[dhcp6.MsgRequest] {
		t.Errorf("client stats %+v (before %+v), want one more lease, by Solicit with rapid commit (no Request)", st, before)
	}
	pd.mu.Lock()
	if pd.starts != 2 {
		t.Errorf("the client started %d times, want 2 (one per session)", pd.starts)
	}
	pd.mu.Unlock()
	if last := leases[len(leases)-1]; prefixOf(last) != dhcp6PoolB || last.Valid != dhcp6Valid {
		t.Errorf("last OnLease %v, want %s valid %v", last, dhcp6PoolB, dhcp6Valid)
	}
	for i, ol := range leases {
		if prefixOf(ol) == dhcp6PoolB {
			for _, later := range leases[i:] {
				if prefixOf(later) != dhcp6PoolB {
					t.Errorf("OnLease reported %v after taking %s", later, dhcp6PoolB)
				}
			}
			break
		}
	}
	fourth := serverLog()
	for _, want := range []string{
		"received buffer from " + netip.AddrFrom16(linkLocal6(s2.LocalIfID)).String() + ":546 to ff02::1:2",
		"DHCP6_PD_LEASE_ALLOC duid=[" + duid + "]",
		"lease for prefix " + dhcp6PoolB.String() + " and iaid=1 has been allocated for 40 seconds",
	} {
		if !strings.Contains(fourth, want) {
			t.Errorf("server log lacks %q:\n%s", want, fourth)
		}
	}
	if strings.Contains(fourth, "DHCP6_PD_LEASE_ADVERT") {
		t.Errorf("server advertised with rapid commit on:\n%s", fourth)
	}

	// 5. Stop: a Release the server takes.
	pd.mu.Lock()
	pd.cli.Stop(time.Now())
	pd.mu.Unlock()
	if !waitFor(5*time.Second, func() bool {
		return strings.Contains(serverLog(), "prefix "+dhcp6PoolB.String()+" for iaid=1 was released properly")
	}) {
		t.Errorf("server did not log the Release of %s:\n%s", dhcp6PoolB, serverLog())
	}
	if _, ok, _, _ := pd.lease(); ok {
		t.Error("client still holds a lease after Stop")
	}
	pd.mu.Lock()
	if pd.sendErr != nil {
		t.Errorf("sending: %v", pd.sendErr)
	}
	pd.mu.Unlock()
	_ = pd.stop()
	if err := stopClient(); err != nil {
		t.Fatalf("client Run: %v", err)
	}
	t.Logf("test took %v", time.Since(t0).Round(time.Millisecond))
}

// keaDUID formats a DUID as Kea logs it: colon-separated hex bytes.
func keaDUID(d []byte) string {
	parts := make([]string, len(d))
	for i, b := range d {
		parts[i] = fmt.Sprintf("%02x", b)
	}
	return strings.Join(parts, ":")
}

// keaExpiries returns the expire column (Unix seconds) of the lease file's
// prefix-delegation rows for prefix, in file order.
func keaExpiries(t *testing.T, vm *VM, prefix netip.Prefix) []int64 {
	t.Helper()
	out, err := vm.Run("cat " + keaLeases)
	if err != nil {
		t.Fatalf("reading the lease file: %v %s", err, out)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("lease file: %v:\n%s", err, out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"address", "prefix_len", "lease_type", "expire", "valid_lifetime", "pref_lifetime"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("lease file has no %s column:\n%s", name, out)
		}
	}
	var exp []int64
	for _, r := range rows[1:] {
		// lease_type 2 is IA_PD.
		if r[col["address"]] != prefix.Addr().String() || r[col["prefix_len"]] != strconv.Itoa(prefix.Bits()) || r[col["lease_type"]] != "2" {
			continue
		}
		if r[col["valid_lifetime"]] != strconv.Itoa(int(dhcp6Valid/time.Second)) ||
			r[col["pref_lifetime"]] != strconv.Itoa(int(dhcp6Preferred/time.Second)) {
			t.Errorf("lease file row %v: lifetimes are not the configured ones", r)
		}
		e, err := strconv.ParseInt(r[col["expire"]], 10, 64)
		if err != nil {
			t.Fatalf("lease file row %v: %v", r, err)
		}
		exp = append(exp, e)
	}
	return exp
}
