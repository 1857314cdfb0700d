package dataplane

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

// TestFirewall6 walks the IPv6 firewall's rules with one and two workers:
// nothing unsolicited gets in; replies, errors quoting the host's own
// packets, echo requests and allowed ports do; state expires.
func TestFirewall6(t *testing.T) {
	server := netip.MustParseAddr("2001:db8:0:1::80").As16()
	for _, workers := range []int{1, 2} {
		r := rig6(t, workers, func(c *Config) {
			c.Allow6 = []Allow6{{Proto: hdr.ProtoTCP, Port: 443, Host: netip.MustParseAddr("::80").As16()}, {Proto: 50}}
		})
		r.e.SetNeighbor6(server, [6]byte{2, 0, 0, 0, 0, 0x80})
		down := func(p pkt6) (passed bool) {
			t.Helper()
			before := r.e.Totals()
			r.wan.Inject(0, wanFrame6(t, p))
			r.step()
			got := len(r.drainLAN())
			after := r.e.Totals()
			fw := after.Drops[DropFirewall] - before.Drops[DropFirewall]
			if got+int(fw) != 1 {
				t.Fatalf("%d workers: %d delivered, %d firewall drops for one packet (%v)", workers, got, fw, after.DropMap())
			}
			return got == 1
		}
		up := func(p pkt6) {
			t.Helper()
			r.lan.Inject(0, lanFrame6(t, p))
			r.step()
			if n := len(r.drainWAN()); n != 1 {
				t.Fatalf("uplink: %d frames (%v)", n, r.e.Totals().DropMap())
			}
		}
		udpOut := pkt6{src: host6IP, dst: remote6IP, sport: 5353, dport: 53, proto: layers.IPProtocolUDP}
		udpIn := pkt6{src: remote6IP, dst: host6IP, sport: 53, dport: 5353, proto: layers.IPProtocolUDP}
		if down(udpIn) {
			t.Fatal("unsolicited UDP got in")
		}
		// 32 flows of one pair (one owner): each reply finds its state at
		// the worker steering gives it.
		for i := uint16(0); i < 32; i++ {
			o, in := udpOut, udpIn
			o.sport, in.dport = 5000+i, 5000+i
			up(o)
			if !down(in) {
				t.Fatalf("reply %d dropped", i)
			}
			in.src = netip.MustParseAddr("2001:db8:ffff::66").As16() // another remote: no
			if down(in) {
				t.Fatalf("a packet from another remote to flow %d got in", i)
			}
		}
		// A later fragment gets in only when its first fragment did (a
		// large DNS answer): TestFW6FragmentedReply.
		raw := func(next uint8, from [16]byte) bool {
			b := make([]byte, hdr.IPv6Len+8+16)
			ip := hdr.IPv6(b)
			ip.SetHeader(next, 60, 8+16, &from, &host6IP)
			b[40], b[42], b[43] = hdr.ProtoUDP, 0x05, 0xa8 // UDP, offset 181*8, last
			before := r.e.Totals()
			r.wan.Inject(0, wanIPFrame(t, b))
			r.step()
			got := len(r.drainLAN())
			if fw := r.e.Totals().Drops[DropFirewall] - before.Drops[DropFirewall]; got+int(fw) != 1 {
				t.Fatalf("protocol %d: %d delivered, %d dropped", next, got, fw)
			}
			return got == 1
		}
		// A protocol allowed without ports (ESP, as IPsec needs) gets in;
		// one not allowed does not.
		if !raw(50, remote6IP) || raw(47, remote6IP) {
			t.Fatal("ESP (allowed) or GRE (not allowed) handled wrong")
		}
		if raw(protoFrag6, remote6IP) {
			t.Fatal("a later fragment whose first fragment never came got in")
		}
		// Flows to many remotes spread over the workers; what RSS gives
		// the wrong worker is handed over. An error about any of them
		// from a router on the path (a third address) reaches the worker
		// owning the flow it quotes.
		pathRouter := netip.MustParseAddr("2001:db8:eeee::1").As16()
		for i := 0; i < 32; i++ {
			o := pkt6{src: host6IP, dst: remote6IP, sport: 40100, dport: 443, proto: layers.IPProtocolTCP, syn: true, payload: 1300}
			o.dst[14] = byte(i)
			up(o)
			if !down(icmp6Error(t, pathRouter, host6IP, hdr.ICMP6PacketTooBig, o)) {
				t.Fatalf("packet too big from a router on the path about flow %d dropped", i)
			}
		}
		if workers == 2 && r.e.Totals().Redirected == 0 {
			t.Fatal("no uplink was handed to its flow's owner")
		}
		// Path MTU discovery: a packet too big quoting the host's packet.
		tcpOut := pkt6{src: host6IP, dst: remote6IP, sport: 40000, dport: 443, proto: layers.IPProtocolTCP, syn: true, payload: 1300}
		up(tcpOut)
		if !down(icmp6Error(t, remote6IP, host6IP, hdr.ICMP6PacketTooBig, tcpOut)) {
			t.Fatal("packet too big about the host's flow dropped")
		}
		other := tcpOut
		other.sport = 40001
		if down(icmp6Error(t, remote6IP, host6IP, hdr.ICMP6PacketTooBig, other)) {
			t.Fatal("an error about a flow the host never started got in")
		}
		if down(icmp6Error(t, remote6IP, server, hdr.ICMP6PacketTooBig, tcpOut)) {
			t.Fatal("an error about the host's flow got in to another host")
		}
		// Echo: requests in (RFC 4890), replies only to the host's own.
		if !down(pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest, echoID: 9}) {
			t.Fatal("echo request dropped")
		}
		if down(pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoReply, echoID: 7}) {
			t.Fatal("unsolicited echo reply got in")
		}
		up(pkt6{src: host6IP, dst: remote6IP, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest, echoID: 7})
		if !down(pkt6{src: remote6IP, dst: host6IP, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoReply, echoID: 7}) {
			t.Fatal("echo reply to the host's ping dropped")
		}
		// Allowed: TCP 443 to the host with interface id ::80, whatever
		// the prefix; not another port, not another host.
		if !down(pkt6{src: remote6IP, dst: server, sport: 50000, dport: 443, proto: layers.IPProtocolTCP, syn: true}) {
			t.Fatal("allowed port dropped")
		}
		if down(pkt6{src: remote6IP, dst: server, sport: 50000, dport: 22, proto: layers.IPProtocolTCP, syn: true}) ||
			down(pkt6{src: remote6IP, dst: host6IP, sport: 50000, dport: 443, proto: layers.IPProtocolTCP, syn: true}) {
			t.Fatal("a port or host not allowed got in")
		}
		// State expires: UDP after fw6UDP without traffic, not before.
		up(udpOut)
		r.clock.t += fw6UDP - 1e9
		if !down(udpIn) {
			t.Fatal("UDP state gone before its timeout")
		}
		r.clock.t += fw6UDP + 1e9
		if down(udpIn) {
			t.Fatal("UDP state outlived its timeout")
		}
		// A reset cuts TCP state short.
		rst := pkt6{src: host6IP, dst: remote6IP, sport: 41000, dport: 443, proto: layers.IPProtocolTCP}
		up(rst)
		r.clock.t += 60e9
		in := pkt6{src: remote6IP, dst: host6IP, sport: 443, dport: 41000, proto: layers.IPProtocolTCP}
		if !down(in) {
			t.Fatal("established TCP reply dropped")
		}
		rst.rst = true
		up(rst)
		r.clock.t += fw6TCPRS + 1e9
		if down(in) {
			t.Fatal("TCP state outlived a reset")
		}
	}
}

