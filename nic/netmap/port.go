package netmap

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/nic"
)

// syncer is the kernel side of one registered file descriptor: the real
// /dev/netmap fd (NIOCTXSYNC, NIOCRXSYNC, poll) or the simulated kernel.
type syncer interface {
	TxSync() error
	RxSync() error
	// Poll blocks until the RX ring may have frames or timeout passes.
	Poll(timeout time.Duration) error
	Close() error
}

// DropReason says why the port dropped a frame.
type DropReason int

// Drop reasons.
const (
	DropBadSlot    DropReason = iota // kernel slot with invalid buf_idx or len
	DropFragment                     // multi-slot (NS_MOREFRAG) frame, unsupported
	DropOversize                     // TX frame larger than a netmap buffer
	DropRxOversize                   // RX frame larger than the caller's Frame
	DropFiltered                     // Forward's callback dropped it
	DropRingFull                     // TX ring full (Send refused it)
	NumDropReasons
)

func (d DropReason) String() string {
	switch d {
	case DropBadSlot:
		return "bad_slot"
	case DropFragment:
		return "fragment"
	case DropOversize:
		return "oversize"
	case DropRxOversize:
		return "rx_oversize"
	case DropFiltered:
		return "filtered"
	case DropRingFull:
		return "ring_full"
	}
	return "unknown"
}

// queue is one registered ring pair with its own fd.
type queue struct {
	k     syncer
	rx    ring
	tx    ring
	mem   []byte
	memID uint16
	q     uint16

	// rxLeft: the RX ring held frames the user side had not taken when
	// the last Recv or Forward returned. Wait reads it instead of the
	// ring's cached indices, which only the receiving goroutine may read.
	rxLeft atomic.Bool

	rxPackets, rxBytes atomic.Uint64
	txPackets, txBytes atomic.Uint64
	kernelErrs         atomic.Uint64
	drops              [NumDropReasons]atomic.Uint64
	_                  [64]byte
}

// Port is a netmap nic.Port: one ring pair per queue, each queue used by
// one goroutine. A host port (OpenHost) has one queue bound to the host
// rings: Recv returns what the host stack sent, Send delivers to it.
type Port struct {
	name    string
	host    bool
	queues  []*queue
	closed  atomic.Bool
	release func() // unmaps the region (real device), nil for Sim
}

var _ nic.Port = (*Port)(nil)

// ringIndex selects the ring_ofs entries of a ring pair.
type ringIndex struct {
	host bool
	id   int // NIC ring id, or host ring id when host
}

// newQueue builds the views of the ring pair sel of the netmap_if at
// mem[ifOff:]. It trusts nothing in the region: offsets, counts and ring
// sizes are validated.
func newQueue(mem []byte, memID uint16, ifOff int64, sel ringIndex, k syncer, q int) (*queue, error) {
	if ifOff < 0 || ifOff%8 != 0 || ifOff > int64(len(mem)-sizeofIfHdr) {
		return nil, fmt.Errorf("%w: netmap_if offset %d outside region of %d bytes", ErrKernel, ifOff, len(mem))
	}
	o := int(ifOff)
	ifp := viewIf(mem, o)
	ntx, nrx := uint64(atomic.LoadUint32(&ifp.TxRings)), uint64(atomic.LoadUint32(&ifp.RxRings))
	nhtx, nhrx := uint64(atomic.LoadUint32(&ifp.HostTxRings)), uint64(atomic.LoadUint32(&ifp.HostRxRings))
	total := ntx + nhtx + nrx + nhrx
	if total > uint64(len(mem)-o-sizeofIfHdr)/sizeofRingOfs {
		return nil, fmt.Errorf("%w: %d rings do not fit in netmap_if", ErrKernel, total)
	}
	var ti, ri uint64
	if sel.host {
		if uint64(sel.id) >= nhtx || uint64(sel.id) >= nhrx {
			return nil, fmt.Errorf("netmap: host ring %d not present (%d tx, %d rx host rings)", sel.id, nhtx, nhrx)
		}
		ti = ntx + uint64(sel.id)
		ri = ntx + nhtx + nrx + uint64(sel.id)
	} else {
		if uint64(sel.id) >= ntx || uint64(sel.id) >= nrx {
			return nil, fmt.Errorf("netmap: ring %d not present (%d tx, %d rx rings)", sel.id, ntx, nrx)
		}
		ti = uint64(sel.id)
		ri = ntx + nhtx + uint64(sel.id)
	}
	tx, err := initRing(mem, ifOff+ringOfs(mem, o, int(ti)))
	if err != nil {
		return nil, fmt.Errorf("tx ring: %w", err)
	}
	rx, err := initRing(mem, ifOff+ringOfs(mem, o, int(ri)))
	if err != nil {
		return nil, fmt.Errorf("rx ring: %w", err)
	}
	return &queue{k: k, rx: rx, tx: tx, mem: mem, memID: memID, q: uint16(q)}, nil
}

