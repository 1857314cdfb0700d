package dhcp6

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// sent is a message the client sent, parsed, and when.
type sent struct {
	at  time.Time
	m   Message
	raw []byte
}

// link connects a Client to servers in memory with a manual clock. route
// takes each message the client sends and returns the answer to deliver
// (nil: dropped); answers arrive at once.
type link struct {
	t      testing.TB
	now    time.Time
	c      *Client
	route  func(msg []byte, now time.Time) []byte
	queue  [][]byte
	sent   []sent
	leases []Lease
}

func newLink(t testing.TB, cfg ClientConfig, route func([]byte, time.Time) []byte) *link {
	l := &link{t: t, now: t0, route: route}
	if cfg.MAC == ([6]byte{}) {
		cfg.MAC = clientMAC
	}
	cfg.Rand = rand.New(rand.NewPCG(1, 2))
	cfg.Send = func(b []byte) {
		m, err := Parse(b)
		if err != nil {
			t.Fatalf("client sent an unparseable message: %v %x", err, b)
		}
		l.sent = append(l.sent, sent{l.now, m, b})
		l.queue = append(l.queue, b)
	}
	cfg.OnLease = func(le Lease) { l.leases = append(l.leases, le) }
	l.c = NewClient(cfg)
	return l
}

// serve routes every message to s.
func serve(s *Server) func([]byte, time.Time) []byte { return s.Handle }

func (l *link) deliver() {
	for len(l.queue) > 0 {
		b := l.queue[0]
		l.queue = l.queue[1:]
		if l.route == nil {
			continue
		}
		if r := l.route(b, l.now); r != nil {
			l.c.Input(r, l.now)
		}
	}
}

func (l *link) start() {
	l.c.Start(l.now)
	l.deliver()
}

// run advances the clock to end, running the client's timers on the way.
func (l *link) run(end time.Time) {
	l.t.Helper()
	l.deliver()
	for i := 0; ; i++ {
		if i > 100000 {
			l.t.Fatal("timer loop does not advance")
		}
		next := l.c.Next()
		if next.IsZero() || next.After(end) {
			l.now = end
			return
		}
		if next.Before(l.now) {
			l.t.Fatalf("Next %v is before now %v", next, l.now)
		}
		l.now = next
		l.c.Tick(l.now)
		if n := l.c.Next(); !n.IsZero() && !n.After(l.now) {
			l.t.Fatalf("after Tick(%v) Next is %v", l.now, n)
		}
		l.deliver()
	}
}

func (l *link) last() sent {
	l.t.Helper()
	if len(l.sent) == 0 {
		l.t.Fatal("nothing sent")
	}
	return l.sent[len(l.sent)-1]
}

// ofType returns the sent messages of type mt.
func (l *link) ofType(mt MsgType) []sent {
	var r []sent
	for _, s := range l.sent {
		if s.m.Type == mt {
			r = append(r, s)
		}
	}
	return r
}

func (l *link) lease() Lease {
	l.t.Helper()
	le, ok := l.c.Lease()
	if !ok {
		l.t.Fatalf("no lease; sent %d messages, stats %+v", len(l.sent), l.c.Stats())
	}
	return le
}

func testServerConfig() ServerConfig {
	return ServerConfig{
		MAC: serverMAC, Pool: a6("2001:db8:100::"), PoolBits: 40, Delegate: 56,
		Preferred: time.Hour, Valid: 2 * time.Hour, T1: 30 * time.Minute, T2: 48 * time.Minute,
		DNS: []hdr.Addr6{dnsAddr},
	}
}

