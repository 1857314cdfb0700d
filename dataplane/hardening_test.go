package dataplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// TestWANMartianSourcesDropped: from the session, no packet with a source
// that cannot be on the Internet reaches a LAN host, neither behind a
// mapped port nor behind a port forward (RFC 1812 5.3.7, as rp_filter
// and pf antispoof): each is dropped and counted as martian, while the
// same packets from a real remote pass.
func TestWANMartianSourcesDropped(t *testing.T) {
	r := forwardRig(t)
	ext := r.outbound(t, pkt{src: hostIP, dst: remoteIP, sport: 5000, dport: 53, proto: layers.IPProtocolUDP, payload: 20})
	// Where the mapping's owner took it: the replies must meet it there.
	sources := []struct {
		name string
		src  uint32
	}{
		{"LAN host", hostIP},
		{"LAN network", lanNet},
		{"router LAN address", routerIP},
		{"session address", pubIP},
		{"loopback", ip4(127, 0, 0, 1)},
		{"this network", ip4(0, 1, 2, 3)},
		{"zero", 0},
		{"multicast", ip4(224, 0, 0, 251)},
		{"reserved", ip4(240, 0, 0, 1)},
		{"broadcast", ip4(255, 255, 255, 255)},
	}
	for _, tc := range sources {
		t.Run(tc.name, func(t *testing.T) {
			before := r.e.Totals().Drops[DropMartian]
			r.wan.Inject(0, wanFrame(t, pkt{src: tc.src, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
			r.wan.Inject(0, wanFrame(t, pkt{src: tc.src, dst: pubIP, sport: 50000, dport: 443, proto: layers.IPProtocolTCP, syn: true}))
			for i := 0; i < 4; i++ {
				r.step()
			}
			if got := r.drainLAN(); len(got) != 0 {
				t.Errorf("%d frames from source %s reached the LAN", len(got), netIP(tc.src))
			}
			if d := r.e.Totals().Drops[DropMartian] - before; d != 2 {
				t.Errorf("martian drops %d, want 2 (drops %v)", d, r.e.Totals().DropMap())
			}
		})
	}
	// The same packets from a real remote still pass: the reply to the
	// mapping and the forwarded SYN.
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: ext, proto: layers.IPProtocolUDP, payload: 40}))
	r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 50000, dport: 443, proto: layers.IPProtocolTCP, syn: true}))
	for i := 0; i < 4; i++ {
		r.step()
	}
	if got := r.drainLAN(); len(got) != 2 {
		t.Errorf("a real remote's reply and SYN: %d frames reached the LAN, want 2 (drops %v)", len(got), r.e.Totals().DropMap())
	}
}

// lcpEcho returns an LCP Echo-Request from the AC on our session.
func lcpEcho(t *testing.T) []byte {
	b := wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 1, dport: 2, proto: layers.IPProtocolUDP})
	b[20], b[21] = 0xc0, 0x21               // PPP protocol LCP
	b[22], b[23], b[24], b[25] = 9, 7, 0, 8 // Echo-Request, id 7, length 8
	return b
}

// countControl polls the control links and counts frames by direction.
func countControl(e *Engine) map[Dir]int {
	n := map[Dir]int{}
	e.PollControl(func(d Dir, b []byte) { n[d]++ })
	return n
}

