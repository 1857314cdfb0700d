package afxdp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/pppfwd/pppfwd/nic"
)

// Simulated kernel side of one AF_XDP socket. The rings live in byte
// slices laid out like the kernel's (producer, consumer and flags words on
// their own cache lines, descriptors after them) and are mapped with the
// same mapRing code the real port uses. The kernel side keeps its own
// ringIdx over the same memory with the roles reversed.
var simOff = ringOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}

type simKernel struct {
	t         testing.TB
	size      uint32
	frameSize uint64
	umem      []byte
	mem       [4][]byte // fill, comp, rx, tx
	// Kernel's views: it consumes fill and tx, produces rx and comp.
	fill, comp addrRing
	rx, tx     descRing
	budget     int      // frames per TX kick (0: unlimited)
	stallTX    bool     // kickTX takes nothing
	stallAgain bool     // and says EAGAIN
	sent       [][]byte // frames "transmitted"
	txKicks    int
	rxKicks    int
	rxNoFill   int // deliveries dropped: fill ring empty
	rxFull     int // deliveries dropped: RX ring full
	compQ      []uint64
	deferComp  bool // hold completions in compQ until complete()
	// napi, if set, are frames the driver's receive poll delivers at the
	// next RX kick (a busy poll), as a NAPI context holding them would.
	napi [][]byte
}

// newSim returns a simulated kernel and the user-side xsk over it.
func newSim(t testing.TB, size uint32, frameSize int, startIdx uint32) (*simKernel, *xsk) {
	t.Helper()
	k := &simKernel{t: t, size: size, frameSize: uint64(frameSize)}
	k.umem = make([]byte, 2*int(size)*frameSize)
	var x xsk
	for i := range k.mem {
		ent := uintptr(8)
		if i >= 2 {
			ent = 16
		}
		k.mem[i] = make([]byte, ringMapLen(simOff, size, ent))
		// Start the free-running indices near the wrap point.
		binary.NativeEndian.PutUint32(k.mem[i][simOff.Producer:], startIdx)
		binary.NativeEndian.PutUint32(k.mem[i][simOff.Consumer:], startIdx)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(mapAddrRing(&x.fill, k.mem[0], simOff, size))
	must(mapAddrRing(&x.comp, k.mem[1], simOff, size))
	must(mapDescRing(&x.rx, k.mem[2], simOff, size))
	must(mapDescRing(&x.tx, k.mem[3], simOff, size))
	must(mapAddrRing(&k.fill, k.mem[0], simOff, size))
	must(mapAddrRing(&k.comp, k.mem[1], simOff, size))
	must(mapDescRing(&k.rx, k.mem[2], simOff, size))
	must(mapDescRing(&k.tx, k.mem[3], simOff, size))
	x.setup(3, k.umem, frameSize, int(size), true, k)
	k.setNeedWakeup(3, true) // TX ring asks for kicks, as in copy mode
	return k, &x
}

func (k *simKernel) setNeedWakeup(ring int, on bool) {
	var v uint32
	if on {
		v = ringNeedWakeup
	}
	atomic.StoreUint32((*uint32)(ptrAt(k.mem[ring], simOff.Flags)), v)
}

// deliver plays the NIC: takes a fill entry, writes pkt after the XDP
// headroom and posts an RX descriptor.
func (k *simKernel) deliver(pkt []byte) bool {
	if k.rx.prodFree(1) == 0 {
		k.rxFull++
		return false
	}
	if k.fill.consAvail(1) == 0 {
		k.rxNoFill++
		return false
	}
	addr := k.fill.ents[k.fill.cachedCons&k.fill.mask] + xdpPacketHeadroom
	k.fill.consRelease(1)
	copy(k.umem[addr:], pkt)
	k.rx.ents[k.rx.cachedProd&k.rx.mask] = desc{Addr: addr, Len: uint32(len(pkt))}
	k.rx.prodSubmit(1)
	return true
}

// postRaw posts an arbitrary RX descriptor (for bad-descriptor tests).
// Like the kernel, it takes a fill entry for it.
func (k *simKernel) postRaw(d desc) {
	if k.fill.consAvail(1) == 0 {
		k.t.Fatal("postRaw: fill ring empty")
	}
	k.fill.consRelease(1)
	k.rx.ents[k.rx.cachedProd&k.rx.mask] = d
	k.rx.prodSubmit(1)
}

func (k *simKernel) kickTX() int {
	k.txKicks++
	if k.stallTX {
		if k.stallAgain {
			return kickAgain
		}
		return kickDone
	}
	n := k.tx.consAvail(k.size)
	more := false
	if k.budget > 0 && n > uint32(k.budget) {
		n, more = uint32(k.budget), true
	}
	for i := uint32(0); i < n; i++ {
		d := k.tx.ents[(k.tx.cachedCons+i)&k.tx.mask]
		k.sent = append(k.sent, bytes.Clone(k.umem[d.Addr:d.Addr+uint64(d.Len)]))
		k.compQ = append(k.compQ, d.Addr)
	}
	k.tx.consRelease(n)
	if !k.deferComp {
		k.complete()
	}
	if more {
		return kickAgain
	}
	return kickDone
}

// complete posts held completions.
func (k *simKernel) complete() {
	n := min(uint32(len(k.compQ)), k.comp.prodFree(uint32(len(k.compQ))))
	for i := uint32(0); i < n; i++ {
		k.comp.ents[(k.comp.cachedProd+i)&k.comp.mask] = k.compQ[i]
	}
	k.comp.prodSubmit(n)
	k.compQ = k.compQ[n:]
}

func (k *simKernel) kickRX() {
	k.rxKicks++
	for _, p := range k.napi {
		k.deliver(p)
	}
	k.napi = nil
}

func pkt(seq int, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seq*7 + i)
	}
	binary.BigEndian.PutUint32(b, uint32(seq))
	return b
}

