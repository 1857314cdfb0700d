package shaper

import (
	"math"
	"sort"
)

// tpkt is a test packet.
type tpkt struct {
	id         uint32
	size       int
	flow, host uint32
	ect, ce    bool
	enq        int64
}

// tops is the test Ops: it records drops and marks.
type tops struct {
	dropped []uint32
	record  bool
	drops   int
	onDrop  func(p *tpkt)
}

func (o *tops) Len(p *tpkt) int { return p.size }
func (o *tops) MarkCE(p *tpkt) bool {
	if !p.ect {
		return false
	}
	p.ce = true
	return true
}
func (o *tops) Drop(p *tpkt) {
	o.drops++
	if o.onDrop != nil {
		o.onDrop(p)
	}
	if o.record {
		o.dropped = append(o.dropped, p.id)
	}
}

// source emits packets of one flow periodically (period 0: keep backlog
// packets queued instead).
type source struct {
	flow, host uint32
	size       int
	period     int64
	next       int64
	backlog    int // for saturating sources: packets kept queued
	queued     int
	ect        bool
	probe      bool
	probeFrom  int64 // record delays of packets enqueued from this time on

	sentBytes int64 // wire bytes dequeued
	sentPkts  int
	delays    []int64
}

// sim drives an FQCoDel (or several sharing a bucket) on a manual clock,
// event by event: arrivals, then Dequeue until it returns 0, then jump to
// the next arrival or NextSend (but at most poll ns ahead).
type sim struct {
	clk   *ManualClock
	s     *FQCoDel[*tpkt]
	ops   *tops
	srcs  []*source
	pool  []tpkt
	npool int
	out   []*tpkt
	poll  int64 // the worker's timer granularity (0: wake exactly)
	jit   func() int64
	ovh   Overhead
	// onSend sees each dequeued packet.
	onSend func(p *tpkt, now int64)
	// onStep runs after each step's dequeues.
	onStep func(now int64)
}

func newSim(cfg Config, rate uint64, srcs ...*source) *sim {
	clk := NewManualClock(1)
	ops := &tops{}
	var b *Bucket
	if rate > 0 {
		b = NewBucket(rate, clk)
	}
	sm := &sim{clk: clk, ops: ops, s: New[*tpkt](cfg, b, clk, ops), srcs: srcs,
		out: make([]*tpkt, 64), pool: make([]tpkt, 1<<16), ovh: cfg.Overhead}
	for _, src := range srcs {
		src.next = max(src.next, 1)
	}
	ops.onDrop = func(p *tpkt) { srcs[p.id].queued-- }
	return sm
}

func (sm *sim) newPkt(src *source, idx int, now int64) *tpkt {
	p := &sm.pool[sm.npool%len(sm.pool)]
	sm.npool++
	*p = tpkt{id: uint32(idx), size: src.size, flow: src.flow, host: src.host, ect: src.ect, enq: now}
	return p
}

func (sm *sim) run(until int64) {
	s := sm.s
	for now := sm.clk.Now(); now < until; now = sm.clk.Now() {
		next := until
		for i, src := range sm.srcs {
			if src.period == 0 {
				for src.queued < src.backlog {
					s.Enqueue(sm.newPkt(src, i, now), src.flow, src.host)
					src.queued++
				}
				continue
			}
			for src.next <= now {
				s.Enqueue(sm.newPkt(src, i, now), src.flow, src.host)
				src.queued++
				src.next += src.period
			}
			next = min(next, src.next)
		}
		for {
			n := s.Dequeue(sm.out)
			for _, p := range sm.out[:n] {
				src := sm.srcs[p.id]
				src.queued--
				src.sentPkts++
				src.sentBytes += int64(sm.ovh.WireLen(p.size))
				if src.probe && p.enq >= src.probeFrom {
					src.delays = append(src.delays, now-p.enq)
				}
				if sm.onSend != nil {
					sm.onSend(p, now)
				}
			}
			if n < len(sm.out) {
				break
			}
		}
		if sm.onStep != nil {
			sm.onStep(now)
		}
		if s.Len() > 0 {
			if ns := s.NextSend(); ns > now {
				next = min(next, ns)
			} else {
				next = min(next, now+1000)
			}
		}
		if sm.poll > 0 {
			// a timer that fires on poll boundaries only
			next = (next + sm.poll - 1) / sm.poll * sm.poll
		}
		if sm.jit != nil {
			next += sm.jit()
		}
		sm.clk.Set(max(next, now+1))
	}
}

func percentile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(math.Ceil(q*float64(len(s))))-1]
}
