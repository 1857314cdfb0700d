package shaper

import "sync/atomic"

// Bucket is the rate shared by all workers of one direction. It is a GCRA
// (virtual scheduling) token bucket: tat is the time at which everything
// granted so far has drained at the rate. A worker leases credit in chunks
// with one atomic operation: the lease succeeds when tat <= now and moves tat
// forward by the chunk's transmission time, so the bytes granted up to any
// time t never exceed rate*t plus the one lease that pushed tat past t, and
// whatever one worker does not take is there for the others.
//
// Unused credit is handed back when a worker's queue runs dry, so an idle
// worker holds nothing. A worker that falls behind (late timer) may catch up
// at most Burst of missed time; longer idle periods are forfeit.
//
// The rate can change while workers lease (SetRate): a lease reads the
// parameters once, through an atomic pointer.
type Bucket struct {
	tat atomic.Int64 // theoretical arrival time, ns
	_   [56]byte     // keep tat on its own cache line

	p     atomic.Pointer[bucketParams]
	burst int64 // ns of catch-up
}

// bucketParams are a rate and what follows from it; replaced whole.
type bucketParams struct {
	rate      uint64 // bits per second
	chunk     int64  // bytes per lease
	nsPerByte float64
}

func paramsFor(rateBits uint64) *bucketParams {
	p := &bucketParams{rate: rateBits}
	if rateBits == 0 {
		return p
	}
	p.nsPerByte = 8e9 / float64(rateBits)
	c := int64(float64(rateBits) / 8 * DefaultChunkTime / 1e9)
	p.chunk = min(max(c, MinChunk), MaxChunk)
	return p
}

// Default lease and catch-up sizes.
const (
	DefaultChunkTime = 200_000   // a chunk is 200 µs of rate ...
	MinChunk         = 256       // ... but at least 256 bytes
	MaxChunk         = 64 << 10  // ... and at most 64 KiB
	DefaultBurst     = 1_000_000 // 1 ms of catch-up for late workers
)

// NewBucket returns a bucket for rateBits bits per second; 0 means unlimited.
func NewBucket(rateBits uint64, clk Clock) *Bucket {
	b := &Bucket{burst: DefaultBurst}
	b.p.Store(paramsFor(rateBits))
	if rateBits != 0 && clk != nil {
		b.tat.Store(clk.Now())
	}
	return b
}

// Rate returns the rate in bits per second (0: unlimited).
func (b *Bucket) Rate() uint64 {
	if b == nil {
		return 0
	}
	return b.p.Load().rate
}

// SetRate changes the rate (bits per second) while workers lease; the
// lease size follows it. Credit already granted stays granted; credit a
// worker hands back after the change is priced at the new rate, so right
// after a cut the bucket may give out up to its burst (DefaultBurst, 1 ms)
// more than the new rate allows. A bucket
// made with rate 0 is not used by the shapers (they run unlimited), so
// setting a rate on it changes nothing; SetRate(0) on a limited bucket
// lets everything through.
func (b *Bucket) SetRate(rateBits uint64) { b.p.Store(paramsFor(rateBits)) }

// Chunk returns the lease size in bytes.
func (b *Bucket) Chunk() int64 { return b.p.Load().chunk }

// SetChunk sets the lease size in bytes (call before use; SetRate resets
// it).
func (b *Bucket) SetChunk(bytes int64) {
	if bytes > 0 {
		p := *b.p.Load()
		p.chunk = bytes
		b.p.Store(&p)
	}
}

// SetBurst sets how much missed time (ns) a late worker may catch up on
// (call before use).
func (b *Bucket) SetBurst(ns int64) {
	if ns >= 0 {
		b.burst = ns
	}
}

func (p *bucketParams) bytesToNs(n int64) int64 {
	return int64(float64(n)*p.nsPerByte + 0.5)
}

// Lease asks for at least need bytes of credit at time now. It returns the
// bytes granted (max(need, chunk)), or 0 and the time at which to ask again.
func (b *Bucket) Lease(now, need int64) (granted, retry int64) {
	p := b.p.Load()
	amount := max(need, p.chunk)
	d := p.bytesToNs(amount)
	for {
		t := b.tat.Load()
		if t > now {
			return 0, t
		}
		base := max(t, now-b.burst)
		if b.tat.CompareAndSwap(t, base+d) {
			return amount, 0
		}
	}
}

// Return hands back unused credit.
func (b *Bucket) Return(bytes int64) {
	if bytes > 0 {
		b.tat.Add(-b.p.Load().bytesToNs(bytes))
	}
}

// Ready returns when the next lease can succeed (<= now: already).
func (b *Bucket) Ready() int64 { return b.tat.Load() }
