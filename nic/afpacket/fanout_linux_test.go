package afpacket

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// TestIntegrationAFPacketFanoutOwner sends frames of many flows and kinds
// (GenOwnerFrame, and VLAN-tagged frames the kernel untags) over a veth
// into a multi-queue port with an owner fanout, and checks that every
// frame arrives, each on the queue OwnerSpec.Queue names for it.
func TestIntegrationAFPacketFanoutOwner(t *testing.T) {
	for _, queues := range []int{2, 3} {
		t.Run(string(rune('0'+queues)), func(t *testing.T) { testFanoutOwner(t, queues) })
	}
}

func testFanoutOwner(t *testing.T, queues int) {
	const total, batch = 3000, 50
	ln := nettest.MustLine(t, nettest.LineConfig{})
	spec := &OwnerSpec{Workers: queues, Forwards: OwnerTestForwards(queues)}
	rx := openIn(t, ln.A, ln.AIf, Config{Queues: queues, Promisc: true, FanoutOwner: spec})
	if on, err := rx.FanoutOwner(); !on || err != nil {
		t.Fatalf("FanoutOwner() = %v, %v; want the program steering", on, err)
	}
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: TxCopy})

	r := rand.New(rand.NewPCG(uint64(queues), 7))
	frames := nic.NewFrames(batch)
	in := nic.NewFrames(64)
	perQueue := make([]int, queues)
	mismatches, got, sent := 0, 0, 0
	recvAll := func(want int, d time.Duration) {
		deadline := time.Now().Add(d)
		for got < want && time.Now().Before(deadline) {
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
	for sent < total {
		for i := range frames {
			var b []byte
			if r.IntN(50) == 0 {
				b = ethFrame(100, [2]uint16{0x8100, uint16(r.IntN(4095))})
			} else {
				b = GenOwnerFrame(r)
				// A VLAN type on a short frame would not survive the
				// kernel's untagging: those are tested above.
				if binary.BigEndian.Uint16(b[12:]) == 0x8100 {
					binary.BigEndian.PutUint16(b[12:], 0x88b5)
				}
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
		recvAll(sent, 2*time.Second)
	}
	if got != total || mismatches != 0 {
		t.Fatalf("received %d of %d frames, %d on a queue other than their owner's; per queue %v", got, total, mismatches, perQueue)
	}
	for q, n := range perQueue {
		if n < total/queues/3 {
			t.Errorf("queue %d received %d of %d frames: %v", q, n, total, perQueue)
		}
	}
	t.Logf("%d frames, per queue %v, 0 on another queue than their owner's", total, perQueue)
}

// TestIntegrationAFPacketFanoutOwnerFallback checks that a port whose
// owner program cannot be loaded opens with the hash fanout, says why,
// and still receives on every queue.
func TestIntegrationAFPacketFanoutOwnerFallback(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	saved := loadOwner
	loadOwner = func(*OwnerSpec) (*ebpf.Program, error) {
		return nil, fmt.Errorf("%w: load program: %w", errOwnerFanout, unix.EPERM)
	}
	defer func() { loadOwner = saved }()
	rx := openIn(t, ln.A, ln.AIf, Config{Queues: 2, Promisc: true, FanoutOwner: &OwnerSpec{Workers: 2}})
	if on, err := rx.FanoutOwner(); on || !errors.Is(err, unix.EPERM) {
		t.Fatalf("FanoutOwner() = %v, %v; want false and the load error", on, err)
	}
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: TxCopy})
	r := rand.New(rand.NewPCG(5, 5))
	frames := nic.NewFrames(64)
	for _, f := range frames {
		f.SetData(GenOwnerFrame(r))
	}
	if n, err := tx.Send(0, frames); n != len(frames) || err != nil {
		t.Fatalf("Send = %d, %v", n, err)
	}
	in := nic.NewFrames(64)
	per := make([]int, 2)
	for deadline := time.Now().Add(2 * time.Second); per[0]+per[1] < len(frames) && time.Now().Before(deadline); {
		for q := range per {
			n, err := rx.Recv(q, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range in[:n] {
				if isMarked(f.Data()) {
					per[q]++
				}
			}
		}
		time.Sleep(time.Millisecond)
	}
	if per[0]+per[1] != len(frames) || per[0] == 0 || per[1] == 0 {
		t.Fatalf("received %v of %d frames; want all, on both queues", per, len(frames))
	}
}

// TestIntegrationAFPacketFanoutOwnerConfig checks the configurations Open
// refuses: an owner function for another number of queues, or one the
// program cannot implement.
func TestIntegrationAFPacketFanoutOwnerConfig(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"workers-queues", Config{Queues: 2, FanoutOwner: &OwnerSpec{Workers: 3}}},
		{"one-worker", Config{Queues: 2, FanoutOwner: &OwnerSpec{Workers: 1}}},
		{"forward-queue", Config{Queues: 2, FanoutOwner: &OwnerSpec{Workers: 2, Forwards: []OwnerForward{{Proto: 6, Port: 80, Queue: 2}}}}},
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