// TestSlowWorkerCostsOnlyItsOwnTraffic: when one worker stops taking its
// frames, steering waits for it at most steerWait (a worker steering its
// own queue, SteerLocal, not at all), then drops that worker's frames
// (counted per worker) while the other worker's traffic and the session's
// control frames keep flowing.
func TestSlowWorkerCostsOnlyItsOwnTraffic(t *testing.T) {
	r := newRig(t, 2, nil)
	// A port each worker owns.
	var port [2]uint16
	for p := 1024; p < 65536 && (port[0] == 0 || port[1] == 0); p++ {
		if w := r.e.Owner()[p]; port[w] == 0 {
			port[w] = uint16(p)
		}
	}
	w0 := r.e.workers[0]
	// Worker 1 is not scheduled: only worker 0 (which steers) runs.
	// Fill worker 1's ring, then keep sending to both.
	sent0 := 0
	// Until steering has given up waiting for worker 1 (or 5 s), and
	// 20 rounds more.
	deadline := time.Now().Add(5 * time.Second)
	for more := 20; more > 0 && time.Now().Before(deadline); {
		if r.e.RingFullDrops()[1] > 0 {
			more--
		}
		for i := 0; i < 32; i++ {
			r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: port[1], proto: layers.IPProtocolUDP, payload: 10}))
		}
		r.wan.Inject(0, wanFrame(t, pkt{src: remoteIP, dst: pubIP, sport: 53, dport: port[0], proto: layers.IPProtocolUDP, payload: 10}))
		sent0++
		w0.step()
		time.Sleep(100 * time.Microsecond)
	}
	r.wan.Inject(0, lcpEcho(t))
	for i := 0; i < 4; i++ {
		w0.step()
	}
	w0.pub.publish(&w0.c)
	// Worker 0's frames reached it (they are dropped there as nat: no
	// mapping; what matters is that they were not held back).
	if got := w0.Counters().RxWAN; got < uint64(sent0)*9/10 {
		t.Errorf("worker 0 took %d of its %d WAN frames while worker 1 stalled", got, sent0)
	}
	if d := r.e.RingFullDrops(); d[1] == 0 || d[0] != 0 {
		t.Errorf("ring-full drops per worker %v, want only worker 1's", d)
	}
	if n := countControl(r.e); n[FromWANSession] != 1 {
		t.Errorf("the session's LCP echo did not reach the control plane: %v", n)
	}
}

// TestControlStormKeepsSessionControl: a storm of other control traffic
// on the WAN (LLDP, broadcasts, other hosts' PADIs) cannot crowd out our
// session's LCP: non-PPPoE frames are dropped at steering, broadcast
// discovery is rate-limited, and LCP for our session has a path of its
// own.
func TestControlStormKeepsSessionControl(t *testing.T) {
	r := newRig(t, 1, nil)
	lldp := make([]byte, 60)
	copy(lldp, []byte{0x01, 0x80, 0xc2, 0, 0, 0x0e})
	lldp[12], lldp[13] = 0x88, 0xcc
	padi := make([]byte, 60)
	copy(padi, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 9, 9, 9, 9, 9, 0x88, 0x63, 0x11, 0x09})
	echo := lcpEcho(t)
	lcp := 0
	for round := 0; round < 40; round++ {
		for i := 0; i < 200; i++ {
			r.wan.Inject(0, lldp)
			r.wan.Inject(0, padi)
		}
		r.wan.Inject(0, echo)
		for i := 0; i < 8; i++ { // steering keeps up with the wire
			r.step()
		}
		// The control plane reads only now and then.
		if round%10 == 9 {
			lcp += countControl(r.e)[FromWANSession]
		}
	}
	lcp += countControl(r.e)[FromWANSession]
	if lcp != 40 {
		t.Errorf("%d of 40 LCP echoes reached the control plane during the storm (drops %v)", lcp, r.e.Totals().DropMap())
	}
	d := r.e.Totals().Drops
	if d[DropUnsupported] != 8000 {
		t.Errorf("LLDP dropped at steering: %d, want 8000", d[DropUnsupported])
	}
	if d[DropControlLimit] == 0 {
		t.Errorf("broadcast PADIs were not rate-limited (drops %v)", r.e.Totals().DropMap())
	}
}

