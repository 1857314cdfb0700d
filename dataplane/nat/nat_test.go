package nat

import (
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

func out(tb testing.TB, tab *Table, tu tuple, now int64) (Verdict, []byte) {
	tb.Helper()
	b := build(tb, tu)
	return tab.Outbound(b, now), b
}

func in(tb testing.TB, tab *Table, tu tuple, now int64) (Verdict, []byte) {
	tb.Helper()
	b := build(tb, tu)
	return tab.Inbound(b, now), b
}

// send runs a packet through the table and checks verdict and result.
func expectOut(tb testing.TB, tab *Table, tu tuple, now int64, want Verdict) decoded {
	tb.Helper()
	v, b := out(tb, tab, tu, now)
	mustVerdict(tb, v, want, tab)
	return decode(tb, b)
}

func expectIn(tb testing.TB, tab *Table, tu tuple, now int64, want Verdict) decoded {
	tb.Helper()
	v, b := in(tb, tab, tu, now)
	mustVerdict(tb, v, want, tab)
	return decode(tb, b)
}

func TestOutboundInboundTranslation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proto uint8
		flags uint8
		rflag uint8
	}{
		{"udp", hdr.ProtoUDP, 0, 0},
		{"tcp", hdr.ProtoTCP, hdr.TCPSyn, hdr.TCPSyn | hdr.TCPAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newTable(t, baseConfig())
			d := expectOut(t, tab, tuple{proto: tc.proto, src: hostA, sport: 40000, dst: srv1, dport: 53, flags: tc.flags}, 0, Pass)
			want := tuple{proto: tc.proto, src: pubA, sport: 40000, dst: srv1, dport: 53, flags: tc.flags}
			if d.tuple != want {
				t.Fatalf("outbound: got %+v want %+v (port preserved)", d.tuple, want)
			}
			d = expectIn(t, tab, tuple{proto: tc.proto, src: srv1, sport: 53, dst: pubA, dport: 40000, flags: tc.rflag}, sec, Pass)
			want = tuple{proto: tc.proto, src: srv1, sport: 53, dst: hostA, dport: 40000, flags: tc.rflag}
			if d.tuple != want {
				t.Fatalf("inbound: got %+v want %+v", d.tuple, want)
			}
			if s := tab.Stats(); s.Entries != 1 || s.Mappings != 1 || s.Allocations != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestICMPEcho(t *testing.T) {
	tab := newTable(t, baseConfig())
	// id 7 is below 1024: kept in the low share (RFC 4787 REQ-3a).
	d := expectOut(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: hostA, sport: 7, dst: srv1}, 0, Pass)
	if d.src != pubA || d.sport != 7 {
		t.Fatalf("echo out %+v", d.tuple)
	}
	ext := d.sport
	d = expectIn(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEchoReply, src: srv1, sport: ext, dst: pubA}, sec, Pass)
	if d.dst != hostA || d.sport != 7 {
		t.Fatalf("echo reply in %+v", d.tuple)
	}
	// A reply from another host does not match the flow.
	expectIn(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEchoReply, src: srv2, sport: ext, dst: pubA}, sec, Drop)
	// Pings of the router itself go to the host stack.
	expectIn(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: srv2, sport: 9, dst: pubA}, sec, Local)
	// ICMP query timer: 60 s.
	expectIn(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEchoReply, src: srv1, sport: ext, dst: pubA}, 62*sec, Drop)
	if s := tab.Stats(); s.Reasons[ReasonNoState] != 1 || s.Reasons[ReasonNoMapping] != 1 {
		t.Fatalf("reasons %v", s.Reasons)
	}
}

func TestEndpointIndependentMapping(t *testing.T) {
	tab := newTable(t, baseConfig())
	a := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv1, dport: 3478}, 0, Pass)
	b := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv2, dport: 3479}, 0, Pass)
	if a.sport != b.sport {
		t.Fatalf("mapping depends on destination: %d vs %d", a.sport, b.sport)
	}
	// Another host with the same port gets another external port, the
	// next free one of the same parity (RFC 4787 REQ-4).
	c := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostB, sport: 5000, dst: srv1, dport: 3478}, 0, Pass)
	if c.sport == a.sport || c.sport != 5002 {
		t.Fatalf("second host got %d (first %d), want the next free even port 5002", c.sport, a.sport)
	}
	// A port below 1024 is kept in the low share (RFC 4787 REQ-3a).
	d := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostC, sport: 53, dst: srv1, dport: 53}, 0, Pass)
	if d.sport != 53 {
		t.Fatalf("port 53 left as %d", d.sport)
	}
}