func TestRingIdx(t *testing.T) {
	for _, start := range []uint32{0, 1<<32 - 5, 1 << 31} {
		mem := make([]byte, ringMapLen(simOff, 8, 8))
		var p, c addrRing
		binary.NativeEndian.PutUint32(mem[simOff.Producer:], start)
		binary.NativeEndian.PutUint32(mem[simOff.Consumer:], start)
		if err := mapAddrRing(&p, mem, simOff, 8); err != nil {
			t.Fatal(err)
		}
		if err := mapAddrRing(&c, mem, simOff, 8); err != nil {
			t.Fatal(err)
		}
		next := uint64(0)
		got := uint64(0)
		for round := 0; round < 20; round++ {
			// Producer fills what it may.
			free := p.prodFree(8)
			if want := 8 - (p.cachedProd - c.cachedCons); free != want {
				t.Fatalf("start %#x round %d: free %d want %d", start, round, free, want)
			}
			w := min(free, uint32(round%5+1))
			for i := uint32(0); i < w; i++ {
				p.ents[(p.cachedProd+i)&p.mask] = next
				next++
			}
			p.prodSubmit(w)
			// Consumer takes up to 3.
			n := min(c.consAvail(3), 3)
			for i := uint32(0); i < n; i++ {
				if v := c.ents[(c.cachedCons+i)&c.mask]; v != got {
					t.Fatalf("start %#x: got %d want %d", start, v, got)
				}
				got++
			}
			c.consRelease(n)
		}
		if got == 0 || next-got > 8 {
			t.Fatalf("start %#x: produced %d consumed %d", start, next, got)
		}
	}
}

// The cached index is reloaded only when the cached view is short.
func TestRingIdxCaching(t *testing.T) {
	mem := make([]byte, ringMapLen(simOff, 8, 8))
	var p addrRing
	if err := mapAddrRing(&p, mem, simOff, 8); err != nil {
		t.Fatal(err)
	}
	p.prodSubmit(6)
	cons := (*uint32)(ptrAt(mem, simOff.Consumer))
	atomic.StoreUint32(cons, 6) // consumer took everything
	if f := p.prodFree(2); f != 2 {
		t.Fatalf("free %d: cached view has 2 free, should not reload", f)
	}
	if f := p.prodFree(3); f != 8 {
		t.Fatalf("free %d: want reload to 8", f)
	}
	if got := atomic.LoadUint32((*uint32)(ptrAt(mem, simOff.Producer))); got != 6 {
		t.Fatalf("producer word %d want 6", got)
	}
}

func TestMapRingErrors(t *testing.T) {
	mem := make([]byte, ringMapLen(simOff, 8, 16))
	var d descRing
	for _, tc := range []struct {
		name string
		mem  []byte
		off  ringOffset
		size uint32
	}{
		{"not power of two", mem, simOff, 6},
		{"zero size", mem, simOff, 0},
		{"empty map", nil, simOff, 8},
		{"descs overflow", mem, simOff, 16},
		{"index outside", mem, ringOffset{Producer: uint64(len(mem)), Consumer: 64, Flags: 128, Desc: 192}, 8},
		{"index misaligned", mem, ringOffset{Producer: 2, Consumer: 64, Flags: 128, Desc: 192}, 8},
		{"desc misaligned", mem[:len(mem)-4], ringOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 188}, 8},
	} {
		if err := mapDescRing(&d, tc.mem, tc.off, tc.size); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := mapDescRing(&d, mem, simOff, 8); err != nil {
		t.Fatalf("good layout: %v", err)
	}
}

