package dhcp6

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// cmsg builds a client message from the DUID-LL of mac.
func cmsg(mt MsgType, mac byte, server []byte, ia ...IAPD) []byte {
	m := Message{
		Type: mt, XID: 0x10203 + uint32(mac), ClientID: DUIDLL([6]byte{2, 0, 0, 0, 0, mac}), ServerID: server,
		HasElapsed: true, ORO: []uint16{OptDNSServers}, IAPD: ia,
	}
	return m.Encode()
}

func handle(t *testing.T, s *Server, msg []byte, now time.Time) Message {
	t.Helper()
	r := s.Handle(msg, now)
	if r == nil {
		t.Fatal("no answer")
	}
	m, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func onlyPrefix(t *testing.T, m Message) hdr.Addr6 {
	t.Helper()
	if len(m.IAPD) != 1 || m.IAPD[0].Status != nil || len(m.IAPD[0].Prefixes) != 1 {
		t.Fatalf("%v: IA_PD %+v", m.Type, m.IAPD)
	}
	return m.IAPD[0].Prefixes[0].Prefix
}

func TestServerExchange(t *testing.T) {
	s := newTestServer(t, nil)
	sid := s.DUID()
	ia := IAPD{IAID: 1}

	adv := handle(t, s, cmsg(MsgSolicit, 1, nil, ia), t0)
	want := Message{
		Type: MsgAdvertise, XID: 0x10204, ClientID: DUIDLL([6]byte{2, 0, 0, 0, 0, 1}), ServerID: sid,
		DNS: []hdr.Addr6{dnsAddr},
		IAPD: []IAPD{{IAID: 1, T1: 1800, T2: 2880, Prefixes: []Prefix{
			{Prefix: a6("2001:db8:100::"), Bits: 56, Preferred: 3600, Valid: 7200}}}},
	}
	if !reflect.DeepEqual(adv, want) {
		t.Fatalf("Advertise\n got %+v\nwant %+v", adv, want)
	}
	if s.Bindings() != 0 {
		t.Fatal("an Advertise created a binding")
	}
	rep := handle(t, s, cmsg(MsgRequest, 1, sid, ia), t0)
	want.Type = MsgReply
	if !reflect.DeepEqual(rep, want) || s.Bindings() != 1 {
		t.Fatalf("Reply\n got %+v\nwant %+v", rep, want)
	}
	// A second client gets the next prefix; a second IA of the first
	// client another one.
	if p := onlyPrefix(t, handle(t, s, cmsg(MsgSolicit, 2, nil, ia), t0)); p != a6("2001:db8:100:100::") {
		t.Fatalf("second client offered %s", addrString(p))
	}
	m := handle(t, s, cmsg(MsgRequest, 2, sid, ia), t0)
	if p := onlyPrefix(t, m); p != a6("2001:db8:100:100::") {
		t.Fatalf("second client got %s", addrString(p))
	}
	if p := onlyPrefix(t, handle(t, s, cmsg(MsgRequest, 1, sid, IAPD{IAID: 2}), t0)); p != a6("2001:db8:100:200::") {
		t.Fatalf("second IA got %s", addrString(p))
	}
	// The same client and IAID keep their prefix: Solicit, Request, Renew,
	// Rebind.
	for _, mt := range []MsgType{MsgSolicit, MsgRequest, MsgRenew, MsgRebind} {
		var sv []byte
		if mt == MsgRequest || mt == MsgRenew {
			sv = sid
		}
		if p := onlyPrefix(t, handle(t, s, cmsg(mt, 1, sv, ia), t0.Add(time.Minute))); p != a6("2001:db8:100::") {
			t.Fatalf("%v: %s", mt, addrString(p))
		}
	}
	if s.Bindings() != 3 {
		t.Fatalf("%d bindings", s.Bindings())
	}
	// Release frees the binding; the prefix goes to the next asker.
	rel := handle(t, s, cmsg(MsgRelease, 1, sid, ia), t0.Add(time.Minute))
	if rel.Type != MsgReply || rel.Status == nil || rel.Status.Code != StatusSuccess || len(rel.IAPD) != 0 || s.Bindings() != 2 {
		t.Fatalf("Release reply %+v, %d bindings", rel, s.Bindings())
	}
	rel = handle(t, s, cmsg(MsgRelease, 1, sid, ia), t0.Add(time.Minute))
	if len(rel.IAPD) != 1 || rel.IAPD[0].Status.Code != StatusNoBinding {
		t.Fatalf("second Release %+v", rel)
	}
	if p := onlyPrefix(t, handle(t, s, cmsg(MsgRequest, 3, sid, ia), t0.Add(time.Minute))); p != a6("2001:db8:100::") {
		t.Fatalf("freed prefix not reused: %s", addrString(p))
	}
	// Renew of an unknown binding: NoBinding.
	m = handle(t, s, cmsg(MsgRenew, 9, sid, ia), t0.Add(time.Minute))
	if len(m.IAPD) != 1 || m.IAPD[0].Status == nil || m.IAPD[0].Status.Code != StatusNoBinding || m.IAPD[0].Prefixes != nil {
		t.Fatalf("Renew without binding: %+v", m)
	}
	// Rapid commit binds at once and says so.
	sol := Message{Type: MsgSolicit, XID: 5, ClientID: []byte{0, 4, 1, 2}, RapidCommit: true, IAPD: []IAPD{ia}}
	m = handle(t, s, sol.Encode(), t0.Add(time.Minute))
	if m.Type != MsgReply || !m.RapidCommit || m.DNS != nil || s.Bindings() != 4 {
		t.Fatalf("rapid commit: %+v (DNS not asked for)", m)
	}
}

func TestServerHints(t *testing.T) {
	s := newTestServer(t, nil)
	hint := func(p string, bits int) IAPD { return IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6(p), Bits: bits}}} }
	tests := []struct {
		mac  byte
		ia   IAPD
		want string
	}{
		{1, hint("2001:db8:100:500::", 56), "2001:db8:100:500::"},    // free, in the pool
		{2, hint("2001:db8:100:500::", 56), "2001:db8:100::"},        // taken: lowest free
		{3, hint("2001:db8:100:600::", 48), "2001:db8:100:100::"},    // wrong length
		{4, hint("2001:db8:200::", 56), "2001:db8:100:200::"},        // outside the pool
		{5, hint("::", 56), "2001:db8:100:300::"},                    // length only
		{6, hint("2001:db8:1ff:ff00::", 56), "2001:db8:1ff:ff00::"},  // last prefix of the pool
		{7, hint("2001:db8:100:7ab:1::", 56), "2001:db8:100:700::"},  // host bits ignored
		{8, hint("2001:db8:100:7ab:1::", 128), "2001:db8:100:400::"}, // wrong length
		{9, IAPD{IAID: 1, Prefixes: []Prefix{{Bits: 56}, {Prefix: a6("2001:db8:100:900::"), Bits: 56}}}, "2001:db8:100:900::"},
	}
	for _, tt := range tests {
		m := handle(t, s, cmsg(MsgRequest, tt.mac, s.DUID(), tt.ia), t0)
		if p := onlyPrefix(t, m); p != a6(tt.want) {
			t.Errorf("client %d: %s, want %s", tt.mac, addrString(p), tt.want)
		}
	}
}

