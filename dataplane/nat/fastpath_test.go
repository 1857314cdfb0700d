package nat

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// TestUpdateAddrPortMatchesHdr: the fixed-step checksum updates of
// snat/dnat give exactly hdr's bytes: address update (IP header), ICMP
// echo id, address update followed by port update (TCP), and the UDP
// variant with its zero rule.
func TestUpdateAddrPortMatchesHdr(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	edge16 := []uint16{0, 1, 0x7fff, 0xfffe, 0xffff}
	edge32 := []uint32{0, 1, 0xffff, 0xffff0000, 0xfffffffe, 0xffffffff}
	r16 := func() uint16 {
		if rng.IntN(4) == 0 {
			return edge16[rng.IntN(len(edge16))]
		}
		return uint16(rng.Uint32())
	}
	r32 := func() uint32 {
		if rng.IntN(4) == 0 {
			return edge32[rng.IntN(len(edge32))]
		}
		return rng.Uint32()
	}
	for range 200000 {
		c, a0, a1, p0, p1 := r16(), r32(), r32(), r16(), r16()
		if got, want := updateAddr(c, a0, a1), hdr.Update32(c, a0, a1); got != want {
			t.Fatalf("addr c %#x %#x->%#x: got %#x want %#x", c, a0, a1, got, want)
		}
		ic, ic2 := make([]byte, 8), make([]byte, 8)
		binary16(ic[2:], c)
		binary16(ic[4:], p0)
		copy(ic2, ic)
		hdr.ICMP(ic).SetID(p1)
		if setICMPID(ic2, p1); !bytes.Equal(ic, ic2) {
			t.Fatalf("ICMP id c %#x %#x->%#x: got % x want % x", c, p0, p1, ic2, ic)
		}
		want := hdr.Update16(hdr.Update32(c, a0, a1), p0, p1)
		if got := updateAddrPort(c, a0, a1, p0, p1); got != want {
			t.Fatalf("TCP c %#x addr %#x->%#x port %#x->%#x: got %#x want %#x", c, a0, a1, p0, p1, got, want)
		}
		// UDP: hdr.UDP.UpdateAddr then SetSrcPort on a present checksum.
		u := make(hdr.UDP, 8)
		u.SetChecksum(c)
		if c != 0 {
			u.UpdateAddr(a0, a1)
			binary16(u, p0)
			u.SetSrcPort(p1)
			if got := nonZero(updateAddrPort(c, a0, a1, p0, p1)); got != u.Checksum() {
				t.Fatalf("UDP c %#x addr %#x->%#x port %#x->%#x: got %#x want %#x", c, a0, a1, p0, p1, got, u.Checksum())
			}
		}
	}
}

func binary16(b []byte, v uint16) { b[0], b[1] = byte(v>>8), byte(v) }

// TestLANCacheStalePort: the per-port LAN endpoint cache keeps the old
// owner of a freed port; a packet to that port must not reach the
// endpoint's current flow (mapped on another port).
func TestLANCacheStalePort(t *testing.T) {
	cfg := baseConfig()
	cfg.Ports = Range{Lo: 2000, Hi: 2002}
	tab := newTable(t, cfg)
	if tab.lanOf[piUDP] == nil {
		t.Fatal("no LAN endpoint cache with LANBits 24")
	}
	x := tuple{proto: hdr.ProtoUDP, src: hostB, sport: 5000, dst: srv1, dport: 53}
	a := tuple{proto: hdr.ProtoUDP, src: hostA, sport: 5000, dst: srv1, dport: 53}
	if d := expectOut(t, tab, x, 0, Pass); d.sport != 2000 {
		t.Fatalf("x got port %d", d.sport)
	}
	if d := expectOut(t, tab, a, 200*sec, Pass); d.sport != 2001 {
		t.Fatalf("a got port %d", d.sport)
	}
	// The reply to a goes through the cache.
	reply := tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubA, dport: 2001}
	if d := expectIn(t, tab, reply, 201*sec, Pass); d.dst != hostA || d.dport != 5000 {
		t.Fatalf("reply %+v", d.tuple)
	}
	// x expires at 300 s, a at 501 s; a comes back on the freed 2000.
	tab.Expire(350*sec, 1<<20)
	tab.Expire(600*sec, 1<<20)
	if s := tab.Stats(); s.Entries != 0 || s.Mappings != 0 {
		t.Fatalf("not expired: %+v", s)
	}
	if d := expectOut(t, tab, a, 600*sec, Pass); d.sport != 2000 {
		t.Fatalf("a came back on port %d", d.sport)
	}
	// 2001 still names a in the cache, and a has a flow to srv1:53.
	v, b := in(t, tab, reply, 601*sec)
	mustVerdict(t, v, Drop, tab)
	if s := tab.Stats(); s.Reasons[ReasonNoMapping] != 1 {
		t.Fatalf("reasons %v", s.Reasons)
	}
	if !bytes.Equal(b, build(t, reply)) {
		t.Fatal("dropped packet modified")
	}
	reply.dport = 2000
	if d := expectIn(t, tab, reply, 602*sec, Pass); d.dst != hostA || d.dport != 5000 {
		t.Fatalf("reply %+v", d.tuple)
	}
}