func newTestServer(t testing.TB, mod func(*ServerConfig)) *Server {
	t.Helper()
	cfg := testServerConfig()
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bound returns a link whose client holds a lease from a test server.
func bound(t testing.TB, mod func(*ServerConfig)) (*link, *Server) {
	t.Helper()
	srv := newTestServer(t, mod)
	l := newLink(t, ClientConfig{PrefixLen: 56}, serve(srv))
	l.start()
	l.lease()
	return l, srv
}

func TestObtainLease(t *testing.T) {
	pfx0 := a6("2001:db8:100::")
	tests := []struct {
		name         string
		client       ClientConfig
		server       func(*ServerConfig)
		requests     int
		pref, valid  time.Duration
		t1, t2       time.Duration
		rapidInReply bool
	}{
		{"rapid commit", ClientConfig{PrefixLen: 56}, nil, 0, time.Hour, 2 * time.Hour, 30 * time.Minute, 48 * time.Minute, true},
		{"client without rapid commit", ClientConfig{PrefixLen: 56, NoRapidCommit: true}, nil, 1, time.Hour, 2 * time.Hour, 30 * time.Minute, 48 * time.Minute, false},
		{"server without rapid commit", ClientConfig{}, func(c *ServerConfig) { c.NoRapidCommit = true }, 1, time.Hour, 2 * time.Hour, 30 * time.Minute, 48 * time.Minute, false},
		{"T1 and T2 left to the client", ClientConfig{IAID: 7}, func(c *ServerConfig) { c.T1, c.T2 = 0, 0 },
			0, time.Hour, 2 * time.Hour, 30 * time.Minute, 48 * time.Minute, true},
		{"T1 and T2 left to the client, short preferred", ClientConfig{}, func(c *ServerConfig) { c.T1, c.T2, c.Preferred = 0, 0, 100*time.Second },
			0, 100 * time.Second, 2 * time.Hour, 50 * time.Second, 80 * time.Second, true},
		{"infinite lifetimes", ClientConfig{}, func(c *ServerConfig) { c.T1, c.T2, c.Preferred, c.Valid = 0, 0, Infinite, Infinite },
			0, Infinite, Infinite, time.Duration(float64(Infinite) * 0.5), time.Duration(float64(Infinite) * 0.8), true},
		{"infinite T1 and T2", ClientConfig{}, func(c *ServerConfig) { c.T1, c.T2 = Infinite, Infinite },
			0, time.Hour, 2 * time.Hour, Infinite, Infinite, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, tt.server)
			l := newLink(t, tt.client, serve(srv))
			l.start()
			le := l.lease()
			want := Lease{
				Prefix: pfx0, Bits: 56, Preferred: tt.pref, Valid: tt.valid, T1: tt.t1, T2: tt.t2,
				DNS: []hdr.Addr6{dnsAddr}, ServerID: DUIDLL(serverMAC), Obtained: t0,
			}
			if !reflect.DeepEqual(le, want) {
				t.Fatalf("lease\n got %+v\nwant %+v", le, want)
			}
			if len(l.leases) != 1 || !reflect.DeepEqual(l.leases[0], want) {
				t.Fatalf("OnLease calls %+v", l.leases)
			}
			st := l.c.Stats()
			if st.Sent[MsgSolicit] != 1 || st.Sent[MsgRequest] != uint64(tt.requests) || st.Leases != 1 || st.Received != 1+uint64(tt.requests) {
				t.Fatalf("stats %+v", st)
			}
			if srv.Bindings() != 1 {
				t.Fatalf("server has %d bindings", srv.Bindings())
			}
			sol := l.sent[0].m
			iaid := tt.client.IAID
			if iaid == 0 {
				iaid = 1
			}
			wantIA := []IAPD{{IAID: iaid}}
			if tt.client.PrefixLen != 0 {
				wantIA[0].Prefixes = []Prefix{{Bits: tt.client.PrefixLen}}
			}
			if sol.Type != MsgSolicit || sol.ServerID != nil || !reflect.DeepEqual(sol.IAPD, wantIA) ||
				sol.RapidCommit == tt.client.NoRapidCommit || !sol.Requests(OptDNSServers) || !sol.HasElapsed || sol.Elapsed != 0 ||
				!bytes.Equal(sol.ClientID, DUIDLL(clientMAC)) {
				t.Fatalf("Solicit %+v", sol)
			}
			if tt.requests > 0 {
				req := l.ofType(MsgRequest)[0].m
				if !bytes.Equal(req.ServerID, DUIDLL(serverMAC)) || req.XID == sol.XID ||
					!reflect.DeepEqual(req.IAPD, []IAPD{{IAID: iaid, Prefixes: []Prefix{{Prefix: pfx0, Bits: 56}}}}) {
					t.Fatalf("Request %+v", req)
				}
			}
			if want := t0.Add(min(tt.t1, tt.valid)); !l.c.Next().Equal(want) {
				t.Fatalf("Next %v, want T1 or expiry %v", l.c.Next(), want)
			}
		})
	}
}

// TestFirstSolicitBytes: the client's first Solicit is the annotated
// fixture (but for its random transaction id).
func TestFirstSolicitBytes(t *testing.T) {
	l := newLink(t, ClientConfig{PrefixLen: 56}, nil)
	l.start()
	got := bytes.Clone(l.sent[0].raw)
	if len(got) != len(fixSolicit) {
		t.Fatalf("Solicit %x", got)
	}
	copy(got[1:4], fixSolicit[1:4])
	if !bytes.Equal(got, fixSolicit) {
		t.Fatalf("Solicit\n got %x\nwant %x", got, fixSolicit)
	}
}

func TestRenewAtT1(t *testing.T) {
	l, srv := bound(t, nil)
	first := l.lease()
	t1 := t0.Add(30 * time.Minute)
	l.run(t1.Add(-time.Nanosecond))
	if n := len(l.ofType(MsgRenew)); n != 0 {
		t.Fatalf("%d Renews before T1", n)
	}
	l.run(t1)
	renews := l.ofType(MsgRenew)
	if len(renews) != 1 || !renews[0].at.Equal(t1) {
		t.Fatalf("Renews %+v", renews)
	}
	r := renews[0].m
	want := []IAPD{{IAID: 1, Prefixes: []Prefix{{Prefix: first.Prefix, Bits: 56}}}}
	if !bytes.Equal(r.ServerID, srv.DUID()) || !reflect.DeepEqual(r.IAPD, want) || r.Elapsed != 0 || !r.HasElapsed || !r.Requests(OptDNSServers) {
		t.Fatalf("Renew %+v", r)
	}
	le := l.lease()
	if le.Prefix != first.Prefix || !le.Obtained.Equal(t1) {
		t.Fatalf("renewed lease %+v", le)
	}
	if len(l.leases) != 1 {
		t.Fatalf("OnLease called on an unchanged renewal: %+v", l.leases)
	}
	if st := l.c.Stats(); st.Renewals != 1 || st.Leases != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !l.c.Next().Equal(t1.Add(30 * time.Minute)) {
		t.Fatalf("Next %v", l.c.Next())
	}
	// It keeps renewing; the binding never lapses.
	l.run(t0.Add(10 * time.Hour))
	if n := len(l.ofType(MsgRenew)); n != 20 {
		t.Fatalf("%d Renews in 10h with T1 30m", n)
	}
	if l.c.Stats().Expirations != 0 || len(l.ofType(MsgRebind)) != 0 || srv.Bindings() != 1 {
		t.Fatalf("stats %+v", l.c.Stats())
	}
}

