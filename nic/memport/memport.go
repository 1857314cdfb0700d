package memport

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("memport: closed")

type slot struct {
	buf []byte
	off int
	n   int
	rx  nic.RxInfo
}

// Ring is a single-producer single-consumer ring of frame buffers.
type Ring struct {
	_       [64]byte
	head    atomic.Uint64 // consumer index
	_       [56]byte
	tail    atomic.Uint64 // producer index
	_       [56]byte
	slots   []slot
	mask    uint64
	drops   atomic.Uint64
	packets atomic.Uint64
	bytes   atomic.Uint64

	// producer-side cache of head, consumer-side cache of tail.
	cachedHead uint64
	_          [56]byte
	cachedTail uint64
}

// NewRing returns a ring with capacity rounded up to a power of two.
func NewRing(capacity int) *Ring {
	c := 1
	for c < capacity {
		c <<= 1
	}
	r := &Ring{slots: make([]slot, c), mask: uint64(c - 1)}
	mem := make([]byte, c*nic.BufSize)
	for i := range r.slots {
		r.slots[i].buf = mem[i*nic.BufSize : (i+1)*nic.BufSize : (i+1)*nic.BufSize]
	}
	return r
}

// Cap returns the ring capacity.
func (r *Ring) Cap() int { return len(r.slots) }

// Len returns the number of queued frames (approximate under concurrency).
func (r *Ring) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Drops returns how many frames were refused because the ring was full.
func (r *Ring) Drops() uint64 { return r.drops.Load() }

// put moves frames into the ring by swapping buffers (producer side).
func (r *Ring) put(frames []*nic.Frame) int {
	t := r.tail.Load()
	free := uint64(len(r.slots)) - (t - r.cachedHead)
	if free < uint64(len(frames)) {
		r.cachedHead = r.head.Load()
		free = uint64(len(r.slots)) - (t - r.cachedHead)
	}
	n := len(frames)
	if uint64(n) > free {
		n = int(free)
		r.drops.Add(uint64(len(frames) - n))
	}
	var bytes uint64
	for i := 0; i < n; i++ {
		f := frames[i]
		s := &r.slots[(t+uint64(i))&r.mask]
		s.buf, f.Buf = f.Buf, s.buf
		s.off, s.n, s.rx = f.Off, f.Len, 0
		bytes += uint64(f.Len)
		f.Reset()
	}
	if n > 0 {
		r.tail.Store(t + uint64(n))
		r.packets.Add(uint64(n))
		r.bytes.Add(bytes)
	}
	return n
}

// putCopy copies b into the ring (producer side), to be received with
// Frame.Rx rx.
func (r *Ring) putCopy(b []byte, rx nic.RxInfo) bool {
	t := r.tail.Load()
	if t-r.cachedHead >= uint64(len(r.slots)) {
		r.cachedHead = r.head.Load()
		if t-r.cachedHead >= uint64(len(r.slots)) {
			r.drops.Add(1)
			return false
		}
	}
	if len(b) > nic.MaxData {
		r.drops.Add(1)
		return false
	}
	s := &r.slots[t&r.mask]
	s.off, s.rx = nic.Headroom, rx
	s.n = copy(s.buf[nic.Headroom:], b)
	r.tail.Store(t + 1)
	r.packets.Add(1)
	r.bytes.Add(uint64(len(b)))
	return true
}

// get moves up to len(frames) frames out of the ring (consumer side).
func (r *Ring) get(frames []*nic.Frame, q uint16) int {
	h := r.head.Load()
	avail := r.cachedTail - h
	if avail < uint64(len(frames)) {
		r.cachedTail = r.tail.Load()
		avail = r.cachedTail - h
	}
	n := len(frames)
	if uint64(n) > avail {
		n = int(avail)
	}
	for i := 0; i < n; i++ {
		f := frames[i]
		s := &r.slots[(h+uint64(i))&r.mask]
		s.buf, f.Buf = f.Buf, s.buf
		f.Off, f.Len, f.Queue, f.Rx = s.off, s.n, q, s.rx
	}
	if n > 0 {
		r.head.Store(h + uint64(n))
	}
	return n
}

// replay and txSink are per queue, each used by one worker: padded to
// their own cache lines so two workers never write the same line.
type replay struct {
	_    [64]byte
	pkts [][]byte
	next int
	_    [64]byte
}

type txSink struct {
	_       [64]byte
	packets atomic.Uint64
	bytes   atomic.Uint64
	fn      func(q int, f *nic.Frame)
	_       [64]byte
}

// Port is an in-memory multi-queue port.
type Port struct {
	name   string
	rx     []*Ring
	tx     []*Ring
	replay []*replay
	sink   []*txSink
	closed atomic.Bool
}

