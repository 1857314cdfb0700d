package afxdp

import (
	"sync/atomic"

	"github.com/pppfwd/pppfwd/nic"
)

// DropReason says why the port dropped a frame (Port.Drops).
type DropReason int

const (
	// DropRxBadDesc: the kernel handed out an RX descriptor outside the
	// UMEM's RX chunks or crossing a chunk boundary.
	DropRxBadDesc DropReason = iota
	// DropRxTooBig: the received frame is longer than nic.MaxData or the
	// caller's buffer.
	DropRxTooBig
	// DropTxBadFrame: Send got a frame that is empty, longer than a UMEM
	// chunk, or whose Off/Len lie outside its buffer. It counts as
	// accepted (Send's return value includes it) but is not sent.
	DropTxBadFrame
	// DropTxBadCompletion: the completion ring returned an address that is
	// not a TX chunk (ignored; the chunk is not reused).
	DropTxBadCompletion
	// DropTxRingFull: Send refused frames because no TX chunk or TX ring
	// slot was free (the frames stay with the caller).
	DropTxRingFull
	// DropTxKickError: the TX kick (sendto) failed with an error other than
	// EAGAIN; the frames stay in the TX ring and go with the next kick.
	DropTxKickError
	numDropReasons
)

func (r DropReason) String() string {
	switch r {
	case DropRxBadDesc:
		return "rx-bad-desc"
	case DropRxTooBig:
		return "rx-too-big"
	case DropTxBadFrame:
		return "tx-bad-frame"
	case DropTxBadCompletion:
		return "tx-bad-completion"
	case DropTxRingFull:
		return "tx-ring-full"
	case DropTxKickError:
		return "tx-kick-error"
	}
	return "unknown"
}

// kick results.
const (
	kickDone  = iota // the kernel took what it could; nothing to retry
	kickAgain        // EAGAIN: the kernel's per-call budget ran out
	kickError        // another error (ENOBUFS, EBUSY, ENETDOWN, ...)
)

// kicker wakes the kernel side of one socket. The real one calls sendto /
// recvfrom; tests use a simulated kernel.
type kicker interface {
	kickTX() int
	kickRX()
}

// counters are one queue's statistics, written by its worker and read by
// Stats from any goroutine.
type counters struct {
	rxPackets, rxBytes atomic.Uint64
	txPackets, txBytes atomic.Uint64
	drops              [numDropReasons]atomic.Uint64
	_                  [64]byte
}

// xsk is the ring discipline of one AF_XDP socket: UMEM bookkeeping,
// Recv/Send over the four rings. It knows nothing about syscalls beyond
// its kicker, so it runs against a simulated kernel in tests.
type xsk struct {
	q          uint16
	needWakeup bool
	// busyPoll: the socket busy-polls (Options.BusyPoll in effect): an
	// empty recv kicks RX to run the driver's poll, and every send
	// kicks TX.
	busyPoll   bool
	umem       []byte
	frameSize  uint64
	rxEnd      uint64 // chunks below rxEnd are RX chunks, the rest TX
	fill, comp addrRing
	rx, tx     descRing
	txFree     []uint64 // free TX chunk addresses (a stack)
	k          kicker
	st         counters
	// rxInfo is what recv marks every frame with (Frame.Rx).
	rxInfo nic.RxInfo
}

// setup splits the UMEM into RX and TX chunks, puts every RX chunk on the
// fill ring and every TX chunk on the free list.
func (x *xsk) setup(q uint16, umem []byte, frameSize, rxChunks int, needWakeup bool, k kicker) {
	x.q, x.umem, x.frameSize, x.needWakeup, x.k = q, umem, uint64(frameSize), needWakeup, k
	n := len(umem) / frameSize
	if rxChunks > n {
		rxChunks = n
	}
	x.rxEnd = uint64(rxChunks * frameSize)
	free := x.fill.prodFree(uint32(rxChunks))
	if free > uint32(rxChunks) {
		free = uint32(rxChunks)
	}
	for i := uint32(0); i < free; i++ {
		x.fill.ents[(x.fill.cachedProd+i)&x.fill.mask] = uint64(i) * x.frameSize
	}
	x.fill.prodSubmit(free)
	x.txFree = make([]uint64, 0, n-rxChunks)
	for i := n - 1; i >= rxChunks; i-- {
		x.txFree = append(x.txFree, uint64(i)*x.frameSize)
	}
}