func TestXSKRecvSend(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   uint32
		start  uint32
		batch  int
		budget int
	}{
		{"small", 64, 0, 32, 0},
		{"wrap", 64, 1<<32 - 100, 17, 0},
		{"budget", 128, 1<<32 - 1, 64, 32},
		{"big-batch", 64, 7, 200, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, x := newSim(t, tc.size, 2048, tc.start)
			k.budget = tc.budget
			if tc.budget != 0 {
				x.rxInfo = nic.RxCsumUnknown // as Open sets it in copy mode
			}
			frames := nic.NewFrames(tc.batch)
			for _, f := range frames {
				f.Rx = nic.RxCsumPartial // stale: recv sets it
			}
			seq, rseq := 0, 0
			total := int(tc.size) * 10
			for rseq < total {
				// Deliver a burst no larger than the RX ring.
				burst := 1 + (seq*31)%int(tc.size)
				for i := 0; i < burst && seq < total; i++ {
					if !k.deliver(pkt(seq, 60+seq%1400)) {
						break
					}
					seq++
				}
				for {
					n := x.recv(frames)
					if n == 0 {
						break
					}
					for _, f := range frames[:n] {
						want := pkt(rseq, 60+rseq%1400)
						if f.Off != nic.Headroom || f.Queue != 3 || f.Rx != x.rxInfo || !bytes.Equal(f.Data(), want) {
							t.Fatalf("frame %d: off %d queue %d rx %b len %d", rseq, f.Off, f.Queue, f.Rx, f.Len)
						}
						rseq++
					}
					// Echo them back out.
					sent := 0
					for sent < n {
						m := x.send(frames[sent:n])
						if m == 0 {
							t.Fatalf("send stuck with %d in flight", x.txInFlight())
						}
						sent += m
					}
				}
			}
			if k.rxNoFill != 0 || k.rxFull != 0 {
				t.Fatalf("kernel dropped: no fill %d, rx full %d", k.rxNoFill, k.rxFull)
			}
			x.reap()
			if len(k.sent) != total || x.txInFlight() != 0 {
				t.Fatalf("sent %d of %d, %d chunks in flight", len(k.sent), total, x.txInFlight())
			}
			for i, b := range k.sent {
				if !bytes.Equal(b, pkt(i, 60+i%1400)) {
					t.Fatalf("sent frame %d differs", i)
				}
			}
			if got := x.st.rxPackets.Load(); got != uint64(total) {
				t.Fatalf("rxPackets %d", got)
			}
			if got := x.st.txPackets.Load(); got != uint64(total) {
				t.Fatalf("txPackets %d", got)
			}
			for r := DropReason(0); r < numDropReasons; r++ {
				if n := x.st.drops[r].Load(); n != 0 {
					t.Errorf("%v: %d", r, n)
				}
			}
		})
	}
}

func TestXSKTxBackpressure(t *testing.T) {
	k, x := newSim(t, 64, 2048, 0)
	k.stallTX = true
	frames := nic.NewFrames(48)
	for i, f := range frames {
		f.SetData(pkt(i, 100))
	}
	if n := x.send(frames); n != 48 {
		t.Fatalf("first send %d", n)
	}
	if n := x.send(frames); n != 16 {
		t.Fatalf("second send %d, want the 16 left", n)
	}
	if n := x.send(frames); n != 0 {
		t.Fatalf("third send %d, want 0", n)
	}
	if got := x.st.drops[DropTxRingFull].Load(); got != 32+48 {
		t.Fatalf("ring-full %d", got)
	}
	// The kernel drains but holds completions: chunks stay in flight.
	k.stallTX, k.deferComp = false, true
	x.flush()
	if n := x.send(frames); n != 0 {
		t.Fatalf("send %d before completions", n)
	}
	k.complete()
	if n := x.send(frames); n != 48 {
		t.Fatalf("send after completions %d", n)
	}
}

