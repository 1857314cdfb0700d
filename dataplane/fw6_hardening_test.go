package dataplane

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
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
