package shaper

import "math"

// Ops lets the shaper handle caller packets.
type Ops[T any] interface {
	// Len is the packet's size in bytes as the rate counts it, before
	// overhead compensation (the IP packet length).
	Len(p T) int
	// MarkCE sets ECN Congestion Experienced; false if not ECN-capable.
	MarkCE(p T) bool
	// Drop releases a packet the shaper discarded.
	Drop(p T)
}

// DropReason says why the shaper discarded a packet.
type DropReason uint8

const (
	DropOverlimit DropReason = iota // packet limit reached: head drop from the fattest queue
	DropMemLimit                    // memory limit reached: head drop from the fattest queue
	DropCoDel                       // CoDel drop (sojourn above target for an interval)
	NumDropReasons
)

var dropReasonNames = [NumDropReasons]string{"overlimit", "memlimit", "codel"}

// String returns the reason's counter name.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropReasonNames[r]
	}
	return "unknown"
}

// Stats are one instance's counters.
type Stats struct {
	Enqueued, Dequeued, Dropped, Marked uint64
	Backlog                             int
	BacklogBytes                        int64
	Drops                               [NumDropReasons]uint64 // Dropped by reason
	Leases                              uint64                 // successful Bucket leases
	RateLimited                         uint64                 // Dequeue calls stopped by the rate
}

const (
	nilIdx = -1
	fpBits = 16 // DRR deficits are fixed point: bytes << fpBits

	listNone = 0
	listNew  = 1
	listOld  = 2
)

type slot[T any] struct {
	p    T
	ts   int64 // enqueue time
	next int32
	size int32 // Ops.Len
	wire int32 // Overhead.WireLen(size)
}

type codelVars struct {
	count, lastCount uint32
	dropping         bool
	firstAbove       int64 // 0: sojourn not above target
	dropNext         int64
}

type flowQ struct {
	head, tail int32
	next       int32 // link in the new or old list
	qlen       int32
	backlog    int64
	deficit    int64 // fixed point
	host       int32
	list       uint8
	cv         codelVars
}

type flowList struct{ head, tail int32 }

// FQCoDel is one worker's scheduler for one direction.
type FQCoDel[T any] struct {
	ops     Ops[T]
	clk     Clock
	b       *Bucket
	l       *Lessee // this scheduler's handle on b (limited only)
	limited bool
	cfg     Config
	ecn     bool
	quantum int64 // fixed point
	mtu     int64
	// autoQ: the quantum follows the bucket's rate (RateQuantum); qRate
	// is the rate it was last set for.
	autoQ bool
	qRate uint64
	// target and interval are CoDel's, in use: Config's, or with
	// Config.Target (Interval) 0 and a rate, RateTarget (RateInterval)
	// of the rate, followed as the quantum is (autoT, autoI).
	target, interval int64
	autoT, autoI     bool

	slots []slot[T]
	free  int32
	flows []flowQ
	hosts []int32 // active flows per host slot (HostFair)
	newL  flowList
	oldL  flowList
	// bulk counts the flows on the old list that hold packets: the flows
	// that have used a quantum and still wait, not a sparse flow passing
	// through the new list. hostBulk counts them per host slot, and
	// bulkHosts the host slots with one (HostFair). The scheduler's
	// weight on a shared bucket (Lessee.SetWeight) is bulk, or bulkHosts.
	bulk, bulkHosts int32
	hostBulk        []int32

	qlen   int
	mem    int64
	credit int64 // leased bytes not yet spent
	leased int64 // when credit was last leased
	// leasedAt are the bucket's parameters the credit was priced at:
	// credit of another rate is dropped, not returned (returnCredit).
	leasedAt *bucketParams
	blocked  bool  // the last Dequeue stopped for lack of credit
	since    int64 // when the queue last went from empty to not (valid while qlen > 0)

	stats Stats
}