func TestServerPoolExhausted(t *testing.T) {
	s := newTestServer(t, func(c *ServerConfig) { c.PoolBits = 55 }) // two /56
	ia := IAPD{IAID: 1}
	for mac := byte(1); mac <= 2; mac++ {
		onlyPrefix(t, handle(t, s, cmsg(MsgRequest, mac, s.DUID(), ia), t0))
	}
	for _, mt := range []MsgType{MsgSolicit, MsgRequest} {
		var sv []byte
		if mt == MsgRequest {
			sv = s.DUID()
		}
		m := handle(t, s, cmsg(mt, 3, sv, ia), t0)
		if len(m.IAPD) != 1 || m.IAPD[0].Status == nil || m.IAPD[0].Status.Code != StatusNoPrefixAvail || m.IAPD[0].Prefixes != nil {
			t.Fatalf("%v with the pool exhausted: %+v", mt, m)
		}
	}
	// A Solicit without IA_PD gets a top-level NoPrefixAvail.
	if m := handle(t, s, cmsg(MsgSolicit, 3, nil), t0); m.Status == nil || m.Status.Code != StatusNoPrefixAvail {
		t.Fatalf("Solicit without IA_PD: %+v", m)
	}
	if s.Bindings() != 2 {
		t.Fatal("bindings")
	}
}