func TestFiltering(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Filtering
		// verdicts for: same host other port, other host
		sameAddr, otherAddr Verdict
	}{
		{"EIF", EndpointIndependent, Pass, Pass},
		{"ADF", AddressDependent, Pass, Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Filtering = tc.f
			tab := newTable(t, cfg)
			expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 6000, dst: srv1, dport: 3478}, 0, Pass)
			d := expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 9999, dst: pubA, dport: 6000}, 0, tc.sameAddr)
			if tc.sameAddr == Pass && (d.dst != hostA || d.dport != 6000) {
				t.Fatalf("got %+v", d.tuple)
			}
			expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 3478, dst: pubA, dport: 6000}, 0, tc.otherAddr)
			// Unmapped ports are always dropped.
			expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 3478, dst: pubA, dport: 6001}, 0, Drop)
			expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: srv2, sport: 3478, dst: pubA, dport: 6000, flags: hdr.TCPSyn}, 0, Drop)
			s := tab.Stats()
			if s.Reasons[ReasonNoMapping] != 2 {
				t.Fatalf("no_mapping %d", s.Reasons[ReasonNoMapping])
			}
			if tc.f == AddressDependent && s.Reasons[ReasonFiltered] != 1 {
				t.Fatalf("filtered %d", s.Reasons[ReasonFiltered])
			}
		})
	}
}

func TestUnsolicitedAndMalformed(t *testing.T) {
	tab := newTable(t, baseConfig())
	expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 1, dst: pubA, dport: 443, flags: hdr.TCPSyn}, 0, Drop)
	expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 1, dst: pubB, dport: 2000}, 0, Drop)
	expectIn(t, tab, tuple{proto: hdr.ProtoICMP, icmp: 13, src: srv1, dst: pubA}, 0, Drop)
	expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 1, dst: srv1, dport: 2}, 0, Drop) // source not in LAN
	expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 1, dst: srv1, dport: 2, flags: hdr.TCPRst}, 0, Drop)
	frag := build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 1, dst: srv1, dport: 2})
	frag[6] |= 0x20 // MF
	frag[7] = 0x10  // and an offset: a later fragment
	hdr.IPv4(frag).ComputeChecksum()
	mustVerdict(t, tab.Outbound(frag, 0), Drop, tab)
	gre := build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 1, dst: srv1, dport: 2})
	gre[9] = 47
	mustVerdict(t, tab.Outbound(gre, 0), Drop, tab)
	short := build(t, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 1, dst: srv1, dport: 2, flags: hdr.TCPSyn})
	short[2], short[3] = 0, 30 // TotalLen cuts the TCP header
	mustVerdict(t, tab.Outbound(short, 0), Drop, tab)
	s := tab.Stats()
	want := map[Reason]uint64{ReasonNoMapping: 1, ReasonNotPublic: 1, ReasonICMPType: 1, ReasonNotLAN: 1,
		ReasonNoState: 1, ReasonFragment: 1, ReasonProto: 1, ReasonMalformed: 1}
	for r, n := range want {
		if s.Reasons[r] != n {
			t.Errorf("%v: %d, want %d", r, s.Reasons[r], n)
		}
	}
	if s.Drops != 8 || s.Entries != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestIPOptionsTranslated(t *testing.T) {
	tab := newTable(t, baseConfig())
	b := build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 7000, dst: srv1, dport: 53})
	// Insert 4 bytes of options (NOP NOP NOP EOL) after the header.
	opt := append(append(append([]byte(nil), b[:20]...), 1, 1, 1, 0), b[20:]...)
	opt[0] = 0x46
	opt[3] += 4
	hdr.IPv4(opt).ComputeChecksum()
	mustVerdict(t, tab.Outbound(opt, 0), Pass, tab)
	if d := decode(t, opt); d.src != pubA || d.sport != 7000 {
		t.Fatalf("got %+v", d.tuple)
	}
}

