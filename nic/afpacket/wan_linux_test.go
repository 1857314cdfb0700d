package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// loadWANProgram loads the WAN program for s, skipping the test when the
// process may not load BPF programs.
func loadWANProgram(t testing.TB, s *WANSpec) *ebpf.Program {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF) to load and test-run BPF programs")
	}
	p, err := newWANProgram(s)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("verifier: %+v", ve)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// runWAN runs prog on frame (BPF_PROG_TEST_RUN) and returns the queue,
// or -1 for a frame the kernel will not test-run (an IPv4 or IPv6 type
// with less than that fixed header behind it).
func runWAN(t testing.TB, prog *ebpf.Program, frame []byte, workers int) int {
	t.Helper()
	ret, err := prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		et := binary.BigEndian.Uint16(frame[12:])
		if errors.Is(err, unix.EINVAL) && (et == etherIPv4 && len(frame) < 14+20 || et == etherIPv6 && len(frame) < 14+40 || len(frame) < 14) {
			return -1
		}
		t.Fatalf("run: %v on %x", err, frame)
	}
	return int(ret % uint32(workers))
}

// TestIntegrationAFPacketWANProgram runs the WAN fanout program over
// generated WAN frames of every kind and holds it to WANSpec.Queue, for
// several worker counts, with and without Ports entries.
func TestIntegrationAFPacketWANProgram(t *testing.T) {
	for _, workers := range []int{2, 3, 4, 7, 256} {
		for _, ports := range []bool{false, true} {
			s := &WANSpec{Workers: workers}
			if ports {
				s.Ports = WANTestPorts(workers)
			}
			prog := loadWANProgram(t, s)
			r := rand.New(rand.NewPCG(uint64(workers), 11))
			hist := make([]int, workers)
			untested := 0
			const n = 6000
			for i := 0; i < n; i++ {
				f := GenWANFrame(r)
				got, want := runWAN(t, prog, f, workers), s.Queue(f)
				if got < 0 {
					untested++
					continue
				}
				if got != want {
					t.Fatalf("workers %d ports %v: program says queue %d, Queue %d for\n%x", workers, ports, got, want, f)
				}
				hist[want]++
			}
			if untested > n/10 {
				t.Errorf("workers %d: %d of %d frames could not be test-run", workers, untested, n)
			}
			if workers <= 4 {
				for q, c := range hist {
					if c < n/workers/8 {
						t.Errorf("workers %d: queue %d got %d of %d frames: %v", workers, q, c, n, hist)
					}
				}
			}
		}
	}
}

