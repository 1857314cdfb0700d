package pppoe

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// scriptedClient starts a client alone on a sim wire (the test plays the
// AC) and returns it with its node and the Host-Uniq of its PADI.
func scriptedClient(t testing.TB, mod func(*ClientConfig)) (*simNet, *simNode, *Client, []byte) {
	n := newSimNet(t)
	cn := n.conn(1)
	cc := testClientConfig(n)
	if mod != nil {
		mod(&cc)
	}
	c := NewClient(cc, cn, nil)
	cn.c = (*clientCore)(c)
	n.start()
	padi, err := ParseDiscovery(n.framesFrom(cn)[len(n.framesFrom(cn))-1].PPPoE)
	if err != nil || padi.Code != CodePADI {
		t.Fatalf("first frame: %v", err)
	}
	hu, _ := padi.Tag(TagHostUniq)
	return n, cn, c, hu
}

func pado(dst, src [6]byte, name string, hu []byte, cookie []byte) []byte {
	d := Discovery{Code: CodePADO, Tags: []Tag{{TagACName, []byte(name)}, {TagServiceName, nil}, {TagHostUniq, hu}}}
	if cookie != nil {
		d.Tags = append(d.Tags, Tag{TagACCookie, cookie})
	}
	return d.Append(appendEthernet(nil, dst, src, 0, 0, hdr.EtherTypePPPoEDisc))
}

// TestPADOFloodCapped: a flood of PADOs during the PADO wait keeps only
// maxOffers of them; the rest are counted, and the first is still chosen.
func TestPADOFloodCapped(t *testing.T) {
	n, cn, c, hu := scriptedClient(t, nil)
	big := make([]byte, 1000)
	for i := range 200 {
		n.inject(pado(cn.mac, [6]byte{2, 0xac, 0, 0, byte(i >> 8), byte(i)}, "flood", hu, big))
	}
	n.run(time.Millisecond, nil)
	if len(c.offers) != maxOffers || c.st.Counters.OffersDropped != 200-maxOffers || c.st.Counters.PADOReceived != 200 {
		t.Fatalf("%d offers kept, %d dropped", len(c.offers), c.st.Counters.OffersDropped)
	}
	n.run(time.Second, func() bool { return c.st.State == StateRequest })
	if c.chosen.mac != [6]byte{2, 0xac, 0, 0, 0, 0} {
		t.Fatalf("chose %x", c.chosen.mac)
	}
}

// recOwner is a linkOwner that records what the link tells it.
type recOwner struct {
	sent     [][]byte // PPP protocol + packet
	finished string
	up       bool
}

func (o *recOwner) sendPPP(proto uint16, b []byte) {
	o.sent = append(o.sent, append([]byte{byte(proto >> 8), byte(proto)}, b...))
}
func (o *recOwner) linkUp()                         { o.up = true }
func (o *recOwner) linkDown()                       { o.up = false }
func (o *recOwner) linkChanged()                    {}
func (o *recOwner) linkFinished(r string, _ bool)   { o.finished = r }
func (o *recOwner) deliver(uint16, []byte)          {}
func (o *recOwner) authResult(bool, string, string) {}

// last returns the last packet sent for proto (nil: none).
func (o *recOwner) last(proto uint16) []byte {
	for i := len(o.sent) - 1; i >= 0; i-- {
		if be16(o.sent[i]) == proto {
			return o.sent[i][2:]
		}
	}
	return nil
}

func ctl(code, id uint8, opts ...byte) []byte {
	b := append([]byte{code, id, 0, 0}, opts...)
	b[3] = byte(len(b))
	return b
}

// networkLink returns a client link whose LCP is open without
// authentication and whose IPCP has sent its first Configure-Request.
func networkLink(t *testing.T, o *recOwner) *link {
	t.Helper()
	cfg := &linkConfig{role: roleClient, mru: 1492, auth: AuthAny, wantDNS: true, restart: time.Second, maxConfigure: 10,
		echoInterval: -1, authTimeout: time.Minute, rand: func() uint64 { return 0x11223344 }}
	l := newLink(cfg, o, time.Unix(1, 0))
	l.start()
	l.input(l.now, pppLCP, ctl(ConfReq, 1, 5, 6, 1, 2, 3, 4))
	l.input(l.now, pppLCP, ctl(ConfAck, l.lcp.reqID, (*lcpHandler)(l).addCI(nil)...))
	if l.phase != phaseNetwork || l.ipcp.state != stReqSent {
		t.Fatalf("phase %v, IPCP %v", l.phase, l.ipcp.state)
	}
	return l
}

