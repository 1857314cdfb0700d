package pppoe

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

func ipv4Packet(src, dst uint32, payload string) []byte {
	b := make([]byte, 20+len(payload))
	b[0], b[8], b[9] = 0x45, 64, hdr.ProtoUDP
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], dst)
	copy(b[20:], payload)
	hdr.IPv4(b).ComputeChecksum()
	return b
}

func TestClientServerAuth(t *testing.T) {
	for _, tc := range []struct {
		name       string
		srv, cli   AuthProto
		want       AuthProto
		vlan       uint16
		ipv6       bool
		mtuC, mtuS int
		wantMTU    int
	}{
		{name: "chap", srv: AuthCHAPMD5, cli: AuthAny, want: AuthCHAPMD5, wantMTU: 1492},
		{name: "pap", srv: AuthPAP, cli: AuthAny, want: AuthPAP, wantMTU: 1492},
		{name: "server-prefers-chap-client-only-pap", srv: AuthAny, cli: AuthPAP, want: AuthPAP, wantMTU: 1492},
		{name: "vlan7-ipv6", srv: AuthCHAPMD5, cli: AuthAny, want: AuthCHAPMD5, vlan: 7, ipv6: true, wantMTU: 1492},
		{name: "rfc4638", srv: AuthCHAPMD5, cli: AuthAny, want: AuthCHAPMD5, mtuC: 1500, mtuS: 1500, wantMTU: 1500},
		{name: "rfc4638-ac-without-tag", srv: AuthCHAPMD5, cli: AuthAny, want: AuthCHAPMD5, mtuC: 1500, mtuS: 1492, wantMTU: 1492},
		{name: "mschapv2", srv: AuthMSCHAPv2, cli: AuthAny, want: AuthMSCHAPv2, wantMTU: 1492},
		{name: "server-prefers-chap-client-only-mschapv2", srv: AuthAny, cli: AuthMSCHAPv2, want: AuthMSCHAPv2, wantMTU: 1492},
		{name: "server-mschapv2-client-chap-or-pap", srv: AuthMSCHAPv2 | AuthPAP, cli: AuthCHAPMD5 | AuthPAP, want: AuthPAP, wantMTU: 1492},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newSimPair(t, func(c *ClientConfig) {
				c.Auth, c.VLAN, c.VLANPrio, c.IPv6, c.MTU = tc.cli, tc.vlan, 5, tc.ipv6, tc.mtuC
			}, func(s *ServerConfig) {
				s.Auth, s.VLAN, s.IPv6, s.MTU = tc.srv, tc.vlan, tc.ipv6, tc.mtuS
				s.Cookie = true
			})
			p.waitUp(t, time.Minute)
			// let the RFC 4638 probe finish
			p.net.run(5*time.Second, nil)
			st := p.c.Status()
			if st.AuthProto != tc.want {
				t.Errorf("auth %v, want %v", st.AuthProto, tc.want)
			}
			if st.LocalAddr != poolLo || st.PeerAddr != srvAddr || st.DNS != [2]uint32{dns1, dns2} {
				t.Errorf("IPCP: local %s peer %s dns %s %s", ip4(st.LocalAddr), ip4(st.PeerAddr), ip4(st.DNS[0]), ip4(st.DNS[1]))
			}
			if st.MTU != tc.wantMTU || st.MaxPayload != (tc.wantMTU > 1492) {
				t.Errorf("MTU %d maxPayload %v, want %d", st.MTU, st.MaxPayload, tc.wantMTU)
			}
			s := p.c.Session()
			if s == nil || s.ID != st.SessionID || s.PeerMAC != p.sn.mac || s.LocalMAC != p.cn.mac ||
				s.VLAN != tc.vlan || s.VLANPrio != 5 || s.MTU != tc.wantMTU || s.LocalAddr != poolLo {
				t.Fatalf("published session %+v", s)
			}
			if tc.ipv6 && (st.LocalIfID == [8]byte{} || st.PeerIfID == [8]byte{} || st.LocalIfID == st.PeerIfID) {
				t.Errorf("IPv6CP interface ids %x %x", st.LocalIfID, st.PeerIfID)
			}
			// The dataplane's snapshot says whether IPv6 may cross.
			if s.IPv6 != tc.ipv6 || s.LocalIfID != st.LocalIfID || s.PeerIfID != st.PeerIfID {
				t.Errorf("published session IPv6 %v ids %x %x, want %v %x %x", s.IPv6, s.LocalIfID, s.PeerIfID, tc.ipv6, st.LocalIfID, st.PeerIfID)
			}
			sess := p.s.Sessions()
			if len(sess) != 1 || !sess[0].Up || sess[0].User != testUser || sess[0].Addr != poolLo || sess[0].ID != s.ID {
				t.Fatalf("server sessions %+v", sess)
			}
			for _, f := range p.net.framesFrom(p.cn) {
				if f.VLAN != tc.vlan || (tc.vlan != 0 && f.VLANPrio != 5) {
					t.Fatalf("client frame with vlan %d prio %d", f.VLAN, f.VLANPrio)
				}
			}
			// data both ways
			up := ipv4Packet(poolLo, 0x01020304, "hello upstream")
			if err := p.c.SendIPv4(up); err != nil {
				t.Fatal(err)
			}
			down := ipv4Packet(0x01020304, poolLo, "hello client")
			if err := p.s.SendIPv4(down); err != nil {
				t.Fatal(err)
			}
			p.net.run(time.Millisecond, nil)
			if len(p.sIn) != 1 || !bytes.Equal(p.sIn[0], up) || len(p.cIn) != 1 || !bytes.Equal(p.cIn[0], down) {
				t.Fatalf("data: server got %x, client got %x", p.sIn, p.cIn)
			}
			// Decap of the server's frame with the published session.
			f := newTestFrame(p.net.sent[len(p.net.sent)-1].b)
			if r := s.Decap(f); r != hdr.DecapIPv4 || !bytes.Equal(f.Data(), down) {
				t.Fatalf("Decap of AC data frame: %v", r)
			}
			// IPv6 from the AC: only once IPv6CP is open, framed as PPP
			// IPv6, and decapsulated as such.
			v6 := make([]byte, 48)
			v6[0], v6[5], v6[6], v6[7] = 0x60, 8, 17, 64
			err := p.s.SendIPv6(s.ID, v6)
			if !tc.ipv6 {
				if err == nil {
					t.Fatal("IPv6 sent without IPv6CP")
				}
			} else {
				p.net.run(time.Millisecond, nil)
				f = newTestFrame(p.net.sent[len(p.net.sent)-1].b)
				if err != nil || s.Decap(f) != hdr.DecapIPv6 || !bytes.Equal(f.Data(), v6) || p.s.Counters().IPv6Out != 1 {
					t.Fatalf("IPv6 from the AC: %v %x", err, p.net.sent[len(p.net.sent)-1].b)
				}
			}
			// Keepalive: a minute of echoes, all answered.
			p.net.run(time.Minute, nil)
			st = p.c.Status()
			if !p.up() || st.Counters.EchoSent < 5 || st.Counters.EchoReplies < 5 {
				t.Fatalf("echo: up %v sent %d replies %d", p.up(), st.Counters.EchoSent, st.Counters.EchoReplies)
			}
		})
	}
}

