package shaper

import (
	"fmt"
	"math"
	"testing"
)

const ms = int64(1_000_000)

func mustOverhead(t testing.TB, s string) Overhead {
	t.Helper()
	o, err := ParseOverhead(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// wireNs is how long n wire bytes take at rate bits/s.
func wireNs(n int, rate uint64) int64 { return int64(float64(n) * 8e9 / float64(rate)) }

func TestRateAccuracy(t *testing.T) {
	const dur = 10_000 * ms
	for _, rate := range []uint64{1e6, 100e6, 1000e6} {
		for _, poll := range []int64{0, 250_000} {
			t.Run(fmt.Sprintf("%dMbit/poll%dus", rate/1e6, poll/1000), func(t *testing.T) {
				cfg := Config{Overhead: mustOverhead(t, "pppoe-ptm")}
				big := &source{flow: 1, size: 1500, backlog: 32, ect: true}
				small := &source{flow: 2, size: 90, backlog: 32, ect: true}
				odd := &source{flow: 3, size: 777, backlog: 32, ect: true}
				sm := newSim(cfg, rate, big, small, odd)
				sm.poll = poll
				sm.run(dur)
				sent := big.sentBytes + small.sentBytes + odd.sentBytes
				got := float64(sent*8) / (float64(dur) / 1e9)
				errPct := (got - float64(rate)) / float64(rate) * 100
				t.Logf("rate %d bit/s: got %.0f bit/s (%.3f %%), leases %d", rate, got, errPct, sm.s.Stats().Leases)
				if math.Abs(errPct) > 1 {
					t.Errorf("rate error %.3f %% > 1 %%", errPct)
				}
				if sm.s.Len() == 0 {
					t.Errorf("queue ran dry: the rate was not the limit")
				}
			})
		}
	}
}

func TestCoDel(t *testing.T) {
	cfg := Config{}.WithDefaults()
	for _, tc := range []struct {
		name     string
		standing int // packets queued ahead, one per ms: sojourn = standing ms
		ect      bool
		drainAt  int // drain the standing queue to 2 packets at this tick
	}{
		{"above-target-drops", 10, false, 0},
		{"above-target-marks-ecn", 10, true, 0},
		{"below-target", 4, false, 0},
		{"above-target-shorter-than-interval", 10, false, 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewManualClock(1_000 * ms)
			ops := &tops{}
			var drops, marks []int64
			ops.onDrop = func(*tpkt) { drops = append(drops, clk.Now()) }
			s := New[*tpkt](Config{}, nil, clk, ops)
			enq := func() { s.Enqueue(&tpkt{size: 1000, ect: tc.ect}, 7, 0) }
			for range tc.standing {
				enq()
				clk.Advance(ms)
			}
			start := clk.Now()
			out := make([]*tpkt, 1)
			for tick := range 2000 {
				enq()
				if tc.drainAt > 0 && tick == tc.drainAt {
					for s.Len() > 3 {
						s.Dequeue(out)
					}
				}
				if s.Dequeue(out) == 1 && out[0].ce {
					marks = append(marks, clk.Now())
				}
				clk.Advance(ms)
			}
			events := drops
			if tc.ect {
				events = marks
				if len(drops) != 0 {
					t.Errorf("ECN-capable flow saw %d drops", len(drops))
				}
			}
			if tc.standing*int(ms) < int(cfg.Target) || tc.drainAt > 0 {
				if len(drops)+len(marks) != 0 {
					t.Fatalf("drops at %v, marks at %v: sojourn never stayed above target for an interval", drops, marks)
				}
				return
			}
			// Expected schedule: first at start+interval, then the
			// control law D(k+1) = D(k) + interval/sqrt(k), on a 1 ms grid.
			want := []int64{start + cfg.Interval}
			d := want[0] + cfg.Interval
			for k := 2; len(want) < 6; k++ {
				want = append(want, start+(d-start+ms-1)/ms*ms)
				d += int64(float64(cfg.Interval) / math.Sqrt(float64(k)))
			}
			if len(events) < len(want) {
				t.Fatalf("got %d events, want >= %d", len(events), len(want))
			}
			for i, w := range want {
				if events[i] != w {
					t.Errorf("event %d at %d ms, want %d ms", i, (events[i]-start)/ms, (w-start)/ms)
				}
			}
			if !tc.ect {
				// each drop shortens the standing queue by 1 ms; drops stop
				// once sojourn is below target.
				wantDrops := tc.standing - int(cfg.Target/ms) + 1
				if len(drops) != wantDrops {
					t.Errorf("%d drops, want %d", len(drops), wantDrops)
				}
				if got := s.Stats().Drops[DropCoDel]; got != uint64(len(drops)) {
					t.Errorf("Drops[codel] = %d, want %d", got, len(drops))
				}
			} else if s.Stats().Marked != uint64(len(marks)) || len(marks) <= 6 {
				t.Errorf("marked %d (stats %d): want marks to continue while sojourn stays high", len(marks), s.Stats().Marked)
			}
		})
	}
}

func TestSparseFlowDelay(t *testing.T) {
	const rate = 100e6
	for _, tc := range []struct {
		flows  int
		sparse bool // want near-zero delay
	}{{DefaultFlows, true}, {1, false}} {
		t.Run(fmt.Sprintf("flows=%d", tc.flows), func(t *testing.T) {
			var srcs []*source
			period := wireNs(1500, 2*rate/16) // 16 bulk flows at 2x the rate
			for i := range 16 {
				srcs = append(srcs, &source{flow: uint32(i) * 0x9e3779b9, size: 1500, period: period, next: int64(i) * 997})
			}
			// Measured after 100 ms: at start every bulk flow is a new flow
			// and a probe waits behind one packet of each.
			ping := &source{flow: 0xdeadbeef, size: 84, period: 10 * ms, next: 3*ms + 17, probe: true, probeFrom: 100 * ms}
			dns := &source{flow: 0x12345678, size: 120, period: 37 * ms, next: 5*ms + 3, probe: true, probeFrom: 100 * ms}
			srcs = append(srcs, ping, dns)
			sm := newSim(Config{Flows: tc.flows}, rate, srcs...)
			sm.run(5_000 * ms)
			delays := append(ping.delays, dns.delays...)
			p99, mx := percentile(delays, 0.99), percentile(delays, 1)
			// Bound: a sparse packet waits at most for one lease and the
			// packet ahead of it.
			b := NewBucket(rate, nil)
			bound := 2 * wireNs(int(max(b.Chunk(), 1514)), rate)
			t.Logf("sparse delay p99 %d us, max %d us (bound %d us); drops %v", p99/1000, mx/1000, bound/1000, sm.s.Stats().Drops)
			if tc.sparse && mx > bound {
				t.Errorf("sparse flow max delay %d us > %d us", mx/1000, bound/1000)
			}
			if !tc.sparse && p99 < cfgTarget() {
				t.Errorf("single FIFO: sparse p99 %d us, expected bulk queueing (>= target); the test measures nothing", p99/1000)
			}
			if tc.sparse && len(ping.delays) < 480 {
				t.Errorf("only %d pings delivered", len(ping.delays))
			}
		})
	}
}

func cfgTarget() int64 { return Config{}.WithDefaults().Target }

func TestHostFairness(t *testing.T) {
	const rate = 20e6
	for _, tc := range []struct {
		name     string
		hostFair bool
		flows    []int // flows per host
	}{
		{"1-vs-100", true, []int{1, 100}},
		{"1-vs-10-vs-40", true, []int{1, 10, 40}},
		{"flow-fair-only", false, []int{1, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srcs []*source
			host := make([][]*source, len(tc.flows))
			for h, n := range tc.flows {
				for f := range n {
					src := &source{flow: uint32(h*1000+f)*0x9e3779b9 + 1, host: uint32(h) * 0x85ebca6b, size: 1500, backlog: 4, ect: true}
					if f%3 == 1 {
						src.size = 576
					}
					srcs = append(srcs, src)
					host[h] = append(host[h], src)
				}
			}
			sm := newSim(Config{HostFair: tc.hostFair}, rate, srcs...)
			sm.run(3_000 * ms)
			var total int64
			share := make([]int64, len(host))
			for h, ss := range host {
				for _, s := range ss {
					share[h] += s.sentBytes
				}
				total += share[h]
			}
			fair := float64(total) / float64(len(host))
			for h := range host {
				dev := (float64(share[h]) - fair) / fair
				t.Logf("host %d (%d flows): %.1f %% of fair share", h, tc.flows[h], 100+dev*100)
				if tc.hostFair && math.Abs(dev) > 0.05 {
					t.Errorf("host %d with %d flows got %.1f %% of its fair share", h, tc.flows[h], 100+dev*100)
				}
			}
			if !tc.hostFair && float64(share[0])/fair > 0.2 {
				t.Errorf("flow fairness: the 1-flow host got %.1f %% of a host share, want ~2 %%", 100*float64(share[0])/fair)
			}
		})
	}
}

// TestLargeFrames: DRR serves any frame size; 9000-byte frames neither
// starve small-packet flows nor get starved.
func TestLargeFrames(t *testing.T) {
	jumbo := &source{flow: 1, size: 9000, backlog: 8, ect: true}
	small := &source{flow: 2, size: 64, backlog: 64, ect: true}
	mid := &source{flow: 3, size: 1500, backlog: 16, ect: true}
	sm := newSim(Config{}, 50e6, jumbo, small, mid)
	sm.run(2_000 * ms)
	total := float64(jumbo.sentBytes + small.sentBytes + mid.sentBytes)
	for _, s := range []*source{jumbo, small, mid} {
		sh := float64(s.sentBytes) / total * 3
		if math.Abs(sh-1) > 0.05 {
			t.Errorf("flow %d (size %d) got %.2f of its share", s.flow, s.size, sh)
		}
	}
}

func TestLimitDropsFromFattest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		reason DropReason
	}{
		{"packets", Config{Limit: 100}, DropOverlimit},
		{"memory", Config{MemLimit: 100 * 1000}, DropMemLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewManualClock(1)
			ops := &tops{record: true}
			s := New[*tpkt](tc.cfg, nil, clk, ops)
			id := uint32(0)
			enq := func(flow uint32) {
				id++
				s.Enqueue(&tpkt{id: id<<8 | flow, size: 1000}, flow*0x9e3779b9, 0)
			}
			for range 20 {
				enq(1) // thin
			}
			for range 80 {
				enq(2) // fat
			}
			if ops.drops != 0 {
				t.Fatalf("dropped %d before the limit", ops.drops)
			}
			enq(1)
			if ops.drops == 0 {
				t.Fatal("no drop at the limit")
			}
			for i, d := range ops.dropped {
				if d&0xff != 2 {
					t.Errorf("dropped a packet of flow %d, want the fattest (2)", d&0xff)
				}
				if want := uint32(21 + i); d>>8 != want {
					t.Errorf("drop %d: packet %d, want head %d", i, d>>8, want)
				}
			}
			// Linux: at most half the fat backlog (40 packets) per batch.
			if ops.drops != 40 {
				t.Errorf("batch dropped %d, want 40 (half the fattest backlog)", ops.drops)
			}
			st := s.Stats()
			if st.Drops[tc.reason] != uint64(ops.drops) || st.Backlog != 61 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestNextSend(t *testing.T) {
	clk := NewManualClock(1)
	b := NewBucket(8e6, clk) // 1 byte per us
	b.SetChunk(1000)
	s := New[*tpkt](Config{}, b, clk, &tops{})
	if s.NextSend() != 0 {
		t.Fatal("empty queue: NextSend != 0")
	}
	for range 3 {
		s.Enqueue(&tpkt{size: 1000}, 1, 0)
	}
	out := make([]*tpkt, 8)
	if n := s.Dequeue(out); n != 1 {
		t.Fatalf("dequeued %d at t0, want 1 (one chunk)", n)
	}
	ns := s.NextSend()
	if want := int64(1 + 1000_000); ns != want {
		t.Fatalf("NextSend %d, want %d", ns, want)
	}
	clk.Set(ns - 1)
	if n := s.Dequeue(out); n != 0 {
		t.Fatalf("dequeued %d before NextSend", n)
	}
	clk.Set(ns)
	if n := s.Dequeue(out); n != 1 {
		t.Fatalf("dequeued %d at NextSend, want 1", n)
	}
}

func TestAllocs(t *testing.T) {
	clk := NewManualClock(1)
	for _, hostFair := range []bool{false, true} {
		s := New[*tpkt](Config{HostFair: hostFair}, NewBucket(1e9, clk), clk, &tops{})
		pkts := make([]tpkt, 64)
		out := make([]*tpkt, 64)
		for i := range pkts {
			pkts[i] = tpkt{size: 64 + i*20, ect: true}
		}
		allocs := testing.AllocsPerRun(200, func() {
			for i := range pkts {
				s.Enqueue(&pkts[i], uint32(i)*0x9e3779b9, uint32(i&3))
			}
			clk.Advance(ms)
			for s.Len() > 0 {
				if s.Dequeue(out) == 0 {
					clk.Advance(ms)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("hostFair=%v: %v allocs per batch", hostFair, allocs)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Flows: -1}, {Flows: MaxFlows + 1}, {Quantum: 10}, {Limit: -3}, {Target: -1}, {Overhead: Overhead{Bytes: 999}}} {
		if c.Validate() == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Error(err)
	}
	d := Config{}.WithDefaults()
	if d.Flows != 1024 || d.Quantum != 1514 || d.Target != 5*ms || d.Interval != 100*ms || d.Limit != 10240 || d.MemLimit != 32<<20 || d.DropBatch != 64 {
		t.Errorf("defaults %+v are not Linux fq_codel's", d)
	}
}

// TestCreditKept: a queue that runs dry keeps the rest of a fresh lease
// for its next packets (no lease per batch) and leaves the busy lessees
// each time; credit older than CreditKeep goes back before a queued
// packet may use it; ReleaseCredit hands back an empty queue's credit
// and leaves a backlogged queue's; credit leased before SetRate is
// dropped, not handed back at the new rate.
func TestCreditKept(t *testing.T) {
	clk := NewManualClock(1_000_000_000)
	b := NewBucket(8e6, clk) // 1 byte per us
	b.SetChunk(1000)
	s := New[*tpkt](Config{}, b, clk, &tops{})
	out := make([]*tpkt, 8)
	send := func(size int) int {
		t.Helper()
		s.Enqueue(&tpkt{size: size}, 1, 0)
		n := s.Dequeue(out)
		if s.l.busy || s.l.slot.busy.Load() {
			t.Errorf("a queue that ran dry is still a busy lessee")
		}
		return n
	}
	if n := send(100); n != 1 {
		t.Fatalf("dequeued %d, want 1", n)
	}
	leases, ready := s.Stats().Leases, b.Ready()
	if leases != 1 {
		t.Fatalf("%d leases for the first packet", leases)
	}
	// 900 bytes of credit left: the next packets spend it, no lease.
	clk.Advance(CreditKeep / 2)
	for i := range 4 {
		if n := send(200); n != 1 {
			t.Fatalf("packet %d: dequeued %d", i, n)
		}
	}
	if l := s.Stats().Leases; l != leases {
		t.Errorf("%d leases for packets the fresh credit covered, want %d", l, leases)
	}
	if r := b.Ready(); r != ready {
		t.Errorf("bucket moved %d ns while the credit was spent", r-ready)
	}
	// 100 bytes left, enough for a 100-byte packet; older than
	// CreditKeep they go back first, and the packet waits for a lease
	// the bucket cannot grant yet.
	s.Enqueue(&tpkt{size: 100}, 1, 0)
	clk.Advance(CreditKeep)
	if n := s.Dequeue(out); n != 0 {
		t.Errorf("dequeued %d on stale credit", n)
	}
	if d := ready - b.Ready(); d != 100_000 {
		t.Errorf("stale credit: bucket moved back %d ns, want 100000 (100 bytes)", d)
	}
	clk.Set(b.Ready())
	if n := s.Dequeue(out); n != 1 || s.Stats().Leases != leases+1 {
		t.Errorf("once the bucket allowed: dequeued %d, %d leases, want 1 and %d", n, s.Stats().Leases, leases+1)
	}

	// 900 bytes kept; a backlogged queue keeps them through
	// ReleaseCredit, an empty one hands them back.
	s.Enqueue(&tpkt{size: 2000}, 1, 0)
	ready = b.Ready()
	s.ReleaseCredit()
	if r := b.Ready(); r != ready {
		t.Errorf("ReleaseCredit with a packet queued moved the bucket %d ns", r-ready)
	}
	s.Flush()
	ready = b.Ready()
	s.ReleaseCredit()
	if r := b.Ready(); r != ready {
		t.Errorf("ReleaseCredit after Flush (credit already returned) moved the bucket %d ns", r-ready)
	}
	clk.Set(b.Ready())
	if n := send(100); n != 1 {
		t.Fatalf("dequeued %d", n)
	}
	ready = b.Ready()
	s.ReleaseCredit()
	if d := ready - b.Ready(); d != 900_000 {
		t.Errorf("ReleaseCredit on an empty queue: bucket moved back %d ns, want 900000 (900 bytes)", d)
	}

	// Credit leased at 8 Mbit/s, rate cut to 4: dropped, the bucket
	// not moved back, and the next packet needs a lease.
	clk.Set(b.Ready())
	if n := send(100); n != 1 {
		t.Fatalf("dequeued %d", n)
	}
	leases = s.Stats().Leases
	b.SetRate(4e6)
	b.SetChunk(1000)
	ready = b.Ready()
	s.Enqueue(&tpkt{size: 100}, 1, 0)
	if n := s.Dequeue(out); n != 0 {
		t.Errorf("after SetRate: dequeued %d on credit of the old rate", n)
	}
	if r := b.Ready(); r != ready {
		t.Errorf("credit of the old rate handed back: bucket moved %d ns", r-ready)
	}
	clk.Set(b.Ready())
	if n := s.Dequeue(out); n != 1 || s.Stats().Leases != leases+1 {
		t.Errorf("after SetRate: dequeued %d with %d leases, want 1 with %d", n, s.Stats().Leases, leases+1)
	}
}