// TestRebindAtT2: the server stops answering Renew; at T2 the client
// rebinds and another server with the same pool extends the prefix.
func TestRebindAtT2(t *testing.T) {
	l, srv1 := bound(t, nil)
	srv2 := newTestServer(t, func(c *ServerConfig) { c.MAC = server2MAC })
	l.route = func(b []byte, now time.Time) []byte {
		if m, _ := Parse(b); m.Type == MsgRebind {
			return srv2.Handle(b, now)
		}
		return nil // srv1 is gone
	}
	first := l.lease()
	t1, t2 := t0.Add(30*time.Minute), t0.Add(48*time.Minute)
	l.run(t2.Add(-time.Nanosecond))
	renews := l.ofType(MsgRenew)
	if len(renews) < 5 || !renews[0].at.Equal(t1) {
		t.Fatalf("%d Renews, first at %v", len(renews), renews[0].at)
	}
	checkBackoff(t, renews, t1, renParams)
	l.run(t2)
	rebinds := l.ofType(MsgRebind)
	if len(rebinds) != 1 || !rebinds[0].at.Equal(t2) || rebinds[0].m.ServerID != nil || rebinds[0].m.XID == renews[0].m.XID {
		t.Fatalf("Rebinds %+v", rebinds)
	}
	le := l.lease()
	if le.Prefix != first.Prefix || !bytes.Equal(le.ServerID, srv2.DUID()) || !le.Obtained.Equal(t2) {
		t.Fatalf("rebound lease %+v", le)
	}
	if len(l.leases) != 2 || !reflect.DeepEqual(l.leases[1], le) {
		t.Fatalf("OnLease on a new server: %+v", l.leases)
	}
	if st := l.c.Stats(); st.Renewals != 1 || st.Expirations != 0 {
		t.Fatalf("stats %+v", st)
	}
	if srv2.Bindings() != 1 || srv1.Bindings() != 1 {
		t.Fatal("bindings")
	}
	// Renewals now go to srv2.
	l.route = serve(srv2)
	l.run(t2.Add(30 * time.Minute))
	if r := l.last(); r.m.Type != MsgRenew || !bytes.Equal(r.m.ServerID, srv2.DUID()) {
		t.Fatalf("after rebinding: %v to %x", r.m.Type, r.m.ServerID)
	}
}

// TestRebindNoBindingNewPrefix: the server answering the Rebind delegates
// from another pool: NoBinding, so the client Requests from it and gets a
// new prefix, reported through OnLease.
func TestRebindNoBindingNewPrefix(t *testing.T) {
	l, _ := bound(t, nil)
	srv2 := newTestServer(t, func(c *ServerConfig) { c.MAC, c.Pool = server2MAC, a6("2001:db8:200::") })
	l.route = func(b []byte, now time.Time) []byte {
		if m, _ := Parse(b); m.Type == MsgRenew {
			return nil
		}
		return srv2.Handle(b, now)
	}
	t2 := t0.Add(48 * time.Minute)
	l.run(t2)
	if n := len(l.ofType(MsgRebind)); n != 1 {
		t.Fatalf("%d Rebinds", n)
	}
	reqs := l.ofType(MsgRequest)
	if len(reqs) != 1 || !bytes.Equal(reqs[0].m.ServerID, srv2.DUID()) || reqs[0].m.IAPD[0].Prefixes[0].Prefix != a6("2001:db8:100::") {
		t.Fatalf("Requests %+v", reqs)
	}
	le := l.lease()
	if le.Prefix != a6("2001:db8:200::") || !bytes.Equal(le.ServerID, srv2.DUID()) {
		t.Fatalf("lease %+v", le)
	}
	if len(l.leases) != 2 || l.leases[1].Prefix != le.Prefix {
		t.Fatalf("OnLease %+v", l.leases)
	}
}

// TestRenewNoBinding: the server lost its state (restarted): Renew gets
// NoBinding, the client Requests again and keeps its prefix.
func TestRenewNoBinding(t *testing.T) {
	l, _ := bound(t, nil)
	fresh := newTestServer(t, nil) // same DUID, no bindings
	l.route = serve(fresh)
	l.run(t0.Add(30 * time.Minute))
	st := l.c.Stats()
	if st.Sent[MsgRenew] != 1 || st.Sent[MsgRequest] != 1 || st.Leases != 2 || st.Renewals != 0 {
		t.Fatalf("stats %+v", st)
	}
	if le := l.lease(); le.Prefix != a6("2001:db8:100::") || !le.Obtained.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("lease %+v", le)
	}
	if len(l.leases) != 1 {
		t.Fatalf("OnLease called though nothing changed: %+v", l.leases)
	}
	if fresh.Bindings() != 1 {
		t.Fatal("no binding on the restarted server")
	}
}

// TestLeaseLostAtExpiry: nothing answers after binding: Renew until T2,
// Rebind until the valid lifetime ends, then the lease is lost and the
// client solicits again.
func TestLeaseLostAtExpiry(t *testing.T) {
	l, _ := bound(t, nil)
	l.route = nil
	first := l.lease()
	expiry := t0.Add(2 * time.Hour)
	l.run(expiry.Add(-time.Nanosecond))
	if _, ok := l.c.Lease(); !ok || len(l.leases) != 1 {
		t.Fatal("lease lost early")
	}
	rebinds := l.ofType(MsgRebind)
	checkBackoff(t, rebinds, t0.Add(48*time.Minute), rebParams)
	if last := rebinds[len(rebinds)-1]; !last.at.Before(expiry) {
		t.Fatalf("Rebind at %v", last.at)
	}
	nsol := len(l.ofType(MsgSolicit))
	l.run(expiry)
	if _, ok := l.c.Lease(); ok {
		t.Fatal("lease still held at expiry")
	}
	want := Lease{Prefix: first.Prefix, Bits: 56, DNS: first.DNS, ServerID: first.ServerID, Obtained: expiry}
	if len(l.leases) != 2 || !reflect.DeepEqual(l.leases[1], want) {
		t.Fatalf("OnLease %+v", l.leases)
	}
	sols := l.ofType(MsgSolicit)
	if len(sols) != nsol+1 || !sols[nsol].at.Equal(expiry) || sols[nsol].m.XID == rebinds[0].m.XID {
		t.Fatalf("no fresh Solicit at expiry: %+v", sols)
	}
	if st := l.c.Stats(); st.Expirations != 1 {
		t.Fatalf("stats %+v", st)
	}
	// A late Tick that jumps past T1, T2 and expiry at once also ends in
	// Solicit, having reported the loss.
	l2, _ := bound(t, nil)
	l2.route = nil
	l2.now = t0.Add(3 * time.Hour)
	l2.c.Tick(l2.now)
	if _, ok := l2.c.Lease(); ok || len(l2.leases) != 2 || l2.last().m.Type != MsgSolicit || l2.c.Stats().Expirations != 1 {
		t.Fatalf("late Tick: leases %+v, last sent %v", l2.leases, l2.last().m.Type)
	}
}

