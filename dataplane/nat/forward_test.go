package nat

import (
	"bytes"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// The forward tests use TCP public:8080 -> fwdServer:80 and UDP
// public:5353 -> fwdServer:53.
var (
	fwdServer = ip4(192, 168, 5, 100)
	fwdRemote = ip4(198, 18, 0, 1)
)

func fwdConfig() Config {
	cfg := baseConfig()
	cfg.Forwards = []Forward{
		{Proto: hdr.ProtoTCP, ExtPort: 8080, LANAddr: fwdServer, LANPort: 80},
		{Proto: hdr.ProtoUDP, ExtPort: 5353, LANAddr: fwdServer, LANPort: 53},
	}
	return cfg
}

// forgedFragNeeded is an ICMP error nobody on the path sent: it quotes a
// SYN-ACK of the forward to fwdRemote:40000 and asks for an MTU of 68.
//
//	198.18.0.1 → 203.0.113.7 ICMP 56 Destination unreachable (Fragmentation needed)
//	    Type: 3, Code: 4, Checksum: 0x30e7 [correct], MTU of next hop: 68
//	    Internet Protocol Version 4, Src: 203.0.113.7, Dst: 198.18.0.1
//	        Total Length: 40, Identification: 0x0001, Flags: DF, TTL: 63, Protocol: TCP (6)
//	    Transmission Control Protocol, Src Port: 8080, Dst Port: 40000, Sequence Number: 4096
var forgedFragNeeded = []byte{
	0x45, 0x00, 0x00, 0x38, 0xbe, 0xef, 0x00, 0x00,
	0x40, 0x01, 0xb9, 0xba, 0xc6, 0x12, 0x00, 0x01,
	0xcb, 0x00, 0x71, 0x07, 0x03, 0x04, 0x30, 0xe7,
	0x00, 0x00, 0x00, 0x44, 0x45, 0x00, 0x00, 0x28,
	0x00, 0x01, 0x40, 0x00, 0x3f, 0x06, 0x39, 0xb4,
	0xcb, 0x00, 0x71, 0x07, 0xc6, 0x12, 0x00, 0x01,
	0x1f, 0x90, 0x9c, 0x40, 0x00, 0x00, 0x10, 0x00,
}

// fwdStep is a packet sent before the ICMP error: out from the LAN (the
// forwarded server) or in from the WAN, at second at.
type fwdStep struct {
	out bool
	tu  tuple
	at  int64
}

// TestForwardICMPErrorNeedsState: a WAN ICMP error quoting a port
// forward reaches the forwarded server only when that server has sent to
// the quoted remote endpoint through the WAN and the connection is still
// alive (RFC 5508 REQ-3/4); forward packets themselves pass either way.
func TestForwardICMPErrorNeedsState(t *testing.T) {
	synIn := fwdStep{false, tuple{proto: hdr.ProtoTCP, src: fwdRemote, sport: 40000, dst: pubA, dport: 8080, flags: hdr.TCPSyn}, 0}
	synAck := fwdStep{true, tuple{proto: hdr.ProtoTCP, src: fwdServer, sport: 80, dst: fwdRemote, dport: 40000, flags: hdr.TCPSyn | hdr.TCPAck}, 0}
	ackIn := fwdStep{false, tuple{proto: hdr.ProtoTCP, src: fwdRemote, sport: 40000, dst: pubA, dport: 8080, flags: hdr.TCPAck}, 0}
	queryIn := fwdStep{false, tuple{proto: hdr.ProtoUDP, src: fwdRemote, sport: 5000, dst: pubA, dport: 5353}, 0}
	answer := fwdStep{true, tuple{proto: hdr.ProtoUDP, src: fwdServer, sport: 53, dst: fwdRemote, dport: 5000}, 0}
	at := func(s fwdStep, sec int64) fwdStep { s.at = sec; return s }
	// Quotes of the forward's packets as the WAN sees them.
	tcpQuote := tuple{proto: hdr.ProtoTCP, src: pubA, sport: 8080, dst: fwdRemote, dport: 40000, flags: hdr.TCPSyn | hdr.TCPAck}
	udpQuote := tuple{proto: hdr.ProtoUDP, src: pubA, sport: 5353, dst: fwdRemote, dport: 5000}
	other := func(q tuple, rem uint32, rport uint16) tuple { q.dst, q.dport = rem, rport; return q }
	for _, tc := range []struct {
		name  string
		steps []fwdStep
		quote tuple
		code  uint8
		errAt int64 // seconds
		want  Verdict
	}{
		{"tcp: no traffic at all", nil, tcpQuote, hdr.ICMPCodePortUnreach, 1, Drop},
		{"tcp: the remote's SYN, never answered", []fwdStep{synIn}, tcpQuote, hdr.ICMPCodePortUnreach, 1, Drop},
		{"tcp: answered", []fwdStep{synIn, synAck}, tcpQuote, hdr.ICMPCodeFragNeeded, 1, Pass},
		{"tcp: answered, error quotes another remote", []fwdStep{synIn, synAck}, other(tcpQuote, ip4(198, 18, 0, 2), 40000), hdr.ICMPCodeHostUnreach, 1, Drop},
		{"tcp: answered, error quotes another remote port", []fwdStep{synIn, synAck}, other(tcpQuote, fwdRemote, 40001), hdr.ICMPCodePortUnreach, 1, Drop},
		{"tcp: answered, handshake unfinished past the transitory timer", []fwdStep{synIn, synAck}, tcpQuote, hdr.ICMPCodeFragNeeded, 241, Drop},
		{"tcp: established, an hour later", []fwdStep{synIn, synAck, ackIn}, tcpQuote, hdr.ICMPCodeFragNeeded, 3600, Pass},
		{"tcp: established, refreshed by the remote only", []fwdStep{synIn, synAck, ackIn, at(ackIn, 7000)}, tcpQuote, hdr.ICMPCodeFragNeeded, 14000, Pass},
		{"tcp: the server's lone RST tracks nothing", []fwdStep{synIn, {true, tuple{proto: hdr.ProtoTCP, src: fwdServer, sport: 80, dst: fwdRemote, dport: 40000, flags: hdr.TCPRst}, 0}}, tcpQuote, hdr.ICMPCodePortUnreach, 1, Drop},
		{"udp: the remote's query, never answered", []fwdStep{queryIn}, udpQuote, hdr.ICMPCodePortUnreach, 1, Drop},
		{"udp: answered", []fwdStep{queryIn, answer}, udpQuote, hdr.ICMPCodePortUnreach, 1, Pass},
		{"udp: the server sends first", []fwdStep{answer}, udpQuote, hdr.ICMPCodePortUnreach, 1, Pass},
		{"udp: answered, past the UDP timer", []fwdStep{queryIn, answer}, udpQuote, hdr.ICMPCodePortUnreach, 301, Drop},
		{"udp: refreshed by the remote's queries", []fwdStep{queryIn, answer, at(queryIn, 200)}, udpQuote, hdr.ICMPCodePortUnreach, 450, Pass},
		{"udp: tcp state does not cover udp", []fwdStep{synIn, synAck}, other(udpQuote, fwdRemote, 40000), hdr.ICMPCodePortUnreach, 1, Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(t, fwdConfig())
			for _, st := range tc.steps {
				var v Verdict
				var b []byte
				if st.out {
					v, b = out(t, tab, st.tu, st.at*sec)
				} else {
					v, b = in(t, tab, st.tu, st.at*sec)
				}
				mustVerdict(t, v, Pass, tab) // forwards work with or without state
				d := decode(t, b)
				if st.out && (d.src != pubA || d.sport != map[uint8]uint16{hdr.ProtoTCP: 8080, hdr.ProtoUDP: 5353}[st.tu.proto]) {
					t.Fatalf("forward reply left as %+v", d.tuple)
				}
			}
			// No sweep: the lookup itself treats an expired state as gone.
			router := ip4(100, 64, 0, 9)
			e := buildICMPError(t, router, pubA, hdr.ICMPDestUnreach, tc.code, build(t, tc.quote))
			orig := append([]byte(nil), e...)
			before := tab.Stats().Reasons[ReasonNoState]
			mustVerdict(t, tab.Inbound(e, tc.errAt*sec), tc.want, tab)
			if tc.want == Drop {
				if !bytes.Equal(e, orig) {
					t.Fatal("dropped error modified")
				}
				if tab.Stats().Reasons[ReasonNoState] != before+1 {
					t.Fatalf("reasons %v", tab.Stats().Reasons)
				}
				return
			}
			d := decode(t, e)
			wantQ := tc.quote
			wantQ.src, wantQ.sport = fwdServer, map[uint8]uint16{hdr.ProtoTCP: 80, hdr.ProtoUDP: 53}[tc.quote.proto]
			if d.dst != fwdServer || d.inner == nil || d.inner.tuple != wantQ {
				t.Fatalf("translated %+v quote %+v, want quote %+v", d.tuple, d.inner, wantQ)
			}
			checkInvariants(t, tab)
		})
	}
}

