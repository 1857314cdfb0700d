package dataplane

import (
	"encoding/binary"
	"net/netip"
	"reflect"
	"testing"

	"github.com/pppfwd/pppfwd/hdr"
)

// Extension header numbers the fixtures use (RFC 8200 4).
const (
	tHopByHop = 0
	tRouting  = 43
	tFrag     = 44
	tDestOpts = 60
	tESP      = 50
	tAH       = 51
)

// ext6 is one extension header of a fixture: its type and, for options
// and routing headers, its length in 8-octet units after the first
// (hdr ext len); a fragment header takes off (in 8-octet units), more
// and id.
type ext6 struct {
	typ  uint8
	len8 uint8
	off  uint16
	more bool
	id   uint32
}

func frag6(off uint16, more bool, id uint32) ext6 {
	return ext6{typ: tFrag, off: off, more: more, id: id}
}

// ext6Packet serialises src -> dst with the extension headers exts, then the
// upper-layer protocol proto and its bytes l4 (a fragment's data for a
// later fragment). Option bodies are PadN; routing headers type 4
// (segment routing) with segments left 0.
func ext6Packet(src, dst [16]byte, exts []ext6, proto uint8, l4 []byte) []byte {
	b := make([]byte, hdr.IPv6Len, 256+len(l4))
	next := func(i int) uint8 {
		if i+1 < len(exts) {
			return exts[i+1].typ
		}
		return proto
	}
	for i, e := range exts {
		switch e.typ {
		case tFrag:
			h := make([]byte, 8)
			h[0] = next(i)
			v := e.off << 3
			if e.more {
				v |= 1
			}
			binary.BigEndian.PutUint16(h[2:], v)
			binary.BigEndian.PutUint32(h[4:], e.id)
			b = append(b, h...)
		default:
			h := make([]byte, 8*(int(e.len8)+1))
			h[0], h[1] = next(i), e.len8
			if e.typ == tRouting {
				h[2] = 4
			} else {
				h[2], h[3] = 1, byte(len(h)-4) // PadN
			}
			b = append(b, h...)
		}
	}
	b = append(b, l4...)
	first := proto
	if len(exts) > 0 {
		first = exts[0].typ
	}
	hdr.IPv6(b).SetHeader(first, 64, len(b)-hdr.IPv6Len, &src, &dst)
	return b
}

// udp6 and tcp6 are upper-layer headers (checksums are not the
// firewall's business).
func udp6(sport, dport uint16, payload int) []byte {
	b := make([]byte, 8+payload)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+payload))
	return b
}

func tcp6(sport, dport uint16, flags uint8) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	b[12], b[13] = 5<<4, flags
	binary.BigEndian.PutUint16(b[14:], 1000)
	return b
}