// TestFirewall6Off: with NoFirewall6 everything for the LAN prefix passes.
func TestFirewall6Off(t *testing.T) {
	r := rig6(t, 2, func(c *Config) { c.NoFirewall6 = true })
	r.wan.Inject(0, wanFrame6(t, pkt6{src: remote6IP, dst: host6IP, sport: 1, dport: 2, proto: layers.IPProtocolUDP}))
	r.step()
	if n := len(r.drainLAN()); n != 1 {
		t.Fatalf("%d delivered (%v)", n, r.e.Totals().DropMap())
	}
}

// TestFW6TableBounded: a full table keeps working: new flows replace the
// ones expiring first, lookups stay bounded, nothing allocates.
func TestFW6TableBounded(t *testing.T) {
	tb := newFW6(1024)
	key := func(i int) fw6Key {
		k := fw6Key{lan: host6IP, remote: remote6IP, lanPort: uint16(i), remotePort: uint16(i >> 16), proto: hdr.ProtoUDP}
		return k
	}
	for i := 0; i < 10000; i++ {
		k := key(i)
		tb.touch(&k, tb.hash(&k), int64(i), fw6UDP, fw6ByLAN)
	}
	if tb.evicted == 0 {
		t.Fatal("10000 flows in 1024 slots evicted nothing")
	}
	live := 0
	for i := 9000; i < 10000; i++ {
		if k := key(i); tb.lookup(&k, tb.hash(&k), 10000, 0) {
			live++
		}
	}
	if live < 900 {
		t.Fatalf("only %d of the newest 1000 flows kept", live)
	}
	k := key(1)
	if a := testing.AllocsPerRun(1000, func() {
		tb.touch(&k, tb.hash(&k), 20000, fw6UDP, fw6ByLAN)
		tb.lookup(&k, tb.hash(&k), 20000, fw6UDP)
	}); a != 0 {
		t.Fatalf("allocs %.1f", a)
	}
}

