package dataplane

import (
	"sync/atomic"

	"github.com/pppfwd/pppfwd/nic"
)

// spscRing is a single-producer single-consumer ring of frames. Batches move
// with one atomic store of the index per batch; each side keeps a cached
// copy of the other side's index (gVisor pkg/xdp style) so a batch usually
// costs one atomic load and one atomic store.
type spscRing struct {
	_          [64]byte
	head       atomic.Uint64 // next slot to consume (written by consumer)
	_          [56]byte
	tail       atomic.Uint64 // next slot to fill (written by producer)
	_          [56]byte
	cachedHead uint64 // producer's copy of head
	_          [56]byte
	cachedTail uint64 // consumer's copy of tail
	_          [56]byte
	slots      []*nic.Frame
	mask       uint64
}

// newSPSCRing returns a ring whose capacity is size rounded up to a power of 2.
func newSPSCRing(size int) *spscRing {
	c := 1
	for c < size {
		c <<= 1
	}
	return &spscRing{slots: make([]*nic.Frame, c), mask: uint64(c - 1)}
}

// Cap returns the capacity.
func (r *spscRing) Cap() int { return len(r.slots) }

// Len returns the number of queued frames (a snapshot).
func (r *spscRing) Len() int { return int(r.tail.Load() - r.head.Load()) }

// Free returns the producer's view of free slots, refreshing its cache.
func (r *spscRing) Free() int {
	r.cachedHead = r.head.Load()
	return len(r.slots) - int(r.tail.Load()-r.cachedHead)
}

// Push enqueues as many of fs as fit and returns the count (producer only).
func (r *spscRing) Push(fs []*nic.Frame) int {
	t := r.tail.Load()
	free := uint64(len(r.slots)) - (t - r.cachedHead)
	if free < uint64(len(fs)) {
		r.cachedHead = r.head.Load()
		free = uint64(len(r.slots)) - (t - r.cachedHead)
	}
	n := uint64(len(fs))
	if n > free {
		n = free
	}
	for i := uint64(0); i < n; i++ {
		r.slots[(t+i)&r.mask] = fs[i]
	}
	if n > 0 {
		r.tail.Store(t + n)
	}
	return int(n)
}

// Pop dequeues up to len(fs) frames into fs and returns the count (consumer only).
func (r *spscRing) Pop(fs []*nic.Frame) int {
	h := r.head.Load()
	avail := r.cachedTail - h
	if avail < uint64(len(fs)) {
		r.cachedTail = r.tail.Load()
		avail = r.cachedTail - h
	}
	n := uint64(len(fs))
	if n > avail {
		n = avail
	}
	for i := uint64(0); i < n; i++ {
		j := (h + i) & r.mask
		fs[i] = r.slots[j]
		r.slots[j] = nil
	}
	if n > 0 {
		r.head.Store(h + n)
	}
	return int(n)
}

// framePool is a single-owner stack of free frames. It never allocates after
// construction: every frame it will ever hold is counted in its capacity.
type framePool struct {
	free []*nic.Frame
}

// newFramePool returns a pool holding n new frames with room for cap frames.
func newFramePool(n, capacity int) *framePool {
	if capacity < n {
		capacity = n
	}
	p := &framePool{free: make([]*nic.Frame, 0, capacity)}
	p.free = append(p.free, nic.NewFrames(n)...)
	return p
}

// Get returns a free frame (reset), or nil if the pool is empty.
func (p *framePool) Get() *nic.Frame {
	n := len(p.free)
	if n == 0 {
		return nil
	}
	f := p.free[n-1]
	p.free = p.free[:n-1]
	f.Reset()
	return f
}

// GetN fills fs with free frames and returns how many it filled.
func (p *framePool) GetN(fs []*nic.Frame) int {
	n := len(fs)
	if n > len(p.free) {
		n = len(p.free)
	}
	copy(fs, p.free[len(p.free)-n:])
	p.free = p.free[:len(p.free)-n]
	for _, f := range fs[:n] {
		f.Reset()
	}
	return n
}

// Put returns a frame to the pool. Frames beyond the capacity are dropped
// for the garbage collector (that only happens on misuse).
func (p *framePool) Put(f *nic.Frame) {
	if len(p.free) < cap(p.free) {
		p.free = append(p.free, f)
	}
}

// PutN returns frames to the pool.
func (p *framePool) PutN(fs []*nic.Frame) {
	for _, f := range fs {
		p.Put(f)
	}
}

// Len returns the number of free frames.
func (p *framePool) Len() int { return len(p.free) }