const (
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

func echo6(typ uint8, id uint16, payload int) []byte {
	b := make([]byte, 8+payload)
	b[0] = typ
	binary.BigEndian.PutUint16(b[4:], id)
	return b
}

// fwRig drives an IPv6 rig packet by packet: down reports whether a
// packet from the session reached the LAN (it must be delivered or
// dropped by the firewall, nothing else), up sends one from the LAN
// (it must reach the session).
type fwRig struct {
	*rig
	t       *testing.T
	workers int
}

func newFWRig(t *testing.T, workers int, mod func(*Config)) *fwRig {
	return &fwRig{rig: rig6(t, workers, mod), t: t, workers: workers}
}

func (r *fwRig) down(ip []byte) bool {
	r.t.Helper()
	before := r.e.Totals()
	r.wan.Inject(0, wanIPFrame(r.t, ip))
	r.step()
	got := len(r.drainLAN())
	after := r.e.Totals()
	fw := after.Drops[DropFirewall] - before.Drops[DropFirewall]
	if got+int(fw) != 1 {
		r.t.Fatalf("%d workers: %d delivered, %d firewall drops for one packet (%v)", r.workers, got, fw, after.DropMap())
	}
	return got == 1
}

func (r *fwRig) up(ip []byte) {
	r.t.Helper()
	eth := make([]byte, hdr.EthernetLen, hdr.EthernetLen+len(ip))
	copy(eth, routerMAC[:])
	copy(eth[6:], hostMAC[:])
	binary.BigEndian.PutUint16(eth[12:], hdr.EtherTypeIPv6)
	r.lan.Inject(0, append(eth, ip...))
	r.step()
	if n := len(r.drainWAN()); n != 1 {
		r.t.Fatalf("uplink: %d frames (%v)", n, r.e.Totals().DropMap())
	}
}

// TestFW6ExtHeaderBypass: an inbound packet is matched on the upper-layer
// protocol and ports behind its extension headers, never on the first
// next-header value. Once the host has sent one UDP datagram (plain, or
// behind a destination options header) to the remote, the remote may
// answer that flow, but a TCP SYN to port 22 is dropped however it is
// wrapped: atomic fragment, first fragment, hop-by-hop, destination
// options, routing header; so are later fragments nobody let the first
// of in, chains too long and chains cut short.
func TestFW6ExtHeaderBypass(t *testing.T) {
	other := netip.MustParseAddr("2001:db8:ffff::66").As16()
	syn22 := tcp6(40000, 22, tcpSYN)
	reply := udp6(53, 5353, 32)
	for _, workers := range []int{1, 2} {
		r := newFWRig(t, workers, nil)
		// The host talks UDP to the remote: plainly, and behind a
		// destination options header (as some stacks send).
		r.up(ext6Packet(host6IP, remote6IP, nil, hdr.ProtoUDP, udp6(5353, 53, 32)))
		r.up(ext6Packet(host6IP, remote6IP, []ext6{{typ: tDestOpts}}, hdr.ProtoUDP, udp6(5354, 53, 32)))
		r.up(ext6Packet(host6IP, remote6IP, []ext6{{typ: tHopByHop}}, hdr.ProtoUDP, udp6(5355, 53, 32)))
		nine := make([]ext6, 9)
		for i := range nine {
			nine[i] = ext6{typ: tDestOpts}
		}
		for _, c := range []struct {
			name string
			ip   []byte
			pass bool
		}{
			{"plain reply", ext6Packet(remote6IP, host6IP, nil, hdr.ProtoUDP, reply), true},
			{"reply as atomic fragment", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 1)}, hdr.ProtoUDP, reply), true},
			{"reply behind hop-by-hop", ext6Packet(remote6IP, host6IP, []ext6{{typ: tHopByHop}}, hdr.ProtoUDP, reply), true},
			{"reply behind destination options", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts, len8: 1}}, hdr.ProtoUDP, reply), true},
			{"reply behind routing", ext6Packet(remote6IP, host6IP, []ext6{{typ: tRouting, len8: 2}}, hdr.ProtoUDP, reply), true},
			{"reply to the destination-options flow", ext6Packet(remote6IP, host6IP, nil, hdr.ProtoUDP, udp6(53, 5354, 8)), true},
			{"reply to the hop-by-hop flow", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}}, hdr.ProtoUDP, udp6(53, 5355, 8)), true},
			{"reply behind eight headers", ext6Packet(remote6IP, host6IP, nine[:8], hdr.ProtoUDP, reply), true},
			{"plain SYN 22", ext6Packet(remote6IP, host6IP, nil, hdr.ProtoTCP, syn22), false},
			{"SYN 22 as atomic fragment", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 7)}, hdr.ProtoTCP, syn22), false},
			{"SYN 445 as atomic fragment", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 7)}, hdr.ProtoTCP, tcp6(40000, 445, tcpSYN)), false},
			{"SYN 22 as first fragment", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 8)}, hdr.ProtoTCP, syn22), false},
			{"SYN 22 behind hop-by-hop", ext6Packet(remote6IP, host6IP, []ext6{{typ: tHopByHop}}, hdr.ProtoTCP, syn22), false},
			{"SYN 22 behind destination options", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}}, hdr.ProtoTCP, syn22), false},
			{"SYN 22 behind routing", ext6Packet(remote6IP, host6IP, []ext6{{typ: tRouting}}, hdr.ProtoTCP, syn22), false},
			{"SYN 22 behind options and fragment", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}, frag6(0, false, 9)}, hdr.ProtoTCP, syn22), false},
			{"reply from another remote", ext6Packet(other, host6IP, []ext6{frag6(0, false, 1)}, hdr.ProtoUDP, reply), false},
			{"later fragment, no first", ext6Packet(remote6IP, host6IP, []ext6{frag6(100, false, 77)}, hdr.ProtoTCP, syn22), false},
			{"later fragment behind options, no first", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}, frag6(1, true, 78)}, hdr.ProtoUDP, reply), false},
			{"reply behind nine headers", ext6Packet(remote6IP, host6IP, nine, hdr.ProtoUDP, reply), false},
			{"chain cut inside an options header", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 79)}, tDestOpts, []byte{hdr.ProtoUDP, 2, 1, 2, 0, 0, 0, 0}), false},
			{"first fragment cut inside UDP", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 80)}, hdr.ProtoUDP, reply[:6]), false},
			{"hop-by-hop not first", ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}, {typ: tHopByHop}}, hdr.ProtoUDP, reply), false},
			{"two fragment headers", ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 81), frag6(0, false, 82)}, hdr.ProtoUDP, reply), false},
		} {
			if got := r.down(c.ip); got != c.pass {
				t.Errorf("%d workers: %s: passed %v, want %v", workers, c.name, got, c.pass)
			}
		}
	}
}