// icmp6Error builds an ICMPv6 error from src to dst quoting the packet
// described by quoted.
func icmp6Error(t *testing.T, src, dst [16]byte, typ uint8, quoted pkt6) pkt6 {
	q := serialize(t, quoted.layers(t)...)
	return pkt6{src: src, dst: dst, proto: layers.IPProtocolICMPv6, echoType: typ, raw: append([]byte{0, 0, 0x05, 0xd4}, q[:min(len(q), 1232)]...)}
}

// TestFW6HashSpread: flows between LAN hosts and remotes whose addresses
// differ in the same few bits (the end of the interface id), as they do,
// hash apart: no two of 10000 share a 32-bit hash, and a worker's table
// at 15 % load evicts nothing (the hash once combined the two addresses
// so that pairs collided and the table evicted live state). The table's
// hash is seeded: a 32-bit value repeats by chance (birthday odds about
// 1 % for 10000), so a few repeats are let be; the owner hash, not
// seeded, must have none.
func TestFW6HashSpread(t *testing.T) {
	pfx, rem := lan6Prefix, remote6IP
	seen, owner := map[uint32]bool{}, map[uint32]bool{}
	tb := newFW6(65536)
	for i := 0; i < 10000; i++ {
		h, r := pfx, rem
		binary.BigEndian.PutUint32(h[12:], 0xc0a80000|uint32(2+i%4096))
		binary.BigEndian.PutUint32(r[12:], 0xcb007100|uint32(1+i%200))
		k := fw6Key{lan: h, remote: r, lanPort: uint16(20000 + i/4096), remotePort: uint16(443 + i%7), proto: hdr.ProtoUDP}
		seen[tb.hash(&k)] = true
		owner[flowOwnerHash(&k.lan, &k.remote, k.lanPort, k.remotePort, k.proto)] = true
		tb.touch(&k, tb.hash(&k), 1, fw6UDP, fw6ByLAN)
	}
	if len(seen) < 9995 || len(owner) != 10000 {
		t.Fatalf("%d and %d distinct hashes for 10000 flows", len(seen), len(owner))
	}
	if tb.evicted != 0 {
		t.Fatalf("%d live entries evicted at 15 %% load", tb.evicted)
	}
}