func TestWrongPasswordBackoff(t *testing.T) {
	p := newSimPair(t, func(c *ClientConfig) { c.Password = "wrong" }, nil)
	var fails []time.Time
	last := 0
	p.net.run(10*time.Minute, func() bool {
		if n := p.c.st.AuthFailures; n != last {
			last = n
			fails = append(fails, p.net.now)
		}
		return false
	})
	st := p.c.Status()
	if !strings.Contains(st.LastError, "authentication failed (CHAP): Authentication failed") {
		t.Fatalf("last error %q", st.LastError)
	}
	if p.up() || len(fails) < 3 {
		t.Fatalf("up %v, %d failures", p.up(), len(fails))
	}
	// The delay between attempts grows (10s, 20s, 40s ... with ±25% jitter).
	for i := 2; i < len(fails); i++ {
		if d0, d1 := fails[i-1].Sub(fails[i-2]), fails[i].Sub(fails[i-1]); d1 <= d0 {
			t.Fatalf("attempt %d: delay %v not longer than %v", i, d1, d0)
		}
	}
	if fails[1].Sub(fails[0]) < 7*time.Second {
		t.Fatalf("retried after %v: hammering the BRAS", fails[1].Sub(fails[0]))
	}
	if c := p.s.Counters(); c.AuthFailed != uint64(len(fails)) || c.AuthOK != 0 {
		t.Fatalf("server counters %+v for %d failures", c, len(fails))
	}
}