// checkBackoff checks the RFC 8415 15 retransmission times of msgs, the
// first sent at start: RT1 = IRT*(1+RAND), RTk = RTk-1*(2+RAND), and
// once above MRT, MRT*(1+RAND), RAND in [-0.1, 0.1]; all with one
// transaction id.
func checkBackoff(t *testing.T, msgs []sent, start time.Time, p rtParams) {
	t.Helper()
	if len(msgs) < 3 || !msgs[0].at.Equal(start) {
		t.Fatalf("%d messages, first at %v", len(msgs), msgs[0].at)
	}
	const slack = time.Microsecond
	in := func(d time.Duration, lo, hi float64, base time.Duration) bool {
		return d >= time.Duration(float64(base)*lo)-slack && d <= time.Duration(float64(base)*hi)+slack
	}
	var prev time.Duration
	for i := 1; i < len(msgs); i++ {
		if msgs[i].m.XID != msgs[0].m.XID {
			t.Fatalf("retransmission %d has a new transaction id", i)
		}
		d := msgs[i].at.Sub(msgs[i-1].at)
		switch {
		case i == 1:
			if !in(d, 0.9, 1.1, p.irt) {
				t.Fatalf("first RT %v, IRT %v", d, p.irt)
			}
		case in(d, 1.9, 2.1, prev) && d <= p.mrt+slack:
		case in(d, 0.9, 1.1, p.mrt) && time.Duration(float64(prev)*2.1) >= p.mrt-slack:
			// capped
		default:
			t.Fatalf("RT %d: %v after %v (MRT %v)", i, d, prev, p.mrt)
		}
		prev = d
	}
}

func TestSolicitRetransmission(t *testing.T) {
	l := newLink(t, ClientConfig{}, nil)
	l.start()
	l.run(t0.Add(30 * time.Hour))
	sols := l.ofType(MsgSolicit)
	// The check below allows what RFC 8415 15 allows; also pin the shape:
	// the first RT is strictly above IRT, it doubles, and the cap holds.
	checkBackoff(t, sols, t0, solParams)
	if d := sols[1].at.Sub(sols[0].at); d <= time.Second || d > 1100*time.Millisecond {
		t.Fatalf("first Solicit RT %v, must be in (1s, 1.1s]", d)
	}
	capped := 0
	for i := 1; i < len(sols); i++ {
		d := sols[i].at.Sub(sols[i-1].at)
		if d > 3960*time.Second {
			t.Fatalf("RT %v above SOL_MAX_RT*1.1", d)
		}
		if d >= 3240*time.Second {
			capped++
		}
		want := uint16(min(sols[i].at.Sub(t0).Milliseconds()/10, 0xffff))
		if sols[i].m.Elapsed != want {
			t.Fatalf("Solicit %d elapsed %d, want %d", i, sols[i].m.Elapsed, want)
		}
	}
	// 1+2+...+2048 s is about 68 min, then about one an hour.
	if len(sols) < 35 || len(sols) > 45 || capped < 20 {
		t.Fatalf("%d Solicits in 30h, %d at the cap", len(sols), capped)
	}
	if sols[len(sols)-1].m.Elapsed != 0xffff {
		t.Fatal("elapsed time not capped at 0xffff")
	}
}

// TestSolMaxRT: a server's SOL_MAX_RT caps Solicit retransmission even in
// an Advertise that offers nothing (RFC 8415 18.2.9, 21.24); a value out
// of 60..86400 s is ignored.
func TestSolMaxRT(t *testing.T) {
	for _, c := range []struct {
		val uint32
		cap time.Duration
	}{{120, 120 * time.Second}, {30, 3600 * time.Second}} {
		l := newLink(t, ClientConfig{}, func(b []byte, now time.Time) []byte {
			m, _ := Parse(b)
			if !m.Requests(OptSolMaxRT) {
				t.Fatalf("%v without SOL_MAX_RT in its ORO", m.Type)
			}
			r := Message{Type: MsgAdvertise, XID: m.XID, ClientID: m.ClientID, ServerID: DUIDLL(serverMAC), SolMaxRT: c.val,
				Status: &Status{Code: StatusNoPrefixAvail}}
			return r.Encode()
		})
		l.start()
		l.run(t0.Add(3 * time.Hour))
		sols := l.ofType(MsgSolicit)
		longest := time.Duration(0)
		for i := 1; i < len(sols); i++ {
			longest = max(longest, sols[i].at.Sub(sols[i-1].at))
		}
		if longest > c.cap*11/10 || longest < c.cap*9/10 {
			t.Fatalf("SOL_MAX_RT %d: longest Solicit interval %v, want about %v", c.val, longest, c.cap)
		}
	}
}