func TestServerExpiry(t *testing.T) {
	s := newTestServer(t, nil) // valid 2h
	ia := IAPD{IAID: 1}
	onlyPrefix(t, handle(t, s, cmsg(MsgRequest, 1, s.DUID(), ia), t0))
	onlyPrefix(t, handle(t, s, cmsg(MsgRenew, 1, s.DUID(), ia), t0.Add(time.Hour))) // extends to 3h
	handle(t, s, cmsg(MsgSolicit, 2, nil, ia), t0.Add(3*time.Hour-1))
	if s.Bindings() != 1 {
		t.Fatal("binding expired early")
	}
	handle(t, s, cmsg(MsgSolicit, 2, nil, ia), t0.Add(3*time.Hour))
	if s.Bindings() != 0 {
		t.Fatal("binding outlived its valid lifetime")
	}
	m := handle(t, s, cmsg(MsgRenew, 1, s.DUID(), ia), t0.Add(3*time.Hour))
	if m.IAPD[0].Status == nil || m.IAPD[0].Status.Code != StatusNoBinding {
		t.Fatalf("Renew after expiry: %+v", m)
	}

	inf := newTestServer(t, func(c *ServerConfig) { c.Preferred, c.Valid = Infinite, Infinite })
	m = handle(t, inf, cmsg(MsgRequest, 1, inf.DUID(), ia), t0)
	if p := m.IAPD[0].Prefixes[0]; p.Valid != InfiniteLifetime || p.Preferred != InfiniteLifetime {
		t.Fatalf("infinite lifetimes sent as %+v", p)
	}
	handle(t, inf, cmsg(MsgSolicit, 2, nil, ia), t0.Add(200*365*24*time.Hour))
	if inf.Bindings() != 1 {
		t.Fatal("an infinite binding expired")
	}
}