// TestIPCPRefusesBadAddresses: an address in 0/8, 127/8, 224/4 or 240/4
// offered to us (Configure-Nak) or claimed by the AC (Configure-Request)
// ends the link, counted; ordinary addresses are taken.
func TestIPCPRefusesBadAddresses(t *testing.T) {
	for _, tc := range []struct {
		name string
		nak  bool // the AC Naks our address with addr (else: requests addr for itself)
		addr uint32
		ok   bool
	}{
		{"nak 10.0.0.100", true, 0x0a000064, true},
		{"nak 1.0.0.1", true, 0x01000001, true},
		{"nak 126.255.255.255", true, 0x7effffff, true},
		{"nak 223.255.255.254", true, 0xdffffffe, true},
		{"nak 0.0.0.0", true, 0, false},
		{"nak 0.1.2.3", true, 0x00010203, false},
		{"nak 127.0.0.1", true, 0x7f000001, false},
		{"nak 224.0.0.1", true, 0xe0000001, false},
		{"nak 239.255.255.255", true, 0xefffffff, false},
		{"nak 240.0.0.1", true, 0xf0000001, false},
		{"nak 255.255.255.255", true, 0xffffffff, false},
		{"peer 10.0.0.1", false, 0x0a000001, true},
		{"peer 127.0.0.1", false, 0x7f000001, false},
		{"peer 0.0.0.7", false, 0x00000007, false},
		{"peer 224.0.0.5", false, 0xe0000005, false},
		{"peer 255.255.255.255", false, 0xffffffff, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &recOwner{}
			l := networkLink(t, o)
			a := be32bytes(tc.addr)
			if tc.nak {
				l.input(l.now, pppIPCP, ctl(ConfNak, l.ipcp.reqID, append([]byte{OptIPAddress, 6}, a...)...))
			} else {
				l.input(l.now, pppIPCP, ctl(ConfReq, 9, append([]byte{OptIPAddress, 6}, a...)...))
			}
			lcp, ipcp := o.last(pppLCP), o.last(pppIPCP)
			refused := l.phase == phaseTerminate && lcp != nil && lcp[0] == TermReq
			if refused == tc.ok || (l.counters.badAddrs == 1) == tc.ok {
				t.Fatalf("refused %v (phase %v, last LCP % x), counted %d", refused, l.phase, lcp, l.counters.badAddrs)
			}
			switch {
			case tc.ok && tc.nak:
				if l.ourAddr != tc.addr || ipcp[0] != ConfReq {
					t.Fatalf("local address %s, last IPCP % x", ip4(l.ourAddr), ipcp)
				}
			case tc.ok:
				if ipcp[0] != ConfAck {
					t.Fatalf("last IPCP % x", ipcp)
				}
			default:
				if l.ourAddr != 0 || l.hisAddr != 0 || ipcp[0] != ConfReq {
					t.Fatalf("addresses %s %s, last IPCP % x (only our request)", ip4(l.ourAddr), ip4(l.hisAddr), ipcp)
				}
			}
		})
	}
}

// TestClientRefusesLoopbackPool: an AC handing out 127.0.0.5 never brings
// the session up; the refusals are counted and reported.
func TestClientRefusesLoopbackPool(t *testing.T) {
	p := newSimPair(t, nil, func(s *ServerConfig) { s.PoolFirst, s.PoolLast = 0x7f000005, 0x7f000005 })
	p.net.run(time.Minute, p.up)
	st := p.c.Status()
	if p.up() || st.Counters.BadAddresses == 0 || !strings.Contains(st.LastError, "127.0.0.5 is not a usable address") {
		t.Fatalf("up %v, bad addresses %d, last error %q", p.up(), st.Counters.BadAddresses, st.LastError)
	}
}