// Name implements nic.Port.
func (p *Port) Name() string { return p.name }

// Queues implements nic.Port.
func (p *Port) Queues() int { return len(p.queues) }

// IsHost reports whether the port is bound to the host rings.
func (p *Port) IsHost() bool { return p.host }

// MemID returns the netmap memory allocator id of queue q; ports with the
// same id (and the same mapping) can Forward without copying.
func (p *Port) MemID(q int) uint16 { return p.queues[q].memID }

func (p *Port) queue(q int) (*queue, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if q < 0 || q >= len(p.queues) {
		return nil, fmt.Errorf("netmap: %s has no queue %d", p.name, q)
	}
	return p.queues[q], nil
}

func (qu *queue) kernelErr(err error) error {
	if errors.Is(err, ErrKernel) {
		qu.kernelErrs.Add(1)
	}
	return err
}

// rxRefill syncs the RX ring when fewer than want slots are cached.
func (qu *queue) rxRefill(want int) error {
	if int(qu.rx.avail()) >= want {
		return nil
	}
	if err := qu.k.RxSync(); err != nil {
		return err
	}
	return qu.kernelErr(qu.rx.reload())
}

// txRefill syncs the TX ring when fewer than want slots are free.
func (qu *queue) txRefill(want int) error {
	if int(qu.tx.avail()) >= want {
		return nil
	}
	if err := qu.k.TxSync(); err != nil {
		return err
	}
	return qu.kernelErr(qu.tx.reload())
}

// rxSlot returns the buffer of the RX slot at head, or false if the slot
// must be dropped (counted). It does not advance head.
func (qu *queue) rxSlot() ([]byte, *slot, bool) {
	r := &qu.rx
	s := &r.slots[r.head]
	flags := s.Flags
	if r.inFrag || flags&NSMoreFrag != 0 {
		r.inFrag = flags&NSMoreFrag != 0
		qu.drops[DropFragment].Add(1)
		return nil, s, false
	}
	b, ok := r.buf(s.BufIdx)
	if !ok || int(s.Len) > len(b) {
		qu.drops[DropBadSlot].Add(1)
		return nil, s, false
	}
	return b[:s.Len], s, true
}

// Recv implements nic.Port: it copies up to len(frames) received frames
// into the caller's buffers (after nic.Headroom). Slots consumed are
// returned to the kernel by the next RX sync.
func (p *Port) Recv(q int, frames []*nic.Frame) (int, error) {
	qu, err := p.queue(q)
	if err != nil {
		return 0, err
	}
	if err := qu.rxRefill(len(frames)); err != nil {
		return 0, err
	}
	r := &qu.rx
	n := 0
	var bytes uint64
	for n < len(frames) && r.head != r.tail {
		b, _, ok := qu.rxSlot()
		r.head = r.next(r.head)
		if !ok {
			continue
		}
		f := frames[n]
		if len(b) > len(f.Buf)-nic.Headroom {
			qu.drops[DropRxOversize].Add(1)
			continue
		}
		f.Off = nic.Headroom
		f.Len = copy(f.Buf[nic.Headroom:], b)
		f.Queue = uint16(q)
		f.Rx = 0
		bytes += uint64(f.Len)
		n++
	}
	r.publish()
	qu.rxLeft.Store(r.head != r.tail)
	qu.rxPackets.Add(uint64(n))
	qu.rxBytes.Add(bytes)
	return n, nil
}