// TestMSCHAPv2WrongPassword: the AC answers a wrong MS-CHAPv2 response
// with Failure E=691 and the client backs off.
func TestMSCHAPv2WrongPassword(t *testing.T) {
	p := newSimPair(t, func(c *ClientConfig) { c.Password = "wrong" }, func(s *ServerConfig) { s.Auth = AuthMSCHAPv2 })
	p.net.run(2*time.Minute, nil)
	st := p.c.Status()
	if p.up() || !strings.Contains(st.LastError, "authentication failed (CHAP): E=691 R=0 C=") {
		t.Fatalf("up %v, last error %q", p.up(), st.LastError)
	}
	if c := p.s.Counters(); c.AuthFailed == 0 || c.AuthOK != 0 {
		t.Fatalf("server counters %+v", c)
	}
}

// TestMSCHAPv2BadAuthenticator: a server whose Success does not carry the
// authenticator response for our password (it does not know it: a rogue
// or misconfigured BRAS) is refused, although it said Success.
func TestMSCHAPv2BadAuthenticator(t *testing.T) {
	p := newSimPair(t, nil, func(s *ServerConfig) { s.Auth = AuthMSCHAPv2 })
	forged := 0
	p.net.drop = func(from *simNode, b []byte) bool {
		// PPPoE session, PPP CHAP, code Success: change a digit of S=.
		if from == p.sn && len(b) > 30 && b[12] == 0x88 && b[13] == 0x64 && b[20] == 0xc2 && b[21] == 0x23 && b[22] == CHAPSucc {
			if b[26] != 'S' || b[27] != '=' {
				t.Errorf("MS-CHAPv2 Success without S=: %q", b[26:])
			}
			b[28] ^= 1
			forged++
		}
		return false
	}
	p.net.run(30*time.Second, nil)
	st := p.c.Status()
	if forged == 0 || p.up() || !strings.Contains(st.LastError, "authenticator response is wrong") {
		t.Fatalf("forged %d, up %v, last error %q", forged, p.up(), st.LastError)
	}
}

// TestCHAPSuccessWithoutResponse: a CHAP Success the client did not
// answer a Challenge for in this phase (here the server's Challenges
// turned into Successes with the client's current id) authenticates
// nothing.
func TestCHAPSuccessWithoutResponse(t *testing.T) {
	for _, auth := range []AuthProto{AuthCHAPMD5, AuthMSCHAPv2} {
		p := newSimPair(t, nil, func(s *ServerConfig) { s.Auth = auth })
		forged := 0
		p.net.drop = func(from *simNode, b []byte) bool {
			if from == p.sn && len(b) > 30 && b[12] == 0x88 && b[13] == 0x64 && b[20] == 0xc2 && b[21] == 0x23 && b[22] == CHAPChal {
				b[22], b[23] = CHAPSucc, p.c.link.authID
				forged++
			}
			return false
		}
		p.net.run(10*time.Second, nil)
		if st := p.c.Status(); forged == 0 || st.AuthProto != 0 || p.up() {
			t.Fatalf("%v: %d forged Successes, client authenticated with %v, up %v", auth, forged, st.AuthProto, p.up())
		}
	}
}

