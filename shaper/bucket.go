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
type Bucket struct {
	tat atomic.Int64 // theoretical arrival time, ns
	_   [56]byte     // keep tat on its own cache line

	rate      uint64 // bits per second
	chunk     int64  // bytes per lease
	burst     int64  // ns of catch-up
	nsPerByte float64
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
	b := &Bucket{rate: rateBits, burst: DefaultBurst}
	if rateBits == 0 {
		return b
	}
	b.nsPerByte = 8e9 / float64(rateBits)
	c := int64(float64(rateBits) / 8 * DefaultChunkTime / 1e9)
	b.chunk = min(max(c, MinChunk), MaxChunk)
	if clk != nil {
		b.tat.Store(clk.Now())
	}
	return b
}

// Rate returns the rate in bits per second (0: unlimited).
func (b *Bucket) Rate() uint64 {
	if b == nil {
		return 0
	}
	return b.rate
}

// Chunk returns the lease size in bytes.
func (b *Bucket) Chunk() int64 { return b.chunk }

// SetChunk sets the lease size in bytes (call before use).
func (b *Bucket) SetChunk(bytes int64) {
	if bytes > 0 {
		b.chunk = bytes
	}
}

// SetBurst sets how much missed time (ns) a late worker may catch up on
// (call before use).
func (b *Bucket) SetBurst(ns int64) {
	if ns >= 0 {
		b.burst = ns
	}
}

func (b *Bucket) bytesToNs(n int64) int64 {
	return int64(float64(n)*b.nsPerByte + 0.5)
}

// Lease asks for at least need bytes of credit at time now. It returns the
// bytes granted (max(need, chunk)), or 0 and the time at which to ask again.
func (b *Bucket) Lease(now, need int64) (granted, retry int64) {
	amount := max(need, b.chunk)
	d := b.bytesToNs(amount)
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
		b.tat.Add(-b.bytesToNs(bytes))
	}
}

// Ready returns when the next lease can succeed (<= now: already).
func (b *Bucket) Ready() int64 { return b.tat.Load() }
