package pppoe

import (
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
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