// recv copies up to len(frames) received frames into frames and recycles
// their chunks to the fill ring in one batch.
func (x *xsk) recv(frames []*nic.Frame) int {
	want := uint32(min(len(frames), int(x.rx.size)))
	n := min(x.rx.consAvail(want), want)
	if n == 0 {
		if !x.busyPoll {
			x.wakeRX()
			return 0
		}
		// The kick runs the driver's receive poll here, which may
		// fill the ring (and wakes the fill ring as wakeRX would).
		x.k.kickRX()
		if n = min(x.rx.consAvail(want), want); n == 0 {
			return 0
		}
	}
	// Every RX chunk is in the fill ring, the RX ring, or here for the
	// length of this call, and the fill ring holds them all, so there is
	// room for n; stay safe if the kernel broke that.
	n = min(n, x.fill.prodFree(n))
	ci, fi := x.rx.cachedCons, x.fill.cachedProd
	var refill uint32
	var bytes uint64
	k := 0
	for i := uint32(0); i < n; i++ {
		d := x.rx.ents[(ci+i)&x.rx.mask]
		chunk := d.Addr &^ (x.frameSize - 1)
		if chunk >= x.rxEnd {
			x.st.drops[DropRxBadDesc].Add(1)
			continue
		}
		x.fill.ents[(fi+refill)&x.fill.mask] = chunk
		refill++
		end := d.Addr + uint64(d.Len)
		if end > chunk+x.frameSize {
			x.st.drops[DropRxBadDesc].Add(1)
			continue
		}
		f := frames[k]
		if int(d.Len) > nic.MaxData || len(f.Buf) < nic.Headroom+int(d.Len) {
			x.st.drops[DropRxTooBig].Add(1)
			continue
		}
		f.Off = nic.Headroom
		f.Len = copy(f.Buf[nic.Headroom:], x.umem[d.Addr:end])
		f.Queue = x.q
		f.Rx = x.rxInfo
		bytes += uint64(d.Len)
		k++
	}
	x.rx.consRelease(n)
	x.fill.prodSubmit(refill)
	x.wakeRX()
	if k > 0 {
		x.st.rxPackets.Add(uint64(k))
		x.st.rxBytes.Add(bytes)
	}
	return k
}

func (x *xsk) wakeRX() {
	if x.needWakeup && x.fill.needWakeup() {
		x.k.kickRX()
	}
}

// reap moves completed TX chunks back to the free list.
func (x *xsk) reap() {
	n := x.comp.consAvail(x.comp.size)
	ci := x.comp.cachedCons
	for i := uint32(0); i < n; i++ {
		a := x.comp.ents[(ci+i)&x.comp.mask] &^ (x.frameSize - 1)
		if a < x.rxEnd || a >= uint64(len(x.umem)) || len(x.txFree) == cap(x.txFree) {
			x.st.drops[DropTxBadCompletion].Add(1)
			continue
		}
		x.txFree = append(x.txFree, a)
	}
	x.comp.consRelease(n)
}

// send copies frames into free TX chunks, publishes them on the TX ring and
// kicks the kernel once for the batch. It returns how many frames were
// accepted, in order.
func (x *xsk) send(frames []*nic.Frame) int {
	x.reap()
	want := len(frames)
	n := min(want, len(x.txFree), int(x.tx.size))
	n = min(n, int(x.tx.prodFree(uint32(n))))
	ti := x.tx.cachedProd
	var j uint32
	var bytes uint64
	for i := 0; i < n; i++ {
		f := frames[i]
		if f.Len == 0 || uint64(f.Len) > x.frameSize || !f.InBounds() {
			x.st.drops[DropTxBadFrame].Add(1)
			continue
		}
		a := x.txFree[len(x.txFree)-1]
		x.txFree = x.txFree[:len(x.txFree)-1]
		copy(x.umem[a:a+x.frameSize], f.Buf[f.Off:f.Off+f.Len])
		x.tx.ents[(ti+j)&x.tx.mask] = desc{Addr: a, Len: uint32(f.Len)}
		j++
		bytes += uint64(f.Len)
	}
	x.tx.prodSubmit(j)
	if n < want {
		x.st.drops[DropTxRingFull].Add(uint64(want - n))
	}
	if j > 0 {
		x.st.txPackets.Add(uint64(j))
		x.st.txBytes.Add(bytes)
	}
	x.flush()
	return n
}

// flush kicks the kernel if the TX ring holds frames it has not taken. In
// copy mode the kernel sends a bounded budget per kick and says EAGAIN
// when frames are left, so flush kicks again while that makes progress.
func (x *xsk) flush() {
	pending := x.tx.pending()
	if pending == 0 {
		return
	}
	if x.needWakeup && !x.busyPoll && !x.tx.needWakeup() {
		return
	}
	for {
		switch x.k.kickTX() {
		case kickDone:
			return
		case kickError:
			x.st.drops[DropTxKickError].Add(1)
			return
		}
		p := x.tx.pending()
		if p == 0 || p >= pending {
			return
		}
		pending = p
	}
}

// txInFlight is how many TX chunks are not on the free list.
func (x *xsk) txInFlight() int { return cap(x.txFree) - len(x.txFree) }
