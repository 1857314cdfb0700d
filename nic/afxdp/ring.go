package afxdp

import "sync/atomic"

// desc mirrors struct xdp_desc (linux/if_xdp.h): 16 bytes.
type desc struct {
	Addr    uint64
	Len     uint32
	Options uint32
}

// ringNeedWakeup is XDP_RING_NEED_WAKEUP, a bit of a ring's flags word.
const ringNeedWakeup = 1

// ringIdx is one AF_XDP ring's shared indices and our cached copies.
//
// The producer and consumer words are shared with the kernel and only read
// and written with atomic loads and stores. Our own side's index lives in a
// cached copy (we are its only writer) that is published with one store per
// batch; the other side's index is cached and reloaded only when the cached
// view says there is not enough room (producer) or data (consumer). Indices
// are free-running uint32 counters; differences are taken modulo 2^32.
type ringIdx struct {
	prod, cons, flags *uint32
	mask, size        uint32
	cachedProd        uint32
	cachedCons        uint32
}

func (r *ringIdx) init(prod, cons, flags *uint32, size uint32) {
	r.prod, r.cons, r.flags = prod, cons, flags
	r.size, r.mask = size, size-1
	r.cachedProd = atomic.LoadUint32(prod)
	r.cachedCons = atomic.LoadUint32(cons)
}

// prodFree returns how many entries the producer may write, reloading the
// consumer index only if fewer than want are free in the cached view.
func (r *ringIdx) prodFree(want uint32) uint32 {
	free := r.size - (r.cachedProd - r.cachedCons)
	if free < want {
		r.cachedCons = atomic.LoadUint32(r.cons)
		free = r.size - (r.cachedProd - r.cachedCons)
	}
	return free
}

// prodSubmit publishes n entries written at cachedProd.
func (r *ringIdx) prodSubmit(n uint32) {
	if n == 0 {
		return
	}
	r.cachedProd += n
	atomic.StoreUint32(r.prod, r.cachedProd)
}

// consAvail returns how many entries the consumer may read, reloading the
// producer index only if fewer than want are available in the cached view.
func (r *ringIdx) consAvail(want uint32) uint32 {
	avail := r.cachedProd - r.cachedCons
	if avail < want {
		r.cachedProd = atomic.LoadUint32(r.prod)
		avail = r.cachedProd - r.cachedCons
	}
	return avail
}

// consRelease hands n entries read at cachedCons back to the producer.
func (r *ringIdx) consRelease(n uint32) {
	if n == 0 {
		return
	}
	r.cachedCons += n
	atomic.StoreUint32(r.cons, r.cachedCons)
}

// pending returns how many published entries the other side has not
// consumed yet (producer side; reloads the consumer index).
func (r *ringIdx) pending() uint32 {
	r.cachedCons = atomic.LoadUint32(r.cons)
	return r.cachedProd - r.cachedCons
}

// needWakeup reports whether the kernel asked to be woken up for this ring.
func (r *ringIdx) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&ringNeedWakeup != 0
}

// addrRing is a fill or completion ring: entries are UMEM addresses.
type addrRing struct {
	ringIdx
	ents []uint64
}

// descRing is an RX or TX ring: entries are descriptors.
type descRing struct {
	ringIdx
	ents []desc
}