func TestTCPTimers(t *testing.T) {
	const m = 60 * sec
	syn := func(tab *Table, now int64) {
		expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 30000, dst: srv1, dport: 80, flags: hdr.TCPSyn}, now, Pass)
	}
	reply := func(tab *Table, flags uint8, now int64, want Verdict) {
		expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 80, dst: pubA, dport: 30000, flags: flags}, now, want)
	}
	alive := func(tab *Table, now int64) bool {
		_, ok := tab.Lookup(hdr.ProtoTCP, hostA, 30000, srv1, 80, now)
		return ok
	}
	t.Run("half-open is transitory", func(t *testing.T) {
		tab := newTable(t, baseConfig())
		syn(tab, 0)
		if !alive(tab, 4*m) || alive(tab, 4*m+2*sec) {
			t.Fatal("SYN-only flow should live 4 min")
		}
	})
	t.Run("established", func(t *testing.T) {
		tab := newTable(t, baseConfig())
		syn(tab, 0)
		reply(tab, hdr.TCPSyn|hdr.TCPAck, sec, Pass)
		expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 30000, dst: srv1, dport: 80, flags: hdr.TCPAck}, 2*sec, Pass)
		est := 2*sec + (124 * m)
		if !alive(tab, est) || alive(tab, est+2*sec) {
			t.Fatal("established flow should live 2h4m")
		}
	})
	t.Run("fin and rst are transitory", func(t *testing.T) {
		for _, fl := range []uint8{hdr.TCPFin | hdr.TCPAck, hdr.TCPRst} {
			tab := newTable(t, baseConfig())
			syn(tab, 0)
			reply(tab, hdr.TCPSyn|hdr.TCPAck, sec, Pass)
			expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 30000, dst: srv1, dport: 80, flags: hdr.TCPAck}, 2*sec, Pass)
			reply(tab, fl, 3*sec, Pass)
			if !alive(tab, 3*sec+4*m) || alive(tab, 3*sec+4*m+2*sec) {
				t.Fatalf("flags %#x: closing flow should live 4 min", fl)
			}
			// Expired: the mapping is gone, replies are unsolicited.
			tab.Expire(3*sec+5*m, 1<<20)
			reply(tab, hdr.TCPAck, 3*sec+5*m, Drop)
		}
	})
	t.Run("udp 5 min, configurable, 2 min minimum", func(t *testing.T) {
		for _, to := range []time.Duration{0, 2 * time.Minute, 10 * time.Minute} {
			cfg := baseConfig()
			cfg.Timeouts.UDP = to
			tab := newTable(t, cfg)
			want := to
			if want == 0 {
				want = 5 * time.Minute
			}
			expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 1, dst: srv1, dport: 2}, 0, Pass)
			if _, ok := tab.Lookup(hdr.ProtoUDP, hostA, 1, srv1, 2, int64(want)); !ok {
				t.Fatalf("udp %v: dead at its timeout", to)
			}
			if _, ok := tab.Lookup(hdr.ProtoUDP, hostA, 1, srv1, 2, int64(want)+2*sec); ok {
				t.Fatalf("udp %v: alive after its timeout", to)
			}
		}
		cfg := baseConfig()
		cfg.Timeouts.UDP = 119 * time.Second
		if _, err := New(cfg); err == nil {
			t.Fatal("UDP timeout below 2 min accepted")
		}
	})
}

func TestTCPStateMachine(t *testing.T) {
	// Table test of tcpNext: sequence of (flags, out) -> established?, closed?
	type step struct {
		flags uint8
		out   bool
	}
	for _, tc := range []struct {
		name   string
		steps  []step
		est    bool
		closed bool
	}{
		{"syn", []step{{hdr.TCPSyn, true}}, false, false},
		{"syn synack", []step{{hdr.TCPSyn, true}, {hdr.TCPSyn | hdr.TCPAck, false}}, false, false},
		{"handshake", []step{{hdr.TCPSyn, true}, {hdr.TCPSyn | hdr.TCPAck, false}, {hdr.TCPAck, true}}, true, false},
		{"pickup both ways", []step{{hdr.TCPAck, true}, {hdr.TCPAck, false}}, true, false},
		{"one way acks", []step{{hdr.TCPAck, true}, {hdr.TCPAck, true}}, false, false},
		{"fin", []step{{hdr.TCPSyn, true}, {hdr.TCPSyn | hdr.TCPAck, false}, {hdr.TCPAck, true}, {hdr.TCPFin | hdr.TCPAck, true}}, true, true},
		{"rst", []step{{hdr.TCPSyn, true}, {hdr.TCPRst, false}}, false, true},
		{"reopen after rst", []step{{hdr.TCPSyn, true}, {hdr.TCPRst, false}, {hdr.TCPSyn, true}}, false, false},
	} {
		var st uint8
		for _, s := range tc.steps {
			st = tcpNext(st, s.flags, s.out)
		}
		if (st&stEst != 0) != tc.est || (st&stClosed != 0) != tc.closed {
			t.Errorf("%s: state %#x, want est=%v closed=%v", tc.name, st, tc.est, tc.closed)
		}
	}
}