// TestLCPPAPDowngrade: a request for PAP is Nak'd proposing CHAP when
// Auth allows CHAP; a retransmission of it (same Identifier) is Nak'd
// again; a new request for PAP (the AC insists) is acknowledged, unless
// the client has authenticated with CHAP before: then the link closes.
func TestLCPPAPDowngrade(t *testing.T) {
	pap := []byte{OptAuthProto, 4, 0xc0, 0x23}
	for _, tc := range []struct {
		name      string
		auth      AuthProto
		refusePAP bool
		ids       []uint8 // Identifiers of the AC's PAP requests
		want      []uint8 // reply codes (0: none, the link closes)
		nak       []byte  // the Nak's option
	}{
		{"any: nak, nak the retransmission, then take pap", AuthAny, false, []uint8{1, 1, 2}, []uint8{ConfNak, ConfNak, ConfAck}, []byte{3, 5, 0xc2, 0x23, chapMD5}},
		{"mschapv2 or pap: nak with mschapv2", AuthMSCHAPv2 | AuthPAP, false, []uint8{1, 2}, []uint8{ConfNak, ConfAck}, []byte{3, 5, 0xc2, 0x23, chapMSv2}},
		{"pap only: ack at once", AuthPAP, false, []uint8{1}, []uint8{ConfAck}, nil},
		{"chap seen before: refuse", AuthAny, true, []uint8{1, 2}, []uint8{ConfNak, 0}, []byte{3, 5, 0xc2, 0x23, chapMD5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &recOwner{}
			cfg := &linkConfig{role: roleClient, mru: 1492, auth: tc.auth, restart: time.Second, maxConfigure: 10,
				echoInterval: -1, authTimeout: time.Minute, rand: func() uint64 { return 0x11223344 }, refusePAP: tc.refusePAP}
			l := newLink(cfg, o, time.Unix(1, 0))
			l.start()
			for i, id := range tc.ids {
				o.sent = nil
				l.input(l.now, pppLCP, ctl(ConfReq, id, pap...))
				var got uint8
				var reply []byte
				for _, b := range o.sent {
					if be16(b) == pppLCP && b[2] >= ConfAck && b[2] <= ConfRej {
						got, reply = b[2], b[2:]
					}
				}
				if got != tc.want[i] {
					t.Fatalf("request %d (id %d): reply % x, want code %d", i, id, reply, tc.want[i])
				}
				if got == ConfNak && !bytes.Equal(reply[4:], tc.nak) {
					t.Fatalf("Nak % x, want % x", reply[4:], tc.nak)
				}
				if got == 0 && (!l.papRefused || l.phase != phaseTerminate || o.last(pppLCP)[0] != TermReq) {
					t.Fatalf("not refused: papRefused %v phase %v", l.papRefused, l.phase)
				}
			}
			if tc.want[len(tc.want)-1] == ConfAck {
				l.input(l.now, pppLCP, ctl(ConfAck, l.lcp.reqID, (*lcpHandler)(l).addCI(nil)...))
				if l.authProto != pppPAP || l.phase != phaseAuth {
					t.Fatalf("auth %#x phase %v", l.authProto, l.phase)
				}
			}
		})
	}
}

// sentPAPRequest reports whether nd ever sent a PAP Authenticate-Request
// (the password in clear).
func sentPAPRequest(n *simNet, nd *simNode) bool {
	for _, f := range n.framesFrom(nd) {
		if f.EtherType == hdr.EtherTypePPPoESess && len(f.Payload) > 2 && be16(f.Payload) == pppPAP && f.Payload[2] == PAPReq {
			return true
		}
	}
	return false
}