// TestForwardForgedFragNeeded: the byte-literal forged frag-needed is
// dropped, unchanged, until the server has answered the quoted remote;
// then it is translated to the server (the quote carries 8 transport
// bytes, so the check is by hand).
func TestForwardForgedFragNeeded(t *testing.T) {
	tab := newTable(t, fwdConfig())
	b := append([]byte(nil), forgedFragNeeded...)
	mustVerdict(t, tab.Inbound(b, sec), Drop, tab)
	if !bytes.Equal(b, forgedFragNeeded) {
		t.Fatal("dropped error modified")
	}
	// The remote connects: still no answer from the server.
	expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: fwdRemote, sport: 40000, dst: pubA, dport: 8080, flags: hdr.TCPSyn}, sec, Pass)
	mustVerdict(t, tab.Inbound(b, sec), Drop, tab)
	if s := tab.Stats(); s.Reasons[ReasonNoState] != 2 || s.Forwards != 0 {
		t.Fatalf("stats %+v", s)
	}
	expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: fwdServer, sport: 80, dst: fwdRemote, dport: 40000, flags: hdr.TCPSyn | hdr.TCPAck}, sec, Pass)
	mustVerdict(t, tab.Inbound(b, 2*sec), Pass, tab)
	v := hdr.IPv4(b)
	ic := hdr.ICMP(v.Payload())
	q := hdr.IPv4(ic.Inner())
	if v.Dst() != fwdServer || !v.HeaderChecksumOK() || hdr.Fold(hdr.Sum(ic, 0)) != 0xffff {
		t.Fatalf("outer %x", []byte(b))
	}
	if q.Src() != fwdServer || hdr.Ports(q[20:]).Src() != 80 || hdr.Fold(hdr.Sum(q[:20], 0)) != 0xffff {
		t.Fatalf("quote %x", []byte(q))
	}
}

