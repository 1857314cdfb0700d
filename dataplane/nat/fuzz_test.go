package nat

import (
	"bytes"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// TestAllocs: the hot functions never allocate, on hits, misses, new
// flows, ICMP errors, hairpins and expiry.
func TestAllocs(t *testing.T) {
	cfg := baseConfig()
	cfg.Capacity = 1 << 14
	cfg.Forwards = []Forward{{Proto: hdr.ProtoTCP, ExtPort: 443, LANAddr: hostC, LANPort: 443}}
	tab := newTable(t, cfg)
	outT := build(t, tuple{proto: hdr.ProtoTCP, src: hostA, sport: 40000, dst: srv1, dport: 443, flags: hdr.TCPAck})
	outE := build(t, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: hostA, sport: 3, dst: srv1})
	mustVerdict(t, tab.Outbound(append([]byte(nil), outT...), 0), Pass, tab)
	mustVerdict(t, tab.Outbound(append([]byte(nil), outE...), 0), Pass, tab)
	inT := build(t, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 443, dst: pubA, dport: 40000, flags: hdr.TCPAck})
	inFwd := build(t, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 9, dst: pubA, dport: 443, flags: hdr.TCPSyn})
	inDrop := build(t, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 9, dst: pubA, dport: 9})
	sent := append([]byte(nil), outT...)
	tab.Outbound(sent, 0)
	icmpIn := buildICMPError(t, srv1, pubA, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded, sent)
	hp := build(t, tuple{proto: hdr.ProtoTCP, src: hostB, sport: 1234, dst: pubA, dport: 40000, flags: hdr.TCPSyn})
	// The forwarded server answers srv1:9: a forward state that the
	// forward's inbound packets refresh and its ICMP errors need.
	outFwd := build(t, tuple{proto: hdr.ProtoTCP, src: hostC, sport: 443, dst: srv1, dport: 9, flags: hdr.TCPSyn | hdr.TCPAck})
	mustVerdict(t, tab.Outbound(append([]byte(nil), outFwd...), 0), Pass, tab)
	icmpInFwd := buildICMPError(t, srv1, pubA, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded,
		build(t, tuple{proto: hdr.ProtoTCP, src: pubA, sport: 443, dst: srv1, dport: 9, flags: hdr.TCPSyn | hdr.TCPAck}))
	icmpInFwdStray := buildICMPError(t, srv2, pubA, hdr.ICMPDestUnreach, hdr.ICMPCodePortUnreach,
		build(t, tuple{proto: hdr.ProtoTCP, src: pubA, sport: 443, dst: srv2, dport: 9, flags: hdr.TCPSyn | hdr.TCPAck}))
	buf := make([]byte, 2048)
	run := func(name string, pkt []byte, f func([]byte, int64) Verdict) {
		if n := testing.AllocsPerRun(200, func() {
			copy(buf, pkt)
			f(buf[:len(pkt)], sec)
		}); n != 0 {
			t.Errorf("%s: %v allocs", name, n)
		}
	}
	run("outbound hit", outT, tab.Outbound)
	run("outbound echo", outE, tab.Outbound)
	run("inbound hit", inT, tab.Inbound)
	run("inbound forward", inFwd, tab.Inbound)
	run("inbound drop", inDrop, tab.Inbound)
	run("icmp error in", icmpIn, tab.Inbound)
	run("hairpin", hp, tab.Outbound)
	run("outbound forward", outFwd, tab.Outbound)
	run("icmp error in, forward", icmpInFwd, tab.Inbound)
	run("icmp error in, forward, untracked remote", icmpInFwdStray, tab.Inbound)
	mustVerdict(t, tab.Inbound(append([]byte(nil), icmpInFwd...), sec), Pass, tab)
	mustVerdict(t, tab.Inbound(append([]byte(nil), icmpInFwdStray...), sec), Drop, tab)
	p := uint16(0)
	newFlow := append([]byte(nil), outT...)
	if n := testing.AllocsPerRun(200, func() {
		p++
		copy(buf, newFlow)
		buf[20], buf[21] = byte(p>>8), byte(p)
		tab.Outbound(buf[:len(newFlow)], sec)
	}); n != 0 {
		t.Errorf("new flow: %v allocs", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		p++
		copy(buf, outFwd)
		buf[22], buf[23] = byte(p>>8), byte(p) // the remote port
		tab.Outbound(buf[:len(outFwd)], sec)
	}); n != 0 {
		t.Errorf("new forward state: %v allocs", n)
	}
	now := int64(0)
	if n := testing.AllocsPerRun(200, func() {
		now += 10 * sec
		tab.Expire(now*100, 64)
	}); n != 0 {
		t.Errorf("expire: %v allocs", n)
	}
}