// New returns a port with the given number of queues and ring capacity.
func New(name string, queues, ringCap int) *Port {
	p := &Port{name: name,
		rx: make([]*Ring, queues), tx: make([]*Ring, queues),
		replay: make([]*replay, queues), sink: make([]*txSink, queues)}
	for i := 0; i < queues; i++ {
		p.rx[i] = NewRing(ringCap)
		p.tx[i] = NewRing(ringCap)
	}
	return p
}

// Pair connects a's TX queue q to b's RX queue q and vice versa. Both ports
// must have the same number of queues.
func Pair(a, b *Port) {
	for q := range a.tx {
		a.tx[q] = b.rx[q]
		b.tx[q] = a.rx[q]
	}
}

// Replay makes RX queue q return the given frames endlessly, in order, each
// Recv copying them into the caller's buffers (standing in for NIC DMA).
func (p *Port) Replay(q int, pkts [][]byte) { p.replay[q] = &replay{pkts: pkts} }

// Sink makes TX queue q count and discard frames. fn, if not nil, sees
// each frame before it is discarded (it must not retain it).
func (p *Port) Sink(q int, fn func(q int, f *nic.Frame)) { p.sink[q] = &txSink{fn: fn} }

// Inject copies b into RX queue q (the wire side). It reports false when
// the ring is full (the drop is counted).
func (p *Port) Inject(q int, b []byte) bool { return p.rx[q].putCopy(b, 0) }

// InjectRx is Inject for a frame that Recv hands over with Frame.Rx rx
// (standing in for what a real port learns from its kernel, such as
// nic.RxCsumPartial). Frames that cross a Pair by Send carry none.
func (p *Port) InjectRx(q int, b []byte, rx nic.RxInfo) bool { return p.rx[q].putCopy(b, rx) }

// Drain hands every frame queued on TX queue q to fn and frees it. fn must
// not retain the slice.
func (p *Port) Drain(q int, fn func(b []byte)) int {
	r := p.tx[q]
	h := r.head.Load()
	t := r.tail.Load()
	for i := h; i < t; i++ {
		s := &r.slots[i&r.mask]
		fn(s.buf[s.off : s.off+s.n])
	}
	r.head.Store(t)
	return int(t - h)
}

// RxRing and TxRing expose the rings (for tests and counters).
func (p *Port) RxRing(q int) *Ring { return p.rx[q] }

// TxRing returns TX ring q.
func (p *Port) TxRing(q int) *Ring { return p.tx[q] }

// SinkStats returns the packets and bytes a sink on queue q discarded.
func (p *Port) SinkStats(q int) (packets, bytes uint64) {
	if s := p.sink[q]; s != nil {
		return s.packets.Load(), s.bytes.Load()
	}
	return 0, 0
}

// Name implements nic.Port.
func (p *Port) Name() string { return p.name }

// Queues implements nic.Port.
func (p *Port) Queues() int { return len(p.rx) }

// Recv implements nic.Port.
func (p *Port) Recv(q int, frames []*nic.Frame) (int, error) {
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if rp := p.replay[q]; rp != nil && len(rp.pkts) > 0 {
		next := rp.next
		for _, f := range frames {
			f.SetData(rp.pkts[next])
			f.Queue, f.Rx = uint16(q), 0
			if next++; next == len(rp.pkts) {
				next = 0
			}
		}
		rp.next = next
		return len(frames), nil
	}
	return p.rx[q].get(frames, uint16(q)), nil
}

// Send implements nic.Port.
func (p *Port) Send(q int, frames []*nic.Frame) (int, error) {
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if s := p.sink[q]; s != nil {
		var bytes uint64
		for _, f := range frames {
			bytes += uint64(f.Len)
			if s.fn != nil {
				s.fn(q, f)
			}
		}
		s.packets.Add(uint64(len(frames)))
		s.bytes.Add(bytes)
		return len(frames), nil
	}
	return p.tx[q].put(frames), nil
}

// Wait implements nic.Port by polling the RX ring.
func (p *Port) Wait(q int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.closed.Load() {
			return ErrClosed
		}
		if p.replay[q] != nil || p.rx[q].Len() > 0 || !time.Now().Before(deadline) {
			return nil
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// Stats implements nic.Port.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for q := range p.rx {
		s.RxDrops += p.rx[q].drops.Load()
		s.TxDrops += p.tx[q].drops.Load()
		s.TxPackets += p.tx[q].packets.Load()
		s.TxBytes += p.tx[q].bytes.Load()
		if sk := p.sink[q]; sk != nil {
			s.TxPackets += sk.packets.Load()
			s.TxBytes += sk.bytes.Load()
		}
	}
	return s
}

// Close implements nic.Port.
func (p *Port) Close() error { p.closed.Store(true); return nil }