// TestServerRebindAdopts: a server without a binding extends a free
// prefix of its pool on Rebind, and refuses others.
func TestServerRebindAdopts(t *testing.T) {
	s := newTestServer(t, nil)
	held := IAPD{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:100:4200::"), Bits: 56}}}
	if p := onlyPrefix(t, handle(t, s, cmsg(MsgRebind, 1, nil, held), t0)); p != a6("2001:db8:100:4200::") {
		t.Fatalf("adopted %s", addrString(p))
	}
	for _, ia := range []IAPD{
		held, // now someone else's
		{IAID: 1, Prefixes: []Prefix{{Prefix: a6("2001:db8:300::"), Bits: 56}}},
		{IAID: 1},
	} {
		m := handle(t, s, cmsg(MsgRebind, 2, nil, ia), t0)
		if len(m.IAPD) != 1 || m.IAPD[0].Status == nil || m.IAPD[0].Status.Code != StatusNoBinding {
			t.Fatalf("Rebind of %+v: %+v", ia, m)
		}
	}
	if s.Bindings() != 1 {
		t.Fatal("bindings")
	}
}

func TestServerIgnores(t *testing.T) {
	s := newTestServer(t, nil)
	other := DUIDLL(server2MAC)
	ia := IAPD{IAID: 1}
	tests := []struct {
		name string
		msg  []byte
	}{
		{"garbage", []byte{1, 2}},
		{"Solicit with a SERVERID", cmsg(MsgSolicit, 1, s.DUID(), ia)},
		{"Request to another server", cmsg(MsgRequest, 1, other, ia)},
		{"Request without SERVERID", cmsg(MsgRequest, 1, nil, ia)},
		{"Renew to another server", cmsg(MsgRenew, 1, other, ia)},
		{"Rebind with a SERVERID", cmsg(MsgRebind, 1, s.DUID(), ia)},
		{"Release to another server", cmsg(MsgRelease, 1, other, ia)},
		{"no CLIENTID", (&Message{Type: MsgSolicit, IAPD: []IAPD{ia}}).Encode()},
		{"Confirm", cmsg(MsgConfirm, 1, nil, ia)},
		{"Decline", cmsg(MsgDecline, 1, s.DUID(), ia)},
		{"Advertise", fixAdvertise},
		{"Reply", cmsg(MsgReply, 1, s.DUID(), ia)},
		{"Information-request for another server", cmsg(MsgInformationRequest, 1, other)},
	}
	for _, tt := range tests {
		if r := s.Handle(tt.msg, t0); r != nil {
			t.Errorf("%s: answered %x", tt.name, r)
		}
	}
	if s.Bindings() != 0 {
		t.Fatal("bindings")
	}
	// Information-request, even without CLIENTID, gets the DNS servers.
	ir := Message{Type: MsgInformationRequest, XID: 9, ORO: []uint16{OptDNSServers}}
	m := handle(t, s, ir.Encode(), t0)
	if m.Type != MsgReply || m.XID != 9 || !reflect.DeepEqual(m.DNS, []hdr.Addr6{dnsAddr}) || !bytes.Equal(m.ServerID, s.DUID()) || m.IAPD != nil {
		t.Fatalf("Information-request reply %+v", m)
	}
}

func TestNewServerErrors(t *testing.T) {
	tests := []struct {
		name string
		mod  func(c *ServerConfig)
	}{
		{"no pool length", func(c *ServerConfig) { c.PoolBits = 0 }},
		{"pool /129", func(c *ServerConfig) { c.PoolBits = 129; c.Delegate = 129 }},
		{"delegate shorter than pool", func(c *ServerConfig) { c.Delegate = 32 }},
		{"delegate /129", func(c *ServerConfig) { c.Delegate = 129 }},
		{"pool too large", func(c *ServerConfig) { c.PoolBits = 31; c.Delegate = 64 }},
		{"pool host bits", func(c *ServerConfig) { c.Pool = a6("2001:db8:100:1::") }},
		{"preferred above valid", func(c *ServerConfig) { c.Preferred = 3 * time.Hour }},
		{"negative valid", func(c *ServerConfig) { c.Valid = -1 }},
		{"negative T1", func(c *ServerConfig) { c.T1 = -1 }},
		{"T1 above T2", func(c *ServerConfig) { c.T1, c.T2 = 2*time.Hour, time.Hour }},
	}
	for _, tt := range tests {
		cfg := testServerConfig()
		tt.mod(&cfg)
		if _, err := NewServer(cfg); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	// Defaults: /56, valid 1h, preferred = valid.
	s, err := NewServer(ServerConfig{Pool: a6("2001:db8::"), PoolBits: 48})
	if err != nil {
		t.Fatal(err)
	}
	m := handle(t, s, cmsg(MsgRequest, 1, s.DUID(), IAPD{IAID: 1}), t0)
	if p := m.IAPD[0].Prefixes[0]; p.Bits != 56 || p.Valid != 3600 || p.Preferred != 3600 || m.IAPD[0].T1 != 0 {
		t.Fatalf("defaults: %+v", m.IAPD[0])
	}
}

// TestServerPrefixArithmetic: prefixAt and indexOf are inverse across
// pool and delegation lengths on both sides of the 64-bit boundary.
func TestServerPrefixArithmetic(t *testing.T) {
	tests := []struct {
		pool     string
		bits, dl int
		idx      uint64
		want     string
	}{
		{"2001:db8:100::", 40, 56, 0, "2001:db8:100::"},
		{"2001:db8:100::", 40, 56, 0xffff, "2001:db8:1ff:ff00::"},
		{"2001:db8::", 32, 64, 0xffffffff, "2001:db8:ffff:ffff::"},
		{"2001:db8::", 48, 64, 0x1234, "2001:db8:0:1234::"},
		{"2001:db8::", 56, 72, 0xab, "2001:db8::ab00:0:0:0"},
		{"2001:db8::", 60, 68, 0xff, "2001:db8:0:f:f000::"},
		{"2001:db8::", 64, 96, 0xdeadbeef, "2001:db8::dead:beef:0:0"},
		{"2001:db8::", 96, 128, 0xdeadbeef, "2001:db8::dead:beef"},
		{"2001:db8::", 120, 120, 0, "2001:db8::"},
	}
	for _, tt := range tests {
		s, err := NewServer(ServerConfig{Pool: a6(tt.pool), PoolBits: tt.bits, Delegate: tt.dl})
		if err != nil {
			t.Fatal(err)
		}
		p := s.prefixAt(tt.idx)
		if p != a6(tt.want) {
			t.Errorf("%s/%d /%d #%d: %s, want %s", tt.pool, tt.bits, tt.dl, tt.idx, addrString(p), tt.want)
		}
		if i, ok := s.indexOf(p, tt.dl); !ok || i != tt.idx {
			t.Errorf("%s/%d /%d: indexOf(%s) = %d %v", tt.pool, tt.bits, tt.dl, tt.want, i, ok)
		}
		if _, ok := s.indexOf(p, tt.dl-1); ok && tt.dl-1 >= tt.bits {
			t.Errorf("indexOf accepted /%d", tt.dl-1)
		}
	}
}
