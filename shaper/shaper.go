// Package shaper is pppfwd's FQ-CoDel scheduler (RFC 8290) with a rate
// limiter whose rate is shared by every worker (a global token bucket from
// which workers lease credit in chunks). It depends on nothing of pppfwd's
// but a Clock, and handles packets through the Ops the caller provides.
//
// STAND-IN: this file fixes the API the worker uses; issue 5 replaces the
// implementation behind it (today: FIFO, no rate).
package shaper

// Clock returns monotonic nanoseconds.
type Clock interface{ Now() int64 }

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

// Config configures one FQ-CoDel instance. Zero fields take Linux
// fq_codel's defaults.
type Config struct {
	Flows    int   // flow queues (1024)
	Quantum  int   // DRR quantum in bytes (1514)
	Target   int64 // CoDel target, ns (5 ms)
	Interval int64 // CoDel interval, ns (100 ms)
	NoECN    bool  // ECN marking is on unless set
	Limit    int   // packet limit (10240)
	MemLimit int   // byte limit (32 MiB)
	HostFair bool  // per-host fairness first, then per-flow
}

// Bucket is the rate shared by all workers of one direction.
type Bucket struct {
	rate uint64
}

// NewBucket returns a bucket for rateBits bits per second; 0 means unlimited.
func NewBucket(rateBits uint64, clk Clock) *Bucket { return &Bucket{rate: rateBits} }

// Stats are one instance's counters.
type Stats struct {
	Enqueued, Dequeued, Dropped, Marked uint64
	Backlog                             int
}

// FQCoDel is one worker's scheduler for one direction.
type FQCoDel[T any] struct {
	ops   Ops[T]
	q     []T
	head  int
	stats Stats
	limit int
}

// New returns a scheduler. b may be nil (no rate limit).
func New[T any](cfg Config, b *Bucket, clk Clock, ops Ops[T]) *FQCoDel[T] {
	if cfg.Limit == 0 {
		cfg.Limit = 10240
	}
	return &FQCoDel[T]{ops: ops, q: make([]T, 0, cfg.Limit), limit: cfg.Limit}
}

// Enqueue adds a packet of the given flow (5-tuple hash) and host (LAN
// host hash, for per-host fairness).
func (s *FQCoDel[T]) Enqueue(p T, flowHash, hostHash uint32) {
	if len(s.q) == s.limit {
		s.ops.Drop(p)
		s.stats.Dropped++
		return
	}
	s.q = append(s.q, p)
	s.stats.Enqueued++
}

// Dequeue fills out with packets the rate allows now and returns how many.
func (s *FQCoDel[T]) Dequeue(out []T) int {
	n := copy(out, s.q[s.head:])
	s.head += n
	if s.head == len(s.q) {
		s.q, s.head = s.q[:0], 0
	}
	s.stats.Dequeued += uint64(n)
	return n
}

// Len returns the number of queued packets.
func (s *FQCoDel[T]) Len() int { return len(s.q) - s.head }

// NextSend returns when Dequeue can next return a packet (0: now or empty).
func (s *FQCoDel[T]) NextSend() int64 { return 0 }

// Stats returns the counters.
func (s *FQCoDel[T]) Stats() Stats { st := s.stats; st.Backlog = s.Len(); return st }