// TestRequestGivesUp: Requests go unanswered: REQ_MAX_RC transmissions
// with REQ_TIMEOUT/REQ_MAX_RT backoff, then back to Solicit.
func TestRequestGivesUp(t *testing.T) {
	srv := newTestServer(t, nil)
	answered := false
	l := newLink(t, ClientConfig{NoRapidCommit: true}, func(b []byte, now time.Time) []byte {
		if answered {
			return nil
		}
		answered = true
		return srv.Handle(b, now) // the first Solicit only
	})
	l.start()
	l.run(t0.Add(10 * time.Minute))
	reqs := l.ofType(MsgRequest)
	if len(reqs) != 10 {
		t.Fatalf("%d Requests", len(reqs))
	}
	checkBackoff(t, reqs, t0, reqParams)
	capped := 0
	for i := 1; i < len(reqs); i++ {
		if d := reqs[i].at.Sub(reqs[i-1].at); d >= 27*time.Second {
			capped++
		}
	}
	if capped < 3 {
		t.Fatalf("only %d Request RTs at REQ_MAX_RT", capped)
	}
	sols := l.ofType(MsgSolicit)
	if len(sols) < 2 || sols[1].m.XID == sols[0].m.XID || !sols[1].at.After(reqs[9].at) {
		t.Fatalf("no new Solicit after the last Request: %+v", sols)
	}
	if d := sols[1].at.Sub(reqs[9].at); d < 27*time.Second || d > 33*time.Second {
		t.Fatalf("gave up %v after the 10th Request", d)
	}
}

func TestReleaseOnStop(t *testing.T) {
	l, srv := bound(t, nil)
	le := l.lease()
	l.now = t0.Add(time.Minute)
	l.c.Stop(l.now)
	rel := l.last()
	want := []IAPD{{IAID: 1, Prefixes: []Prefix{{Prefix: le.Prefix, Bits: 56}}}}
	if rel.m.Type != MsgRelease || !bytes.Equal(rel.m.ServerID, srv.DUID()) || !bytes.Equal(rel.m.ClientID, DUIDLL(clientMAC)) ||
		!reflect.DeepEqual(rel.m.IAPD, want) || !rel.m.HasElapsed {
		t.Fatalf("Release %+v", rel.m)
	}
	if _, ok := l.c.Lease(); ok || !l.c.Next().IsZero() {
		t.Fatal("still holding a lease or timers after Stop")
	}
	if len(l.leases) != 2 || l.leases[1].Valid != 0 || l.leases[1].Prefix != le.Prefix {
		t.Fatalf("OnLease %+v", l.leases)
	}
	l.deliver() // the server's Reply reaches an idle client
	if srv.Bindings() != 0 {
		t.Fatal("server kept the binding")
	}
	if st := l.c.Stats(); st.Ignored[IgnoreState] != 1 || st.Sent[MsgRelease] != 1 {
		t.Fatalf("stats %+v", st)
	}
	n := len(l.sent)
	l.c.Stop(l.now) // nothing held: nothing sent
	l.c.Tick(l.now.Add(time.Hour))
	if len(l.sent) != n || len(l.leases) != 2 {
		t.Fatal("Stop without a lease sent or reported something")
	}
	// Start again: a fresh lease, same prefix.
	l.start()
	if le2 := l.lease(); le2.Prefix != le.Prefix {
		t.Fatalf("re-obtained %+v", le2)
	}
}

// TestStartKeepsLease: Start while bound keeps the lease, hints it, and
// an answer with the same prefix does not report a change.
func TestStartKeepsLease(t *testing.T) {
	l, _ := bound(t, nil)
	le := l.lease()
	l.route = nil
	l.now = t0.Add(time.Minute)
	l.c.Start(l.now)
	sol := l.last().m
	if sol.Type != MsgSolicit || sol.IAPD[0].Prefixes[0] != (Prefix{Prefix: le.Prefix, Bits: 56}) {
		t.Fatalf("Solicit %+v", sol)
	}
	if _, ok := l.c.Lease(); !ok {
		t.Fatal("Start dropped the lease")
	}
	// Nothing answers: it is lost at its expiry while soliciting.
	l.run(t0.Add(2 * time.Hour))
	if _, ok := l.c.Lease(); ok || len(l.leases) != 2 || l.leases[1].Valid != 0 {
		t.Fatalf("leases %+v", l.leases)
	}
	if l.c.Next().IsZero() || l.last().m.Type != MsgSolicit {
		t.Fatal("stopped soliciting")
	}
}