func TestServerHangupReconnects(t *testing.T) {
	for _, graceful := range []bool{true, false} {
		p := newSimPair(t, nil, nil)
		p.waitUp(t, time.Minute)
		id := p.c.Session().ID
		var err error
		if graceful {
			err = p.s.Hangup(id)
		} else {
			err = p.s.Kill(id)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !p.net.run(time.Minute, func() bool { return !p.up() }) {
			t.Fatal("client did not notice the hangup")
		}
		if p.c.Session() != nil || p.published[len(p.published)-1] != nil {
			t.Fatal("session still published after hangup")
		}
		p.waitUp(t, time.Minute)
		st := p.c.Status()
		if st.Counters.Reconnects != 1 || st.Counters.SessionsUp != 2 || p.c.Session().ID == id {
			t.Fatalf("graceful=%v: reconnects %d ups %d id %#x (old %#x)", graceful, st.Counters.Reconnects, st.Counters.SessionsUp, p.c.Session().ID, id)
		}
		if !graceful && st.Counters.PADTReceived != 1 {
			t.Fatalf("PADT received %d", st.Counters.PADTReceived)
		}
		if len(p.s.Sessions()) != 1 {
			t.Fatalf("server holds %d sessions", len(p.s.Sessions()))
		}
	}
}

func TestForeignPADTIgnored(t *testing.T) {
	p := newSimPair(t, nil, nil)
	p.waitUp(t, time.Minute)
	s := p.c.Session()
	padt := func(src [6]byte, sid uint16) []byte {
		d := Discovery{Code: CodePADT, SessionID: sid}
		return d.Append(appendEthernet(nil, s.LocalMAC, src, 0, 0, hdr.EtherTypePPPoEDisc))
	}
	p.net.inject(padt([6]byte{2, 9, 9, 9, 9, 9}, s.ID)) // another AC
	p.net.inject(padt(s.PeerMAC, s.ID+1))               // another session
	p.net.run(time.Second, nil)
	if !p.up() || p.c.Status().Counters.PADTIgnored != 2 {
		t.Fatalf("up %v, ignored %d", p.up(), p.c.Status().Counters.PADTIgnored)
	}
}

func TestEchoFailureReconnects(t *testing.T) {
	p := newSimPair(t, nil, func(s *ServerConfig) { s.EchoInterval = -1 })
	p.waitUp(t, time.Minute)
	dead := true
	p.net.drop = func(from *simNode, b []byte) bool { return dead && from == p.sn }
	start := p.net.now
	if !p.net.run(2*time.Minute, func() bool { return !p.up() }) {
		t.Fatal("link not dropped while the AC is silent")
	}
	if d := p.net.now.Sub(start); d < 30*time.Second || d > 50*time.Second {
		t.Fatalf("dropped after %v, want about 4 echo intervals", d)
	}
	st := p.c.Status()
	if st.Counters.EchoTimeouts != 1 || !strings.Contains(st.LastError, "LCP echo") {
		t.Fatalf("echo timeouts %d, error %q", st.Counters.EchoTimeouts, st.LastError)
	}
	dead = false
	p.waitUp(t, 5*time.Minute)
}

func TestRFC4638ProbeFallback(t *testing.T) {
	// The AC echoes PPP-Max-Payload but the path drops baby-jumbo frames.
	p := newSimPair(t, func(c *ClientConfig) { c.MTU = 1500 }, func(s *ServerConfig) { s.MTU = 1500 })
	p.net.drop = func(_ *simNode, b []byte) bool { return len(b) > 14+8+1492 }
	p.waitUp(t, time.Minute)
	p.net.run(30*time.Second, nil)
	st := p.c.Status()
	if st.MTU != 1492 || st.MaxPayload || p.c.Session().MTU != 1492 || !strings.Contains(st.LastError, "RFC 4638") {
		t.Fatalf("MTU %d maxPayload %v error %q", st.MTU, st.MaxPayload, st.LastError)
	}
}

func TestStaleSessionPADT(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session")
	stale := persisted{SessionID: 0x1234, ACMAC: [6]byte{2, 0, 0, 0, 0, 2}, LocalMAC: [6]byte{2, 0, 0, 0, 0, 1}}
	if err := saveState(path, stale); err != nil {
		t.Fatal(err)
	}
	p := newSimPair(t, func(c *ClientConfig) { c.StatePath = path }, nil)
	p.waitUp(t, time.Minute)
	fs := p.net.framesFrom(p.cn)
	if fs[0].Code != CodePADT || fs[0].SessionID != 0x1234 || fs[0].Dst != stale.ACMAC || fs[1].Code != CodePADI {
		t.Fatalf("first frames: %v %#x, then %v", codeName(fs[0].Code), fs[0].SessionID, codeName(fs[1].Code))
	}
	got, err := loadState(path)
	if err != nil || got.SessionID != p.c.Session().ID || got.ACMAC != p.sn.mac || got.LocalMAC != p.cn.mac {
		t.Fatalf("persisted %+v, %v", got, err)
	}
	// Clean shutdown: Terminate, PADT, state removed.
	p.c.mu.Lock()
	(*clientCore)(p.c).shutdown(p.net.now)
	p.c.mu.Unlock()
	if !p.net.run(10*time.Second, func() bool { return p.c.done }) {
		t.Fatal("shutdown did not finish")
	}
	fs = p.net.framesFrom(p.cn)
	if l := fs[len(fs)-1]; l.Code != CodePADT || l.SessionID != got.SessionID {
		t.Fatalf("last frame %v", codeName(l.Code))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("state file left after clean shutdown: %v", err)
	}
	p.net.run(time.Millisecond, nil)
	if len(p.s.Sessions()) != 0 {
		t.Fatal("server still holds the session")
	}
	// A PADT for the session that just ended (pppd sends one after the
	// AC has already ended the session on LCP Terminate) is late, not
	// foreign.
	before := p.s.Counters()
	var padt []byte
	for _, f := range p.net.sent {
		if f.from == p.cn {
			if fr, err := ParseFrame(f.b); err == nil && fr.EtherType == hdr.EtherTypePPPoEDisc && fr.Code == CodePADT && fr.SessionID == got.SessionID {
				padt = f.b
			}
		}
	}
	if padt == nil {
		t.Fatal("no PADT from the client")
	}
	p.net.inject(padt)
	p.net.run(time.Millisecond, nil)
	if c := p.s.Counters(); c.PADTLate != before.PADTLate+1 || c.Dropped != before.Dropped {
		t.Fatalf("late PADT: AC counters %+v (before %+v)", c, before)
	}
}

func TestDiscoveryChoiceAndErrors(t *testing.T) {
	n := newSimNet(t)
	cn := n.conn(1)
	acs := []*Server{}
	for i, sc := range []ServerConfig{
		{ACName: "ac-small", MTU: 1492},
		{ACName: "ac-jumbo", MTU: 1500},
		{ACName: "ac-other", ServiceName: "business"},
	} {
		sc.Users, sc.LocalAddr, sc.PoolFirst, sc.PoolLast, sc.Rand = map[string]string{testUser: testPass}, srvAddr, poolLo, poolHi, n.rand
		nd := n.conn(byte(10 + i))
		s := NewServer(sc, nd)
		nd.c = (*serverCore)(s)
		acs = append(acs, s)
	}
	cc := testClientConfig(n)
	cc.MTU, cc.ServiceName = 1500, ""
	c := NewClient(cc, cn, nil)
	cn.c = (*clientCore)(c)
	n.start()
	if !n.run(time.Minute, func() bool { return c.st.State == StateUp }) {
		t.Fatalf("not up: %q", c.st.LastError)
	}
	if st := c.Status(); st.ACName != "ac-jumbo" || st.MTU != 1500 || st.Counters.PADOReceived != 3 {
		t.Fatalf("chose %q (MTU %d) among %d PADOs", st.ACName, st.MTU, st.Counters.PADOReceived)
	}
	if len(acs[0].Sessions()) != 0 || len(acs[1].Sessions()) != 1 {
		t.Fatal("session on the wrong AC")
	}

	// A service nobody offers: Service-Name-Error is reported.
	n2 := newSimNet(t)
	cn2, sn2 := n2.conn(1), n2.conn(2)
	s2 := NewServer(ServerConfig{ServiceName: "isp", Rand: n2.rand}, sn2)
	cc2 := testClientConfig(n2)
	cc2.ServiceName = "other"
	c2 := NewClient(cc2, cn2, nil)
	cn2.c, sn2.c = (*clientCore)(c2), (*serverCore)(s2)
	n2.start()
	n2.run(10*time.Second, nil)
	if st := c2.Status(); st.Counters.ServiceNameErrors == 0 || !strings.Contains(st.LastError, "Service-Name-Error") || st.State != StateDiscovery {
		t.Fatalf("state %v error %q", st.State, st.LastError)
	}
	// PADI retries back off exponentially (1s, 2s, 4s ±25%).
	var padi []time.Time
	for _, f := range n2.sent {
		if f.from == cn2 && f.b[15] == CodePADI {
			padi = append(padi, f.at)
		}
	}
	if len(padi) < 3 || padi[2].Sub(padi[1]) <= padi[1].Sub(padi[0]) {
		t.Fatalf("PADI times %v", padi)
	}
}

func TestPADRechoesCookieAndRelay(t *testing.T) {
	n := newSimNet(t)
	cn := n.conn(1)
	c := NewClient(testClientConfig(n), cn, nil)
	cn.c = (*clientCore)(c)
	n.start()
	padi, _ := ParseDiscovery(n.framesFrom(cn)[0].PPPoE)
	hu, _ := padi.Tag(TagHostUniq)
	ac := [6]byte{2, 0, 0, 0, 0, 0x77}
	pado := Discovery{Code: CodePADO, Tags: []Tag{{TagACName, []byte("bras1")}, {TagServiceName, nil},
		{TagHostUniq, hu}, {TagACCookie, []byte("cookie!")}, {TagRelaySessionID, []byte{1, 2, 3, 4}}}}
	n.inject(pado.Append(appendEthernet(nil, cn.mac, ac, 0, 0, hdr.EtherTypePPPoEDisc)))
	// A PADO with a wrong Host-Uniq is not ours.
	bad := Discovery{Code: CodePADO, Tags: []Tag{{TagACName, []byte("evil")}, {TagHostUniq, []byte("x")}}}
	n.inject(bad.Append(appendEthernet(nil, cn.mac, [6]byte{2, 6, 6, 6, 6, 6}, 0, 0, hdr.EtherTypePPPoEDisc)))
	n.run(time.Second, func() bool { return c.st.State == StateRequest })
	fs := n.framesFrom(cn)
	padr, err := ParseDiscovery(fs[len(fs)-1].PPPoE)
	if err != nil || padr.Code != CodePADR || fs[len(fs)-1].Dst != ac {
		t.Fatalf("last frame %v to %x", padr.String(), fs[len(fs)-1].Dst)
	}
	for typ, want := range map[uint16]string{TagACCookie: "cookie!", TagRelaySessionID: "\x01\x02\x03\x04", TagHostUniq: string(hu)} {
		if v, ok := padr.Tag(typ); !ok || string(v) != want {
			t.Errorf("PADR tag %#x = %q, want %q", typ, v, want)
		}
	}
}

func TestLCPRejects(t *testing.T) {
	p := newSimPair(t, nil, nil)
	p.waitUp(t, time.Minute)
	s := p.c.Session()
	sess := func(proto uint16, payload []byte) []byte {
		b := appendEthernet(nil, s.LocalMAC, s.PeerMAC, 0, 0, hdr.EtherTypePPPoESess)
		b = append(b, 0x11, 0, byte(s.ID>>8), byte(s.ID), byte((len(payload)+2)>>8), byte(len(payload)+2), byte(proto>>8), byte(proto))
		return append(b, payload...)
	}
	mark := len(p.net.sent)
	p.net.inject(sess(0x80fd, []byte{1, 1, 0, 4}))          // CCP: not supported
	p.net.inject(sess(pppLCP, []byte{0x20, 7, 0, 6, 1, 2})) // unknown LCP code
	p.net.run(time.Millisecond, nil)
	var codes []uint8
	for _, f := range p.net.sent[mark:] {
		fr, _ := ParseFrame(f.b)
		if f.from == p.cn && be16(fr.Payload) == pppLCP {
			codes = append(codes, fr.Payload[2])
			if fr.Payload[2] == ProtoRej && be16(fr.Payload[6:]) != 0x80fd {
				t.Errorf("Protocol-Reject for %#x", be16(fr.Payload[6:]))
			}
		}
	}
	if len(codes) != 2 || codes[0] != ProtoRej || codes[1] != CodeRej || !p.up() {
		t.Fatalf("replies %v, up %v", codes, p.up())
	}
}

func TestLCPReqCI(t *testing.T) {
	cfg := &linkConfig{role: roleClient, mru: 1492, auth: AuthAny, restart: time.Second, maxConfigure: 10,
		rand: func() uint64 { return 0x11223344 }}
	for _, tc := range []struct {
		name string
		req  []byte // options
		code uint8
		resp []byte // options of the reply
	}{
		{"ack mru magic chap", []byte{1, 4, 0x05, 0xd4, 3, 5, 0xc2, 0x23, 5, 5, 6, 1, 2, 3, 4}, ConfAck, nil},
		{"reject pfc acfc unknown", []byte{1, 4, 0x05, 0xd4, 7, 2, 8, 2, 0x42, 3, 9}, ConfRej, []byte{7, 2, 8, 2, 0x42, 3, 9}},
		{"nak tiny mru", []byte{1, 4, 0, 64}, ConfNak, []byte{1, 4, 0, 128}},
		{"nak chap-sha1 with chap-md5", []byte{3, 5, 0xc2, 0x23, 6}, ConfNak, []byte{3, 5, 0xc2, 0x23, 5}},
		{"nak own magic", []byte{5, 6, 0x11, 0x22, 0x33, 0x44}, ConfNak, nil},
		{"reject bad length", []byte{1, 3, 5}, ConfRej, []byte{1, 3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLink(cfg, nil, time.Time{})
			l.magic = 0x11223344
			opts, _ := ParseOptions(tc.req)
			code, out := (*lcpHandler)(l).reqCI(opts, tc.req, nil, false)
			if code != tc.code {
				t.Fatalf("code %d, want %d (reply % x)", code, tc.code, out)
			}
			want := tc.resp
			if code == ConfAck {
				want = tc.req
			}
			if want != nil && !bytes.Equal(out, want) {
				t.Fatalf("reply % x, want % x", out, want)
			}
		})
	}
}