// fuzzTable is a table with some state for the fuzzers to hit.
func fuzzTable(tb testing.TB) *Table {
	cfg := baseConfig()
	cfg.Capacity = 64
	cfg.Ports = Range{Lo: 1024, Hi: 1100}
	cfg.Forwards = []Forward{{Proto: hdr.ProtoUDP, ExtPort: 53, LANAddr: hostC, LANPort: 53}}
	tab := newTable(tb, cfg)
	for _, tu := range []tuple{
		{proto: hdr.ProtoUDP, src: hostA, sport: 1030, dst: srv1, dport: 53},
		{proto: hdr.ProtoTCP, src: hostA, sport: 1031, dst: srv1, dport: 80, flags: hdr.TCPSyn},
		{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: hostA, sport: 1032, dst: srv1},
		{proto: hdr.ProtoUDP, src: hostC, sport: 53, dst: srv1, dport: 5000}, // a forward state
	} {
		mustVerdict(tb, tab.Outbound(build(tb, tu), 0), Pass, tab)
	}
	return tab
}

// checkInvariants verifies the table's internal consistency: counters,
// reference counts, port arrays, probe reachability and the forward
// states' bound.
func checkInvariants(tb testing.TB, tab *Table) {
	tb.Helper()
	used, flows, maps, fwds := 0, 0, 0, 0
	for i := range tab.slots {
		e := &tab.slots[i]
		if e.meta == 0 {
			continue
		}
		used++
		switch e.meta & kindMask {
		case kindFlow:
			flows++
			if j := tab.findFlow(int(e.meta&0xf), e.lan, e.lport, e.rem, e.rport); j != i {
				tb.Fatalf("flow at %d found at %d", i, j)
			}
			m := tab.findMap(int(e.meta&0xf), e.lan, e.lport)
			if m < 0 || tab.slots[m].ext != e.ext {
				tb.Fatalf("flow %d without its mapping", i)
			}
		case kindFwd:
			fwds++
			pi := int(e.meta & 0xf)
			if j := tab.findFwd(pi, e.lan, e.lport, e.rem, e.rport); j != i {
				tb.Fatalf("forward state at %d found at %d", i, j)
			}
			if f := tab.fwdByLAN(pi, e.lan, e.lport); f == nil || f.ExtPort != e.ext || f.Worker != tab.cfg.Worker {
				tb.Fatalf("forward state %d of no forward of this worker", i)
			}
		case kindMap:
			maps++
			if xi := tab.px.index(e.ext); xi >= tab.px.span || tab.ports[e.meta&0xf][xi] != uint32(i)+1 {
				tb.Fatalf("mapping %d not in the port array", i)
			}
		}
	}
	if used != tab.used || uint64(flows+fwds) != tab.stats.Entries || uint64(maps) != tab.stats.Mappings ||
		uint64(fwds) != tab.stats.Forwards {
		tb.Fatalf("used %d/%d flows+forward states %d+%d/%d maps %d/%d forward states %d", used, tab.used,
			flows, fwds, tab.stats.Entries, maps, tab.stats.Mappings, tab.stats.Forwards)
	}
	if fwds > tab.fwdMax || used > tab.cfg.Capacity {
		tb.Fatalf("forward states %d (max %d), slots %d of %d", fwds, tab.fwdMax, used, tab.cfg.Capacity)
	}
}

func FuzzOutbound(f *testing.F) {
	f.Add(build(f, tuple{proto: hdr.ProtoUDP, src: hostA, sport: 1030, dst: srv2, dport: 53}))
	f.Add(build(f, tuple{proto: hdr.ProtoTCP, src: hostB, sport: 9, dst: pubA, dport: 1030, flags: hdr.TCPSyn}))
	f.Add(build(f, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: hostA, sport: 1, dst: srv1}))
	f.Add(buildICMPError(f, hostA, srv1, 3, 3, build(f, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: hostA, dport: 1030})))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab := fuzzTable(t)
		buf := append([]byte(nil), b...)
		v := tab.Outbound(buf, sec)
		// Reject and Local hand the packet on untouched (a dropped
		// hairpin may carry its half-done translation).
		if (v == Reject || v == Local) && !bytes.Equal(buf, b) {
			t.Fatalf("%v modified the packet", v)
		}
		checkInvariants(t, tab)
	})
}