// TestFW6FragmentedReply: a large UDP answer arriving in fragments gets
// in: its first fragment on the flow's ports, its later fragments by the
// identification the first recorded; later fragments of another
// datagram, of another remote or after the reassembly time do not. A
// first fragment that gets in on an allowed protocol (ESP) or as an
// echo request brings its later fragments too. Fragments the host sends
// open state for their flow.
func TestFW6FragmentedReply(t *testing.T) {
	other := netip.MustParseAddr("2001:db8:ffff::66").As16()
	for _, workers := range []int{1, 2} {
		r := newFWRig(t, workers, func(c *Config) { c.Allow6 = []Allow6{{Proto: tESP}} })
		r.up(ext6Packet(host6IP, remote6IP, nil, hdr.ProtoUDP, udp6(5353, 53, 32)))
		if !r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 0xdead0001)}, hdr.ProtoUDP, udp6(53, 5353, 1224))) {
			t.Fatal("first fragment of the answer dropped")
		}
		for _, off := range []uint16{154, 308} {
			if !r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(off, off == 154, 0xdead0001)}, hdr.ProtoUDP, make([]byte, 1232))) {
				t.Fatalf("fragment at %d of the answer dropped", off*8)
			}
		}
		if r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(154, false, 0xdead0002)}, hdr.ProtoUDP, make([]byte, 64))) {
			t.Fatal("a later fragment of another datagram got in")
		}
		if r.down(ext6Packet(other, host6IP, []ext6{frag6(154, false, 0xdead0001)}, hdr.ProtoUDP, make([]byte, 64))) {
			t.Fatal("a later fragment from another remote got in")
		}
		// A first fragment of a flow the host never started records
		// nothing.
		if r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 0xdead0003)}, hdr.ProtoUDP, udp6(53, 9999, 64))) ||
			r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(154, false, 0xdead0003)}, hdr.ProtoUDP, make([]byte, 64))) {
			t.Fatal("fragments of an unsolicited datagram got in")
		}
		// Allowed ESP and echo requests, fragmented.
		for i, first := range [][]byte{
			ext6Packet(other, host6IP, []ext6{frag6(0, true, 0xe5e5)}, tESP, make([]byte, 1232)),
			ext6Packet(other, host6IP, []ext6{frag6(0, true, 0xecec)}, hdr.ProtoICMP6, echo6(hdr.ICMP6EchoRequest, 3, 1224)),
		} {
			id := []uint32{0xe5e5, 0xecec}[i]
			if !r.down(first) || !r.down(ext6Packet(other, host6IP, []ext6{frag6(154, false, id)}, tESP, make([]byte, 64))) {
				t.Fatalf("fragmented %s dropped", []string{"ESP", "echo request"}[i])
			}
		}
		// Reassembly time (RFC 8200 4.5: 60 s) over: the record is gone.
		r.clock.t += 61e9
		if r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(308, false, 0xdead0001)}, hdr.ProtoUDP, make([]byte, 64))) {
			t.Fatal("a later fragment got in after the reassembly time")
		}
		// The host's own fragmented datagram (first fragment, then a
		// later one) opens its flow.
		r.up(ext6Packet(host6IP, remote6IP, []ext6{frag6(0, true, 0x1234)}, hdr.ProtoUDP, udp6(6000, 4433, 1224)))
		r.up(ext6Packet(host6IP, remote6IP, []ext6{frag6(154, false, 0x1234)}, hdr.ProtoUDP, make([]byte, 100)))
		if !r.down(ext6Packet(remote6IP, host6IP, nil, hdr.ProtoUDP, udp6(4433, 6000, 8))) {
			t.Fatal("reply to the host's fragmented datagram dropped")
		}
		if r.down(ext6Packet(remote6IP, host6IP, []ext6{frag6(154, false, 0x1234)}, hdr.ProtoUDP, make([]byte, 64))) {
			t.Fatal("the host's own fragment identification let a fragment in")
		}
		// An atomic fragment from the host opens its TCP flow.
		r.up(ext6Packet(host6IP, remote6IP, []ext6{frag6(0, false, 0x99)}, hdr.ProtoTCP, tcp6(40001, 443, tcpSYN)))
		if !r.down(ext6Packet(remote6IP, host6IP, nil, hdr.ProtoTCP, tcp6(443, 40001, tcpSYN|tcpACK))) {
			t.Fatal("SYN-ACK to the host's atomic-fragment SYN dropped")
		}
	}
}

