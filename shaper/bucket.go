package shaper

import (
	"math"
	"sync/atomic"
)

// Bucket is the rate shared by all workers of one direction. It is a GCRA
// (virtual scheduling) token bucket: tat is the time at which everything
// granted so far has drained at the rate. A worker leases credit in chunks
// with one atomic operation: the lease succeeds when tat <= now and moves tat
// forward by the chunk's transmission time, so the bytes granted up to any
// time t never exceed rate*t plus the one lease that pushed tat past t, and
// whatever one worker does not take is there for the others.
//
// Unused credit stays with a polling worker while younger than
// CreditKeep, so a queue that runs dry every batch leases once per chunk
// rather than once per batch; older credit goes back at the worker's next
// Dequeue, and a worker hands back all it keeps before it sleeps
// (FQCoDel.ReleaseCredit), so an idle worker holds nothing.
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
// Fairness: a lease granted to whoever asks first would let the worker
// that steps first, or polls most often, take the whole rate while another
// backlogged worker's flows wait at their limit. So workers lease through
// a Lessee (NewLessee), which has a share clock: the time up to which it
// has had its share of the rate. A lease moves the clock on by the lease's
// time at the lessee's share: its weight over the weights of all lessees
// that take a share, those busy (a queue waiting on the rate, from a lease
// until Idle) and those idle whose clock is still ahead of now, so that a
// lessee whose queue keeps running dry has about the share it uses and the
// others' add up to the rest. A lessee's weight (SetWeight, 1 unless set)
// is what its scheduler shares its part among: its bulk flows (FQCoDel's
// weight), or their hosts under per-host fairness, so the bulk flows of
// all workers share the rate as those of one scheduler would, not each
// worker's alike (a host with flows on several workers counts once in
// each). A weight is published at each lease: an idle lessee whose clock
// is still ahead keeps its last one. A busy lessee whose clock is past now
// is ahead of its share, and is refused while another busy lessee is
// behind its own (that one's clock at or before now): the credit waits for
// the lessee it is owed to, which takes it at its next run, through the
// catch-up above if that comes late; a lessee refused this way retries
// when its clock comes round (Lessee.Ready). Otherwise the lessee takes
// the credit, so a share a busy lessee leaves unused goes to the others,
// and a lease taken that way is not held against the lessee later: its
// clock moves on from now, not from where it was. A clock lags now by no
// more than its lessee's queue has waited, up to CatchUp: a late lessee is
// owed what it could catch up on, and no share for time it was idle. One
// that lags by more than twice CatchUp has not run for CatchUp: it is not
// waited for. Fairness only refuses leases: the rate, the bucket's tat and
// the bounds above are as they are. It adds no lock: a lease reads each
// lessee's clock and busy flag (atomic words on the lessee's own cache
// line) and writes its own.
//
// The rate can change while workers lease (SetRate): a lease reads the
// parameters once, through an atomic pointer.
type Bucket struct {
	tat atomic.Int64 // theoretical arrival time, ns
	_   [56]byte     // keep tat on its own cache line

	lessees atomic.Pointer[[]*lesseeSlot] // replaced whole by NewLessee

	p       atomic.Pointer[bucketParams]
	burst   int64 // ns of catch-up after idle
	catchUp int64 // ns of catch-up for a worker whose queue waited (>= burst in effect)
}

// lesseeSlot is what the other lessees see of one. Its own cache line:
// its lessee writes it at every lease.
type lesseeSlot struct {
	share  atomic.Int64 // share clock, ns (idleShare: never leased)
	busy   atomic.Bool
	weight atomic.Int64 // the lessee's weight (SetWeight)
	_      [40]byte
}

// MaxWeight bounds a lessee's weight (SetWeight).
const MaxWeight = 1 << 20

const idleShare = math.MinInt64

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
// lease size follows it. Credit already granted stays granted; an
// FQCoDel drops credit it leased before the change rather than hand it
// back, and credit handed back through Lessee.Return after the change is
// priced at the new rate, so right after a cut the bucket may give out up
// to its burst (DefaultBurst, 1 ms) more than the new rate allows. A bucket
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

// Lessee is one worker's handle on a Bucket: its leases take their share
// of the rate beside the other lessees' (see Bucket). A Lessee is used by
// one goroutine; lessees of one Bucket run concurrently.
type Lessee struct {
	b     *Bucket
	slot  *lesseeSlot
	share int64 // share clock, ns (idleShare: never leased)
	busy  bool
	w     int64 // weight (SetWeight), >= 1
	// others is the weight of the lessees other than this one taking a
	// share, and lw this one's, at its last lease: a lease of d ns of
	// rate moved the share clock on by d*(others+lw)/lw.
	others, lw int64
	until      int64 // a refused lease's retry time (0: none)
}