// New returns a scheduler. b may be nil (no rate limit). cfg's zero fields
// take Linux fq_codel's defaults, but for Quantum: 0 with a rate limit is
// RateQuantum of the bucket's rate, followed when SetRate changes it. New
// panics if cfg.Validate fails.
func New[T any](cfg Config, b *Bucket, clk Clock, ops Ops[T]) *FQCoDel[T] {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	autoQ := cfg.Quantum == 0 && b.Rate() > 0
	autoT := cfg.Target == 0 && b.Rate() > 0
	autoI := cfg.Interval == 0 && autoT
	cfg = cfg.WithDefaults()
	if clk == nil {
		clk = MonoClock{}
	}
	s := &FQCoDel[T]{
		ops:      ops,
		clk:      clk,
		b:        b,
		limited:  b.Rate() > 0,
		cfg:      cfg,
		ecn:      !cfg.NoECN,
		quantum:  int64(cfg.Quantum) << fpBits,
		mtu:      int64(cfg.Quantum),
		autoQ:    autoQ,
		autoT:    autoT,
		autoI:    autoI,
		target:   cfg.Target,
		interval: cfg.Interval,
		slots:    make([]slot[T], cfg.Limit),
		flows:    make([]flowQ, cfg.Flows),
		newL:     flowList{nilIdx, nilIdx},
		oldL:     flowList{nilIdx, nilIdx},
	}
	if s.limited {
		s.l = b.NewLessee()
	}
	if cfg.HostFair {
		s.hosts = make([]int32, cfg.Flows)
		s.hostBulk = make([]int32, cfg.Flows)
	}
	s.followRate()
	for i := range s.slots {
		s.slots[i].next = int32(i + 1)
	}
	s.slots[len(s.slots)-1].next = nilIdx
	for i := range s.flows {
		s.flows[i] = flowQ{head: nilIdx, tail: nilIdx, next: nilIdx, host: nilIdx}
	}
	return s
}

// Config returns the configuration in use (defaults applied; Quantum,
// Target and Interval are the defaults where they follow the rate: see
// Quantum, Target and Interval).
func (s *FQCoDel[T]) Config() Config { return s.cfg }

// Target and Interval return CoDel's target and interval (ns) now in use:
// Config's, or where Config leaves them 0 under a rate, RateTarget and
// RateInterval of the rate as of the last Dequeue.
func (s *FQCoDel[T]) Target() int64 { return s.target }

// Interval: see Target.
func (s *FQCoDel[T]) Interval() int64 { return s.interval }

// Quantum returns the DRR quantum in bytes now in use: Config.Quantum, or
// with Config.Quantum 0 and a rate, RateQuantum of the rate as of the last
// Dequeue.
func (s *FQCoDel[T]) Quantum() int { return int(s.quantum >> fpBits) }

// followRate sets the quantum from the bucket's rate when it follows it
// (SetRate may have changed the rate). Flows keep the deficit they have.
func (s *FQCoDel[T]) followRate() {
	if !s.autoQ && !s.autoT && !s.autoI {
		return
	}
	r := s.b.Rate()
	if r == s.qRate {
		return
	}
	s.qRate = r
	if s.autoQ {
		s.quantum = int64(RateQuantum(r)) << fpBits
	}
	mtu := s.cfg.Overhead.WireLen(FullPacket)
	if s.autoT {
		s.target = RateTarget(r, mtu)
	}
	if s.autoI {
		s.interval = RateInterval(r, s.target)
	}
}

// reduce maps a 32-bit hash onto [0, n): the hash is mixed first (the
// murmur3 finalizer's first rounds, so weak hashes such as a port number
// still spread), then scaled by Lemire's multiply-shift (Linux's
// reciprocal_scale).
func reduce(h uint32, n int) int32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32((uint64(h) * uint64(n)) >> 32)
}

// Enqueue adds a packet of the given flow (5-tuple hash) and host (LAN
// host hash, for per-host fairness) at the clock's current time.
func (s *FQCoDel[T]) Enqueue(p T, flowHash, hostHash uint32) {
	s.EnqueueAt(p, flowHash, hostHash, s.clk.Now())
}

// EnqueueAt is Enqueue with the time given by the caller (a worker that read
// the same Clock once for its batch).
func (s *FQCoDel[T]) EnqueueAt(p T, flowHash, hostHash uint32, now int64) {
	if s.free == nilIdx {
		s.dropFattest(DropOverlimit)
		if s.free == nilIdx { // nothing queued had a size: refuse p
			s.ops.Drop(p)
			s.stats.Dropped++
			return
		}
	}
	size := s.ops.Len(p)
	idx := s.free
	sl := &s.slots[idx]
	s.free = sl.next
	sl.p, sl.ts, sl.next = p, now, nilIdx
	sl.size, sl.wire = int32(size), int32(s.cfg.Overhead.WireLen(size))

	fi := reduce(flowHash, len(s.flows))
	f := &s.flows[fi]
	if f.tail == nilIdx {
		f.head = idx
	} else {
		s.slots[f.tail].next = idx
	}
	f.tail = idx
	f.qlen++
	f.backlog += int64(size)
	if s.qlen == 0 {
		s.since = now
	}
	s.qlen++
	s.mem += int64(size)
	s.stats.Enqueued++

	if f.qlen == 1 && f.list == listOld {
		s.bulkUp(f)
	}
	if f.list == listNone {
		if s.hosts != nil {
			h := reduce(hostHash, len(s.hosts))
			f.host = h
			s.hosts[h]++
		}
		f.deficit = s.flowQuantum(f)
		s.push(&s.newL, fi, listNew)
	}
	if s.mem > int64(s.cfg.MemLimit) {
		s.dropFattest(DropMemLimit)
	}
}