// TestNoPrefixAvail: a one-prefix pool taken by another client.
func TestNoPrefixAvail(t *testing.T) {
	oneprefix := func(c *ServerConfig) { c.PoolBits = 56 }
	t.Run("Advertise ignored", func(t *testing.T) {
		srv := newTestServer(t, oneprefix)
		other := newLink(t, ClientConfig{MAC: [6]byte{2, 0, 0, 0, 0, 2}}, serve(srv))
		other.start()
		other.lease()
		l := newLink(t, ClientConfig{NoRapidCommit: true}, serve(srv))
		l.start()
		if st := l.c.Stats(); st.Ignored[IgnoreStatus] != 1 || st.Sent[MsgRequest] != 0 {
			t.Fatalf("stats %+v", st)
		}
		l.run(t0.Add(10 * time.Second))
		if st := l.c.Stats(); st.Sent[MsgSolicit] < 3 || st.Ignored[IgnoreStatus] != st.Sent[MsgSolicit] {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("Reply to rapid commit: hold off, then Solicit", func(t *testing.T) {
		srv := newTestServer(t, oneprefix)
		other := newLink(t, ClientConfig{MAC: [6]byte{2, 0, 0, 0, 0, 2}}, serve(srv))
		other.start()
		l := newLink(t, ClientConfig{}, serve(srv))
		l.start()
		if !l.c.Next().Equal(t0.Add(10 * time.Second)) {
			t.Fatalf("Next %v, want a 10s holdoff", l.c.Next())
		}
		l.run(t0.Add(10*time.Second - 1))
		if len(l.sent) != 1 {
			t.Fatalf("sent %d during the holdoff", len(l.sent))
		}
		l.run(t0.Add(10 * time.Second))
		if len(l.sent) != 2 || l.last().m.Type != MsgSolicit {
			t.Fatal("no Solicit after the holdoff")
		}
		if !l.c.Next().Equal(t0.Add(30 * time.Second)) {
			t.Fatalf("Next %v, want the holdoff doubled to 20s", l.c.Next())
		}
		// The other client leaves; the next try succeeds.
		other.c.Stop(t0)
		other.deliver()
		l.run(t0.Add(30 * time.Second))
		if le := l.lease(); le.Prefix != a6("2001:db8:100::") {
			t.Fatalf("lease %+v", le)
		}
	})
	t.Run("Reply to Request", func(t *testing.T) {
		// A gets an Advertise, B takes the prefix, A's Request fails.
		srv := newTestServer(t, oneprefix)
		a := newLink(t, ClientConfig{NoRapidCommit: true}, nil)
		a.start()
		adv := srv.Handle(a.sent[0].raw, t0)
		b := newLink(t, ClientConfig{MAC: [6]byte{2, 0, 0, 0, 0, 2}}, serve(srv))
		b.start()
		b.lease()
		a.c.Input(adv, t0)
		req := a.last()
		if req.m.Type != MsgRequest {
			t.Fatalf("sent %v", req.m.Type)
		}
		reply := srv.Handle(req.raw, t0)
		if m, _ := Parse(reply); m.IAPD[0].Status == nil || m.IAPD[0].Status.Code != StatusNoPrefixAvail {
			t.Fatalf("server replied %+v", m)
		}
		a.c.Input(reply, t0)
		if !a.c.Next().Equal(t0.Add(10*time.Second)) || len(a.sent) != 2 {
			t.Fatalf("Next %v after NoPrefixAvail", a.c.Next())
		}
		a.route = serve(srv)
		a.run(t0.Add(10 * time.Second))
		if a.last().m.Type != MsgSolicit {
			t.Fatal("no Solicit after the holdoff")
		}
	})
}

// replyTo builds a server Reply to a client message.
func replyTo(req Message, server []byte, ia ...IAPD) Message {
	return Message{Type: MsgReply, XID: req.XID, ClientID: req.ClientID, ServerID: server, IAPD: ia}
}

// TestReplyChanges: a Renew answered with another prefix, new lifetimes
// or new DNS reports the new lease; one withdrawing the prefix loses it.
func TestReplyChanges(t *testing.T) {
	tests := []struct {
		name      string
		ia        IAPD
		dns       []hdr.Addr6
		wantCalls int
		check     func(t *testing.T, l *link)
	}{
		{"same", IAPD{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 3600, Valid: 7200}}},
			[]hdr.Addr6{dnsAddr}, 1, nil},
		{"new prefix", IAPD{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{{Prefix: a6("2001:db8:9999:ff12::"), Bits: 56, Preferred: 3600, Valid: 7200}}},
			[]hdr.Addr6{dnsAddr}, 2, func(t *testing.T, l *link) {
				if le := l.lease(); le.Prefix != a6("2001:db8:9999:ff00::") || l.leases[1].Prefix != le.Prefix {
					t.Fatalf("lease %+v (host bits must be cleared)", le)
				}
			}},
		{"held prefix kept among several", IAPD{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{
			{Prefix: a6("2001:db8:7::"), Bits: 56, Preferred: 3600, Valid: 7200},
			{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 3600, Valid: 7200}}},
			[]hdr.Addr6{dnsAddr}, 1, nil},
		{"new lifetimes", IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 600, Valid: 900}}},
			[]hdr.Addr6{dnsAddr}, 2, func(t *testing.T, l *link) {
				le := l.lease()
				if le.Valid != 900*time.Second || le.T1 != 300*time.Second || le.T2 != 480*time.Second {
					t.Fatalf("lease %+v", le)
				}
				if want := l.now.Add(300 * time.Second); !l.c.Next().Equal(want) {
					t.Fatalf("Next %v, want %v", l.c.Next(), want)
				}
			}},
		{"deprecated prefix, T1 and T2 left to the client", IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 0, Valid: 900}}},
			[]hdr.Addr6{dnsAddr}, 2, func(t *testing.T, l *link) {
				// Not 0.5 and 0.8 of a zero preferred lifetime (a Renew a
				// second): of the valid lifetime.
				if le := l.lease(); le.T1 != 450*time.Second || le.T2 != 720*time.Second {
					t.Fatalf("lease %+v", le)
				}
			}},
		{"a deprecated second prefix does not set T1 and T2", IAPD{IAID: 1, Prefixes: []Prefix{
			{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 1000, Valid: 7200},
			{Prefix: a6("2001:db8:200::"), Bits: 56, Preferred: 0, Valid: 900}}},
			[]hdr.Addr6{dnsAddr}, 2, func(t *testing.T, l *link) {
				if le := l.lease(); le.T1 != 500*time.Second || le.T2 != 800*time.Second {
					t.Fatalf("lease %+v, want T1 500s T2 800s (of the live prefix's 1000s)", le)
				}
			}},
		{"new DNS", IAPD{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 3600, Valid: 7200}}},
			nil, 2, nil},
		{"withdrawn", IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56}}},
			nil, 2, func(t *testing.T, l *link) {
				if _, ok := l.c.Lease(); ok || l.leases[1].Valid != 0 || l.c.Stats().Withdrawals != 1 || l.last().m.Type != MsgSolicit {
					t.Fatalf("leases %+v stats %+v", l.leases, l.c.Stats())
				}
			}},
		{"another prefix withdrawn: ignored", IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:7::"), Bits: 56}}},
			nil, 1, func(t *testing.T, l *link) {
				if l.c.Stats().Ignored[IgnoreNoIAPD] != 1 || l.c.st != stRenewing {
					t.Fatalf("stats %+v state %v", l.c.Stats(), l.c.st)
				}
			}},
		{"T1 above T2: ignored", IAPD{IAID: 1, T1: 100, T2: 50, Prefixes: []Prefix{{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 3600, Valid: 7200}}},
			nil, 1, func(t *testing.T, l *link) {
				if l.c.Stats().Ignored[IgnoreBad] != 1 || l.c.st != stRenewing {
					t.Fatalf("stats %+v", l.c.Stats())
				}
			}},
		{"UnspecFail: ignored", IAPD{IAID: 1, Status: &Status{Code: StatusUnspecFail}},
			nil, 1, func(t *testing.T, l *link) {
				if l.c.Stats().Ignored[IgnoreStatus] != 1 || l.c.st != stRenewing {
					t.Fatalf("stats %+v", l.c.Stats())
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, srv := bound(t, nil)
			l.route = nil
			l.run(t0.Add(30 * time.Minute))
			ren := l.last()
			if ren.m.Type != MsgRenew {
				t.Fatalf("sent %v", ren.m.Type)
			}
			r := replyTo(ren.m, srv.DUID(), tt.ia)
			r.DNS = tt.dns
			l.c.Input(r.Encode(), l.now)
			if len(l.leases) != tt.wantCalls {
				t.Fatalf("%d OnLease calls, want %d: %+v", len(l.leases), tt.wantCalls, l.leases)
			}
			if tt.check != nil {
				tt.check(t, l)
			}
		})
	}
}