func TestICMPErrors(t *testing.T) {
	for _, proto := range []uint8{hdr.ProtoUDP, hdr.ProtoTCP, hdr.ProtoICMP} {
		t.Run(map[uint8]string{hdr.ProtoUDP: "udp", hdr.ProtoTCP: "tcp", hdr.ProtoICMP: "echo"}[proto], func(t *testing.T) {
			tab := newTable(t, baseConfig())
			o := tuple{proto: proto, src: hostA, sport: 40000, dst: srv1, dport: 33434}
			switch proto {
			case hdr.ProtoICMP:
				o.dport, o.sport, o.icmp = 0, 5, hdr.ICMPEcho // echo id 5 -> mapped into the range
			case hdr.ProtoTCP:
				o.flags = hdr.TCPSyn
			}
			v, sent := out(t, tab, o, 0)
			mustVerdict(t, v, Pass, tab)
			sd := decode(t, sent)
			// A router on the path answers with time exceeded quoting
			// the translated packet.
			router := ip4(100, 64, 0, 1)
			e := buildICMPError(t, router, pubA, hdr.ICMPTimeExceeded, 0, sent)
			mustVerdict(t, tab.Inbound(e, sec), Pass, tab)
			d := decode(t, e)
			if d.src != router || d.dst != hostA || d.icmp != hdr.ICMPTimeExceeded {
				t.Fatalf("outer %+v", d.tuple)
			}
			want := o
			want.flags = sd.flags
			if proto == hdr.ProtoICMP {
				want.flags = 0
			}
			if d.inner == nil || d.inner.tuple != want {
				t.Fatalf("inner %+v, want %+v (translated %+v)", d.inner, want, sd.tuple)
			}
			// Errors quoting a flow that does not exist are dropped.
			o2 := o
			o2.dst = srv2
			stray := buildICMPError(t, router, pubA, hdr.ICMPDestUnreach, hdr.ICMPCodeHostUnreach, build(t, tuple{proto: proto, src: pubA, sport: sd.sport, dst: srv2, dport: o.dport, icmp: hdr.ICMPEcho}))
			mustVerdict(t, tab.Inbound(stray, sec), Drop, tab)
		})
	}
	t.Run("outbound port unreachable", func(t *testing.T) {
		tab := newTable(t, baseConfig())
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 50000, dst: srv1, dport: 3478}, 0, Pass)
		v, got := in(t, tab, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 4000, dst: pubA, dport: 50000}, sec)
		mustVerdict(t, v, Pass, tab) // EIF
		e := buildICMPError(t, hostA, srv2, hdr.ICMPDestUnreach, hdr.ICMPCodePortUnreach, got)
		mustVerdict(t, tab.Outbound(e, sec), Pass, tab)
		d := decode(t, e)
		if d.src != pubA || d.dst != srv2 {
			t.Fatalf("outer %+v", d.tuple)
		}
		want := tuple{proto: hdr.ProtoUDP, src: srv2, sport: 4000, dst: pubA, dport: 50000}
		if d.inner == nil || d.inner.tuple != want {
			t.Fatalf("inner %+v want %+v", d.inner, want)
		}
		// Without a mapping: dropped.
		e = buildICMPError(t, hostB, srv2, hdr.ICMPDestUnreach, hdr.ICMPCodePortUnreach,
			build(t, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 4000, dst: hostB, dport: 1}))
		mustVerdict(t, tab.Outbound(e, sec), Drop, tab)
	})
	t.Run("truncated quote", func(t *testing.T) {
		tab := newTable(t, baseConfig())
		_, sent := out(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 40000, dst: srv1, dport: 80, flags: hdr.TCPSyn}, 0)
		e := buildICMPError(t, srv1, pubA, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded, sent[:28])
		mustVerdict(t, tab.Inbound(e, 0), Pass, tab)
		// gopacket cannot decode the 8-byte quote; check by hand.
		ic := hdr.ICMP(hdr.IPv4(e).Payload())
		if hdr.Fold(hdr.Sum(ic, 0)) != 0xffff {
			t.Fatal("ICMP checksum")
		}
		q := hdr.IPv4(ic.Inner())
		if q.Src() != hostA || hdr.Ports(q[20:]).Src() != 40000 || hdr.Fold(hdr.Sum(q[:20], 0)) != 0xffff {
			t.Fatalf("quote %x", []byte(q))
		}
	})
}

