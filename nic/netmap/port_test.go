package netmap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

func newSim(t testing.TB, slots int, ports ...string) *Sim {
	t.Helper()
	cfg := SimConfig{ExtraBufs: 4}
	for _, p := range ports {
		cfg.Ports = append(cfg.Ports, SimPortConfig{Name: p, Rings: 2, Slots: slots})
	}
	s, err := NewSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func open(t testing.TB, s *Sim, port string) *Port {
	t.Helper()
	p, err := s.Open(port, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// pkt returns a frame of size n whose first 4 bytes carry seq and whose
// other bytes depend on seq, so reordering, loss and corruption show.
func pkt(seq, n int) []byte {
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b, uint32(seq))
	for i := 4; i < n; i++ {
		b[i] = byte(seq*7 + i)
	}
	return b
}

func checkClean(t *testing.T, s *Sim) {
	t.Helper()
	if v := s.Violations(); len(v) > 0 {
		t.Errorf("%d violations, first: %q", len(v), v[:min(len(v), 3)])
	}
	if err := s.CheckBuffers(); err != nil {
		t.Errorf("buffers: %v", err)
	}
}

func TestSimLayoutSeenByPort(t *testing.T) {
	s := newSim(t, 64, "em0", "em1")
	p := open(t, s, "em1")
	if p.Queues() != 2 || p.Name() != "netmap:em1" {
		t.Fatalf("queues %d name %q", p.Queues(), p.Name())
	}
	for q, qu := range p.queues {
		if qu.rx.n != 64 || qu.tx.n != 64 || qu.rx.bufSize != 2048 {
			t.Errorf("q%d: slots %d/%d bufsize %d", q, qu.rx.n, qu.tx.n, qu.rx.bufSize)
		}
		if qu.rx.hdr.Dir != 1 || qu.tx.hdr.Dir != 0 || int(qu.rx.hdr.RingID) != q {
			t.Errorf("q%d: rx dir %d tx dir %d ringid %d", q, qu.rx.hdr.Dir, qu.tx.hdr.Dir, qu.rx.hdr.RingID)
		}
		// TX starts with n-1 free slots, RX empty (netmap's initial state).
		if qu.tx.avail() != 63 || qu.rx.avail() != 0 {
			t.Errorf("q%d: tx avail %d rx avail %d", q, qu.tx.avail(), qu.rx.avail())
		}
	}
	if _, err := s.Open("nope", 1); err == nil {
		t.Error("open of unknown port succeeded")
	}
	checkClean(t, s)
}

func TestRecvAcrossWrap(t *testing.T) {
	for _, tt := range []struct{ slots, inject, batch int }{
		{8, 5, 4}, {8, 7, 3}, {16, 15, 16}, {4, 3, 1}, {32, 40, 8},
	} {
		t.Run(fmt.Sprintf("slots%d_inject%d_batch%d", tt.slots, tt.inject, tt.batch), func(t *testing.T) {
			s := newSim(t, tt.slots, "em0")
			p := open(t, s, "em0")
			frames := nic.NewFrames(tt.batch)
			seq, next := 0, 0
			for round := 0; round < 10; round++ {
				for i := 0; i < tt.inject; i++ {
					if !s.Inject("em0", 1, pkt(seq, 60+seq%900)) {
						t.Fatal("inject refused")
					}
					seq++
				}
				for idle := 0; next < seq && idle < 3; {
					n, err := p.Recv(1, frames)
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						idle++
					}
					for _, f := range frames[:n] {
						if f.Queue != 1 || f.Off != nic.Headroom {
							t.Fatalf("frame queue %d off %d", f.Queue, f.Off)
						}
						if want := pkt(next, 60+next%900); !bytes.Equal(f.Data(), want) {
							t.Fatalf("frame %d: got %x.. want %x..", next, f.Data()[:8], want[:8])
						}
						next++
					}
				}
			}
			if next != seq {
				t.Fatalf("received %d of %d", next, seq)
			}
			st := p.Stats()
			if st.RxPackets != uint64(seq) || st.RxDrops != 0 {
				t.Errorf("stats %+v", st)
			}
			if n, _ := p.Recv(0, frames); n != 0 {
				t.Errorf("queue 0 received %d frames injected on ring 1", n)
			}
			checkClean(t, s)
		})
	}
}

func TestSendAcrossWrap(t *testing.T) {
	for _, tt := range []struct{ slots, batch int }{{8, 3}, {8, 7}, {4, 1}, {16, 5}} {
		t.Run(fmt.Sprintf("slots%d_batch%d", tt.slots, tt.batch), func(t *testing.T) {
			s := newSim(t, tt.slots, "em0")
			p := open(t, s, "em0")
			frames := nic.NewFrames(tt.batch)
			seq := 0
			for round := 0; round < 3*tt.slots; round++ {
				for i, f := range frames {
					f.SetData(pkt(seq+i, 64+i))
				}
				n, err := p.Send(0, frames)
				if err != nil || n != len(frames) {
					t.Fatalf("round %d: sent %d/%d: %v", round, n, len(frames), err)
				}
				seq += n
			}
			out := s.Transmitted("em0", 0)
			if len(out) != seq {
				t.Fatalf("transmitted %d of %d", len(out), seq)
			}
			for i, b := range out {
				if want := pkt(i, 64+i%tt.batch); !bytes.Equal(b, want) {
					t.Fatalf("frame %d differs", i)
				}
			}
			if st := p.Stats(); st.TxPackets != uint64(seq) || st.TxDrops != 0 {
				t.Errorf("stats %+v", st)
			}
			checkClean(t, s)
		})
	}
}

func TestSendBackPressure(t *testing.T) {
	const slots = 8
	s := newSim(t, slots, "em0")
	p := open(t, s, "em0")
	s.SetTxStall("em0", 0, true)
	frames := nic.NewFrames(20)
	for i, f := range frames {
		f.SetData(pkt(i, 100))
	}
	n, err := p.Send(0, frames)
	if err != nil {
		t.Fatal(err)
	}
	if n != slots-1 {
		t.Fatalf("stalled ring accepted %d, want %d (one slot stays reserved)", n, slots-1)
	}
	if n2, _ := p.Send(0, frames[n:]); n2 != 0 {
		t.Fatalf("full ring accepted %d more", n2)
	}
	if got := len(s.Transmitted("em0", 0)); got != 0 {
		t.Fatalf("stalled wire transmitted %d", got)
	}
	st := p.Stats()
	if want := uint64(len(frames)-n) * 2; st.TxDrops != want || p.Drops()[DropRingFull] != want {
		t.Errorf("TxDrops %d ring-full %d, want %d", st.TxDrops, p.Drops()[DropRingFull], want)
	}
	s.SetTxStall("em0", 0, false)
	if err := p.Flush(0); err != nil {
		t.Fatal(err)
	}
	n3, err := p.Send(0, frames[n:])
	if err != nil || n3 != slots-1 {
		t.Fatalf("after unstall sent %d: %v", n3, err)
	}
	out := s.Transmitted("em0", 0)
	if len(out) != n+n3 {
		t.Fatalf("transmitted %d, want %d", len(out), n+n3)
	}
	for i, b := range out {
		if !bytes.Equal(b, pkt(i, 100)) {
			t.Fatalf("frame %d out of order", i)
		}
	}
	checkClean(t, s)
}

func TestSendOversizeDropped(t *testing.T) {
	s, err := NewSim(SimConfig{BufSize: 512, Ports: []SimPortConfig{{Name: "em0", Slots: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	p := open(t, s, "em0")
	frames := nic.NewFrames(3)
	frames[0].SetData(pkt(0, 100))
	frames[1].SetData(pkt(1, 600))
	frames[2].SetData(pkt(2, 512))
	if n, err := p.Send(0, frames); n != 3 || err != nil {
		t.Fatalf("sent %d: %v", n, err)
	}
	out := s.Transmitted("em0", 0)
	if len(out) != 2 || !bytes.Equal(out[0], pkt(0, 100)) || !bytes.Equal(out[1], pkt(2, 512)) {
		t.Fatalf("transmitted %d frames", len(out))
	}
	if d := p.Drops()[DropOversize]; d != 1 {
		t.Errorf("oversize drops %d", d)
	}
	checkClean(t, s)
}

func slotBufs(r *ring, from uint32, n int) []uint32 {
	var out []uint32
	for i := 0; i < n; i++ {
		out = append(out, r.slots[from].BufIdx)
		from = r.next(from)
	}
	return out
}

func TestForwardZeroCopy(t *testing.T) {
	const slots = 16
	s := newSim(t, slots, "wan", "lan")
	wan, lan := open(t, s, "wan"), open(t, s, "lan")
	seq, got := 0, 0
	for round := 0; round < 12; round++ {
		for i := 0; i < 11; i++ {
			s.Inject("wan", 0, pkt(seq, 64+seq))
			seq++
		}
		// Make the RX ring's buffers visible, then remember which buffers
		// hold the frames: after Forward the TX slots must hold the same.
		rq := wan.queues[0]
		if err := rq.rxRefill(11); err != nil {
			t.Fatal(err)
		}
		rxBufs := slotBufs(&rq.rx, rq.rx.head, int(rq.rx.avail()))
		txStart := lan.queues[0].tx.head
		moved := 0
		for moved < len(rxBufs) {
			n, err := Forward(wan, 0, lan, 0, 4, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("forward stalled after %d", moved)
			}
			moved += n
		}
		if txBufs := slotBufs(&lan.queues[0].tx, txStart, moved); fmt.Sprint(txBufs) != fmt.Sprint(rxBufs) {
			t.Fatalf("tx buffers %v, rx buffers were %v: frames were copied", txBufs, rxBufs)
		}
		for _, b := range s.Transmitted("lan", 0) {
			if !bytes.Equal(b, pkt(got, 64+got)) {
				t.Fatalf("frame %d differs", got)
			}
			got++
		}
	}
	// Return the last swapped RX slots to the kernel before checking.
	if _, err := wan.Recv(0, nic.NewFrames(1)); err != nil {
		t.Fatal(err)
	}
	if got != seq {
		t.Fatalf("forwarded %d of %d", got, seq)
	}
	if st := lan.Stats(); st.TxPackets != uint64(seq) {
		t.Errorf("lan stats %+v", st)
	}
	checkClean(t, s)
}

func TestForwardCallback(t *testing.T) {
	s := newSim(t, 32, "wan", "lan")
	wan, lan := open(t, s, "wan"), open(t, s, "lan")
	for i := 0; i < 10; i++ {
		s.Inject("wan", 1, pkt(i, 100))
	}
	// Drop odd sequence numbers, rewrite and grow the others by 8 bytes.
	fn := func(buf []byte, n int) int {
		if binary.BigEndian.Uint32(buf)%2 == 1 {
			return -1
		}
		copy(buf[n:], "appended")
		buf[4] = 0xee
		return n + 8
	}
	n, err := Forward(wan, 1, lan, 1, 64, fn)
	if err != nil || n != 5 {
		t.Fatalf("moved %d: %v", n, err)
	}
	out := s.Transmitted("lan", 1)
	for i, b := range out {
		want := append(pkt(2*i, 100), "appended"...)
		want[4] = 0xee
		if !bytes.Equal(b, want) {
			t.Fatalf("frame %d: %x", i, b[:8])
		}
	}
	if d := wan.Drops()[DropFiltered]; d != 5 || len(out) != 5 {
		t.Errorf("filtered %d, out %d", d, len(out))
	}
	wan.Recv(1, nic.NewFrames(1))
	checkClean(t, s)
}

func TestForwardCopyBetweenRegions(t *testing.T) {
	a := newSim(t, 8, "wan")
	b := newSim(t, 8, "lan")
	wan, lan := open(t, a, "wan"), open(t, b, "lan")
	for round := 0; round < 5; round++ {
		for i := 0; i < 6; i++ {
			a.Inject("wan", 0, pkt(round*6+i, 80))
		}
		if n, err := Forward(wan, 0, lan, 0, 6, nil); n != 6 || err != nil {
			t.Fatalf("moved %d: %v", n, err)
		}
		for i, f := range b.Transmitted("lan", 0) {
			if !bytes.Equal(f, pkt(round*6+i, 80)) {
				t.Fatalf("frame %d differs", i)
			}
		}
	}
	wan.Recv(0, nic.NewFrames(1))
	checkClean(t, a)
	checkClean(t, b)
}

func TestHostRings(t *testing.T) {
	s := newSim(t, 16, "em0")
	nicp := open(t, s, "em0")
	host, err := s.OpenHost("em0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	if !host.IsHost() || host.Queues() != 1 || host.Name() != "netmap:em0^" {
		t.Fatalf("host port %q queues %d", host.Name(), host.Queues())
	}
	// Host stack -> host RX ring -> Recv.
	s.InjectHost("em0", pkt(1, 70))
	frames := nic.NewFrames(4)
	if n, err := host.Recv(0, frames); n != 1 || err != nil || !bytes.Equal(frames[0].Data(), pkt(1, 70)) {
		t.Fatalf("host recv %d: %v", n, err)
	}
	// Send -> host TX ring -> host stack.
	frames[0].SetData(pkt(2, 90))
	if n, err := host.Send(0, frames[:1]); n != 1 || err != nil {
		t.Fatalf("host send %d: %v", n, err)
	}
	if in := s.HostReceived("em0"); len(in) != 1 || !bytes.Equal(in[0], pkt(2, 90)) {
		t.Fatalf("host stack got %d frames", len(in))
	}
	// Wire -> NIC RX -> host stack, zero-copy (same region), and back.
	s.Inject("em0", 0, pkt(3, 60))
	if n, err := Forward(nicp, 0, host, 0, 8, nil); n != 1 || err != nil {
		t.Fatalf("nic->host %d: %v", n, err)
	}
	if in := s.HostReceived("em0"); len(in) != 1 || !bytes.Equal(in[0], pkt(3, 60)) {
		t.Fatalf("host stack got %d frames", len(in))
	}
	s.InjectHost("em0", pkt(4, 61))
	if n, err := Forward(host, 0, nicp, 0, 8, nil); n != 1 || err != nil {
		t.Fatalf("host->nic %d: %v", n, err)
	}
	if out := s.Transmitted("em0", 0); len(out) != 1 || !bytes.Equal(out[0], pkt(4, 61)) {
		t.Fatalf("wire got %d frames", len(out))
	}
	nicp.Recv(0, frames)
	host.Recv(0, frames)
	checkClean(t, s)
	if nicp.Stats().RxPackets != 1 || host.Stats().RxPackets != 2 {
		t.Errorf("nic %+v host %+v", nicp.Stats(), host.Stats())
	}
}

func TestWait(t *testing.T) {
	s := newSim(t, 8, "em0")
	p := open(t, s, "em0")
	start := time.Now()
	if err := p.Wait(0, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 10*time.Millisecond {
		t.Error("Wait on an empty ring returned early")
	}
	go func() {
		time.Sleep(5 * time.Millisecond)
		s.Inject("em0", 0, pkt(0, 60))
	}()
	if err := p.Wait(0, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Recv(0, nic.NewFrames(1)); n != 1 {
		t.Errorf("received %d after Wait", n)
	}
	p.Close()
	if _, err := p.Recv(0, nic.NewFrames(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Recv after Close: %v", err)
	}
	if err := p.Wait(0, time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
}

// A user side that breaks the ring protocol must be caught by the
// simulated kernel, as the real one resets the ring.
func TestViolationsDetected(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, s *Sim, p *Port)
		want string
	}{
		{"rx head past tail", func(t *testing.T, s *Sim, p *Port) {
			s.Inject("em0", 0, pkt(0, 60))
			qu := p.queues[0]
			qu.rxRefill(1)
			qu.rx.head = qu.rx.next(qu.rx.next(qu.rx.tail))
			qu.rx.publish()
			qu.k.RxSync()
		}, "rxsync: head"},
		{"tx head backwards", func(t *testing.T, s *Sim, p *Port) {
			// Stalled wire: the kernel keeps the sent slots, so moving head
			// back cannot be mistaken for a move forward around the ring.
			s.SetTxStall("em0", 0, true)
			f := nic.NewFrames(3)
			for _, x := range f {
				x.SetData(pkt(0, 60))
			}
			p.Send(0, f)
			qu := p.queues[0]
			qu.tx.head = 1
			qu.tx.publish()
			qu.k.TxSync()
		}, "txsync: head 1 outside"},
		{"cur behind head", func(t *testing.T, s *Sim, p *Port) {
			qu := p.queues[0]
			qu.tx.head = 2
			qu.tx.publish()
			qu.tx.hdr.Cur = 1
			qu.k.TxSync()
		}, "cur 1 outside"},
		{"swap without NS_BUF_CHANGED", func(t *testing.T, s *Sim, p *Port) {
			qu := p.queues[0]
			a, b := &qu.tx.slots[0], &qu.tx.slots[1]
			a.BufIdx, b.BufIdx = b.BufIdx, a.BufIdx
			a.Len, b.Len = 60, 60
			qu.tx.head = 2
			qu.tx.publish()
			qu.k.TxSync()
		}, "without NS_BUF_CHANGED"},
		{"kernel-owned slot modified", func(t *testing.T, s *Sim, p *Port) {
			qu := p.queues[0]
			// RX ring is empty: every slot belongs to the kernel.
			qu.rx.slots[0].BufIdx, qu.rx.slots[1].BufIdx = qu.rx.slots[1].BufIdx, qu.rx.slots[0].BufIdx
			s.Inject("em0", 0, pkt(0, 60))
			qu.k.RxSync()
		}, "while owned by the kernel"},
		{"invalid buffer released", func(t *testing.T, s *Sim, p *Port) {
			qu := p.queues[0]
			qu.tx.slots[0].BufIdx = 1
			qu.tx.slots[0].Flags = NSBufChanged
			qu.tx.head = 1
			qu.tx.publish()
			qu.k.TxSync()
		}, "invalid buffer 1"},
		{"tx len beyond buffer", func(t *testing.T, s *Sim, p *Port) {
			qu := p.queues[0]
			qu.tx.slots[0].Len = 4000
			qu.tx.head = 1
			qu.tx.publish()
			qu.k.TxSync()
		}, "len 4000 > buffer size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSim(t, 8, "em0")
			p := open(t, s, "em0")
			tt.do(t, s, p)
			v := s.Violations()
			if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), tt.want) {
				t.Fatalf("violations %q, want one containing %q", v, tt.want)
			}
		})
	}
	t.Run("duplicated buffer", func(t *testing.T) {
		s := newSim(t, 8, "em0")
		p := open(t, s, "em0")
		qu := p.queues[0]
		qu.tx.slots[3].BufIdx = qu.rx.slots[5].BufIdx
		if err := s.CheckBuffers(); err == nil || !strings.Contains(err.Error(), "rx0 slot 5") {
			t.Fatalf("CheckBuffers = %v", err)
		}
	})
	t.Run("correct use is clean", func(t *testing.T) {
		s := newSim(t, 8, "em0")
		p := open(t, s, "em0")
		f := nic.NewFrames(5)
		for i := 0; i < 20; i++ {
			s.Inject("em0", 0, pkt(i, 60))
			n, _ := p.Recv(0, f)
			p.Send(0, f[:n])
		}
		checkClean(t, s)
	})
}

func TestKernelCorruptionReported(t *testing.T) {
	s := newSim(t, 8, "em0")
	p := open(t, s, "em0")
	qu := p.queues[0]
	s.afterSync = func(k *kring) { k.hdr.Tail = 99 }
	if _, err := p.Recv(0, nic.NewFrames(2)); !errors.Is(err, ErrKernel) {
		t.Fatalf("tail out of range: %v", err)
	}
	s.afterSync = nil
	for i := 0; i < 3; i++ {
		s.Inject("em0", 0, pkt(i, 60))
	}
	if err := qu.rxRefill(8); err != nil {
		t.Fatal(err)
	}
	s.afterSync = func(k *kring) {
		if !k.tx {
			k.hdr.Tail = k.rtail - 2 // takes back two slots the user owns
		}
	}
	qu.rx.head = qu.rx.next(qu.rx.head)
	if err := qu.rxRefill(8); !errors.Is(err, ErrKernel) {
		t.Fatalf("tail moved backwards: %v", err)
	}
	s.afterSync = nil
	qu.rx.slots[qu.rx.head].BufIdx = 1 << 30
	if n, err := p.Recv(0, nic.NewFrames(4)); n != 1 || err != nil {
		t.Fatalf("recv with one bad slot: %d %v", n, err)
	}
	if d := p.Drops()[DropBadSlot]; d != 1 || p.KernelErrors() != 2 {
		t.Errorf("bad-slot drops %d kernel errors %d", d, p.KernelErrors())
	}
}

func TestAllocsPerRun(t *testing.T) {
	s := newSim(t, 256, "wan", "lan")
	wan, lan := open(t, s, "wan"), open(t, s, "lan")
	s.SetTxDiscard("wan", 0, true)
	s.SetTxDiscard("lan", 0, true)
	frames := nic.NewFrames(8)
	for _, f := range frames {
		f.SetData(pkt(1, 200))
	}
	const runs = 100
	for i := 0; i < 8*(runs+1)*2; i++ {
		s.Inject("wan", 0, pkt(i, 200))
	}
	if a := testing.AllocsPerRun(runs, func() {
		if n, _ := wan.Recv(0, frames); n != len(frames) {
			t.Fatalf("recv %d", n)
		}
	}); a != 0 {
		t.Errorf("Recv allocates %v", a)
	}
	if a := testing.AllocsPerRun(runs, func() {
		if n, _ := lan.Send(0, frames); n != len(frames) {
			t.Fatalf("send %d", n)
		}
	}); a != 0 {
		t.Errorf("Send allocates %v", a)
	}
	if a := testing.AllocsPerRun(runs, func() {
		if n, _ := Forward(wan, 0, lan, 0, 8, nil); n != 8 {
			t.Fatalf("forward %d", n)
		}
	}); a != 0 {
		t.Errorf("Forward allocates %v", a)
	}
}

// TestHostAllocsPerRun: the host rings' Recv and Send, the control
// plane's way to and from the box's own stack, allocate nothing.
func TestHostAllocsPerRun(t *testing.T) {
	s := newSim(t, 256, "lan")
	host, err := s.OpenHost("lan")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	s.SetHostTxDiscard("lan", true)
	frames := nic.NewFrames(8)
	const runs = 100
	for i := 0; i < 8*(runs+1); i++ {
		s.InjectHost("lan", pkt(i, 200))
	}
	if a := testing.AllocsPerRun(runs, func() {
		for _, f := range frames {
			f.Reset()
		}
		if n, _ := host.Recv(0, frames); n != len(frames) {
			t.Fatalf("recv %d", n)
		}
		if n, _ := host.Send(0, frames); n != len(frames) {
			t.Fatalf("send %d", n)
		}
		_ = host.Wait(0, 0)
	}); a != 0 {
		t.Errorf("host Recv+Send+Wait allocates %v", a)
	}
	if in := s.HostReceived("lan"); len(in) != 0 {
		t.Errorf("discarding host TX ring kept %d frames", len(in))
	}
	checkClean(t, s)
}

func TestRecvDropsByReason(t *testing.T) {
	s := newSim(t, 16, "em0")
	p := open(t, s, "em0")
	s.Inject("em0", 0, pkt(0, 60))
	s.Inject("em0", 0, pkt(1, nic.MaxData+1)) // fits a netmap buffer, not a Frame
	s.Inject("em0", 0, pkt(2, 60))            // first fragment
	s.Inject("em0", 0, pkt(3, 60))            // last fragment
	s.Inject("em0", 0, pkt(4, 60))
	// The kernel marks frames 2..3 as one two-slot frame.
	s.afterSync = func(k *kring) {
		if !k.tx {
			k.slots[2].Flags = NSMoreFrag
		}
	}
	frames := nic.NewFrames(8)
	n, err := p.Recv(0, frames)
	if err != nil || n != 2 {
		t.Fatalf("recv %d: %v", n, err)
	}
	if !bytes.Equal(frames[0].Data(), pkt(0, 60)) || !bytes.Equal(frames[1].Data(), pkt(4, 60)) {
		t.Error("wrong frames delivered")
	}
	d := p.Drops()
	if d[DropRxOversize] != 1 || d[DropFragment] != 2 || p.Stats().RxDrops != 3 {
		t.Errorf("drops %v stats %+v", d, p.Stats())
	}
	for r := DropReason(0); r < NumDropReasons; r++ {
		if r.String() == "unknown" {
			t.Errorf("reason %d has no name", r)
		}
	}
}