// TestFW6ErrorQuoteExt: an ICMPv6 error gets in when the packet it quotes
// (whose extension headers are walked the same way) belongs to a flow
// the host started, quoted down to the ports; not when the quote behind
// a fragment header is a flow the host never started, nor when the
// quote stops before its ports.
func TestFW6ErrorQuoteExt(t *testing.T) {
	router := netip.MustParseAddr("2001:db8:eeee::1").As16()
	for _, workers := range []int{1, 2} {
		r := newFWRig(t, workers, nil)
		out := ext6Packet(host6IP, remote6IP, []ext6{{typ: tDestOpts}, frag6(0, true, 0x55)}, hdr.ProtoUDP, udp6(7000, 443, 1200))
		r.up(out)
		r.up(ext6Packet(host6IP, remote6IP, nil, hdr.ProtoUDP, udp6(7001, 53, 10)))
		ptb := func(quote []byte, exts []ext6) []byte {
			msg := make([]byte, 8, 8+len(quote))
			msg[0] = hdr.ICMP6PacketTooBig
			binary.BigEndian.PutUint32(msg[4:], 1280)
			return ext6Packet(router, host6IP, exts, hdr.ProtoICMP6, append(msg, quote[:min(len(quote), 1232)]...))
		}
		// The same flow's packet as the host sent it, and cut right after
		// the UDP ports.
		cut := append([]byte(nil), out[:hdr.IPv6Len+8+8+4]...)
		bad := ext6Packet(host6IP, remote6IP, []ext6{frag6(0, false, 0x56)}, hdr.ProtoTCP, tcp6(40000, 22, tcpSYN))
		short := append([]byte(nil), out[:hdr.IPv6Len+8+8+2]...)
		for _, c := range []struct {
			name string
			ip   []byte
			pass bool
		}{
			{"quote of the host's first fragment", ptb(out, nil), true},
			{"quote cut after the ports", ptb(cut, nil), true},
			{"error behind a destination options header", ptb(out, []ext6{{typ: tDestOpts}}), true},
			{"plain quote", ptb(ext6Packet(host6IP, remote6IP, nil, hdr.ProtoUDP, udp6(7001, 53, 10)), nil), true},
			{"quote of a flow never started", ptb(bad, nil), false},
			{"quote cut inside the ports", ptb(short, nil), false},
		} {
			if got := r.down(c.ip); got != c.pass {
				t.Errorf("%d workers: %s: passed %v, want %v", workers, c.name, got, c.pass)
			}
		}
	}
}

