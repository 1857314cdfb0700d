package afpacket_test

// These tests hold WANSpec (and, as root on Linux, the WAN fanout
// program) to the dataplane's own WAN steering (Engine.WANOwner): where
// the function keys a frame, it names the worker steering would hand the
// frame to, so that with the program every such frame is handled where
// it arrives.

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// wanProgram, where the WAN program can run (Linux), loads it for s and
// returns a function running it on a frame (-1: the kernel will not
// test-run that frame); it skips the test without root.
var wanProgram func(t testing.TB, s *afpacket.WANSpec) func(frame []byte) int

// dataplaneWAN is an engine for workers with port forwards on ports of
// every worker's range, and the WANSpec a router builds for it.
type dataplaneWAN struct {
	e    *dataplane.Engine
	spec *afpacket.WANSpec
}

func newDataplaneWAN(t testing.TB, workers int) *dataplaneWAN {
	t.Helper()
	ranges := nat.Partition(workers, 1024, 65535)
	fwds := []nat.Forward{
		{Proto: 6, ExtPort: 443, LANAddr: 0xc0a80105, LANPort: 443},
		{Proto: 17, ExtPort: 40000, LANAddr: 0xc0a80107, LANPort: 40000},
		{Proto: 6, ExtPort: 8080, LANAddr: 0xc0a80109, LANPort: 80},
	}
	nat.AssignForwards(ranges, fwds)
	spec := &afpacket.WANSpec{Workers: workers}
	for _, f := range fwds {
		if f.Worker != afpacket.PortQueue(f.ExtPort, workers) {
			spec.Ports = append(spec.Ports, afpacket.WANPort{Port: f.ExtPort, Queue: f.Worker})
		}
	}
	e, err := dataplane.New(dataplane.Config{
		Workers: workers, LAN: memport.New("lan", workers, 64), WAN: memport.New("wan", workers, 64),
		PortLo: 1024, PortHi: 65535, NAT: nat.Config{Forwards: fwds},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &dataplaneWAN{e: e, spec: spec}
}

// keyed reports whether WANSpec keys frame (an IPv4 reply that is no
// fragment, IPv6 without extension headers that is no ICMPv6 error), and
// so must agree with the dataplane; every other frame goes to queue 0.
func keyed(frame []byte) bool {
	o := 14
	if len(frame) >= 18 && binary.BigEndian.Uint16(frame[12:]) == 0x8100 {
		o = 18
	}
	if len(frame) < o+8 || binary.BigEndian.Uint16(frame[o-2:]) != 0x8864 || frame[o] != 0x11 || frame[o+1] != 0 {
		return false
	}
	ip := frame[o+8:]
	switch binary.BigEndian.Uint16(frame[o+6:]) {
	case 0x0021:
		return len(ip) >= 20 && ip[0] == 0x45 && binary.BigEndian.Uint16(ip[6:])&0x3fff == 0
	case 0x0057:
		if len(ip) < 40 {
			return false
		}
		switch ip[6] {
		case 0, 43, 44, 60:
			return false
		case 58:
			return len(ip) > 40 && ip[40] >= 128
		}
		return true
	}
	return false
}

// TestWANSpecMatchesDataplane generates WAN frames of every kind and
// checks that WANSpec.Queue and the WAN program (as root) put every
// frame they key on the queue of the worker the dataplane's steering
// hands it to, and every other frame on queue 0.
func TestWANSpecMatchesDataplane(t *testing.T) {
	const n = 20000
	for _, workers := range []int{2, 3, 4, 7} {
		d := newDataplaneWAN(t, workers)
		// The owner table steering reads, port by port.
		for p := 0; p < 65536; p++ {
			want := afpacket.PortQueue(uint16(p), workers)
			for _, e := range d.spec.Ports {
				if e.Port == uint16(p) {
					want = e.Queue
					break
				}
			}
			if got := int(d.e.Owner()[p]); got != want {
				t.Fatalf("workers %d: port %d: the dataplane's owner %d, WANSpec's %d", workers, p, got, want)
			}
		}
		var run func([]byte) int
		if wanProgram != nil {
			run = wanProgram(t, d.spec)
		}
		r := rand.New(rand.NewPCG(uint64(workers), 5))
		owned := 0
		for i := 0; i < n; i++ {
			f := afpacket.GenWANFrame(r)
			want := 0
			if keyed(f) {
				want = max(d.e.WANOwner(f), 0)
				owned++
			}
			if got := d.spec.Queue(f); got != want {
				t.Fatalf("workers %d: Queue = %d, the dataplane's owner %d (WANOwner %d), for\n%x", workers, got, want, d.e.WANOwner(f), f)
			}
			if run == nil {
				continue
			}
			if got := run(f); got >= 0 && got != want {
				t.Fatalf("workers %d: program = %d, the dataplane's owner %d, for\n%x", workers, got, want, f)
			}
		}
		if owned < n/3 {
			t.Errorf("workers %d: only %d of %d frames keyed: the generator is too coarse", workers, owned, n)
		}
	}
}

// FuzzWANSpec holds WANSpec.Queue to the dataplane's steering on any
// frame (three workers, forwards included).
func FuzzWANSpec(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 32; i++ {
		f.Add(afpacket.GenWANFrame(r))
	}
	d := newDataplaneWAN(f, 3)
	f.Fuzz(func(t *testing.T, frame []byte) {
		want := 0
		if len(frame) >= 14 && keyed(frame) {
			want = max(d.e.WANOwner(frame), 0)
		}
		if got := d.spec.Queue(frame); got != want {
			t.Fatalf("Queue = %d, the dataplane's owner %d, for %x", got, want, frame)
		}
	})
}