// Kicks: one per batch when the ring asks, repeated while the kernel's
// budget runs out, none when the ring does not ask.
func TestXSKKicks(t *testing.T) {
	k, x := newSim(t, 256, 2048, 0)
	k.budget = 32
	frames := nic.NewFrames(200)
	for i, f := range frames {
		f.SetData(pkt(i, 64))
	}
	x.send(frames)
	if k.txKicks != 7 || len(k.sent) != 200 {
		t.Fatalf("kicks %d sent %d, want 7 and 200", k.txKicks, len(k.sent))
	}
	k.setNeedWakeup(3, false)
	x.send(frames[:10])
	if k.txKicks != 7 {
		t.Fatalf("kicked without need_wakeup")
	}
	k.setNeedWakeup(3, true)
	x.flush()
	if k.txKicks != 8 || len(k.sent) != 210 {
		t.Fatalf("flush: kicks %d sent %d", k.txKicks, len(k.sent))
	}
	// A kernel that makes no progress ends the kick loop.
	k.stallTX = true
	x.send(frames[:5])
	if k.txKicks != 9 {
		t.Fatalf("stalled: kicks %d", k.txKicks)
	}
	// So does one that says EAGAIN without taking anything.
	k.stallAgain = true
	x.send(frames[:5])
	if k.txKicks != 10 {
		t.Fatalf("stalled with EAGAIN: kicks %d", k.txKicks)
	}
	// RX kicks only when the fill ring asks.
	x.recv(frames)
	if k.rxKicks != 0 {
		t.Fatal("rx kick without need_wakeup")
	}
	k.setNeedWakeup(0, true)
	x.recv(frames)
	if k.rxKicks != 1 {
		t.Fatal("no rx kick with need_wakeup")
	}
}

func TestXSKBadInput(t *testing.T) {
	k, x := newSim(t, 64, 2048, 0)
	frames := nic.NewFrames(8)
	tx := uint64(64 * 2048)                      // first TX chunk
	k.postRaw(desc{Addr: tx + 256, Len: 60})     // a TX chunk on RX
	k.postRaw(desc{Addr: 1 << 40, Len: 60})      // outside the UMEM
	k.postRaw(desc{Addr: 2048 + 2000, Len: 100}) // crosses the chunk end
	k.postRaw(desc{Addr: 4096 + 256, Len: 60})   // good
	if n := x.recv(frames); n != 1 {
		t.Fatalf("recv %d want 1", n)
	}
	if got := x.st.drops[DropRxBadDesc].Load(); got != 3 {
		t.Fatalf("bad desc %d", got)
	}
	// Frames with a bad length are accepted and dropped.
	bad := nic.NewFrames(4)
	bad[0].Len = 0
	bad[1].Off, bad[1].Len = nic.BufSize-10, 20
	bad[2].SetData(pkt(1, 100))
	bad[3].Off, bad[3].Len = -1, 10
	if n := x.send(bad); n != 4 {
		t.Fatalf("send %d want 4", n)
	}
	if got := x.st.drops[DropTxBadFrame].Load(); got != 3 || len(k.sent) != 1 {
		t.Fatalf("bad frames %d, sent %d", got, len(k.sent))
	}
	// A completion for an RX chunk is ignored.
	k.comp.ents[k.comp.cachedProd&k.comp.mask] = 0
	k.comp.prodSubmit(1)
	x.reap()
	if got := x.st.drops[DropTxBadCompletion].Load(); got != 1 {
		t.Fatalf("bad completion %d", got)
	}
}

// TestXSKModel runs random operations against the port and a model: every
// frame the kernel delivers comes out of recv once, in order, and every
// frame send accepts reaches the kernel once, in order; no chunk is lost.
func TestXSKModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		k, x := newSim(t, 32, 2048, uint32(r.Uint64()))
		k.budget = 1 + r.IntN(40)
		k.deferComp = true
		frames := nic.NewFrames(48)
		var delivered, received, accepted int
		for step := 0; step < 3000; step++ {
			switch r.IntN(5) {
			case 0:
				for n := r.IntN(40); n > 0; n-- {
					if k.deliver(pkt(delivered, 60+r.IntN(500))) {
						delivered++
					}
				}
			case 1:
				n := x.recv(frames[:1+r.IntN(48)])
				for _, f := range frames[:n] {
					if binary.BigEndian.Uint32(f.Data()) != uint32(received) {
						t.Fatalf("seed %d: received out of order", seed)
					}
					received++
				}
			case 2:
				m := 1 + r.IntN(48)
				for i, f := range frames[:m] {
					f.SetData(pkt(accepted+i, 64))
				}
				accepted += x.send(frames[:m])
			case 3:
				k.complete()
			case 4:
				k.stallTX = r.IntN(3) == 0
			}
			if received > delivered {
				t.Fatalf("seed %d: received %d > delivered %d", seed, received, delivered)
			}
			// Chunk conservation: RX chunks are in fill or rx, TX chunks
			// free, in the TX ring, held by the kernel or completed.
			rxChunks := (k.fill.consAvail(64) + k.rx.prodFreeUsed())
			if rxChunks != 32 {
				t.Fatalf("seed %d step %d: %d RX chunks accounted", seed, step, rxChunks)
			}
			txChunks := len(x.txFree) + int(x.tx.cachedProd-atomic.LoadUint32(x.tx.cons)) + len(k.compQ) +
				int(atomic.LoadUint32(x.comp.prod)-x.comp.cachedCons)
			if txChunks != 32 {
				t.Fatalf("seed %d step %d: %d TX chunks accounted", seed, step, txChunks)
			}
		}
		k.stallTX = false
		x.flush()
		for i, b := range k.sent {
			if binary.BigEndian.Uint32(b) != uint32(i) {
				t.Fatalf("seed %d: sent frame %d out of order", seed, i)
			}
		}
		if len(k.sent) != accepted || k.rxNoFill != 0 {
			t.Fatalf("seed %d: kernel sent %d of %d accepted; no-fill drops %d", seed, len(k.sent), accepted, k.rxNoFill)
		}
	}
}