// flowQuantum is the DRR replenishment of f (fixed point).
func (s *FQCoDel[T]) flowQuantum(f *flowQ) int64 {
	if s.hosts == nil || f.host == nilIdx {
		return s.quantum
	}
	if n := int64(s.hosts[f.host]); n > 1 {
		return s.quantum / n
	}
	return s.quantum
}

func (s *FQCoDel[T]) push(l *flowList, fi int32, which uint8) {
	f := &s.flows[fi]
	f.next = nilIdx
	f.list = which
	if l.tail == nilIdx {
		l.head = fi
	} else {
		s.flows[l.tail].next = fi
	}
	l.tail = fi
}

// popList removes the head of l.
func (s *FQCoDel[T]) popList(l *flowList) int32 {
	fi := l.head
	l.head = s.flows[fi].next
	if l.head == nilIdx {
		l.tail = nilIdx
	}
	s.flows[fi].next = nilIdx
	return fi
}

// popHead unlinks f's head packet and returns its slot (nilIdx if empty).
func (s *FQCoDel[T]) popHead(f *flowQ) int32 {
	idx := f.head
	if idx == nilIdx {
		return nilIdx
	}
	sl := &s.slots[idx]
	f.head = sl.next
	if f.head == nilIdx {
		f.tail = nilIdx
	}
	f.qlen--
	if f.qlen == 0 && f.list == listOld {
		s.bulkDown(f)
	}
	f.backlog -= int64(sl.size)
	s.qlen--
	s.mem -= int64(sl.size)
	return idx
}

// release returns a slot to the free list and forgets its packet.
func (s *FQCoDel[T]) release(idx int32) {
	var zero T
	sl := &s.slots[idx]
	sl.p = zero
	sl.next = s.free
	s.free = idx
}

func (s *FQCoDel[T]) drop(idx int32, why DropReason) {
	s.ops.Drop(s.slots[idx].p)
	s.release(idx)
	s.stats.Dropped++
	s.stats.Drops[why]++
}

// dropFattest drops from the head of the queue holding the most bytes, up to
// DropBatch packets or until half its backlog is gone, and adds the drops
// to that flow's CoDel count, so that CoDel drops harder there once it
// drops again (Linux fq_codel_drop).
func (s *FQCoDel[T]) dropFattest(why DropReason) {
	best, max := int32(nilIdx), int64(0)
	for i := range s.flows {
		if b := s.flows[i].backlog; b > max {
			best, max = int32(i), b
		}
	}
	if best == nilIdx {
		return
	}
	f := &s.flows[best]
	threshold := max >> 1
	var dropped int64
	// At least one packet, as Linux's fq_codel_drop does (a do/while): the
	// caller needs a free slot even when the fattest backlog is tiny.
	for i := 0; i == 0 || i < s.cfg.DropBatch && dropped < threshold; i++ {
		idx := s.popHead(f)
		if idx == nilIdx {
			break
		}
		dropped += int64(s.slots[idx].size)
		s.drop(idx, why)
		f.cv.count++
	}
}

// pick runs the DRR over the new and old lists and returns the flow to serve
// next (deficit > 0, not empty), or nilIdx when no flow has packets.
func (s *FQCoDel[T]) pick() int32 {
	for {
		var l *flowList
		switch {
		case s.newL.head != nilIdx:
			l = &s.newL
		case s.oldL.head != nilIdx:
			l = &s.oldL
		default:
			return nilIdx
		}
		fi := l.head
		f := &s.flows[fi]
		if f.deficit <= 0 {
			f.deficit += s.flowQuantum(f)
			s.popList(l)
			if l == &s.newL && f.qlen > 0 {
				s.bulkUp(f)
			}
			s.push(&s.oldL, fi, listOld)
			continue
		}
		if f.qlen > 0 {
			return fi
		}
		// Empty: CoDel leaves dropping state; a new flow passes through the
		// old list once (RFC 8290 4.2) so it cannot regain priority at once.
		f.cv.dropping, f.cv.firstAbove = false, 0
		s.popList(l)
		if l == &s.newL && s.oldL.head != nilIdx {
			s.push(&s.oldL, fi, listOld)
			continue
		}
		f.list = listNone
		if s.hosts != nil && f.host != nilIdx {
			s.hosts[f.host]--
			f.host = nilIdx
		}
	}
}

