package afxdp

import (
	"errors"
	"sync/atomic"

	"github.com/pppfwd/pppfwd/nic"
)

// ErrQueue is returned for a queue index outside [0, Queues()).
var ErrQueue = errors.New("afxdp: no such queue")

// linkCheckEvery is how many empty Recv calls (or Send calls) of a queue
// pass between two probes of its socket for a removed interface (one
// system call each): the rings alone do not show it.
const linkCheckEvery = 1024

// Port is a nic.Port over one AF_XDP socket per queue. Each queue must be
// used by one goroutine at a time (Recv, Send and Wait of the same queue
// never run concurrently); different queues need no coordination.
type Port struct {
	name     string
	qs       []*xsk
	closed   atomic.Bool
	mode     Mode
	zeroCopy bool
	// busyPoll: every socket busy-polls; busyPollErr: why they do not
	// although asked to.
	busyPoll    bool
	busyPollErr error
	sys         portSys
	// gone is set once the interface was found removed (the kernel
	// unbinds the sockets); from then on Recv, Send and Wait return
	// goneErr (nic.ErrLinkGone naming the interface).
	gone    atomic.Bool
	goneErr error
	// Per queue: empty Recv calls and Send calls since Open (each
	// written only by the queue's goroutine).
	rxIdle, txCalls []uint32
}

var _ nic.Port = (*Port)(nil)

// Name returns the interface name.
func (p *Port) Name() string { return p.name }

// Queues returns the number of queues (sockets) of the port.
func (p *Port) Queues() int { return len(p.qs) }

// Mode returns the XDP attach mode in use (ModeNative or ModeGeneric).
func (p *Port) Mode() Mode { return p.mode }

// BusyPoll reports whether the sockets busy-poll (Options.BusyPoll in
// native mode, the kernel accepting the options), and the kernel's
// refusal when they were asked to and do not.
func (p *Port) BusyPoll() (bool, error) { return p.busyPoll, p.busyPollErr }

// ZeroCopy reports whether the sockets are bound in zero-copy mode.
func (p *Port) ZeroCopy() bool { return p.zeroCopy }

// ChecksumsUnknown reports whether Recv marks frames nic.RxCsumUnknown:
// in copy mode. There the kernel copies frames that a software device
// (a veth, a tap, a bridge) may have taken from a local sender with the
// TCP or UDP checksum left to an offload, and XDP carries no checksum
// state to tell them apart (see the package comment). In zero-copy mode
// every frame came from the NIC's receive DMA, off the wire: finished.
func (p *Port) ChecksumsUnknown() bool { return !p.zeroCopy }

// Recv copies up to len(frames) received frames of queue q into frames,
// each at nic.Headroom, and returns how many it filled. It never blocks.
func (p *Port) Recv(q int, frames []*nic.Frame) (int, error) {
	if uint(q) >= uint(len(p.qs)) {
		return 0, ErrQueue
	}
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if p.gone.Load() {
		return 0, p.goneErr
	}
	n := p.qs[q].recv(frames)
	if n == 0 {
		if p.rxIdle[q]++; p.rxIdle[q]%linkCheckEvery == 0 && p.linkGone(q) {
			return 0, p.goneErr
		}
	}
	return n, nil
}

// linkGone probes queue q's socket and latches gone if its interface
// was removed.
func (p *Port) linkGone(q int) bool {
	if p.sys.unbound(q) {
		p.gone.Store(true)
	}
	return p.gone.Load()
}

// Send copies frames into queue q's TX ring, kicks the kernel once and
// returns how many frames were accepted. Frames past that count were not
// taken because the TX ring or the UMEM's TX chunks are full (reaped again
// on the next Send). The frames stay owned by the caller.
func (p *Port) Send(q int, frames []*nic.Frame) (int, error) {
	if uint(q) >= uint(len(p.qs)) {
		return 0, ErrQueue
	}
	if p.closed.Load() {
		return 0, ErrClosed
	}
	if p.gone.Load() {
		return 0, p.goneErr
	}
	n := p.qs[q].send(frames)
	if p.txCalls[q]++; p.txCalls[q]%linkCheckEvery == 0 && p.linkGone(q) {
		return n, p.goneErr
	}
	return n, nil
}

// Flush kicks queue q's TX ring again, for frames a previous kick left
// queued (nic.Flusher: workers call it when they go idle).
func (p *Port) Flush(q int) error {
	if uint(q) >= uint(len(p.qs)) {
		return ErrQueue
	}
	if p.closed.Load() {
		return ErrClosed
	}
	p.qs[q].flush()
	return nil
}

// Drops returns how many frames were dropped (or events seen) for reason,
// summed over the queues.
func (p *Port) Drops(reason DropReason) uint64 {
	if reason < 0 || reason >= numDropReasons {
		return 0
	}
	var n uint64
	for _, x := range p.qs {
		n += x.st.drops[reason].Load()
	}
	return n
}

// Stats sums the queues' counters. RxDrops adds the kernel's own counts
// (XDP_STATISTICS: RX ring full, fill ring empty, invalid descriptors) to
// the port's RX drops; TxDrops counts refused and bad frames.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for _, x := range p.qs {
		s.RxPackets += x.st.rxPackets.Load()
		s.RxBytes += x.st.rxBytes.Load()
		s.TxPackets += x.st.txPackets.Load()
		s.TxBytes += x.st.txBytes.Load()
		s.RxDrops += x.st.drops[DropRxBadDesc].Load() + x.st.drops[DropRxTooBig].Load()
		s.TxDrops += x.st.drops[DropTxBadFrame].Load() + x.st.drops[DropTxRingFull].Load()
	}
	s.RxDrops += p.sys.kernelRxDrops()
	return s
}

// CheckLink implements nic.LinkChecker: one probe of queue q's socket.
func (p *Port) CheckLink(q int) error {
	if uint(q) >= uint(len(p.qs)) {
		return ErrQueue
	}
	if p.linkGone(q) {
		return p.goneErr
	}
	return nil
}