// TestFW6IPsecFlood: LAN hosts' live UDP flows survive a flood of
// unsolicited ESP, AH and IKE (UDP 500, all opened as RFC 6092 REC-22..24
// ask) from random sources: what unsolicited packets insert never
// evicts state a LAN host created, and their replies still pass.
func TestFW6IPsecFlood(t *testing.T) {
	const flood = 20000
	for _, workers := range []int{1, 2} {
		r := newFWRig(t, workers, func(c *Config) {
			c.Firewall6Capacity = 1024
			c.Allow6 = []Allow6{{Proto: tESP}, {Proto: tAH}, {Proto: hdr.ProtoUDP, Port: 500}}
		})
		var hosts [][16]byte
		for i := 0; i < 8; i++ {
			h := host6IP
			h[14], h[15] = 2, byte(i)
			hosts = append(hosts, h)
			r.e.SetNeighbor6(h, [6]byte{2, 0, 0, 0, 2, byte(i)})
		}
		type flow struct {
			host   [16]byte
			remote [16]byte
			port   uint16
		}
		var live []flow
		for i, h := range hosts {
			for j := 0; j < 4; j++ {
				rem := remote6IP
				rem[13], rem[14], rem[15] = 0x44, byte(i), byte(j)
				fl := flow{h, rem, uint16(50000 + 4*i + j)}
				live = append(live, fl)
				r.up(ext6Packet(h, rem, nil, hdr.ProtoUDP, udp6(fl.port, 443, 100)))
			}
		}
		rng := uint64(1)
		next := func() uint64 { rng = rng*6364136223846793005 + 1442695040888963407; return mix64(rng) }
		sent, passed := 0, 0
		for sent < 3*flood {
			for n := 0; n < 64; n++ {
				v := next()
				src := netip.MustParseAddr("2001:db8:ff00::").As16()
				binary.LittleEndian.PutUint64(src[8:], v)
				src[5] = byte(v >> 7)
				dst := hosts[v%8]
				var ip []byte
				switch sent % 3 {
				case 0:
					ip = ext6Packet(src, dst, nil, tESP, make([]byte, 64))
				case 1:
					ip = ext6Packet(src, dst, nil, tAH, make([]byte, 64))
				default:
					ip = ext6Packet(src, dst, nil, hdr.ProtoUDP, udp6(500, 500, 64))
				}
				r.wan.Inject(0, wanIPFrame(t, ip))
				sent++
			}
			r.step()
			r.step()
			passed += len(r.drainLAN())
			r.clock.t += 1e6
		}
		if c := r.e.Totals(); passed != sent || c.Drops[DropFirewall] != 0 {
			t.Fatalf("%d workers: %d of %d flood packets passed (%v)", workers, passed, sent, c.DropMap())
		}
		lost := 0
		for _, fl := range live {
			if !r.down(ext6Packet(fl.remote, fl.host, nil, hdr.ProtoUDP, udp6(443, fl.port, 100))) {
				lost++
			}
		}
		if lost != 0 {
			t.Errorf("%d workers: replies of %d of %d live flows dropped after the flood", workers, lost, len(live))
		}
		fw6FloodCheck(t, r.e)
	}
}

// fw6FloodCheck: after a flood of unsolicited packets no worker's table
// evicted an entry a LAN host made, and the flood did fill them.
func fw6FloodCheck(t *testing.T, e *Engine) {
	t.Helper()
	var full uint64
	for _, w := range e.Workers() {
		if w.fw6.evictedLAN != 0 {
			t.Errorf("worker %d: %d LAN-made entries evicted (%d evictions, %d refused)", w.id, w.fw6.evictedLAN, w.fw6.evicted, w.fw6.refused)
		}
		full += w.fw6.evicted + w.fw6.refused
	}
	if full == 0 {
		t.Error("the flood never filled a window: the test proves nothing")
	}
}