// TestIntegrationAFPacketWANProgramFixtures checks the WAN program and
// WANSpec.Queue on annotated frames whose queue is known by construction.
func TestIntegrationAFPacketWANProgramFixtures(t *testing.T) {
	s := &WANSpec{Workers: 4, Ports: []WANPort{{Port: 443, Queue: 3}}}
	prog := loadWANProgram(t, s)
	eth := []byte{0x02, 0, 0, 0, 0, 0xbb, 0x02, 0xaf, 0xaf, 0, 0, 0x01}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	// PPPoE session 0x1234, the PPP protocol, as a frame from the AC.
	sess := func(proto uint16, payload ...[]byte) []byte {
		p := cat(payload...)
		h := []byte{0x88, 0x64, 0x11, 0, 0x12, 0x34, byte((len(p) + 2) >> 8), byte(len(p) + 2), byte(proto >> 8), byte(proto)}
		return cat(eth, h, p)
	}
	udp := func(dport uint16) []byte { return []byte{0, 53, byte(dport >> 8), byte(dport), 0, 8, 0, 0} }
	ip4 := func(proto byte, frag uint16, l4 []byte) []byte {
		return cat([]byte{0x45, 0, 0, byte(20 + len(l4)), 0, 1, byte(frag >> 8), byte(frag), 64, proto, 0, 0, 203, 0, 113, 9, 198, 51, 100, 7}, l4)
	}
	ip6 := func(next byte, l4 []byte) []byte {
		h := make([]byte, 40)
		h[0], h[5], h[6], h[7] = 0x60, byte(len(l4)), next, 64
		copy(h[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9})
		copy(h[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2})
		return cat(h, l4)
	}
	src6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 15: 9}
	dst6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 1, 15: 2}
	for _, c := range []struct {
		name  string
		frame []byte
		want  int
	}{
		// PPPoE-Sess 0x1234 IP 203.0.113.9.53 > 198.51.100.7.5555: UDP: port 5555, pair 2777, mod 4
		{"udp-port", sess(0x21, ip4(17, 0, udp(5555))), 1},
		// the same behind 802.1Q vlan 7
		{"vlan", cat(eth, []byte{0x81, 0, 0, 7}, sess(0x21, ip4(17, 0, udp(5555)))[12:]), 1},
		// UDP to port 443: the Ports entry
		{"port-entry", sess(0x21, ip4(17, 0, udp(443))), 3},
		// ICMP echo reply, id 4661: pair 2330, mod 4
		{"echo-reply", sess(0x21, ip4(1, 0, []byte{0, 0, 0, 0, 0x12, 0x35, 0, 1})), 2},
		// ICMP port unreachable quoting 198.51.100.7.5557 > 203.0.113.9.53: the quoted source port
		{"error-quote", sess(0x21, ip4(1, 0, cat([]byte{3, 3, 0, 0, 0, 0, 0, 0},
			[]byte{0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 198, 51, 100, 7, 203, 0, 113, 9}, []byte{0x15, 0xb5, 0, 53, 0, 8, 0, 0}))), 2},
		// a first fragment (MF): queue 0, where every fragment goes
		{"first-fragment", sess(0x21, ip4(17, 0x2000, udp(5555))), 0},
		// a later fragment (offset 8)
		{"later-fragment", sess(0x21, ip4(17, 1, udp(5555))), 0},
		// LCP Echo-Request: control
		{"lcp", sess(0xc021, []byte{9, 1, 0, 8, 0, 0, 0, 0}), 0},
		// PADT: discovery
		{"padt", cat(eth, []byte{0x88, 0x63, 0x11, 0xa7, 0x12, 0x34, 0, 0}), 0},
		// IPv6 UDP from 2001:db8:ffff::9 to 2001:db8:1:1::2: the flow's owner
		{"ipv6", sess(0x57, ip6(17, udp(5555))), FlowHash6(&dst6, &src6, 4)},
		// IPv6 behind a hop-by-hop header
		{"ipv6-ext", sess(0x57, ip6(0, []byte{17, 0, 1, 4, 0, 0, 0, 0})), 0},
		// ICMPv6 destination unreachable: the dataplane reads the quote
		{"icmp6-error", sess(0x57, ip6(58, []byte{1, 4, 0, 0, 0, 0, 0, 0})), 0},
		// ICMPv6 echo reply: the flow's owner
		{"icmp6-echo", sess(0x57, ip6(58, []byte{129, 0, 0, 0, 0, 7, 0, 1})), FlowHash6(&dst6, &src6, 4)},
	} {
		if got := s.Queue(c.frame); got != c.want {
			t.Errorf("%s: Queue = %d, want %d", c.name, got, c.want)
		}
		if got := runWAN(t, prog, c.frame, s.Workers); got >= 0 && got != c.want {
			t.Errorf("%s: program = %d, want %d", c.name, got, c.want)
		}
	}
}

// WANProgramForTest loads the WAN program for s (skipping t without root)
// and returns a function running it on a frame: the queue, or -1 for a
// frame the kernel will not test-run. For the external tests.
func WANProgramForTest(t testing.TB, s *WANSpec) func(frame []byte) int {
	prog := loadWANProgram(t, s)
	return func(frame []byte) int { return runWAN(t, prog, frame, s.Workers) }
}

// TestIntegrationAFPacketFanoutWAN sends generated WAN frames (PPPoE
// sessions, tagged ones too, which the kernel untags) over a veth into a
// multi-queue port with the WAN fanout, and checks that every frame
// arrives, each on the queue WANSpec.Queue names for it.
func TestIntegrationAFPacketFanoutWAN(t *testing.T) {
	for _, rx := range []RxRing{RxFrames, RxAuto} {
		for _, queues := range []int{2, 3} {
			t.Run(fmt.Sprintf("%d-%v", queues, rx), func(t *testing.T) { testFanoutWAN(t, queues, rx) })
		}
	}
}