func TestForwardsAndReflection(t *testing.T) {
	server := ip4(192, 168, 5, 100)
	cfg := baseConfig()
	cfg.Forwards = []Forward{{Proto: hdr.ProtoTCP, ExtPort: 443, LANAddr: server, LANPort: 8443}}
	tab := newTable(t, cfg)
	d := expectIn(t, tab, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 5555, dst: pubA, dport: 443, flags: hdr.TCPSyn}, 0, Pass)
	if d.dst != server || d.dport != 8443 {
		t.Fatalf("dnat %+v", d.tuple)
	}
	d = expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: server, sport: 8443, dst: srv1, dport: 5555, flags: hdr.TCPSyn | hdr.TCPAck}, 0, Pass)
	if d.src != pubA || d.sport != 443 {
		t.Fatalf("reply %+v", d.tuple)
	}
	// UDP 443 is not forwarded.
	expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 5555, dst: pubA, dport: 443}, 0, Drop)
	// NAT reflection: a LAN host uses the public address.
	d = expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 41000, dst: pubA, dport: 443, flags: hdr.TCPSyn}, 0, Hairpin)
	if d.src != pubA || d.sport != 41000 || d.dst != server || d.dport != 8443 {
		t.Fatalf("reflected %+v", d.tuple)
	}
	d = expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: server, sport: 8443, dst: pubA, dport: 41000, flags: hdr.TCPSyn | hdr.TCPAck}, 0, Hairpin)
	if d.src != pubA || d.sport != 443 || d.dst != hostA || d.dport != 41000 {
		t.Fatalf("reflected reply %+v", d.tuple)
	}
}

func TestHairpin(t *testing.T) {
	tab := newTable(t, baseConfig())
	b := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostB, sport: 7000, dst: srv1, dport: 3478}, 0, Pass)
	// A reaches B through B's public mapping; B sees A's public mapping
	// (RFC 4787 REQ-9a).
	d := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 8000, dst: pubA, dport: b.sport}, 0, Hairpin)
	if d.src != pubA || d.sport != 8000 || d.dst != hostB || d.dport != 7000 {
		t.Fatalf("hairpin %+v", d.tuple)
	}
	d = expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostB, sport: 7000, dst: pubA, dport: 8000}, 0, Hairpin)
	if d.src != pubA || d.sport != 7000 || d.dst != hostA || d.dport != 8000 {
		t.Fatalf("hairpin back %+v", d.tuple)
	}
	// Unmapped public port in the range: dropped; outside any range: Local.
	expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 8000, dst: pubA, dport: 9999}, 0, Drop)
	expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 8000, dst: pubA, dport: 22, flags: hdr.TCPSyn}, 0, Local)
	expectOut(t, tab, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: hostA, sport: 1, dst: pubA}, 0, Local)
	if s := tab.Stats(); s.Hairpins != 2 || s.Locals != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// workers builds n tables sharing a range split and forwards, and a
// dispatcher that follows Redirects like the worker loop does.
type workers struct {
	tabs   []*Table
	owners *[65536]uint8
	steer  *LANSteer
	hops   int
}

func newWorkers(tb testing.TB, n int, cfg Config) *workers {
	tb.Helper()
	ranges := Partition(n, cfg.Ports.Lo, cfg.Ports.Hi)
	AssignForwards(ranges, cfg.Forwards)
	w := &workers{owners: OwnerTable(ranges, cfg.Forwards), steer: NewLANSteer(n, cfg.Forwards)}
	for i := range ranges {
		c := cfg
		c.Worker, c.Ports, c.Ranges = i, ranges[i], ranges
		w.tabs = append(w.tabs, newTable(tb, c))
	}
	return w
}

// lan runs a LAN packet arriving at worker k, following redirects.
func (w *workers) lan(b []byte, k int, now int64) (Verdict, int) {
	for hop := 0; hop < 4; hop++ {
		v := w.tabs[k].Outbound(b, now)
		if v != Redirect {
			return v, k
		}
		w.hops++
		k = w.tabs[k].RedirectTarget()
	}
	return Redirect, k
}