// TestFW6EvictionOrder: in a full window a LAN host's insert replaces a
// session-made entry before any LAN-made one (then the one expiring
// first); a session-made insert replaces only a session-made entry and
// is refused when there is none. A LAN packet makes an entry the LAN's;
// an expired one taken up again belongs to whoever took it.
func TestFW6EvictionOrder(t *testing.T) {
	const h = 77 // one window for every key: touch takes the caller's hash
	key := func(i int) fw6Key {
		return fw6Key{lan: host6IP, remote: remote6IP, lanPort: uint16(i), remotePort: 53, proto: hdr.ProtoUDP}
	}
	has := func(tb *fw6Table, i int, now int64) bool { k := key(i); return tb.lookup(&k, h, now, 0) }
	fill := func(wanFrom int) *fw6Table {
		tb := newFW6(1024)
		for i := 0; i < fw6Probe; i++ {
			k, by := key(i), uint8(fw6ByLAN)
			if i >= wanFrom {
				by = fw6ByWAN
			}
			tb.touch(&k, h, 1, fw6UDP+int64(i)*1e9, by) // key i expires i seconds after key 0
		}
		return &tb
	}
	now := int64(2)

	tb := fill(fw6Probe) // all LAN-made
	k := key(100)
	if tb.touch(&k, h, now, fw6Other, fw6ByWAN) || tb.refused != 1 || tb.evicted != 0 || has(tb, 100, now) {
		t.Fatalf("a session-made insert into a window of LAN entries: evicted %d refused %d", tb.evicted, tb.refused)
	}
	if !tb.touch(&k, h, now, fw6UDP, fw6ByLAN) || tb.evictedLAN != 1 || has(tb, 0, now) || !has(tb, 1, now) || !has(tb, 100, now) {
		t.Fatal("a LAN insert into a window of LAN entries must replace the one expiring first")
	}

	tb = fill(12) // 0..11 LAN-made, 12..15 session-made (expiring last)
	if !tb.touch(&k, h, now, fw6UDP, fw6ByLAN) || tb.evictedLAN != 0 || has(tb, 12, now) || !has(tb, 0, now) {
		t.Fatal("a LAN insert must replace the session-made entry expiring first")
	}
	k = key(101)
	if !tb.touch(&k, h, now, fw6Other, fw6ByWAN) || tb.evictedLAN != 0 || has(tb, 13, now) || !has(tb, 0, now) {
		t.Fatal("a session-made insert must replace a session-made entry")
	}

	// A LAN packet of a session-made flow makes it the LAN's: no longer
	// for session-made inserts to replace.
	tb = fill(0)
	for i := 0; i < fw6Probe; i++ {
		k := key(i)
		tb.touch(&k, h, now, fw6UDP, fw6ByLAN)
	}
	k = key(102)
	if tb.touch(&k, h, now, fw6Other, fw6ByWAN) || tb.evicted != 0 {
		t.Fatal("entries a LAN host sent on stayed the session's")
	}
	// Expired, key 0 is taken up again by the session: the session's.
	later := int64(3 + fw6UDP) // key 0 has expired, key 1 not yet
	k = key(0)
	tb.touch(&k, h, later, fw6Other, fw6ByWAN)
	k = key(103)
	if !tb.touch(&k, h, later, fw6Other, fw6ByWAN) || has(tb, 0, later) || tb.evictedLAN != 0 {
		t.Fatal("an expired LAN entry taken up by the session kept the LAN's protection")
	}
}

// TestFW6SlotLayout: a slot is one cache line.
func TestFW6SlotLayout(t *testing.T) {
	if n := reflect.TypeFor[fw6Slot]().Size(); n != 64 {
		t.Fatalf("fw6Slot is %d bytes, want 64", n)
	}
}

// TestFW6SeededHash: tables hash the same flows to different slots (the
// seed is per table); the worker choice does not depend on it.
func TestFW6SeededHash(t *testing.T) {
	a, b := newFW6(65536), newFW6(65536)
	same := 0
	for i := 0; i < 64; i++ {
		k := fw6Key{lan: host6IP, remote: remote6IP, lanPort: uint16(i), remotePort: 443, proto: hdr.ProtoUDP}
		if a.hash(&k)&a.mask == b.hash(&k)&b.mask {
			same++
		}
	}
	if same > 4 {
		t.Fatalf("%d of 64 flows in the same slot of two tables", same)
	}
	if a.seed == b.seed {
		t.Fatal("two tables with one seed")
	}
}

// modelFlow is a slow restatement of fw6Flow for a packet from the
// session (the fuzz target's model): the extension headers it steps
// over, the upper layer, its key.
func modelFlow(ip []byte, quote bool) (exts []ext6, proto uint8, l4 []byte, k fw6Key, ok bool) {
	end := min(len(ip), hdr.IPv6Len+fw6ChainBytes)
	next, at := ip[6], hdr.IPv6Len
	copy(k.lan[:], ip[24:40])
	copy(k.remote[:], ip[8:24])
	frags := 0
	for next == tHopByHop || next == tRouting || next == tDestOpts || next == tFrag {
		if len(exts) == fw6ChainHeaders || at+8 > end || next == tHopByHop && len(exts) > 0 {
			return exts, next, nil, k, false
		}
		e := ext6{typ: next}
		if next == tFrag {
			frags++
			if frags > 1 {
				return exts, next, nil, k, false
			}
			e.off, e.more, e.id = binary.BigEndian.Uint16(ip[at+2:])>>3, ip[at+3]&1 == 1, binary.BigEndian.Uint32(ip[at+4:])
			next = ip[at]
			at += 8
			exts = append(exts, e)
			if e.off != 0 {
				k.proto, k.lanPort, k.remotePort = tFrag, uint16(e.id>>16), uint16(e.id)
				return exts, next, ip[at:], k, true
			}
			continue
		}
		e.len8 = ip[at+1]
		next = ip[at]
		at += 8 * (int(e.len8) + 1)
		exts = append(exts, e)
	}
	k.proto = next
	if at > end {
		return exts, next, nil, k, false
	}
	l4 = ip[at:]
	switch next {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		need := map[uint8]int{hdr.ProtoTCP: 20, hdr.ProtoUDP: 8}[next]
		if quote {
			need = 4
		}
		if len(l4) < need {
			return exts, next, l4, k, false
		}
		k.remotePort, k.lanPort = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	case hdr.ProtoICMP6:
		echo := len(l4) > 0 && (l4[0] == hdr.ICMP6EchoRequest || l4[0] == hdr.ICMP6EchoReply)
		if len(l4) < 4 || echo && len(l4) < 8 {
			return exts, next, l4, k, false
		}
		if echo {
			k.lanPort = binary.BigEndian.Uint16(l4[4:])
		}
	}
	return exts, next, l4, k, true
}