// prodFreeUsed is the number of published, unconsumed entries of a ring the
// caller produces (test helper).
func (r *ringIdx) prodFreeUsed() uint32 { return r.cachedProd - atomic.LoadUint32(r.cons) }

func TestXSKAllocs(t *testing.T) {
	k, x := newSim(t, 256, 2048, 0)
	frames := nic.NewFrames(32)
	p := pkt(1, 64)
	k.sent = make([][]byte, 0, 1)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			k.deliver(p)
		}
		n := x.recv(frames)
		k.stallTX = true // the simulated kernel's TX copies allocate
		x.send(frames[:n])
		k.stallTX = false
		k.tx.consRelease(k.tx.consAvail(256))
		k.comp.prodSubmit(0)
	})
	if allocs != 0 {
		t.Fatalf("allocs per batch %v", allocs)
	}
}

func FuzzRecvDesc(f *testing.F) {
	f.Add(uint64(256), uint32(60))
	f.Add(uint64(1<<40), uint32(60))
	f.Add(uint64(2047), uint32(1))
	f.Add(uint64(64*2048+256), uint32(1500))
	f.Fuzz(func(t *testing.T, addr uint64, l uint32) {
		k, x := newSim(t, 64, 2048, 0)
		k.postRaw(desc{Addr: addr, Len: l})
		frames := nic.NewFrames(1)
		n := x.recv(frames)
		drops := x.st.drops[DropRxBadDesc].Load() + x.st.drops[DropRxTooBig].Load()
		if n+int(drops) != 1 {
			t.Fatalf("n %d drops %d", n, drops)
		}
		if n == 1 && (frames[0].Len != int(l) || !bytes.Equal(frames[0].Data(), k.umem[addr:addr+uint64(l)])) {
			t.Fatal("frame does not match UMEM")
		}
	})
}

// TestXSKBusyPoll: a busy-polling socket's empty recv runs the driver's
// poll (an RX kick, whether the fill ring asks or not) and takes what
// that delivered in the same call; a non-empty one does not kick; every
// send kicks TX, asked or not. Without busy polling none of that.
func TestXSKBusyPoll(t *testing.T) {
	for _, busy := range []bool{false, true} {
		k, x := newSim(t, 64, 2048, 0)
		x.busyPoll = busy
		frames := nic.NewFrames(8)
		k.napi = [][]byte{pkt(1, 60), pkt(2, 60)}
		n := x.recv(frames)
		wantN, wantKicks := 0, 0
		if busy {
			wantN, wantKicks = 2, 1
		}
		if n != wantN || k.rxKicks != wantKicks {
			t.Fatalf("busy %v: empty recv got %d frames with %d kicks, want %d and %d", busy, n, k.rxKicks, wantN, wantKicks)
		}
		if busy && binary.BigEndian.Uint32(frames[1].Data()) != 2 {
			t.Fatalf("second frame %x", frames[1].Data()[:4])
		}
		k.deliver(pkt(3, 60))
		if n := x.recv(frames); n != 1 || k.rxKicks != wantKicks {
			t.Fatalf("busy %v: recv with a frame waiting got %d with %d kicks", busy, n, k.rxKicks)
		}
		k.setNeedWakeup(3, false) // TX does not ask
		for _, f := range frames[:2] {
			f.SetData(pkt(9, 64))
		}
		x.send(frames[:2])
		if kicked := k.txKicks == 1; kicked != busy || (busy && len(k.sent) != 2) {
			t.Fatalf("busy %v: send kicked %d times, sent %d", busy, k.txKicks, len(k.sent))
		}
	}
}
