package netmap

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// Errors returned by the port. Kernel-side inconsistencies are wrapped in
// ErrKernel so callers can tell them from their own mistakes.
var (
	ErrClosed = errors.New("netmap: port closed")
	ErrKernel = errors.New("netmap: inconsistent kernel ring state")
)

// ring is the user-side view of one netmap_ring in a mapped region. It
// keeps cached copies of head (which only the user writes) and tail (which
// only the kernel writes, reloaded after a sync). Every kernel-provided
// index or length is range-checked before it is used to slice mem.
type ring struct {
	hdr     *ringHdr
	slots   []slot
	mem     []byte
	bufBase int    // offset of buffer 0 in mem
	bufSize int    // nr_buf_size (cached at open)
	nbufs   uint32 // buffer indices that lie entirely inside mem
	n       uint32 // num_slots (cached at open)
	head    uint32 // cached head == cur: first user-owned slot
	tail    uint32 // cached tail: first kernel-owned slot
	inFrag  bool   // dropping the rest of an NS_MOREFRAG chain
}

// initRing validates the netmap_ring at mem[off:] and builds its view.
func initRing(mem []byte, off int64) (ring, error) {
	var r ring
	if off <= 0 || off%8 != 0 || off > int64(len(mem)-sizeofRingHdr) {
		return r, fmt.Errorf("%w: ring offset %d outside region of %d bytes", ErrKernel, off, len(mem))
	}
	o := int(off)
	h := viewRing(mem, o)
	n := atomic.LoadUint32(&h.NumSlots)
	if n < 2 || uint64(n)*uint64(sizeofSlot) > uint64(len(mem)-o-sizeofRingHdr) {
		return r, fmt.Errorf("%w: ring with %d slots does not fit", ErrKernel, n)
	}
	bs := int(atomic.LoadUint32(&h.BufSize))
	if bs < 64 || bs > 1<<16 {
		return r, fmt.Errorf("%w: buffer size %d", ErrKernel, bs)
	}
	base := off + atomic.LoadInt64(&h.BufOfs)
	if base < 0 || base > int64(len(mem)) {
		return r, fmt.Errorf("%w: buffer region at %d outside region", ErrKernel, base)
	}
	nb := (int64(len(mem)) - base) / int64(bs)
	if nb > 1<<32-1 {
		nb = 1<<32 - 1
	}
	r = ring{
		hdr:     h,
		slots:   viewSlots(mem, o+sizeofRingHdr, int(n)),
		mem:     mem,
		bufBase: int(base),
		bufSize: bs,
		nbufs:   uint32(nb),
		n:       n,
	}
	r.head = atomic.LoadUint32(&h.Head)
	if r.head >= n {
		return r, fmt.Errorf("%w: head %d >= %d slots", ErrKernel, r.head, n)
	}
	// cur may legitimately be ahead of head; we restart with cur == head.
	atomic.StoreUint32(&h.Cur, r.head)
	r.tail = r.head
	if err := r.reload(); err != nil {
		return r, err
	}
	return r, nil
}

// next returns the slot after i.
func (r *ring) next(i uint32) uint32 {
	if i+1 == r.n {
		return 0
	}
	return i + 1
}

// avail returns the number of user-owned slots [head, tail) according to
// the cached tail (nm_ring_space).
func (r *ring) avail() uint32 {
	if r.tail >= r.head {
		return r.tail - r.head
	}
	return r.tail + r.n - r.head
}

// reload loads tail after a sync. The kernel may only hand slots to the
// user, never take back slots in [head, tail): a tail outside the ring or
// moving backwards is reported and the cached tail is kept.
func (r *ring) reload() error {
	t := atomic.LoadUint32(&r.hdr.Tail)
	if t >= r.n {
		return fmt.Errorf("%w: tail %d >= %d slots", ErrKernel, t, r.n)
	}
	nav := t + r.n - r.head
	if nav >= r.n {
		nav -= r.n
	}
	if nav < r.avail() {
		return fmt.Errorf("%w: tail moved backwards (%d -> %d, head %d)", ErrKernel, r.tail, t, r.head)
	}
	r.tail = t
	return nil
}

// publish makes head (and cur == head) visible to the kernel: cur first,
// so the kernel never sees a head ahead of cur.
func (r *ring) publish() {
	atomic.StoreUint32(&r.hdr.Cur, r.head)
	atomic.StoreUint32(&r.hdr.Head, r.head)
}

// buf returns netmap buffer idx, or false if the index lies outside the
// region (or is one of the reserved buffers 0 and 1).
func (r *ring) buf(idx uint32) ([]byte, bool) {
	if idx < 2 || idx >= r.nbufs {
		return nil, false
	}
	o := r.bufBase + int(idx)*r.bufSize
	return r.mem[o : o+r.bufSize : o+r.bufSize], true
}