func FuzzInbound(f *testing.F) {
	f.Add(build(f, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: pubA, dport: 1030}))
	f.Add(build(f, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 80, dst: pubA, dport: 1031, flags: hdr.TCPAck}))
	f.Add(build(f, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEchoReply, src: srv1, sport: 1032, dst: pubA}))
	f.Add(buildICMPError(f, srv1, pubA, 11, 0, build(f, tuple{proto: hdr.ProtoTCP, src: pubA, sport: 1031, dst: srv1, dport: 80})))
	f.Add(buildICMPError(f, srv1, pubA, 3, 4, build(f, tuple{proto: hdr.ProtoUDP, src: pubA, sport: 53, dst: srv1, dport: 5000})))
	f.Add(build(f, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 5000, dst: pubA, dport: 53}))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab := fuzzTable(t)
		buf := append([]byte(nil), b...)
		v := tab.Inbound(buf, sec)
		if v != Pass && !bytes.Equal(buf, b) {
			t.Fatalf("%v modified the packet", v)
		}
		checkInvariants(t, tab)
	})
}

// FuzzICMPError fuzzes the quoted datagram of ICMP errors in both
// directions inside valid outer headers: the translation never reads or
// writes outside the packet (the slice is cut to its exact length and
// the bytes after it are checked), and a translated error has a valid
// ICMP checksum and, when its quoted IP header is complete, a valid
// quoted IP checksum.
func FuzzICMPError(f *testing.F) {
	f.Add(uint8(3), build(f, tuple{proto: hdr.ProtoUDP, src: pubA, sport: 1030, dst: srv1, dport: 53}), false)
	f.Add(uint8(11), build(f, tuple{proto: hdr.ProtoTCP, src: pubA, sport: 1031, dst: srv1, dport: 80})[:28], false)
	f.Add(uint8(3), build(f, tuple{proto: hdr.ProtoICMP, icmp: hdr.ICMPEcho, src: pubA, sport: 1032, dst: srv1}), false)
	f.Add(uint8(3), build(f, tuple{proto: hdr.ProtoUDP, src: pubA, sport: 53, dst: srv1, dport: 5000}), false)
	f.Add(uint8(3), build(f, tuple{proto: hdr.ProtoUDP, src: srv1, sport: 53, dst: hostA, dport: 1030}), true)
	f.Add(uint8(12), build(f, tuple{proto: hdr.ProtoTCP, src: srv1, sport: 80, dst: hostA, dport: 1031}), true)
	f.Fuzz(func(t *testing.T, typ uint8, quote []byte, outbound bool) {
		if len(quote) > 1400 {
			return
		}
		tab := fuzzTable(t)
		var e []byte
		if outbound {
			e = buildICMPError(t, hostA, srv1, typ, 0, quote)
		} else {
			e = buildICMPError(t, srv1, pubA, typ, 0, quote)
		}
		// Guard bytes after the packet catch out-of-bounds writes
		// through a wider capacity.
		buf := make([]byte, len(e)+16)
		for i := range buf[len(e):] {
			buf[len(e)+i] = 0xa5
		}
		copy(buf, e)
		pkt := buf[:len(e):len(e)]
		var v Verdict
		if outbound {
			v = tab.Outbound(pkt, sec)
		} else {
			v = tab.Inbound(pkt, sec)
		}
		for _, g := range buf[len(e):] {
			if g != 0xa5 {
				t.Fatal("write past the packet")
			}
		}
		if v != Pass {
			if !bytes.Equal(pkt, e) {
				t.Fatalf("%v modified the packet", v)
			}
			return
		}
		ip := hdr.IPv4(pkt)
		if !ip.HeaderChecksumOK() {
			t.Fatal("outer IP checksum")
		}
		ic := ip.Payload()
		if hdr.Fold(hdr.Sum(ic, 0)) != 0xffff {
			t.Fatal("ICMP checksum")
		}
		if !hdr.ICMP(ic).IsError() {
			return // an echo request built by the fuzzer: a plain flow
		}
		q := ic[hdr.ICMPLen:]
		ihl := int(q[0]&0xf) * 4
		if hdr.Fold(hdr.Sum(q[:ihl], 0)) != 0xffff && hdr.Fold(hdr.Sum(quote[:ihl], 0)) == 0xffff {
			t.Fatal("quoted IP checksum broken by the translation")
		}
	})
}
