package afpacket

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// loadOwnerProgram loads the program for s, skipping the test when the
// process may not load BPF programs.
func loadOwnerProgram(t testing.TB, s *OwnerSpec) *ebpf.Program {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF) to load and test-run BPF programs")
	}
	p, err := newOwnerProgram(s)
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

// runOwner runs prog on frame (BPF_PROG_TEST_RUN: the kernel pulls the
// Ethernet header as the receive path does) and returns the queue, or -1
// for a frame the kernel will not test-run: an IPv4 or IPv6 type with
// less than that fixed header behind it (EINVAL).
func runOwner(t testing.TB, prog *ebpf.Program, frame []byte, workers int) int {
	t.Helper()
	ret, err := prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		et := binary.BigEndian.Uint16(frame[12:])
		if errors.Is(err, unix.EINVAL) && (et == etherIPv4 && len(frame) < 14+20 || et == etherIPv6 && len(frame) < 14+40) {
			return -1
		}
		t.Fatalf("run: %v", err)
	}
	return int(ret % uint32(workers)) // as the fanout does
}

// TestIntegrationAFPacketOwnerProgram runs the fanout program over
// generated frames of every kind and holds it to OwnerSpec.Queue, for
// several worker counts, with and without forwards.
func TestIntegrationAFPacketOwnerProgram(t *testing.T) {
	for _, workers := range []int{2, 3, 4, 7, 256} {
		for _, fwd := range []bool{false, true} {
			s := &OwnerSpec{Workers: workers}
			if fwd {
				s.Forwards = OwnerTestForwards(workers)
			}
			prog := loadOwnerProgram(t, s)
			r := rand.New(rand.NewPCG(uint64(workers), 1))
			hist := make([]int, workers)
			untested := 0
			for i := 0; i < 4000; i++ {
				f := GenOwnerFrame(r)
				got, want := runOwner(t, prog, f, workers), s.Queue(f)
				if got < 0 {
					untested++
					continue
				}
				if got != want {
					t.Fatalf("workers %d forwards %v: program says queue %d, Queue %d for\n%x", workers, fwd, got, want, f)
				}
				hist[want]++
			}
			if untested > 4000/10 {
				t.Errorf("workers %d: %d of 4000 frames could not be test-run", workers, untested)
			}
			if workers <= 4 {
				for q, n := range hist {
					if n < 4000/workers/3 {
						t.Errorf("workers %d: queue %d got %d of 4000 frames: %v", workers, q, n, hist)
					}
				}
			}
		}
	}
}