// shouldDrop is RFC 8289's dodequeue test for the packet in slot idx.
func (s *FQCoDel[T]) shouldDrop(idx int32, now int64, cv *codelVars) bool {
	if idx == nilIdx {
		cv.firstAbove = 0
		return false
	}
	if now-s.slots[idx].ts < s.target || s.mem <= s.mtu {
		cv.firstAbove = 0
		return false
	}
	if cv.firstAbove == 0 {
		cv.firstAbove = now + s.interval
		return false
	}
	return now >= cv.firstAbove
}

func (s *FQCoDel[T]) controlLaw(t int64, count uint32) int64 {
	return t + int64(float64(s.interval)/math.Sqrt(float64(count)))
}

// codelDequeue is RFC 8289's dequeue on flow f: it returns the slot of the
// packet to send (nilIdx if CoDel dropped what was left), dropping or
// ECN-marking on the way.
func (s *FQCoDel[T]) codelDequeue(f *flowQ, now int64) int32 {
	cv := &f.cv
	idx := s.popHead(f)
	drop := s.shouldDrop(idx, now, cv)
	if idx == nilIdx {
		cv.dropping = false
		return nilIdx
	}
	if cv.dropping {
		if !drop {
			cv.dropping = false
			return idx
		}
		for cv.dropping && now >= cv.dropNext {
			cv.count++
			if s.ecn && s.ops.MarkCE(s.slots[idx].p) {
				s.stats.Marked++
				cv.dropNext = s.controlLaw(cv.dropNext, cv.count)
				return idx
			}
			s.drop(idx, DropCoDel)
			idx = s.popHead(f)
			if !s.shouldDrop(idx, now, cv) {
				cv.dropping = false
			} else {
				cv.dropNext = s.controlLaw(cv.dropNext, cv.count)
			}
		}
		return idx
	}
	if drop {
		if s.ecn && s.ops.MarkCE(s.slots[idx].p) {
			s.stats.Marked++
		} else {
			s.drop(idx, DropCoDel)
			idx = s.popHead(f)
			s.shouldDrop(idx, now, cv)
		}
		cv.dropping = true
		delta := cv.count - cv.lastCount
		if delta > 1 && delta < 1<<31 && now-cv.dropNext < 16*s.interval {
			cv.count = delta
		} else {
			cv.count = 1
		}
		cv.lastCount = cv.count
		cv.dropNext = s.controlLaw(now, cv.count)
	}
	return idx
}

// Dequeue fills out with packets the rate allows now and returns how many.
func (s *FQCoDel[T]) Dequeue(out []T) int { return s.DequeueAt(out, s.clk.Now()) }

// DequeueAt is Dequeue with the time given by the caller (same Clock).
func (s *FQCoDel[T]) DequeueAt(out []T, now int64) int {
	n := 0
	s.blocked = false
	s.followRate()
	if s.credit > 0 && (now-s.leased > CreditKeep || s.b.p.Load() != s.leasedAt) {
		s.returnCredit()
	}
	for n < len(out) {
		fi := s.pick()
		if fi == nilIdx {
			break
		}
		f := &s.flows[fi]
		if s.limited {
			if w := int64(s.slots[f.head].wire); s.credit < w {
				// The queue has waited on the rate since it
				// filled: a late worker catches up on that time.
				p := s.b.p.Load() // before the lease: a rate set meanwhile drops the credit
				s.l.SetWeight(s.weight())
				g, _ := s.l.LeaseWaiting(now, w-s.credit, s.since)
				if g == 0 {
					s.blocked = true
					s.stats.RateLimited++
					break
				}
				s.credit += g
				s.leased, s.leasedAt = now, p
				s.stats.Leases++
			}
		}
		idx := s.codelDequeue(f, now)
		if idx == nilIdx {
			continue
		}
		sl := &s.slots[idx]
		out[n] = sl.p
		n++
		f.deficit -= int64(sl.wire) << fpBits
		s.credit -= int64(sl.wire)
		s.release(idx)
	}
	if s.limited && s.qlen == 0 {
		// Ran dry: the others stop waiting for this queue, but fresh
		// credit stays for the next batch, so a worker that drains
		// its queue every batch leases once per chunk, not once per
		// batch (each lease and return writes the bucket's shared
		// line, a cache miss per batch between workers).
		s.l.Idle()
	}
	s.stats.Dequeued += uint64(n)
	return n
}