// TestSendSurvivesStalledWorker: frames the control plane sends (LCP
// replies, PADT) do not wait on one worker being scheduled: with worker 0
// stalled, Send's frames leave through the other worker.
func TestSendSurvivesStalledWorker(t *testing.T) {
	r := newRig(t, 2, func(c *Config) { c.Clock = nil })
	r.e.Start()
	defer r.e.Stop()
	r.e.StallWorker(0, 2*time.Second)
	time.Sleep(20 * time.Millisecond) // worker 0 is asleep now
	echo := lcpEcho(t)
	start := time.Now()
	got := 0
	for time.Since(start) < time.Second && got < 10 {
		if err := r.e.Send(ToWAN, echo); err != nil {
			t.Fatalf("Send: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
		got += r.wan.Drain(1, func([]byte) {})
	}
	if got < 10 {
		t.Fatalf("%d frames left through worker 1 in %v while worker 0 stalled, want 10", got, time.Since(start))
	}
}

// TestNeighborLearningAmortised: learning n hosts one at a time copies
// O(n) entries in all (tables are rebuilt only when half full), not
// O(n) per learn: a LAN host spoofing 16k senders costs the control plane
// linear work. The tables stay exact against a map under sets, moves and
// deletes, for IPv4 and IPv6.
func TestNeighborLearningAmortised(t *testing.T) {
	r := newRig(t, 1, nil)
	e := r.e
	const n = 16384
	copied4, copied6 := 0, 0
	model4 := map[uint32][6]byte{hostIP: hostMAC}
	model6 := map[[16]byte][6]byte{}
	for i := 0; i < n; i++ {
		ip := ip4(10, byte(i>>16), byte(i>>8), byte(i)) + 1
		mac := [6]byte{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
		before := e.neighbors.Load()
		e.SetNeighbor(ip, mac)
		model4[ip] = mac
		if after := e.neighbors.Load(); after != before {
			copied4 += after.Len()
		}
		a := lan6Prefix
		a[12], a[13], a[14], a[15] = 0xfe, byte(i>>16), byte(i>>8), byte(i)
		before6 := e.Neighbors6()
		e.SetNeighbor6(a, mac)
		model6[a] = mac
		if after := e.Neighbors6(); after != before6 {
			copied6 += after.Len()
		}
		// Every 7th host moves, every 5th leaves again.
		if i%7 == 0 {
			mac[0] = 6
			e.SetNeighbor(ip, mac)
			e.SetNeighbor6(a, mac)
			model4[ip], model6[a] = mac, mac
		}
		if i%5 == 0 {
			e.DeleteNeighbors([]uint32{ip})
			e.DeleteNeighbors6([]hdr.Addr6{a})
			delete(model4, ip)
			delete(model6, a)
		}
	}
	if copied4 > 4*n || copied6 > 4*n {
		t.Errorf("learning %d hosts copied %d IPv4 and %d IPv6 entries, want at most %d", n, copied4, copied6, 4*n)
	}
	n4, n6 := e.neighbors.Load(), e.Neighbors6()
	if n4.Len() != len(model4) || n6.Len() != len(model6) {
		t.Fatalf("len %d/%d, want %d/%d", n4.Len(), n6.Len(), len(model4), len(model6))
	}
	for ip, mac := range model4 {
		if got, ok := n4.Lookup(ip); !ok || got != mac {
			t.Fatalf("IPv4 %x: %x %v, want %x", ip, got, ok, mac)
		}
	}
	for a, mac := range model6 {
		a := hdr.Addr6(a)
		if got, ok := n6.Lookup(&a); !ok || got != mac {
			t.Fatalf("IPv6 %x: %x %v, want %x", a, got, ok, mac)
		}
	}
	for _, ip := range []uint32{ip4(10, 0, 0, 1), ip4(10, 0, 0, 6), 0} { // deleted, never set, zero
		if _, ok := n4.Lookup(ip); ok && model4[ip] == ([6]byte{}) {
			t.Errorf("IPv4 %x found after delete", ip)
		}
	}
	if len(n4.Map()) != len(model4) || len(n6.Map()) != len(model6) {
		t.Errorf("Map lost entries")
	}
}

// TestNeighborsConcurrentReaders: workers look entries up while the
// control plane learns, moves and deletes them (run with -race): a
// reader sees a host's old or new MAC, never another's, and a host that
// is never touched is always found.
func TestNeighborsConcurrentReaders(t *testing.T) {
	r := newRig(t, 1, nil)
	e := r.e
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			n := e.neighbors.Load()
			if m, ok := n.Lookup(hostIP); !ok || m != hostMAC {
				done <- fmt.Errorf("stable host: %x %v", m, ok)
				return
			}
			for i := 0; i < 64; i++ {
				ip := ip4(10, 1, 0, byte(i)) + 1
				if m, ok := n.Lookup(ip); ok && m[5] != byte(i) {
					done <- fmt.Errorf("host %x at another's MAC %x", ip, m)
					return
				}
			}
		}
	}()
	for round := 0; round < 2000; round++ {
		i := round % 64
		ip := ip4(10, 1, 0, byte(i)) + 1
		e.SetNeighbor(ip, [6]byte{2, byte(round), 0, 0, 0, byte(i)})
		if round%3 == 0 {
			e.DeleteNeighbors([]uint32{ip})
		}
		e.SetNeighbor(ip4(10, 2, byte(round>>8), byte(round))+1, hostMAC) // growth
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestFragmentFloodKeepsDatagrams: a flood of first fragments the NAT
// refuses (random sources and ids, unmapped ports) cannot displace where
// a real datagram's later fragments go: steering sends them to the
// worker whose NAT let the first fragment in.
func TestFragmentFloodKeepsDatagrams(t *testing.T) {
	r := newRig(t, 2, nil)
	// A flow whose mapping worker 1 owns.
	var ext uint16
	for sport := uint16(6000); ; sport++ {
		p := pkt{src: hostIP, dst: remoteIP, sport: sport, dport: 5060, proto: layers.IPProtocolUDP, payload: 20}
		r.lan.Inject(int(sport%2), lanFrame(t, p))
		r.step()
		out := r.drainWAN()
		if len(out) != 1 {
			t.Fatalf("%d uplink frames; drops %v", len(out), r.e.Totals().DropMap())
		}
		if ext = be16(pppoePayload(t, out[0])[20:]); r.e.Owner()[ext] == 1 {
			break
		}
	}
	data := bytes.Repeat([]byte{0x5a}, 3000)
	frags := fragmentIPv4(t, bigUDP(t, remoteIP, pubIP, 5060, ext, 0x4343, data), 1472)
	r.wan.Inject(0, wanIPFrame(t, frags[0]))
	r.step()
	// The flood: first fragments to unmapped ports, 16 to a batch.
	rnd := uint32(1)
	for i := 0; i < 20000; i++ {
		rnd = rnd*1664525 + 1013904223
		src := ip4(198, 18, byte(rnd>>24), byte(rnd>>16))
		f := fragmentIPv4(t, bigUDP(t, src, pubIP, 53, uint16(rnd), uint16(rnd>>8), data[:1600]), 1472)[0]
		r.wan.Inject(0, wanIPFrame(t, f))
		if i%16 == 15 {
			r.step()
		}
	}
	r.step()
	r.drainLAN()
	for _, f := range frags[1:] {
		r.wan.Inject(0, wanIPFrame(t, f))
	}
	r.step()
	r.step()
	if got := len(r.drainLAN()); got != len(frags)-1 {
		t.Fatalf("%d of the datagram's %d later fragments reached the host after the flood (drops %v)",
			got, len(frags)-1, r.e.Totals().DropMap())
	}
}

// TestNoICMP6ErrorAboutErrorBehindExtHeaders: an ICMPv6 error that hides
// behind a destination-options header is still an error: a router sends
// no error about it (RFC 4443 2.4 (e)), so two routers cannot bounce
// errors at each other, while an echo request in the same shape does get
// its time-exceeded.
func TestNoICMP6ErrorAboutErrorBehindExtHeaders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		icmp  byte
		reply bool
	}{{"destination unreachable", 1, false}, {"redirect", 137, false}, {"echo request", 128, true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rig6(t, 1, nil)
			ip := make([]byte, 40+8+8+48)
			ip[0] = 0x60
			binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
			ip[6], ip[7] = 60, 1 // destination options; hop limit 1
			copy(ip[8:], host6IP[:])
			copy(ip[24:], remote6IP[:])
			copy(ip[40:], []byte{58, 0, 1, 4, 0, 0, 0, 0}) // -> ICMPv6, PadN
			ip[48] = tc.icmp
			fr := append(make([]byte, 14), ip...)
			copy(fr[0:6], routerMAC[:])
			copy(fr[6:12], hostMAC[:])
			fr[12], fr[13] = 0x86, 0xdd
			r.lan.Inject(0, fr)
			r.step()
			got := r.drainLAN()
			if (len(got) == 1) != tc.reply || len(got) > 1 {
				t.Fatalf("%d frames back to the LAN, want a time exceeded: %v", len(got), tc.reply)
			}
			if r.e.Totals().Drops[DropTTLExceeded] != 1 {
				t.Fatalf("drops %v", r.e.Totals().DropMap())
			}
		})
	}
}