// TestLANCacheDifferential runs the same random traffic through a table
// with the per-port LAN endpoint cache and one without it (the slow path
// through the mapping slot), and requires the same verdicts, bytes and
// counters. Small port range, capacity and clock jumps make ports get
// freed and reused under live remotes.
func TestLANCacheDifferential(t *testing.T) {
	hosts := []uint32{hostA, hostB, hostC, ip4(192, 168, 5, 77)}
	lports := []uint16{1000, 1001, 2000, 2003, 40000}
	remotes := []uint32{srv1, srv2}
	rports := []uint16{53, 443}
	flagSet := []uint8{hdr.TCPSyn, hdr.TCPSyn | hdr.TCPAck, hdr.TCPAck, hdr.TCPFin | hdr.TCPAck, hdr.TCPRst}
	fastHits := 0
	for run := range 20 {
		rng := rand.New(rand.NewPCG(uint64(run), 3))
		cfg := baseConfig()
		cfg.Ports = Range{Lo: 2000, Hi: 2006}
		cfg.Capacity = 10 + rng.IntN(30)
		cfg.Forwards = []Forward{{Proto: hdr.ProtoTCP, ExtPort: 2003, LANAddr: hostC, LANPort: 22}}
		if run%2 == 1 {
			cfg.Filtering = AddressDependent
		}
		fast, slow := newTable(t, cfg), newTable(t, cfg)
		slow.lanOf = [piUDP + 1][]uint32{}
		now := int64(1000) * sec
		for step := range 600 {
			if rng.IntN(15) == 0 {
				now += int64(rng.IntN(400)) * sec
			} else {
				now += int64(rng.IntN(3)) * sec
			}
			var tu tuple
			outb := rng.IntN(2) == 0
			proto := []uint8{hdr.ProtoUDP, hdr.ProtoTCP}[rng.IntN(2)]
			if outb {
				tu = tuple{proto: proto, src: hosts[rng.IntN(len(hosts))], sport: lports[rng.IntN(len(lports))],
					dst: remotes[rng.IntN(2)], dport: rports[rng.IntN(2)]}
			} else {
				tu = tuple{proto: proto, src: remotes[rng.IntN(2)], sport: rports[rng.IntN(2)],
					dst: pubA, dport: uint16(1998 + rng.IntN(10))}
			}
			if proto == hdr.ProtoTCP {
				tu.flags = flagSet[rng.IntN(len(flagSet))]
			}
			bf, bs := build(t, tu), build(t, tu)
			var vf, vs Verdict
			if outb {
				vf, vs = fast.Outbound(bf, now), slow.Outbound(bs, now)
			} else {
				before := fast.Stats().Expired
				vf, vs = fast.Inbound(bf, now), slow.Inbound(bs, now)
				if vf == Pass && fast.Stats().Expired == before {
					fastHits++
				}
			}
			desc := fmt.Sprintf("run %d step %d out=%v %+v", run, step, outb, tu)
			if vf != vs || !bytes.Equal(bf, bs) {
				t.Fatalf("%s: cached %v, uncached %v (bytes equal %v)", desc, vf, vs, bytes.Equal(bf, bs))
			}
			if fast.Stats() != slow.Stats() {
				t.Fatalf("%s: stats\n cached   %+v\n uncached %+v", desc, fast.Stats(), slow.Stats())
			}
			if rng.IntN(10) == 0 {
				fast.Expire(now, 8)
				slow.Expire(now, 8)
			}
			checkInvariants(t, fast)
		}
	}
	if fastHits < 100 {
		t.Fatalf("only %d inbound passes: the traffic does not exercise the cache", fastHits)
	}
}

// TestDifferentialWideLAN runs the model comparison of TestDifferential
// with a LAN prefix shorter than /16, where the table keeps no per-port
// LAN endpoints and Inbound always goes through the mapping slot.
func TestDifferentialWideLAN(t *testing.T) {
	runs := 12
	if testing.Short() {
		runs = 4
	}
	var cov coverage
	for run := range runs {
		rng := rand.New(rand.NewPCG(uint64(run), 77))
		nw := 1 + run%3
		cfg := Config{PublicAddr: pubA, LANAddr: lanNet &^ 0xfffff, LANBits: 12, Ports: Range{Lo: 2000, Hi: 2012}, HashSeed: uint64(run + 1),
			Capacity: 12 + rng.IntN(40), LocalPorts: Range{Lo: 700, Hi: 702},
			Forwards: []Forward{{Proto: hdr.ProtoUDP, ExtPort: 600, LANAddr: hostB, LANPort: 600}}}
		if run%2 == 1 {
			cfg.Filtering = AddressDependent
		}
		w := newWorkers(t, nw, cfg)
		if w.tabs[0].lanOf[piTCP] != nil {
			t.Fatal("LAN endpoint cache with LANBits 12")
		}
		mcfg := cfg
		mcfg.Forwards = w.tabs[0].cfg.Forwards
		m := newModel(mcfg, w.tabs[0].cfg.Ranges)
		t.Run(fmt.Sprintf("run%d-w%d", run, nw), func(t *testing.T) {
			differential(t, rng, w, m, 300, &cov)
		})
	}
	if cov.verdicts[Pass] == 0 || cov.verdicts[Drop] == 0 {
		t.Fatalf("coverage %+v", cov)
	}
}