// bulkUp notes that f, on the old list, holds packets (see bulk).
func (s *FQCoDel[T]) bulkUp(f *flowQ) {
	s.bulk++
	if s.hostBulk != nil && f.host != nilIdx {
		if s.hostBulk[f.host]++; s.hostBulk[f.host] == 1 {
			s.bulkHosts++
		}
	}
}

// bulkDown notes that f, on the old list, holds no more packets.
func (s *FQCoDel[T]) bulkDown(f *flowQ) {
	s.bulk--
	if s.hostBulk != nil && f.host != nilIdx {
		if s.hostBulk[f.host]--; s.hostBulk[f.host] == 0 {
			s.bulkHosts--
		}
	}
}

// weight is the scheduler's weight beside the other workers' on a shared
// bucket: its bulk flows, or with per-host fairness the hosts they belong
// to (each worker splits its share among those as DRR does). Sparse
// flows (a ping, a DNS query) do not count: they are served from the new
// list at once and hardly use the rate, and counting them would move the
// workers' shares at every such packet.
func (s *FQCoDel[T]) weight() int {
	if s.hostBulk != nil {
		return int(s.bulkHosts)
	}
	return int(s.bulk)
}

// Len returns the number of queued packets.
func (s *FQCoDel[T]) Len() int { return s.qlen }

// NextSend returns when Dequeue can next return a packet: 0 when the queue
// is empty or a packet may go now; otherwise the clock time the rate, and
// this scheduler's share of it beside the bucket's other busy lessees,
// allow the next one (a time already past also means now). Other workers
// leasing meanwhile may move it: ask again after Dequeue.
func (s *FQCoDel[T]) NextSend() int64 {
	if s.qlen == 0 || !s.blocked {
		return 0
	}
	return s.l.Ready()
}

// Flush drops every queued packet (shutdown, reconfiguration); they are
// counted as overlimit drops.
func (s *FQCoDel[T]) Flush() {
	for i := range s.flows {
		f := &s.flows[i]
		for idx := s.popHead(f); idx != nilIdx; idx = s.popHead(f) {
			s.drop(idx, DropOverlimit)
		}
	}
	if s.limited {
		s.idle()
	}
}

// CreditKeep is how long a scheduler keeps leased credit it has not
// spent while its worker polls: older credit goes back to the bucket at
// the next Dequeue before the queue may use it, and a worker about to
// sleep hands back what its empty queues keep (ReleaseCredit). So a
// queue that runs dry every batch leases once per chunk, and packets
// leave at most CreditKeep after the bytes they spend were granted,
// beyond the bucket's own burst: at most one lease per scheduler (the
// chunk, or the packet that asked for more).
const CreditKeep = 200_000

// FullPacket is the IP length of a full-size packet, whose time on the
// wire sets RateTarget.
const FullPacket = 1500

// returnCredit hands back the credit not yet spent; credit priced at
// other bucket parameters (SetRate, SetChunk since the lease) is dropped
// instead, so that it is never returned at a rate it was not granted at.
func (s *FQCoDel[T]) returnCredit() {
	if s.credit > 0 {
		if s.b.p.Load() == s.leasedAt {
			s.l.Return(s.credit)
		}
		s.credit = 0
	}
}

// ReleaseCredit hands back the credit an empty queue keeps (see
// CreditKeep): for a worker about to sleep, so that an idle worker holds
// no credit. A queue with packets keeps its partial credit.
func (s *FQCoDel[T]) ReleaseCredit() {
	if s.qlen == 0 {
		s.returnCredit()
	}
}

// idle hands back the credit of a queue emptied for good (Flush) and
// leaves the bucket's busy lessees, so that the others get the whole rate.
func (s *FQCoDel[T]) idle() {
	s.returnCredit()
	s.l.Idle()
}

// Stats returns the counters.
func (s *FQCoDel[T]) Stats() Stats {
	st := s.stats
	st.Backlog = s.qlen
	st.BacklogBytes = s.mem
	return st
}