// wan steers a WAN packet like the steering stage: dst port / echo id /
// embedded source port or id.
func (w *workers) wan(b []byte, now int64) (Verdict, int) {
	k := 0
	v := hdr.IPv4(b)
	if v.IsValid() && !v.IsFragment() {
		l4 := v.Payload()
		switch v.Protocol() {
		case hdr.ProtoTCP, hdr.ProtoUDP:
			if len(l4) >= 4 {
				k = int(w.owners[hdr.Ports(l4).Dst()])
			}
		case hdr.ProtoICMP:
			ic := hdr.ICMP(l4)
			if ic.IsValid() && ic.IsQuery() {
				k = int(w.owners[ic.ID()])
			} else if ic.IsValid() && ic.IsError() && len(ic.Inner()) >= 28 {
				q := ic.Inner()
				ihl := int(q[0]&0xf) * 4
				if len(q) >= ihl+8 && ihl >= 20 {
					if q[9] == hdr.ProtoICMP {
						k = int(w.owners[hdr.ICMP(q[ihl:]).ID()])
					} else {
						k = int(w.owners[hdr.Ports(q[ihl:]).Src()])
					}
				}
			}
		}
	}
	return w.tabs[k].Inbound(b, now), k
}

func TestMultiWorkerOwnership(t *testing.T) {
	server := ip4(192, 168, 5, 100)
	cfg := baseConfig()
	cfg.Forwards = []Forward{{Proto: hdr.ProtoTCP, ExtPort: 443, LANAddr: server, LANPort: 443}}
	w := newWorkers(t, 4, cfg)
	// EIM across workers: whatever worker RSS picks, one external port.
	var ext uint16
	for k := range 4 {
		for _, dst := range []uint32{srv1, srv2} {
			b := build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: dst, dport: 3478})
			v, at := w.lan(b, k, 0)
			mustVerdict(t, v, Pass, w.tabs[at])
			if want := w.steer.Owner(build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: dst, dport: 3478})); at != want {
				t.Fatalf("handled by %d, LANSteer says %d", at, want)
			}
			d := decode(t, b)
			if ext == 0 {
				ext = d.sport
			}
			if d.sport != ext || !w.tabs[at].cfg.Ports.Contains(ext) {
				t.Fatalf("worker %d dst %x: port %d, first %d", k, dst, d.sport, ext)
			}
		}
	}
	// WAN reply steered by OwnerTable reaches the owner.
	b := build(t, tuple{proto: hdr.ProtoUDP, src: srv2, sport: 3478, dst: pubA, dport: ext})
	if v, _ := w.wan(b, 0); v != Pass {
		t.Fatalf("reply verdict %v", v)
	}
	// Forward owned by its worker; the LAN reply is redirected there.
	b = build(t, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 777, dst: pubA, dport: 443, flags: hdr.TCPSyn})
	if v, k := w.wan(b, 0); v != Pass || k != cfg.Forwards[0].Worker {
		t.Fatalf("forward: %v at %d", v, k)
	}
	for k := range 4 {
		b = build(t, tuple{proto: hdr.ProtoTCP, src: server, sport: 443, dst: srv1, dport: 777, flags: hdr.TCPSyn | hdr.TCPAck})
		v, at := w.lan(b, k, 0)
		if d := decode(t, b); v != Pass || at != cfg.Forwards[0].Worker || d.sport != 443 || d.src != pubA {
			t.Fatalf("forward reply from %d: %v at %d %+v", k, v, at, d.tuple)
		}
	}
	// Hairpin between endpoints owned by different workers.
	hairpins := 0
	for port := uint16(20000); port < 20040; port++ {
		bb := build(t, tuple{proto: hdr.ProtoUDP, src: hostB, sport: port, dst: srv1, dport: 1})
		if v, _ := w.lan(bb, 0, 0); v != Pass {
			t.Fatal(v)
		}
		pb := decode(t, bb).sport
		a := build(t, tuple{proto: hdr.ProtoUDP, src: hostA, sport: port + 100, dst: pubA, dport: pb})
		v, _ := w.lan(a, 1, 0)
		d := decode(t, a)
		if v != Hairpin || d.dst != hostB || d.dport != port || d.src != pubA {
			t.Fatalf("hairpin %v %+v", v, d.tuple)
		}
		back := build(t, tuple{proto: hdr.ProtoUDP, src: hostB, sport: port, dst: pubA, dport: d.sport})
		v, _ = w.lan(back, 2, 0)
		d2 := decode(t, back)
		if v != Hairpin || d2.dst != hostA || d2.dport != port+100 || d2.sport != pb {
			t.Fatalf("hairpin back %v %+v", v, d2.tuple)
		}
		hairpins++
	}
	if w.hops == 0 {
		t.Fatal("no redirect exercised")
	}
}