// NewLessee returns a new lessee of b, idle (nil for a nil b). It
// allocates: call it when setting up a worker, not per packet.
func (b *Bucket) NewLessee() *Lessee {
	if b == nil {
		return nil
	}
	sl := &lesseeSlot{}
	sl.share.Store(idleShare)
	sl.weight.Store(1)
	for {
		old := b.lessees.Load()
		var n []*lesseeSlot
		if old != nil {
			n = append(n, *old...)
		}
		n = append(n, sl)
		if b.lessees.CompareAndSwap(old, &n) {
			break
		}
	}
	return &Lessee{b: b, slot: sl, share: idleShare, w: 1, lw: 1}
}

// SetWeight sets the lessee's weight for its next leases (clamped to
// 1..MaxWeight): its share of the rate beside the others' is its weight
// over theirs and its own. Writes the lessee's shared line only when the
// weight changes.
func (l *Lessee) SetWeight(n int) {
	w := min(max(int64(n), 1), MaxWeight)
	if w != l.w {
		l.w = w
		l.slot.weight.Store(w)
	}
}

// Lease is Bucket.Lease for this lessee.
func (l *Lessee) Lease(now, need int64) (granted, retry int64) {
	return l.LeaseWaiting(now, need, now)
}

// LeaseWaiting is Bucket.LeaseWaiting for this lessee, which it makes
// busy: it may also be refused (0, and the time its share allows another
// lease) while it is ahead of its share and another busy lessee is
// behind its own. The lessee stays busy until Idle.
func (l *Lessee) LeaseWaiting(now, need, since int64) (granted, retry int64) {
	b := l.b
	p := b.p.Load()
	amount := max(need, p.chunk)
	d := p.bytesToNs(amount)
	allow := max(b.burst, min(now-since, b.catchUp))
	if !l.busy {
		l.busy = true
		l.slot.busy.Store(true)
	}
	// The share clock lags now by no more than the lessee's queue has
	// waited (up to CatchUp): what a late lessee is owed, and no credit
	// for time it was idle. Published, so that the others see it.
	s := max(l.share, now-min(now-since, b.catchUp))
	if s != l.share {
		l.share = s
		l.slot.share.Store(s)
	}
	others, owed := b.scan(l.slot, now)
	l.until = 0
	for {
		t := b.tat.Load()
		if t > now {
			return 0, t
		}
		if s > now && owed && d > 0 { // d 0: SetRate(0), unlimited
			l.until = s
			return 0, s
		}
		if b.tat.CompareAndSwap(t, max(t, now-allow)+d) {
			break
		}
	}
	// At a share of w/(others+w), d of rate lasts d*(others+w)/w.
	l.others, l.lw = others, l.w
	l.share = min(s, now) + shareTime(d, others, l.w)
	l.slot.share.Store(l.share)
	return amount, 0
}

// shareTime is how long d ns of rate lasts at a share of w/(others+w)
// (in floating point: d*(others+w) may not fit in an int64 at a low rate
// beside large weights).
func shareTime(d, others, w int64) int64 {
	if others == 0 {
		return d
	}
	return int64(float64(d) * float64(others+w) / float64(w))
}

// scan returns the weight of the lessees other than self that take a
// share at now, and whether one of them is owed credit. A lessee takes a share while
// it is busy, and while idle until its share clock, which it moved on by
// what it took, comes round to now: one whose queue keeps running dry
// has a share about as large as what it uses, so the others' shares add
// up to the rest. A busy lessee is owed while its share clock
// is at or before now, but not once it lags by more than twice CatchUp:
// its share clock lags the time of its last lease by at most CatchUp, so
// that one has not run for CatchUp, and is not waited for (it catches up
// on no more when it comes back).
func (b *Bucket) scan(self *lesseeSlot, now int64) (others int64, owed bool) {
	horizon := now - 2*b.catchUp
	for _, sl := range *b.lessees.Load() {
		if sl == self {
			continue
		}
		s := sl.share.Load()
		switch {
		case sl.busy.Load():
			others += sl.weight.Load()
			owed = owed || s <= now && s >= horizon
		case s > now:
			others += sl.weight.Load()
		}
	}
	return others, owed
}

// Return hands back unused credit; the share clock goes back by what the
// credit counted at this lessee's share.
func (l *Lessee) Return(bytes int64) {
	if bytes <= 0 {
		return
	}
	d := l.b.p.Load().bytesToNs(bytes)
	l.b.tat.Add(-d)
	if l.share != idleShare {
		l.share -= shareTime(d, l.others, l.lw)
		l.slot.share.Store(l.share)
	}
}

// Idle says the lessee's queue ran dry (its credit returned, or kept for
// at most CreditKeep): the others stop waiting for it.
func (l *Lessee) Idle() {
	if !l.busy {
		return
	}
	l.busy = false
	l.slot.busy.Store(false)
	l.until = 0
}

// Ready returns when the lessee's next lease can succeed as far as it
// knows (<= now: already): the bucket's Ready, or later if its last lease
// was refused for its share. Another lessee's lease may change either.
func (l *Lessee) Ready() int64 { return max(l.b.tat.Load(), l.until) }