// TestIntegrationAFPacketOwnerProgramFixtures checks the program on
// annotated frames where the owner is known by construction.
func TestIntegrationAFPacketOwnerProgramFixtures(t *testing.T) {
	s := &OwnerSpec{Workers: 4, Forwards: []OwnerForward{{Proto: 6, Addr: 0xc0a80105, Port: 80, Queue: 3}}}
	prog := loadOwnerProgram(t, s)
	eth := func(et ...byte) []byte {
		return append([]byte{0x02, 0, 0, 0, 0, 0xbb, 0x02, 0xaf, 0xaf, 0, 0, 0x01}, et...)
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		frame []byte
		want  int
	}{
		{
			// 192.168.1.5.80 > 10.0.0.1.5555: Flags [S] (the forward's endpoint)
			"forward", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 168, 1, 5, 10, 0, 0, 1},
				[]byte{0, 80, 0x15, 0xb3, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0}),
			3,
		},
		{
			// 192.168.1.5.80 > 10.0.0.1.5555: Flags [S], IP options (IHL 6), the forward's endpoint
			"forward-options", cat(eth(0x08, 0x00),
				[]byte{0x46, 0, 0, 44, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 168, 1, 5, 10, 0, 0, 1, 1, 1, 1, 0},
				[]byte{0, 80, 0x15, 0xb3, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0}),
			3,
		},
		{
			// ICMP 10.0.0.1 unreachable, quoting 10.0.0.1.5555 > 192.168.1.5.80 (the forward)
			"error-quoting-forward", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 56, 0, 2, 0, 0, 64, 1, 0, 0, 192, 168, 1, 5, 10, 0, 0, 1},
				[]byte{3, 3, 0, 0, 0, 0, 0, 0},
				[]byte{0x45, 0, 0, 40, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 192, 168, 1, 5},
				[]byte{0x15, 0xb3, 0, 80, 0, 0, 0, 0}),
			3,
		},
		{
			// 192.168.1.9.5555 > 10.0.0.1.80: Flags [S]: port 5555, pair 2777, 2777 mod 4
			"tcp-port", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 168, 1, 9, 10, 0, 0, 1},
				[]byte{0x15, 0xb3, 0, 80, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0}),
			1,
		},
		{
			// 192.168.1.9.123 > 10.0.0.1.123: UDP, length 0: a low port, pair 61, 61 mod 4
			"udp-low-port", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 17, 0, 0, 192, 168, 1, 9, 10, 0, 0, 1},
				[]byte{0, 123, 0, 123, 0, 8, 0, 0}),
			1,
		},
		{
			// 192.168.1.9 > 10.0.0.1: ICMP echo request, id 4661, seq 1: pair 2330, 2330 mod 4
			"icmp-echo-id", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 28, 0, 1, 0x40, 0, 64, 1, 0, 0, 192, 168, 1, 9, 10, 0, 0, 1},
				[]byte{8, 0, 0, 0, 0x12, 0x35, 0, 1}),
			2,
		},
		{
			// ARP, Request who-has 192.168.1.1 tell 192.168.1.5
			"arp", cat(eth(0x08, 0x06), []byte{0, 1, 8, 0, 6, 4, 0, 1, 2, 0xaf, 0xaf, 0, 0, 1, 192, 168, 1, 5, 0, 0, 0, 0, 0, 0, 192, 168, 1, 1}),
			0,
		},
		{
			// IPv4 header cut at 19 bytes
			"short-ipv4", cat(eth(0x08, 0x00), []byte{0x45, 0, 0, 19, 0, 1, 0, 0, 64, 6, 0, 0, 192, 168, 1, 5, 10, 0, 0}),
			0,
		},
		{
			// 192.168.1.5.80 > 10.0.0.1: a later fragment (offset 8): the source's hash
			"later-fragment", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 28, 0, 1, 0x00, 1, 64, 6, 0, 0, 192, 168, 1, 5, 10, 0, 0, 1},
				[]byte{0, 80, 0x15, 0xb3, 0, 0, 0, 0}),
			EndpointHash(0, 0xc0a80105, 0, 4),
		},
		{
			// 192.168.1.5.80 > 10.0.0.1.5555: a first fragment (MF): as the whole packet
			"first-fragment", cat(eth(0x08, 0x00),
				[]byte{0x45, 0, 0, 28, 0, 1, 0x20, 0, 64, 6, 0, 0, 192, 168, 1, 5, 10, 0, 0, 1},
				[]byte{0, 80, 0x15, 0xb3, 0, 0, 0, 0}),
			3,
		},
	} {
		if got := s.Queue(c.frame); got != c.want {
			t.Errorf("%s: Queue = %d, want %d", c.name, got, c.want)
		}
		if got := runOwner(t, prog, c.frame, s.Workers); got >= 0 && got != c.want {
			t.Errorf("%s: program = %d, want %d", c.name, got, c.want)
		}
	}
}

// OwnerProgramForTest loads the fanout program for s (skipping t without
// root) and returns a function running it on a frame: the queue, or -1
// for a frame the kernel will not test-run. For the external tests.
func OwnerProgramForTest(t testing.TB, s *OwnerSpec) func(frame []byte) int {
	prog := loadOwnerProgram(t, s)
	return func(frame []byte) int { return runOwner(t, prog, frame, s.Workers) }
}