func TestLimits(t *testing.T) {
	t.Run("capacity", func(t *testing.T) {
		cfg := baseConfig()
		cfg.Capacity = 16
		tab := newTable(t, cfg)
		// Each new UDP socket: mapping + flow (+ one host slot).
		n := 0
		for p := uint16(2000); ; p++ {
			v, _ := out(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: p, dst: srv1, dport: 53}, 0)
			if v == Reject {
				break
			}
			mustVerdict(t, v, Pass, tab)
			n++
			if n > 16 {
				t.Fatal("capacity not enforced")
			}
		}
		if s := tab.Stats(); n != 7 || s.Slots != 15 || s.Reasons[ReasonTableFull] != 1 {
			t.Fatalf("n=%d stats %+v", n, s)
		}
		// Existing flows keep working in both directions.
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 2000, dst: srv1, dport: 53}, 0, Pass)
		expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubA, dport: 2003}, 0, Pass)
		// A new flow of an existing mapping needs one slot: fits.
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 2000, dst: srv2, dport: 53}, 0, Pass)
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 2000, dst: srv2, dport: 54}, 0, Reject)
	})
	t.Run("per host", func(t *testing.T) {
		cfg := baseConfig()
		cfg.MaxPerHost = 3
		tab := newTable(t, cfg)
		for p := uint16(1); p <= 3; p++ {
			expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 3000 + p, dst: srv1, dport: 80, flags: hdr.TCPSyn}, 0, Pass)
		}
		v, b := out(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 3009, dst: srv1, dport: 80, flags: hdr.TCPSyn}, 0)
		mustVerdict(t, v, Reject, tab)
		if d := decode(t, b); d.src != hostA || d.sport != 3009 {
			t.Fatal("rejected packet modified")
		}
		expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostB, sport: 3009, dst: srv1, dport: 80, flags: hdr.TCPSyn}, 0, Pass)
		expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 3001, dst: srv1, dport: 80, flags: hdr.TCPAck}, 0, Pass)
		if s := tab.Stats(); s.Reasons[ReasonHostLimit] != 1 || s.Rejects != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("ports exhausted", func(t *testing.T) {
		cfg := baseConfig()
		cfg.Ports = Range{Lo: 4000, Hi: 4004}
		tab := newTable(t, cfg)
		for p := uint16(5001); p <= 5004; p++ {
			expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: p, dst: srv1, dport: 80}, 0, Pass)
		}
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5009, dst: srv1, dport: 80}, 0, Reject)
		// TCP has its own port space.
		expectOut(t, tab, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 5009, dst: srv1, dport: 80, flags: hdr.TCPSyn}, 0, Pass)
		if s := tab.Stats(); s.Reasons[ReasonPortsExhausted] != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("memory bound", func(t *testing.T) {
		cfg := baseConfig()
		cfg.Capacity = 1 << 20
		cfg.MaxBytes = 4 << 20
		tab := newTable(t, cfg)
		if tab.MemoryBytes() > cfg.MaxBytes || tab.Capacity() >= cfg.Capacity || tab.Capacity() < 1000 {
			t.Fatalf("memory %d capacity %d", tab.MemoryBytes(), tab.Capacity())
		}
		cfg.MaxBytes = 1000
		if _, err := New(cfg); err == nil {
			t.Fatal("MaxBytes below the fixed part accepted")
		}
	})
}

func TestPublicAddrChange(t *testing.T) {
	tab := newTable(t, baseConfig())
	expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv1, dport: 53}, 0, Pass)
	tab.SetPublicAddr(pubA) // same address: flows kept
	expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubA, dport: 5000}, 0, Pass)
	tab.SetPublicAddr(pubB)
	if s := tab.Stats(); s.Entries != 0 || s.Mappings != 0 || s.Slots != 0 || s.Flushes != 1 {
		t.Fatalf("after flush %+v", s)
	}
	expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubA, dport: 5000}, 0, Drop)
	expectIn(t, tab, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubB, dport: 5000}, 0, Drop)
	d := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv1, dport: 53}, 0, Pass)
	if d.src != pubB || d.sport != 5000 {
		t.Fatalf("re-established %+v", d.tuple)
	}
	tab.SetPublicAddr(0)
	expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv1, dport: 53}, 0, Drop)
}