// clientIn builds a client in the named state and returns it with the
// message it would accept now (nil in bound and holdoff, which accept
// nothing).
func clientIn(t testing.TB, st state) (*link, []byte) {
	t.Helper()
	switch st {
	case stSoliciting:
		srv := newTestServer(t, func(c *ServerConfig) { c.NoRapidCommit = true })
		l := newLink(t, ClientConfig{PrefixLen: 56}, nil)
		l.start()
		return l, srv.Handle(l.sent[0].raw, l.now)
	case stRequesting:
		srv := newTestServer(t, nil)
		l := newLink(t, ClientConfig{NoRapidCommit: true}, func(b []byte, now time.Time) []byte {
			if m, _ := Parse(b); m.Type == MsgSolicit {
				return srv.Handle(b, now)
			}
			return nil
		})
		l.start()
		return l, srv.Handle(l.last().raw, l.now)
	case stBound:
		l, _ := bound(t, nil)
		return l, nil
	case stRenewing, stRebinding:
		l, srv := bound(t, nil)
		l.route = nil
		at := t0.Add(30 * time.Minute)
		if st == stRebinding {
			at = t0.Add(48 * time.Minute)
		}
		l.run(at)
		if st == stRebinding {
			srv = newTestServer(t, func(c *ServerConfig) { c.MAC = server2MAC })
		}
		return l, srv.Handle(l.last().raw, l.now)
	case stHoldoff:
		srv := newTestServer(t, func(c *ServerConfig) { c.PoolBits = 56 })
		other := newLink(t, ClientConfig{MAC: [6]byte{2, 0, 0, 0, 0, 2}}, serve(srv))
		other.start()
		l := newLink(t, ClientConfig{}, serve(srv))
		l.start()
		return l, nil
	}
	t.Fatalf("state %v", st)
	return nil, nil
}

func TestClientIn(t *testing.T) {
	for st := stSoliciting; st <= stHoldoff; st++ {
		l, _ := clientIn(t, st)
		if l.c.st != st {
			t.Fatalf("clientIn(%v) is %v", st, l.c.st)
		}
	}
}