func testFanoutWAN(t *testing.T, queues int, ring RxRing) {
	const total, batch = 3000, 50
	ln := nettest.MustLine(t, nettest.LineConfig{})
	spec := &WANSpec{Workers: queues, Ports: WANTestPorts(queues)}
	rx := openIn(t, ln.A, ln.AIf, Config{Queues: queues, Promisc: true, FanoutWAN: spec, RxRing: ring})
	if on, err := rx.FanoutOwner(); !on || err != nil {
		t.Fatalf("FanoutOwner() = %v, %v; want the WAN program steering", on, err)
	}
	if got, err := rx.RxRing(); got != ring || err != nil {
		t.Fatalf("RxRing() = %v, %v; want %v", got, err, ring)
	}
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: TxCopy})
	r := rand.New(rand.NewPCG(uint64(queues), 13))
	frames := nic.NewFrames(batch)
	in := nic.NewFrames(64)
	perQueue := make([]int, queues)
	mismatches, got, sent := 0, 0, 0
	for sent < total {
		for i := range frames {
			b := GenWANFrame(r)
			for binary.BigEndian.Uint16(b[12:]) == etherVLAN && len(b) < 64 {
				// The kernel drops a short tagged frame it cannot untag.
				b = GenWANFrame(r)
			}
			frames[i].SetData(b)
		}
		for off := 0; off < batch; {
			n, err := tx.Send(0, frames[off:])
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			off += n
		}
		sent += batch
		for deadline := time.Now().Add(2 * time.Second); got < sent && time.Now().Before(deadline); {
			idle := true
			for q := 0; q < queues; q++ {
				n, err := rx.Recv(q, in)
				if err != nil {
					t.Fatalf("Recv(%d): %v", q, err)
				}
				for _, f := range in[:n] {
					b := f.Data()
					if !isMarked(b) {
						continue
					}
					idle = false
					got++
					perQueue[q]++
					if w := spec.Queue(b); w != q {
						if mismatches++; mismatches <= 5 {
							t.Errorf("frame on queue %d, its owner is %d: %x", q, w, b)
						}
					}
				}
			}
			if idle {
				time.Sleep(time.Millisecond)
			}
		}
	}
	if got != total || mismatches != 0 {
		t.Fatalf("received %d of %d frames, %d on a queue other than their owner's; per queue %v", got, total, mismatches, perQueue)
	}
	for q, n := range perQueue {
		if n < total/queues/8 {
			t.Errorf("queue %d received %d of %d frames: %v", q, n, total, perQueue)
		}
	}
	t.Logf("%d frames, per queue %v, 0 on another queue than their owner's", total, perQueue)
}

// TestIntegrationAFPacketFanoutWANFallback: a WAN port whose program
// cannot be loaded opens with the hash fanout and says why; Open refuses
// a WAN spec for another number of queues, and both specs at once.
func TestIntegrationAFPacketFanoutWANFallback(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	saved := loadWAN
	loadWAN = func(*WANSpec) (*ebpf.Program, error) {
		return nil, fmt.Errorf("%w: load WAN program: %w", errOwnerFanout, unix.EPERM)
	}
	defer func() { loadWAN = saved }()
	rx := openIn(t, ln.A, ln.AIf, Config{Queues: 2, Promisc: true, RxRing: RxFrames, FanoutWAN: &WANSpec{Workers: 2}})
	if on, err := rx.FanoutOwner(); on || !errors.Is(err, unix.EPERM) {
		t.Fatalf("FanoutOwner() = %v, %v; want false and the load error", on, err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"workers-queues", Config{Queues: 2, FanoutWAN: &WANSpec{Workers: 3}}},
		{"port-queue", Config{Queues: 2, FanoutWAN: &WANSpec{Workers: 2, Ports: []WANPort{{Port: 80, Queue: 2}}}}},
		{"both", Config{Queues: 2, FanoutWAN: &WANSpec{Workers: 2}, FanoutOwner: &OwnerSpec{Workers: 2}}},
	} {
		err := ln.A.Do(func() error {
			p, err := Open(ln.AIf, c.cfg)
			if err == nil {
				p.Close()
			}
			return err
		})
		if err == nil {
			t.Errorf("%s: Open succeeded", c.name)
		}
	}
}

// TestIntegrationAFPacketAutoSteeringProgram: RxAuto's program built
// around the owner or the WAN program loads, and with every queue's
// switch on frames returns, frame for frame, the queue the steering
// program returns (each of its exits leads to the switch), and that
// queue plus Queues with the switch on blocks.
func TestIntegrationAFPacketAutoSteeringProgram(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF) to load and test-run BPF programs")
	}
	const workers = 3
	owner := &OwnerSpec{Workers: workers, Forwards: OwnerTestForwards(workers)}
	wan := &WANSpec{Workers: workers, Ports: WANTestPorts(workers)}
	for _, c := range []struct {
		name  string
		insns func() asm.Instructions
		gen   func(*rand.Rand) []byte
		queue func([]byte) int
	}{
		{"owner", func() asm.Instructions { return ownerInsns(owner) }, GenOwnerFrame, owner.Queue},
		{"wan", func() asm.Instructions { return wanInsns(wan) }, GenWANFrame, wan.Queue},
	} {
		mode, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer mode.Close()
		prog, err := newAutoProgram(c.insns(), workers, mode)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		defer prog.Close()
		r := rand.New(rand.NewPCG(17, 19))
		for i := 0; i < 3000; i++ {
			blocks := uint32(i / 1500)
			if i%1500 == 0 {
				for q := uint32(0); q < workers; q++ {
					if err := mode.Put(q, blocks); err != nil {
						t.Fatal(err)
					}
				}
			}
			f := c.gen(r)
			ret, err := prog.Run(&ebpf.RunOptions{Data: f})
			if err != nil {
				continue // a frame the kernel will not test-run
			}
			if want := c.queue(f) + int(blocks)*workers; int(ret) != want {
				t.Fatalf("%s: RxAuto program = %d, want %d for\n%x", c.name, ret, want, f)
			}
		}
	}
}