// gonePort is a port whose interface was removed.
type gonePort struct{ *memport.Port }

func (p gonePort) Recv(q int, fs []*nic.Frame) (int, error) {
	return 0, fmt.Errorf("wan0: %w", nic.ErrLinkGone)
}

// TestPortGoneEndsEngine: a port that fails for good (its interface
// removed) is reported once through Err and Failed, naming the port;
// the steering and worker loops carry on without crashing.
func TestPortGoneEndsEngine(t *testing.T) {
	for _, which := range []string{"wan", "lan"} {
		t.Run(which, func(t *testing.T) {
			r := newRig(t, 2, nil)
			if which == "wan" {
				r.e.steer.wan = gonePort{r.wan}
			} else {
				r.e.cfg.LAN = gonePort{r.lan}
			}
			select {
			case <-r.e.Failed():
				t.Fatal("failed before any error")
			default:
			}
			r.step()
			select {
			case <-r.e.Failed():
			default:
				t.Fatal("Failed not closed")
			}
			if err := r.e.Err(); !errors.Is(err, nic.ErrLinkGone) || !strings.Contains(err.Error(), which) {
				t.Fatalf("Err() = %v", err)
			}
		})
	}
}

// TestSessionToRouter6: from the session, the router's own LAN address
// takes only ICMPv6 (echo, errors); anything else is dropped and counted
// (firewall), and a source no packet from the Internet can have (here an
// IPv4-mapped one) is a martian whatever its destination.
func TestSessionToRouter6(t *testing.T) {
	router6 := lan6Prefix
	router6[15] = 1
	mapped := [16]byte{10: 0xff, 11: 0xff, 12: 127, 15: 1}
	for _, tc := range []struct {
		name string
		p    pkt6
		drop Reason
		exc  bool
	}{
		{"tcp syn to the router", pkt6{src: remote6IP, dst: router6, sport: 4000, dport: 22, proto: layers.IPProtocolTCP, syn: true}, DropFirewall, false},
		{"udp to the router", pkt6{src: remote6IP, dst: router6, sport: 4000, dport: 53, proto: layers.IPProtocolUDP}, DropFirewall, false},
		{"echo to the router", pkt6{src: remote6IP, dst: router6, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest}, numReasons, true},
		{"ipv4-mapped source to a host", pkt6{src: mapped, dst: host6IP, sport: 4000, dport: 22, proto: layers.IPProtocolTCP, syn: true}, DropMartian, false},
		{"ipv4-mapped source to the router", pkt6{src: mapped, dst: router6, proto: layers.IPProtocolICMPv6, echoType: hdr.ICMP6EchoRequest}, DropMartian, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rig6(t, 1, nil)
			r.wan.Inject(0, wanFrame6(t, tc.p))
			r.step()
			exc := countControl(r.e)[FromWANIP]
			if n := len(r.drainLAN()); n != 0 {
				t.Fatalf("%d frames reached the LAN", n)
			}
			if (exc == 1) != tc.exc {
				t.Fatalf("to the control plane: %d, want %v", exc, tc.exc)
			}
			if tc.drop != numReasons && r.e.Totals().Drops[tc.drop] != 1 {
				t.Fatalf("drops %v, want %v", r.e.Totals().DropMap(), tc.drop)
			}
		})
	}
}

// TestPortRangeFitsWorkers: ports are dealt to workers in pairs, so a
// range too small to give every worker a pair is refused by name, and
// the smallest one that does is taken.
func TestPortRangeFitsWorkers(t *testing.T) {
	for _, tc := range []struct {
		lo, hi uint16
		ok     bool
	}{{1024, 1026, false}, {1024, 1027, true}} {
		_, err := New(Config{Workers: 2, LAN: memport.New("lan", 2, 64), WAN: memport.New("wan", 2, 64),
			RouterMAC: routerMAC, RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, PortLo: tc.lo, PortHi: tc.hi})
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "2 workers need") {
			t.Errorf("ports %d-%d: %v, want ok %v", tc.lo, tc.hi, err, tc.ok)
		}
	}
}