// TestPAPDowngradeNak: an AC able to do CHAP that asks for PAP first is
// moved to CHAP by the client's Nak; an AC that can only do PAP gets it,
// with a warning in the log.
func TestPAPDowngradeNak(t *testing.T) {
	p := newSimPair(t, nil, func(s *ServerConfig) { s.Auth = AuthCHAPMD5 | AuthPAP })
	// The AC's first Configure-Request (for CHAP) is lost, and it asks for
	// PAP in its retransmission.
	first := true
	p.net.drop = func(from *simNode, b []byte) bool {
		if from == p.sn && first && len(b) > 22 && b[12] == 0x88 && b[13] == 0x64 && be16(b[20:]) == pppLCP && b[22] == ConfReq {
			first = false
			for _, ss := range p.s.sessions {
				ss.link.reqAuth, ss.link.reqAlg = pppPAP, 0
			}
			return true
		}
		return false
	}
	p.waitUp(t, time.Minute)
	if st := p.c.Status(); st.AuthProto != AuthCHAPMD5 || first || sentPAPRequest(p.net, p.cn) {
		t.Fatalf("auth %v (PAP asked: %v), PAP request sent %v", st.AuthProto, !first, sentPAPRequest(p.net, p.cn))
	}

	var log []string
	p = newSimPair(t, func(c *ClientConfig) {
		c.Logf = func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	}, func(s *ServerConfig) { s.Auth = AuthPAP })
	p.waitUp(t, time.Minute)
	if st := p.c.Status(); st.AuthProto != AuthPAP || !strings.Contains(strings.Join(log, "\n"), "PAP sends the password in clear") {
		t.Fatalf("auth %v, log %q", st.AuthProto, log)
	}
}

// TestPAPRefusedAfterCHAP: once an AC has authenticated the client with
// CHAP, a rogue AC that answers PADI first and wants PAP (it insists, or
// it answers the Nak for CHAP by dropping authentication, as pppd with
// require-pap does) never gets the password: the client ends that
// session (counted) and connects to the other AC.
func TestPAPRefusedAfterCHAP(t *testing.T) {
	for _, dropAuth := range []bool{false, true} {
		t.Run(map[bool]string{false: "insists", true: "drops-auth"}[dropAuth], func(t *testing.T) {
			testPAPRefusedAfterCHAP(t, dropAuth)
		})
	}
}

func testPAPRefusedAfterCHAP(t *testing.T, dropAuth bool) {
	n := newSimNet(t)
	cn := n.conn(1)
	rogueNd, realNd := n.conn(2), n.conn(3) // the rogue answers first
	newAC := func(nd *simNode, name string, auth AuthProto) *Server {
		sc := testServerConfig(n)
		sc.ACName, sc.Auth = name, auth
		sc.Users = map[string]string{testUser: "whatever"} // the rogue's guess
		if name == "real" {
			sc.Users = map[string]string{testUser: testPass}
		}
		return NewServer(sc, nd)
	}
	rogue, real := newAC(rogueNd, "rogue", AuthPAP), newAC(realNd, "real", AuthCHAPMD5)
	rogue.dropAuthOnNak = dropAuth
	realNd.c = (*serverCore)(real)
	c := NewClient(testClientConfig(n), cn, nil)
	cn.c = (*clientCore)(c)
	n.start()
	if !n.run(time.Minute, func() bool { return c.st.State == StateUp }) || c.st.AuthProto != AuthCHAPMD5 {
		t.Fatalf("not up with CHAP: %v %q", c.st.State, c.st.LastError)
	}
	// The rogue appears; the real AC drops the session.
	rogueNd.c = (*serverCore)(rogue)
	if err := real.Kill(c.st.SessionID); err != nil {
		t.Fatal(err)
	}
	if !n.run(time.Minute, func() bool { return c.st.Counters.PAPRefused > 0 }) {
		t.Fatalf("rogue not refused: state %v AC %q", c.st.State, c.st.ACName)
	}
	if !n.run(time.Minute, func() bool { return c.st.State == StateUp }) {
		t.Fatalf("not up again: %q", c.st.LastError)
	}
	st := c.Status()
	if sentPAPRequest(n, cn) || st.ACName != "real" || st.AuthProto != AuthCHAPMD5 || st.Counters.PAPRefused != 1 {
		t.Fatalf("PAP request sent %v, AC %q, auth %v, refused %d", sentPAPRequest(n, cn), st.ACName, st.AuthProto, st.Counters.PAPRefused)
	}
	if !strings.Contains(st.LastError, "refusing PAP") {
		t.Fatalf("last error %q", st.LastError)
	}
}