func TestExpireIncremental(t *testing.T) {
	cfg := baseConfig()
	cfg.Capacity = 3000
	tab := newTable(t, cfg)
	n := 0
	for i := range 1000 {
		h := ip4(192, 168, 5, byte(1+i%50))
		v, _ := out(t, tab, tuple{proto: hdr.ProtoUDP, src: h, sport: uint16(10000 + i), dst: srv1, dport: uint16(i)}, 0)
		mustVerdict(t, v, Pass, tab)
		n++
	}
	// Keep a quarter alive past the others' timeout.
	for i := 0; i < 1000; i += 4 {
		h := ip4(192, 168, 5, byte(1+i%50))
		expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: h, sport: uint16(10000 + i), dst: srv1, dport: uint16(i)}, 200*sec, Pass)
	}
	now := 301 * sec
	if got := tab.Expire(now, 1<<20); got != 750 {
		t.Fatalf("full sweep expired %d", got)
	}
	if s := tab.Stats(); s.Entries != 250 || s.Mappings != 250 || s.Slots != 250+250+25 {
		t.Fatalf("stats %+v", s)
	}
	// Small budgets: each call visits at most budget slots and the
	// remaining flows all go eventually.
	now = 600 * sec
	total, calls := 0, 0
	for tab.Stats().Entries > 0 {
		got := tab.Expire(now, 8)
		if got > 8 {
			t.Fatalf("expired %d with budget 8", got)
		}
		total += got
		if calls++; calls > len(tab.slots) {
			t.Fatal("sweep does not terminate")
		}
	}
	if total != 250 || tab.Stats().Slots != 0 {
		t.Fatalf("total %d stats %+v", total, tab.Stats())
	}
	// Ports are free again: port preservation works.
	d := expectOut(t, tab, tuple{proto: hdr.ProtoUDP, src: hostC, sport: 10004, dst: srv1, dport: 1}, now, Pass)
	if d.sport != 10004 {
		t.Fatalf("port %d", d.sport)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"empty range":   func(c *Config) { c.Ports = Range{Lo: 5, Hi: 5} },
		"tcp est short": func(c *Config) { c.Timeouts.TCPEstablished = time.Hour },
		"transitory":    func(c *Config) { c.Timeouts.TCPTransitory = time.Minute },
		"icmp":          func(c *Config) { c.Timeouts.ICMP = time.Second },
		"bad forward":   func(c *Config) { c.Forwards = []Forward{{Proto: hdr.ProtoICMP, ExtPort: 1, LANAddr: 1, LANPort: 1}} },
		"dup forward":   func(c *Config) { c.Forwards = []Forward{{6, 80, 1, 80, 0}, {6, 80, 2, 80, 0}} },
		"forward owner": func(c *Config) {
			c.Ranges = []Range{c.Ports, {Lo: 1, Hi: 1024}}
			c.Forwards = []Forward{{6, 80, 1, 80, 0}}
		},
		"ranges mismatch": func(c *Config) { c.Ranges = []Range{{Lo: 1, Hi: 2}} },
		"lan bits":        func(c *Config) { c.LANBits = 33 },
	} {
		c := baseConfig()
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOwnerTable(t *testing.T) {
	ranges := Partition(3, 1024, 65535)
	fw := []Forward{{Proto: hdr.ProtoTCP, ExtPort: 443}, {Proto: hdr.ProtoUDP, ExtPort: 443}, {Proto: hdr.ProtoTCP, ExtPort: 30000}}
	AssignForwards(ranges, fw)
	o := OwnerTable(ranges, fw)
	if fw[0].Worker != fw[1].Worker || fw[0].Worker != 443/2%3 || o[443] != uint8(fw[0].Worker) {
		t.Fatalf("forward 443: %+v owner %d", fw, o[443])
	}
	for j, r := range ranges {
		for p := 1; p < 65536; p++ {
			if (r.Contains(uint16(p)) || r.ContainsLow(uint16(p))) && o[p] != uint8(j) && p != 443 && p != 30000 {
				t.Fatalf("range %d: port %d steered to %d", j, p, o[p])
			}
		}
		if r.Contains(30000) && fw[2].Worker != j {
			t.Fatalf("forward in range %d owned by %d", j, fw[2].Worker)
		}
	}
	// EndpointOwner spreads endpoints over the workers.
	var count [3]int
	for p := range 3000 {
		count[EndpointOwner(hdr.ProtoUDP, hostA, uint16(p), 3)]++
	}
	for _, c := range count {
		if c < 800 {
			t.Fatalf("unbalanced %v", count)
		}
	}
}