// Send implements nic.Port: it copies frames into free TX slots, in order,
// and kicks the ring with one NIOCTXSYNC. Frames larger than a netmap
// buffer are dropped (counted, DropOversize) but reported as accepted so
// the caller does not retry them; frames past the returned count did not
// fit (ring full, counted in TxDrops).
func (p *Port) Send(q int, frames []*nic.Frame) (int, error) {
	qu, err := p.queue(q)
	if err != nil {
		return 0, err
	}
	if err := qu.txRefill(len(frames)); err != nil {
		return 0, err
	}
	r := &qu.tx
	n, sent := 0, 0
	var bytes uint64
	for n < len(frames) && r.head != r.tail {
		f := frames[n]
		s := &r.slots[r.head]
		b, ok := r.buf(s.BufIdx)
		if !ok {
			qu.drops[DropBadSlot].Add(1)
			err = qu.kernelErr(fmt.Errorf("%w: tx slot %d has buffer %d", ErrKernel, r.head, s.BufIdx))
			break
		}
		n++
		if f.Len > len(b) || f.Len > 0xffff || f.Len < 0 {
			qu.drops[DropOversize].Add(1)
			continue
		}
		s.Len = uint16(copy(b, f.Data()))
		s.Flags = 0
		r.head = r.next(r.head)
		bytes += uint64(f.Len)
		sent++
	}
	if sent > 0 {
		r.publish()
		if kerr := qu.k.TxSync(); kerr != nil && err == nil {
			err = kerr
		} else if kerr == nil {
			if rerr := qu.kernelErr(r.reload()); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	if full := len(frames) - n; full > 0 && err == nil {
		qu.drops[DropRingFull].Add(uint64(full))
	}
	qu.txPackets.Add(uint64(sent))
	qu.txBytes.Add(bytes)
	return n, err
}

// Flush kicks TX queue q (NIOCTXSYNC) so completed slots are reclaimed
// even when nothing new is sent.
func (p *Port) Flush(q int) error {
	qu, err := p.queue(q)
	if err != nil {
		return err
	}
	if err := qu.k.TxSync(); err != nil {
		return err
	}
	return qu.kernelErr(qu.tx.reload())
}

// Wait implements nic.Port with poll(2) on the queue's fd. It may run
// concurrently with Recv on the same queue (a goroutine that waits while
// another receives, as nic.Notify does for the control plane's host
// port): it reads no ring index, only what the last Recv left behind.
func (p *Port) Wait(q int, timeout time.Duration) error {
	qu, err := p.queue(q)
	if err != nil {
		return err
	}
	if qu.rxLeft.Load() {
		return nil
	}
	return qu.k.Poll(timeout)
}

// Forward moves up to max frames from RX queue sq of src to TX queue dq of
// dst. When both ports use the same mapped memory region the frames are
// not copied: the RX and TX slots exchange buffer indices and both are
// flagged NS_BUF_CHANGED. Otherwise each frame is copied once.
//
// fn, if not nil, sees each frame in place before it moves: buf is the
// whole netmap buffer and n the frame length; it may rewrite the frame
// in place and returns the new length (0 < len <= len(buf)), or a negative
// value to drop the frame (counted as DropFiltered on src). fn must not
// retain buf. Forward returns the number of frames moved to dst and
// kicks dst's TX ring once.
func Forward(src *Port, sq int, dst *Port, dq int, max int, fn func(buf []byte, n int) int) (int, error) {
	sqq, err := src.queue(sq)
	if err != nil {
		return 0, err
	}
	dqq, err := dst.queue(dq)
	if err != nil {
		return 0, err
	}
	if err := sqq.rxRefill(max); err != nil {
		return 0, err
	}
	if err := dqq.txRefill(min(max, int(sqq.rx.avail()))); err != nil {
		return 0, err
	}
	zero := len(sqq.mem) > 0 && len(dqq.mem) == len(sqq.mem) && &sqq.mem[0] == &dqq.mem[0] &&
		sqq.rx.bufBase == dqq.tx.bufBase && sqq.rx.bufSize == dqq.tx.bufSize
	rx, tx := &sqq.rx, &dqq.tx
	moved := 0
	var bytes uint64
	for moved < max && rx.head != rx.tail && tx.head != tx.tail {
		b, rs, ok := sqq.rxSlot()
		if !ok {
			rx.head = rx.next(rx.head)
			continue
		}
		ts := &tx.slots[tx.head]
		tb, tok := tx.buf(ts.BufIdx)
		if !tok {
			dqq.drops[DropBadSlot].Add(1)
			err = dqq.kernelErr(fmt.Errorf("%w: tx slot %d has buffer %d", ErrKernel, tx.head, ts.BufIdx))
			break
		}
		n := len(b)
		if fn != nil {
			full := b[:cap(b)]
			n = fn(full, n)
			if n <= 0 || n > len(full) {
				sqq.drops[DropFiltered].Add(1)
				rx.head = rx.next(rx.head)
				continue
			}
		}
		if zero {
			rs.BufIdx, ts.BufIdx = ts.BufIdx, rs.BufIdx
			rs.Flags |= NSBufChanged
			ts.Flags = NSBufChanged
		} else {
			if n > len(tb) {
				dqq.drops[DropOversize].Add(1)
				rx.head = rx.next(rx.head)
				continue
			}
			copy(tb, b[:n])
			ts.Flags = 0
		}
		ts.Len = uint16(n)
		rx.head = rx.next(rx.head)
		tx.head = tx.next(tx.head)
		bytes += uint64(n)
		moved++
	}
	rx.publish()
	sqq.rxLeft.Store(rx.head != rx.tail)
	sqq.rxPackets.Add(uint64(moved))
	sqq.rxBytes.Add(bytes)
	if moved > 0 {
		tx.publish()
		if kerr := dqq.k.TxSync(); kerr != nil && err == nil {
			err = kerr
		} else if kerr == nil {
			if rerr := dqq.kernelErr(tx.reload()); rerr != nil && err == nil {
				err = rerr
			}
		}
		dqq.txPackets.Add(uint64(moved))
		dqq.txBytes.Add(bytes)
	}
	return moved, err
}

// Stats implements nic.Port. RxDrops counts frames the port dropped after
// the kernel delivered them (bad slots, fragments, too big for the
// caller's Frame, filtered by Forward's callback);
// TxDrops counts frames Send refused because the ring was full or
// dropped as oversize.
func (p *Port) Stats() nic.Stats {
	var s nic.Stats
	for _, qu := range p.queues {
		s.RxPackets += qu.rxPackets.Load()
		s.RxBytes += qu.rxBytes.Load()
		s.TxPackets += qu.txPackets.Load()
		s.TxBytes += qu.txBytes.Load()
		s.RxDrops += qu.drops[DropBadSlot].Load() + qu.drops[DropFragment].Load() +
			qu.drops[DropRxOversize].Load() + qu.drops[DropFiltered].Load()
		s.TxDrops += qu.drops[DropRingFull].Load() + qu.drops[DropOversize].Load()
	}
	return s
}

// Drops returns the port's drop counters by reason.
func (p *Port) Drops() [NumDropReasons]uint64 {
	var d [NumDropReasons]uint64
	for _, qu := range p.queues {
		for i := range d {
			d[i] += qu.drops[i].Load()
		}
	}
	return d
}

// KernelErrors counts inconsistent ring states seen from the kernel side.
func (p *Port) KernelErrors() uint64 {
	var n uint64
	for _, qu := range p.queues {
		n += qu.kernelErrs.Load()
	}
	return n
}

// Close implements nic.Port: it closes every queue's fd and unmaps the
// region once no other port uses it.
func (p *Port) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, qu := range p.queues {
		if err := qu.k.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.release != nil {
		p.release()
	}
	return errors.Join(errs...)
}

// Config selects what Open binds.
type Config struct {
	// Queues is the number of NIC ring pairs to bind, one fd each
	// (NR_REG_ONE_NIC ring q for queue q); 0 binds all of them.
	Queues int
	// Exclusive asks the kernel for exclusive access (NR_EXCLUSIVE).
	Exclusive bool
}

// PollFD implements nic.Pollable: queue q's /dev/netmap descriptor (poll
// on it syncs the RX ring), or -1 on the simulated kernel side.
func (p *Port) PollFD(q int) int {
	qu, err := p.queue(q)
	if err != nil {
		return -1
	}
	if d, ok := qu.k.(interface{ pollFD() int }); ok {
		return d.pollFD()
	}
	return -1
}

// RxReady implements nic.Pollable: frames the last sync made visible.
func (p *Port) RxReady(q int) bool {
	qu, err := p.queue(q)
	return err == nil && qu.rx.avail() > 0
}