// TestForwardStateBounded: however many remotes a forwarded server
// answers (a SYN flood to the forward makes it answer each), its forward
// states take at most a quarter of the table and never LAN-created
// state; its packets keep passing; unanswered floods create nothing; and
// forward states do not count toward the server's MaxPerHost.
func TestForwardStateBounded(t *testing.T) {
	const capacity = 64
	share := capacity / fwdShare
	cfg := fwdConfig()
	cfg.Capacity = capacity
	answer := func(i int) tuple {
		return tuple{proto: hdr.ProtoTCP, src: fwdServer, sport: 80, dst: ip4(198, 18, byte(i>>8), byte(i)), dport: 40000, flags: hdr.TCPSyn | hdr.TCPAck}
	}
	errAbout := func(i int) []byte {
		return buildICMPError(t, ip4(100, 64, 0, 9), pubA, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded,
			build(t, tuple{proto: hdr.ProtoTCP, src: pubA, sport: 8080, dst: ip4(198, 18, byte(i>>8), byte(i)), dport: 40000, flags: hdr.TCPSyn | hdr.TCPAck}))
	}
	// lanFill opens UDP flows from hostA:7000 until the table is full
	// and returns how many it opened.
	lanFill := func(tab *Table, now int64) int {
		n := 0
		for ; n < 2*capacity; n++ {
			v, _ := out(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 7000, dst: ip4(198, 51, 100, byte(n)), dport: 53}, now)
			if v == Reject {
				if tab.Stats().Reasons[ReasonTableFull] != 1 {
					t.Fatalf("reject: %+v", tab.Stats())
				}
				break
			}
			mustVerdict(t, v, Pass, tab)
		}
		return n
	}
	t.Run("unanswered flood", func(t *testing.T) {
		tab := newTable(t, cfg)
		for i := range 500 {
			expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: ip4(198, 18, byte(i>>8), byte(i)), sport: uint16(1024 + i), dst: pubA, dport: 8080, flags: hdr.TCPSyn}, 0, Pass)
		}
		if s := tab.Stats(); s.Slots != 0 || s.Forwards != 0 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("answered flood, then the LAN", func(t *testing.T) {
		tab := newTable(t, cfg)
		for i := range 200 {
			if d := expectOut(t, tab, answer(i), 0, Pass); d.src != pubA || d.sport != 8080 {
				t.Fatalf("answer %d left as %+v", i, d.tuple)
			}
		}
		if s := tab.Stats(); s.Forwards != uint64(share) || s.Slots != uint64(share) || s.ForwardUntracked != uint64(200-share) {
			t.Fatalf("stats %+v", s)
		}
		// Tracked remotes get their errors, untracked ones do not.
		mustVerdict(t, tab.Inbound(errAbout(0), 0), Pass, tab)
		mustVerdict(t, tab.Inbound(errAbout(share), 0), Drop, tab)
		// The LAN keeps the rest: a host slot, a mapping and flows.
		if n := lanFill(tab, 0); n != capacity-share-2 {
			t.Fatalf("LAN opened %d flows, want %d", n, capacity-share-2)
		}
		if s := tab.Stats(); s.Slots != capacity {
			t.Fatalf("stats %+v", s)
		}
		checkInvariants(t, tab)
	})
	t.Run("full LAN table, then the server answers", func(t *testing.T) {
		tab := newTable(t, cfg)
		n := lanFill(tab, 0)
		if n != capacity-2 {
			t.Fatalf("LAN opened %d flows", n)
		}
		expectOut(t, tab, answer(1), sec, Pass)
		if s := tab.Stats(); s.Forwards != 0 || s.ForwardUntracked != 1 || s.Slots != capacity {
			t.Fatalf("stats %+v", s)
		}
		// Every LAN flow is still there.
		for i := range n {
			if _, ok := tab.Lookup(hdr.ProtoUDP, hostA, 7000, ip4(198, 51, 100, byte(i)), 53, sec); !ok {
				t.Fatalf("LAN flow %d gone", i)
			}
		}
		checkInvariants(t, tab)
	})
	t.Run("the server's own flows", func(t *testing.T) {
		cfg := cfg
		cfg.MaxPerHost = 4
		tab := newTable(t, cfg)
		for i := range 10 {
			expectOut(t, tab, answer(i), 0, Pass)
		}
		for i := range cfg.MaxPerHost {
			expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: fwdServer, sport: 6000, dst: ip4(198, 51, 100, byte(i)), dport: 123}, 0, Pass)
		}
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: fwdServer, sport: 6000, dst: srv1, dport: 123}, 0, Reject)
		if s := tab.Stats(); s.Forwards != 10 || s.Entries != 10+uint64(cfg.MaxPerHost) || s.Reasons[ReasonHostLimit] != 1 {
			t.Fatalf("stats %+v", s)
		}
		// Expiry frees forward states like flows.
		if got := tab.Expire(301*sec, 2*len(tab.slots)); got != 10+cfg.MaxPerHost {
			t.Fatalf("expired %d", got)
		}
		if s := tab.Stats(); s.Slots != 0 || s.Entries != 0 || s.Forwards != 0 {
			t.Fatalf("after expiry %+v", s)
		}
	})
	t.Run("public address change flushes them", func(t *testing.T) {
		tab := newTable(t, cfg)
		expectOut(t, tab, answer(1), 0, Pass)
		tab.SetPublicAddr(pubB)
		if s := tab.Stats(); s.Forwards != 0 || s.Entries != 0 || s.Slots != 0 {
			t.Fatalf("after flush %+v", s)
		}
		checkInvariants(t, tab)
	})
}

// TestForwardReflectionUntracked: a forwarded server's answer to a LAN
// host that came through NAT reflection never crosses the WAN, so it
// creates no forward state.
func TestForwardReflectionUntracked(t *testing.T) {
	tab := newTable(t, fwdConfig())
	expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 41000, dst: pubA, dport: 8080, flags: hdr.TCPSyn}, 0, Hairpin)
	expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: fwdServer, sport: 80, dst: pubA, dport: 41000, flags: hdr.TCPSyn | hdr.TCPAck}, 0, Hairpin)
	if s := tab.Stats(); s.Forwards != 0 || s.ForwardUntracked != 0 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, tab)
}
