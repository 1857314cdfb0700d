package afpacket

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/nettest"
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
