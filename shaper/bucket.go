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
// worker holds nothing.
//
// Missed time: the bucket cannot tell an idle worker from a late one, so
// the worker says which (LeaseWaiting). Time in which no worker leased
// is forfeit, except what a late worker catches up on: at most Burst
// (DefaultBurst) of it after an idle period (a queue that was empty), so
// a worker whose queue just filled sends no more than Burst of rate at
// once; and, for a worker whose queue has been waiting on the rate all
// along, the time it waited, up to CatchUp (DefaultCatchUp). A worker
// runs only when its thread wakes, and wakeups come late (a coarse
// timer, a loaded or emulated CPU, a slow clock): without the catch-up a
// worker woken every W could send only Burst plus one lease per wakeup,
// a fraction of the rate whenever W exceeds that. The invariant: a
// backlogged worker woken at least every CatchUp sends at the rate, and
// in no interval that starts while it is blocked on the rate does it
// send more than the interval's rate plus two leases (the catch-up pays
// for time already owed); only a worker whose queue just filled may add
// Burst. CatchUp bounds what a worker stalled longer sends at once: at
// most CatchUp of rate, into the line's buffer.
//
// The rate can change while workers lease (SetRate): a lease reads the
// parameters once, through an atomic pointer.
type Bucket struct {
	tat atomic.Int64 // theoretical arrival time, ns
	_   [56]byte     // keep tat on its own cache line

	p       atomic.Pointer[bucketParams]
	burst   int64 // ns of catch-up after idle
	catchUp int64 // ns of catch-up for a worker whose queue waited (>= burst in effect)
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
	DefaultBurst     = 1_000_000 // 1 ms of catch-up after idle
	// DefaultCatchUp covers the wakeups of a thread that sleeps until
	// the next release: a timer tick at 100 Hz (Linux's tbf asks
	// burst >= rate/HZ for the same reason) plus scheduling delay.
	DefaultCatchUp = 20_000_000 // 20 ms of catch-up for a backlogged late worker
)

// NewBucket returns a bucket for rateBits bits per second; 0 means unlimited.
func NewBucket(rateBits uint64, clk Clock) *Bucket {
	b := &Bucket{burst: DefaultBurst, catchUp: DefaultCatchUp}
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

// SetBurst sets how much missed time (ns) a worker whose queue was empty
// may catch up on (call before use).
func (b *Bucket) SetBurst(ns int64) {
	if ns >= 0 {
		b.burst = ns
	}
}

// SetCatchUp sets how much missed time (ns) a worker whose queue waited on
// the rate may catch up on (call before use); Burst applies when larger.
func (b *Bucket) SetCatchUp(ns int64) {
	if ns >= 0 {
		b.catchUp = ns
	}
}

func (p *bucketParams) bytesToNs(n int64) int64 {
	return int64(float64(n)*p.nsPerByte + 0.5)
}

// Lease asks for at least need bytes of credit at time now for a worker
// whose queue was empty until now. It returns the bytes granted
// (max(need, chunk)), or 0 and the time at which to ask again.
func (b *Bucket) Lease(now, need int64) (granted, retry int64) {
	return b.LeaseWaiting(now, need, now)
}

// LeaseWaiting is Lease for a worker whose queue has held packets since
// time since: it may catch up on the time it waited, up to CatchUp (at
// least Burst).
func (b *Bucket) LeaseWaiting(now, need, since int64) (granted, retry int64) {
	p := b.p.Load()
	amount := max(need, p.chunk)
	d := p.bytesToNs(amount)
	allow := max(b.burst, min(now-since, b.catchUp))
	for {
		t := b.tat.Load()
		if t > now {
			return 0, t
		}
		base := max(t, now-allow)
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
