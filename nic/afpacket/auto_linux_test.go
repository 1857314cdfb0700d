//go:build linux

package afpacket

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/nettest"
	"github.com/pppfwd/pppfwd/nic"
)

// autoPort is an RxAuto queue over synthetic rings: slots frame slots and
// blocks blocks of testBlock bytes; the switches it makes are recorded.
func autoPort(slots, blocks int) (p *Port, frames, blockRx []byte, modes *[]bool) {
	frames = make([]byte, slots*frameSize)
	blockRx = make([]byte, blocks*testBlock)
	modes = new([]bool)
	q := &queue{fd: -1, rx: frames, v2: true, nslot: slots,
		blocks:  &queue{fd: -1, rx: blockRx, bsz: testBlock, nblk: blocks, sparseN: sparseFrames},
		setMode: func(hi bool) error { *modes = append(*modes, hi); return nil }}
	return &Port{name: "synth", q: []*queue{q}}, frames, blockRx, modes
}

// seqFrame is a 60-byte frame carrying seq in its first two bytes.
func seqFrame(seq int) pkt {
	b := make([]byte, 60)
	binary.BigEndian.PutUint16(b, uint16(seq))
	return pkt{data: b}
}

func seqs(frames []*nic.Frame) []int {
	var s []int
	for _, f := range frames {
		s = append(s, int(binary.BigEndian.Uint16(f.Data())))
	}
	return s
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRecvSyntheticAuto: an RxAuto queue switches to blocks after
// fullBatches full batches in a row, back to frames on a block the timer
// retired nearly empty, and keeps the order of frames across both
// switches: frames left in the frame ring before the block ring's, and
// the block ring's last block before newer frames in the frame ring.
func TestRecvSyntheticAuto(t *testing.T) {
	const slots = 64
	p, frx, brx, modes := autoPort(slots, 4)
	q := p.q[0]
	batch := nic.NewFrames(4)
	seq, slot := 0, 0
	putFrames := func(n int) {
		for i := 0; i < n; i++ {
			buildSlot(frx, slot%slots, seqFrame(seq))
			seq++
			slot++
		}
	}
	// Short batches keep the queue on frames.
	for i := 0; i < 2*fullBatches; i++ {
		putFrames(3)
		if n, _ := p.Recv(0, batch); n != 3 {
			t.Fatalf("short batch %d: %d frames", i, n)
		}
	}
	if len(*modes) != 0 || q.hi {
		t.Fatalf("switched on short batches: %v", *modes)
	}
	// fullBatches full ones in a row switch it to blocks.
	for i := 0; i < fullBatches; i++ {
		if q.hi {
			t.Fatalf("switched after %d full batches, want %d", i, fullBatches)
		}
		putFrames(4)
		if n, _ := p.Recv(0, batch); n != 4 {
			t.Fatalf("full batch %d: %d frames", i, n)
		}
	}
	if !q.hi || len(*modes) != 1 || !(*modes)[0] {
		t.Fatalf("after %d full batches: hi %v, switches %v", fullBatches, q.hi, *modes)
	}
	// Frames the kernel put in the frame ring before the switch come
	// before the block ring's.
	first := seq
	putFrames(2)
	buildBlock(brx, 0, []pkt{seqFrame(seq), seqFrame(seq + 1), seqFrame(seq + 2)})
	seq += 3
	got := []int{}
	for len(got) < 5 {
		n, _ := p.Recv(0, batch)
		if n == 0 {
			t.Fatalf("ring empty after %v", got)
		}
		got = append(got, seqs(batch[:n])...)
	}
	if want := []int{first, first + 1, first + 2, first + 3, first + 4}; !equalInts(got, want) {
		t.Fatalf("after the switch to blocks: %v, want %v", got, want)
	}
	if !q.hi {
		t.Fatal("a full block switched back to frames")
	}
	// A timed-out block with fewer than sparseFrames frames switches back.
	buildBlock(brx, 1, []pkt{seqFrame(seq)})
	seq++
	storeStatus(brx, 1*testBlock+bdStatus, unix.TP_STATUS_USER|unix.TP_STATUS_BLK_TMO)
	if n, _ := p.Recv(0, batch); n != 1 {
		t.Fatalf("timed-out block: %d frames", n)
	}
	if q.hi || len(*modes) != 2 || (*modes)[1] {
		t.Fatalf("after a sparse timed-out block: hi %v, switches %v", q.hi, *modes)
	}
	if st := ne.Uint32(brx[1*testBlock+bdNumPkts:]); st != 0 {
		t.Fatalf("released block keeps its count %d", st)
	}
	// Frames the kernel is still counting into the open block (block 2)
	// hold back the newer frames in the frame ring until the block is
	// handed over.
	old := seq
	buildBlock(brx, 2, []pkt{seqFrame(seq), seqFrame(seq + 1)})
	storeStatus(brx, 2*testBlock+bdStatus, unix.TP_STATUS_KERNEL)
	seq += 2
	putFrames(1)
	if n, _ := p.Recv(0, batch); n != 0 {
		t.Fatalf("Recv took %v from the frame ring while the open block had frames", seqs(batch[:n]))
	}
	if !p.RxReady(0) {
		t.Fatal("RxReady false with a frame waiting")
	}
	storeStatus(brx, 2*testBlock+bdStatus, unix.TP_STATUS_USER|unix.TP_STATUS_BLK_TMO)
	n, _ := p.Recv(0, batch)
	if want := []int{old, old + 1, old + 2}; !equalInts(seqs(batch[:n]), want) {
		t.Fatalf("after the block came: %v, want %v", seqs(batch[:n]), want)
	}
	// An empty open block holds nothing back.
	putFrames(1)
	if n, _ := p.Recv(0, batch); n != 1 {
		t.Fatalf("with the block ring empty: %d frames", n)
	}
	if s := p.QueueStats(0); s.RingSwitches != 2 || s.RxPackets != uint64(seq) {
		t.Fatalf("stats: %d switches, %d packets; want 2, %d", s.RingSwitches, s.RxPackets, seq)
	}
	// A block that never comes holds the frame ring back only maxHold
	// calls.
	storeStatus(brx, 3*testBlock+bdStatus, unix.TP_STATUS_KERNEL)
	ne.PutUint32(brx[3*testBlock+bdNumPkts:], 1)
	q.blocks.blk = 3
	putFrames(1)
	calls := 0
	for n := 0; n == 0; calls++ {
		if calls > maxHold+1 {
			t.Fatal("frame ring held back past maxHold")
		}
		n, _ = p.Recv(0, batch)
	}
	if calls != maxHold+1 {
		t.Fatalf("held %d calls, want %d", calls-1, maxHold)
	}
	ne.PutUint32(brx[3*testBlock+bdNumPkts:], 0)
	if a := testing.AllocsPerRun(100, func() { putFrames(4); p.Recv(0, batch) }); a != 0 {
		t.Fatalf("Recv allocates %.1f", a)
	}
}

// TestIntegrationAFPacketAuto: over veth, an RxAuto port switches to its
// block ring when a backlog builds, back to its frame ring when the load
// goes, and delivers every frame once and in order through both switches.
func TestIntegrationAFPacketAuto(t *testing.T) {
	ln := nettest.MustLine(t, nettest.LineConfig{})
	tx := openIn(t, ln.R, ln.RA, Config{TxMode: TxCopy, RxRing: RxFrames})
	rx := openIn(t, ln.A, ln.AIf, Config{Promisc: true})
	if r, err := rx.RxRing(); r != RxAuto || err != nil {
		t.Fatalf("RxRing() = %v, %v; want auto", r, err)
	}
	next, want := 0, 0
	send := func(n int) {
		out := nic.NewFrames(64)
		for n > 0 {
			k := min(n, len(out))
			for i := 0; i < k; i++ {
				b := ethFrame(60)
				binary.BigEndian.PutUint32(b[14:], uint32(next))
				next++
				out[i].SetData(b)
			}
			for sent := 0; sent < k; {
				m, err := tx.Send(0, out[sent:k])
				if err != nil {
					t.Fatal(err)
				}
				sent += m
			}
			n -= k
		}
	}
	batch := nic.NewFrames(16)
	recv := func(n int, d time.Duration) {
		t.Helper()
		deadline := time.Now().Add(d)
		for want < n && time.Now().Before(deadline) {
			k, err := rx.Recv(0, batch)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				_ = rx.Wait(0, 5*time.Millisecond)
			}
			for _, f := range batch[:k] {
				if !isMarked(f.Data()) {
					continue
				}
				if got := int(binary.BigEndian.Uint32(f.Data()[14:])); got != want {
					t.Fatalf("frame %d arrived when %d was due", got, want)
				}
				want++
			}
		}
		if want < n {
			t.Fatalf("received %d of %d frames (kernel drops %d)", want, n, rx.QueueStats(0).KernelDrops)
		}
	}
	// A backlog: frames queue in the frame ring while nobody reads, and
	// reading them in small batches fills batch after batch.
	send(2000)
	time.Sleep(50 * time.Millisecond)
	recv(1000, 5*time.Second)
	if !rx.q[0].hi {
		t.Fatalf("no switch to blocks after a backlog of full batches (switches %d)", rx.QueueStats(0).RingSwitches)
	}
	// These go to the block ring, behind the frame ring's rest.
	send(3000)
	recv(5000, 5*time.Second)
	st, err := unix.GetsockoptTpacketStatsV3(rx.q[0].blocks.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil || st.Packets < 2000 || st.Drops != 0 {
		t.Fatalf("block ring took %+v (%v); want the 3000 sent after the switch", st, err)
	}
	// Light load: the timer hands over a nearly empty block, and the
	// queue goes back to frames.
	for i := 0; i < 10 && rx.q[0].hi; i++ {
		send(1)
		recv(next, 2*time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	if rx.q[0].hi {
		t.Fatal("still on blocks under light load")
	}
	send(10)
	recv(next, 2*time.Second)
	qs := rx.QueueStats(0)
	if qs.RingSwitches != 2 || qs.KernelDrops != 0 {
		t.Fatalf("switches %d, kernel drops %d; want 2 and 0", qs.RingSwitches, qs.KernelDrops)
	}
	if m := rx.q[0].modeErrs.Load(); m != 0 {
		t.Fatalf("%d failed switches", m)
	}
}

// TestDrowseSwitchesToFrames: a queue on blocks whose rings hold nothing
// switches back to frames when its thread is about to sleep (the kernel
// retires no empty block, so a pause would otherwise hold the next
// frame for the block timeout); it stays on blocks while either ring
// holds a frame or the open block has frames counted in, and a queue on
// frames is left alone.
func TestDrowseSwitchesToFrames(t *testing.T) {
	p, frx, brx, modes := autoPort(16, 4)
	q := p.q[0]
	p.Drowse(0)
	if len(*modes) != 0 {
		t.Fatalf("a queue on frames switched: %v", *modes)
	}
	q.switchRing(true)
	ne := binary.NativeEndian
	ne.PutUint32(brx[0*testBlock+bdNumPkts:], 2) // frames in the open block
	p.Drowse(0)
	if !q.hi {
		t.Fatal("switched to frames with frames counted into the open block")
	}
	ne.PutUint32(brx[0*testBlock+bdNumPkts:], 0)
	buildSlot(frx, 0, seqFrame(1)) // a frame left in the frame ring
	p.Drowse(0)
	if !q.hi {
		t.Fatal("switched to frames with a frame in the frame ring")
	}
	batch := nic.NewFrames(4)
	if n, _ := p.Recv(0, batch); n != 1 {
		t.Fatalf("Recv: %d frames, want the one left", n)
	}
	p.Drowse(0)
	if q.hi || len(*modes) != 2 || (*modes)[1] {
		t.Fatalf("idle queue on blocks: hi %v, switches %v; want back on frames", q.hi, *modes)
	}
	p.Drowse(-1) // out of range: ignored
	p.Drowse(1)
}