// TestIgnored: messages that are not for the current exchange are counted
// by reason and change nothing; the valid message still works afterwards.
func TestIgnored(t *testing.T) {
	type mod func(m *Message)
	tests := []struct {
		name   string
		st     state
		raw    []byte // used instead of a modified valid message
		mod    mod
		reason IgnoreReason
	}{
		{"garbage", stSoliciting, []byte{0xde, 0xad}, nil, IgnoreBad},
		{"truncated", stSoliciting, fixAdvertise[:30], nil, IgnoreBad},
		{"wrong xid", stSoliciting, nil, func(m *Message) { m.XID ^= 1 }, IgnoreXID},
		{"wrong client id", stSoliciting, nil, func(m *Message) { m.ClientID = DUIDLL([6]byte{2, 0, 0, 0, 0, 9}) }, IgnoreClientID},
		{"no client id", stSoliciting, nil, func(m *Message) { m.ClientID = nil }, IgnoreClientID},
		{"no server id", stSoliciting, nil, func(m *Message) { m.ServerID = nil }, IgnoreServerID},
		{"no IA_PD", stSoliciting, nil, func(m *Message) { m.IAPD = nil }, IgnoreNoIAPD},
		{"IA_PD for another IAID", stSoliciting, nil, func(m *Message) { m.IAPD[0].IAID = 2 }, IgnoreNoIAPD},
		{"IA_PD without prefixes", stSoliciting, nil, func(m *Message) { m.IAPD[0].Prefixes = nil }, IgnoreNoIAPD},
		{"preferred above valid", stSoliciting, nil, func(m *Message) { m.IAPD[0].Prefixes[0].Preferred = 1 << 30 }, IgnoreNoIAPD},
		{"valid 0", stSoliciting, nil, func(m *Message) { m.IAPD[0].Prefixes[0].Valid = 0; m.IAPD[0].Prefixes[0].Preferred = 0 }, IgnoreNoIAPD},
		{"NoPrefixAvail in IA_PD", stSoliciting, nil, func(m *Message) {
			m.IAPD[0] = IAPD{IAID: 1, Status: &Status{Code: StatusNoPrefixAvail}}
		}, IgnoreStatus},
		{"top-level UnspecFail", stSoliciting, nil, func(m *Message) { m.Status = &Status{Code: StatusUnspecFail} }, IgnoreStatus},
		{"Reply without rapid commit", stSoliciting, nil, func(m *Message) { m.Type = MsgReply }, IgnoreState},
		{"a Solicit", stSoliciting, nil, func(m *Message) { m.Type = MsgSolicit }, IgnoreType},
		{"Reconfigure", stSoliciting, nil, func(m *Message) { m.Type = MsgReconfigure }, IgnoreType},
		{"Advertise while requesting", stRequesting, nil, func(m *Message) { m.Type = MsgAdvertise }, IgnoreState},
		{"Reply from another server", stRequesting, nil, func(m *Message) { m.ServerID = DUIDLL(server2MAC) }, IgnoreServerID},
		{"Reply with old xid", stRequesting, nil, func(m *Message) { m.XID++ }, IgnoreXID},
		{"NoBinding to a Request", stRequesting, nil, func(m *Message) {
			m.IAPD[0] = IAPD{IAID: 1, Status: &Status{Code: StatusNoBinding}}
		}, IgnoreStatus},
		{"Renew reply from another server", stRenewing, nil, func(m *Message) { m.ServerID = DUIDLL(server2MAC) }, IgnoreServerID},
		{"Renew reply without IA_PD", stRenewing, nil, func(m *Message) { m.IAPD = nil }, IgnoreNoIAPD},
		{"Rebind reply with wrong client id", stRebinding, nil, func(m *Message) { m.ClientID = []byte{0, 1} }, IgnoreClientID},
		{"Rebind reply, top-level status", stRebinding, nil, func(m *Message) { m.Status = &Status{Code: StatusUseMulticast} }, IgnoreStatus},
		{"bound: valid-looking Reply", stBound, fixAdvertise, func(m *Message) { m.Type = MsgReply }, IgnoreState},
		{"holding off: Advertise", stHoldoff, fixAdvertise, nil, IgnoreState},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, valid := clientIn(t, tt.st)
			msg := tt.raw
			if tt.mod != nil {
				src := valid
				if src == nil {
					src = msg
				}
				m, err := Parse(src)
				if err != nil {
					t.Fatal(err)
				}
				tt.mod(&m)
				msg = m.Encode()
			}
			before := l.c.Stats()
			next, nsent, nleases := l.c.Next(), len(l.sent), len(l.leases)
			lease, had := l.c.Lease()
			l.c.Input(msg, l.now)
			after := l.c.Stats()
			if after.Received != before.Received+1 || after.Ignored[tt.reason] != before.Ignored[tt.reason]+1 {
				t.Fatalf("ignored %v, want one more %v", after.Ignored, tt.reason)
			}
			st := after
			st.Received, st.Ignored[tt.reason] = before.Received, before.Ignored[tt.reason]
			if st != before {
				t.Fatalf("stats changed: %+v -> %+v", before, st)
			}
			lease2, had2 := l.c.Lease()
			if !l.c.Next().Equal(next) || len(l.sent) != nsent || len(l.leases) != nleases || had2 != had || !reflect.DeepEqual(lease, lease2) || l.c.st != tt.st {
				t.Fatal("state changed")
			}
			if valid != nil {
				l.c.Input(valid, l.now)
				if l.c.Stats().Ignored != after.Ignored {
					t.Fatal("the valid message was ignored afterwards")
				}
			}
		})
	}
}

// FuzzClientInput feeds arbitrary bytes to a client in each state: it
// never panics, an ignored message changes nothing, a bound or holding-off
// client changes nothing at all, and the timers stay sane.
func FuzzClientInput(f *testing.F) {
	for st := stSoliciting; st <= stHoldoff; st++ {
		l, valid := clientIn(f, st)
		if valid == nil {
			valid = fixAdvertise
		}
		f.Add(uint8(st), false, valid)
		f.Add(uint8(st), true, l.last().raw) // the client's own message
	}
	f.Add(uint8(stSoliciting), true, fixAdvertise)
	f.Fuzz(func(t *testing.T, sel uint8, fixXID bool, b []byte) {
		st := stSoliciting + state(sel)%(stHoldoff-stSoliciting+1)
		l, _ := clientIn(t, st)
		if fixXID && len(b) >= 4 {
			xid := l.c.xid
			b[1], b[2], b[3] = byte(xid>>16), byte(xid>>8), byte(xid)
		}
		before := l.c.Stats()
		next, nsent, nleases := l.c.Next(), len(l.sent), len(l.leases)
		lease, had := l.c.Lease()
		l.c.Input(b, l.now)
		after := l.c.Stats()
		ignored := sum(after.Ignored[:]) == sum(before.Ignored[:])+1
		if st == stBound || st == stHoldoff {
			if !ignored {
				t.Fatalf("%v client accepted a message", st)
			}
		}
		if ignored {
			lease2, had2 := l.c.Lease()
			if !l.c.Next().Equal(next) || len(l.sent) != nsent || len(l.leases) != nleases || had2 != had || !reflect.DeepEqual(lease, lease2) || l.c.st != st {
				t.Fatal("an ignored message changed the state")
			}
		}
		if le, ok := l.c.Lease(); ok && (le.Valid <= 0 || le.Bits < 1 || le.Bits > 128 || MaskPrefix(le.Prefix, le.Bits) != le.Prefix || le.T1 > le.T2 || le.T1 < time.Second) {
			t.Fatalf("lease %+v", le)
		}
		// Timers: never idle, never due in the past, and running them
		// makes progress.
		for range 5 {
			n := l.c.Next()
			if n.IsZero() || !n.After(l.now) {
				t.Fatalf("Next %v at %v in %v", n, l.now, l.c.st)
			}
			l.now = n
			l.c.Tick(n)
		}
	})
}

func TestElapsed(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want uint16
	}{
		{-time.Second, 0}, {0, 0}, {9 * time.Millisecond, 0}, {10 * time.Millisecond, 1}, {time.Second, 100},
		{655350 * time.Millisecond, 0xffff}, {655360 * time.Millisecond, 0xffff}, {1000 * time.Second, 0xffff}, {Infinite, 0xffff},
	} {
		if got := elapsed(tt.d); got != tt.want {
			t.Errorf("elapsed(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func sum(v []uint64) uint64 {
	var s uint64
	for _, x := range v {
		s += x
	}
	return s
}
