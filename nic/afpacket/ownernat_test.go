package afpacket_test

// These tests hold OwnerSpec (and, as root on Linux, the fanout program)
// to the owners the dataplane itself uses: nat.LANSteer.Owner for IPv4,
// Engine.LAN6Owner for IPv6. Only tests import the dataplane from here:
// afpacket stays below it.

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/nic/afpacket"
	"github.com/pppfwd/pppfwd/nic/memport"
)

// ownerProgram, where the fanout program can run (Linux), loads it for s
// and returns a function running it on a frame (-1: the kernel will not
// test-run that frame); it skips the test without root.
var ownerProgram func(t testing.TB, s *afpacket.OwnerSpec) func(frame []byte) int

// dataplaneOwners is the dataplane's view of LAN ownership for workers,
// with the forwards of afpacket.OwnerTestForwards given external ports
// and assigned to workers as the engine does, and the OwnerSpec a router
// builds from the same forwards.
type dataplaneOwners struct {
	workers int
	steer   *nat.LANSteer
	e       *dataplane.Engine
	spec    *afpacket.OwnerSpec
}

func newDataplaneOwners(t testing.TB, workers int) *dataplaneOwners {
	t.Helper()
	ranges := nat.Partition(workers, 1024, 65535)
	var fwds []nat.Forward
	for i, f := range afpacket.OwnerTestForwards(workers) {
		// External ports in different workers' ranges.
		ext := uint16(1024 + (i*61001/5+7)%(65535-1024))
		fwds = append(fwds, nat.Forward{Proto: f.Proto, ExtPort: ext, LANAddr: f.Addr, LANPort: f.Port})
	}
	nat.AssignForwards(ranges, fwds)
	spec := &afpacket.OwnerSpec{Workers: workers}
	for _, f := range fwds {
		spec.Forwards = append(spec.Forwards, afpacket.OwnerForward{Proto: f.Proto, Addr: f.LANAddr, Port: f.LANPort, Queue: f.Worker})
	}
	e, err := dataplane.New(dataplane.Config{
		Workers: workers, LAN: memport.New("lan", workers, 64), WAN: memport.New("wan", workers, 64),
		PortLo: 1024, PortHi: 65535, NAT: nat.Config{Forwards: fwds},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &dataplaneOwners{workers: workers, steer: nat.NewLANSteer(workers, fwds), e: e, spec: spec}
}

// want is the queue frame belongs to by the dataplane's owners. Where
// LANSteer says any worker will do (-1), OwnerSpec's contract picks: a
// first fragment goes where the whole packet would (unless it is an ICMP
// error), anything else by its source address.
func (d *dataplaneOwners) want(frame []byte) int {
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0800: // IPv4
		if len(ip) < 20 {
			return 0
		}
		if o := d.steer.Owner(ip); o >= 0 {
			return o
		}
		ihl, tl := int(ip[0]&0xf)*4, int(binary.BigEndian.Uint16(ip[2:]))
		valid := ip[0]>>4 == 4 && ihl >= 20 && tl >= ihl && tl <= len(ip)
		if frag := binary.BigEndian.Uint16(ip[6:]); valid && frag&0x2000 != 0 && frag&0x1fff == 0 {
			whole := append([]byte(nil), ip...)
			whole[6] &^= 0x3f // MF and the reserved bit off: the whole packet
			icmpErr := ip[9] == 1 && tl-ihl >= 8 && slices.Contains([]byte{3, 4, 5, 11, 12}, ip[ihl])
			if o := d.steer.Owner(whole); o >= 0 && !icmpErr {
				return o
			}
		}
		return afpacket.EndpointHash(0, binary.BigEndian.Uint32(ip[12:]), 0, d.workers)
	case 0x86dd: // IPv6
		return d.e.LAN6Owner(ip)
	}
	return 0
}

// TestOwnerSpecMatchesDataplane generates frames of every kind and checks
// that OwnerSpec.Queue and the fanout program (as root) put each on the
// queue of the worker the dataplane says owns it.
func TestOwnerSpecMatchesDataplane(t *testing.T) {
	const n = 20000
	for _, workers := range []int{2, 3, 4, 7} {
		d := newDataplaneOwners(t, workers)
		var run func([]byte) int
		if ownerProgram != nil {
			run = ownerProgram(t, d.spec)
		}
		r := rand.New(rand.NewPCG(uint64(workers), 3))
		owned, forwarded := 0, 0
		nofwd := &afpacket.OwnerSpec{Workers: workers}
		for i := 0; i < n; i++ {
			f := afpacket.GenOwnerFrame(r)
			want := d.want(f)
			if binary.BigEndian.Uint16(f[12:]) == 0x0800 && d.steer.Owner(f[14:]) >= 0 {
				owned++
			}
			if nofwd.Queue(f) != want {
				forwarded++
			}
			if got := d.spec.Queue(f); got != want {
				t.Fatalf("workers %d: Queue = %d, the dataplane's owner %d, for\n%x", workers, got, want, f)
			}
			if run == nil {
				continue
			}
			if got := run(f); got >= 0 && got != want {
				t.Fatalf("workers %d: program = %d, the dataplane's owner %d, for\n%x", workers, got, want, f)
			}
		}
		if forwarded == 0 {
			t.Errorf("workers %d: no frame of a forward's endpoint on the forward's queue", workers)
		}
		if owned < n/5 {
			t.Errorf("workers %d: only %d of %d frames have an owner: the generator is too coarse", workers, owned, n)
		}
	}
}

// FuzzOwnerSpec holds OwnerSpec.Queue to the dataplane's owners on any
// frame (two workers).
func FuzzOwnerSpec(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 32; i++ {
		f.Add(afpacket.GenOwnerFrame(r))
	}
	d := newDataplaneOwners(f, 2)
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 14 {
			if q := d.spec.Queue(frame); q != 0 {
				t.Fatalf("Queue(%x) = %d, want 0", frame, q)
			}
			return
		}
		if got, want := d.spec.Queue(frame), d.want(frame); got != want {
			t.Fatalf("Queue = %d, the dataplane's owner %d, for %x", got, want, frame)
		}
	})
}