// FuzzFW6Flow: fw6Flow on any chain never panics and reads nothing past
// the packet (the bytes behind it in the buffer do not change the
// answer); it agrees with the slow model; a packet re-serialised from
// its walk (options and routing bodies rewritten, lengths kept) keys the
// same.
func FuzzFW6Flow(f *testing.F) {
	for _, p := range [][]byte{
		ext6Packet(remote6IP, host6IP, nil, hdr.ProtoUDP, udp6(53, 5353, 8)),
		ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 7)}, hdr.ProtoTCP, tcp6(40000, 22, tcpSYN)),
		ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 8)}, hdr.ProtoUDP, udp6(53, 5353, 64)),
		ext6Packet(remote6IP, host6IP, []ext6{{typ: tDestOpts}, frag6(154, false, 9)}, hdr.ProtoUDP, make([]byte, 16)),
		ext6Packet(remote6IP, host6IP, []ext6{{typ: tHopByHop}, {typ: tRouting, len8: 2}, {typ: tDestOpts, len8: 1}}, hdr.ProtoICMP6, echo6(hdr.ICMP6EchoReply, 5, 0)),
		ext6Packet(remote6IP, host6IP, []ext6{frag6(0, true, 10)}, tDestOpts, []byte{hdr.ProtoUDP, 2, 1, 2, 0, 0, 0, 0}),
		ext6Packet(remote6IP, host6IP, []ext6{frag6(0, false, 1), frag6(0, false, 2)}, tESP, make([]byte, 8)),
	} {
		f.Add(append([]byte{p[6]}, p[8:]...), false) // next header, then addresses onward
	}
	f.Fuzz(func(t *testing.T, b []byte, quote bool) {
		// b: the next header, the source and destination addresses,
		// then the payload.
		if len(b) < 33 || len(b) > 2000 {
			return
		}
		n := hdr.IPv6Len - 33 + len(b)
		buf := make([]byte, n+64)
		ip := buf[:n]
		ip[6] = b[0]
		copy(ip[8:], b[1:])
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(n-hdr.IPv6Len))
		ip[7] = 64
		p := fw6Flow(ip, false, quote)
		for i := n; i < len(buf); i++ {
			buf[i] = 0xff
		}
		if q := fw6Flow(ip, false, quote); q != p {
			t.Fatalf("the bytes past the packet changed its key: %+v, %+v", p, q)
		}
		if p.ok && (p.l4 > n || p.l4 > hdr.IPv6Len+fw6ChainBytes) {
			t.Fatalf("upper layer at %d of %d", p.l4, n)
		}
		exts, proto, l4, k, ok := modelFlow(ip, quote)
		if ok != p.ok || ok && k != p.key {
			t.Fatalf("fw6Flow %+v ok %v, model %+v ok %v", p.key, p.ok, k, ok)
		}
		up := fw6Flow(ip, true, quote) // the same packet seen as an uplink one
		if up.ok != p.ok || up.frag != p.frag || up.key.proto != p.key.proto {
			t.Fatalf("directions disagree: %+v, %+v", p, up)
		}
		if !ok {
			return
		}
		re := ext6Packet(hdr.Addr6(ip[8:24]), hdr.Addr6(ip[24:40]), exts, proto, l4)
		if r := fw6Flow(re, false, quote); r.key != p.key || r.ok != p.ok || r.frag != p.frag || r.id != p.id || r.ttl != p.ttl {
			t.Fatalf("re-serialised %x keys %+v, the original %x %+v", re, r, ip, p)
		}
	})
}
