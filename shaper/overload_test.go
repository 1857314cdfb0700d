package shaper

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// The overload workload: ovFlows unresponsive flows of minimum-size frames
// (84 bytes on the wire: a 64-byte frame, preamble and inter-frame gap)
// offered at ovLoad times the rate, and a probe flow of one such packet
// every 10 ms; measured from ovWarm (CoDel has converged) to ovEnd.
const (
	ovRate  = 5_120_000 // bit/s
	ovSize  = 84
	ovFlows = 256
	ovLoad  = 2
	ovWarm  = 5_000 * ms
	ovEnd   = 15_000 * ms
	ovProbe = 10 * ms
)

// ovResult is what one run of the workload measured.
type ovResult struct {
	bulkP50, bulkP99   int64 // bulk packets' sojourn, ns
	probeP50, probeP99 int64 // probe packets' sojourn, ns
	maxBacklog         int   // packets
	meanBacklog        float64
	overlimit          uint64 // limit drops after ovWarm
	quantum            int
}

func (r ovResult) String() string {
	return fmt.Sprintf("quantum %d B: bulk sojourn p50 %d ms p99 %d ms, probe p50 %d ms p99 %d ms, backlog max %d mean %.0f, overlimit drops %d",
		r.quantum, r.bulkP50/ms, r.bulkP99/ms, r.probeP50/ms, r.probeP99/ms, r.maxBacklog, r.meanBacklog, r.overlimit)
}

// ovSources returns the bulk sources and, last, the probe. Every source
// records its packets' sojourn from ovWarm.
func ovSources() []*source {
	period := int64(float64(ovFlows) * ovSize * 8e9 / (ovLoad * ovRate))
	srcs := make([]*source, 0, ovFlows+1)
	for i := range ovFlows {
		srcs = append(srcs, &source{flow: uint32(i)*0x9e3779b9 + 12345, size: ovSize, period: period,
			next: int64(i) * period / ovFlows, probe: true, probeFrom: ovWarm})
	}
	return append(srcs, &source{flow: 0xdeadbeef, size: ovSize, period: ovProbe, next: 3*ms + 17, probe: true, probeFrom: ovWarm})
}

// runOverload runs the workload through an FQCoDel with cfg.
func runOverload(cfg Config) ovResult {
	srcs := ovSources()
	sm := newSim(cfg, ovRate, srcs...)
	var r ovResult
	var sum, n float64
	var overlimit0 uint64
	sm.onStep = func(now int64) {
		if now < ovWarm {
			overlimit0 = sm.s.Stats().Drops[DropOverlimit]
			return
		}
		r.maxBacklog = max(r.maxBacklog, sm.s.Len())
		sum += float64(sm.s.Len())
		n++
	}
	sm.run(ovEnd)
	var bulk []int64
	for _, s := range srcs[:ovFlows] {
		bulk = append(bulk, s.delays...)
	}
	probe := srcs[ovFlows].delays
	r.bulkP50, r.bulkP99 = percentile(bulk, 0.5), percentile(bulk, 0.99)
	r.probeP50, r.probeP99 = percentile(probe, 0.5), percentile(probe, 0.99)
	r.meanBacklog = sum / n
	r.overlimit = sm.s.Stats().Drops[DropOverlimit] - overlimit0
	r.quantum = sm.s.Quantum()
	return r
}

// TestOverloadSojourn: under unresponsive overload FQ-CoDel keeps queues
// short. CoDel acts on a flow when the DRR serves it, once per round
// (flows x quantum / rate); converged, a bulk packet waits for at most
// about one round plus the interval CoDel lets a standing queue last, and
// each flow holds about what arrives in that time. So the bounds: bulk
// and probe p99 sojourn within twice (interval + round), and the backlog
// within the arrival rate times (interval + round), far below the limit,
// with CoDel, not the limit, dropping. The round is the one at the rate's
// own quantum (RateQuantum): with Linux fq_codel's fixed 1514 bytes it
// would be several intervals at this rate.
func TestOverloadSojourn(t *testing.T) {
	cfg := Config{}.WithDefaults()
	r := runOverload(Config{})
	t.Log(r)
	flows := float64(ovFlows + 1)
	round := int64(flows * float64(RateQuantum(ovRate)) * 8e9 / ovRate)
	bound := 2 * (cfg.Interval + round)
	arrivals := ovLoad*ovRate/8/ovSize + 1e9/float64(ovProbe) // packets/s
	maxBacklog := int(arrivals * float64(cfg.Interval+round) / 1e9)
	t.Logf("DRR round %d ms, sojourn bound %d ms, backlog bound %d", round/ms, bound/ms, maxBacklog)
	if r.bulkP99 > bound {
		t.Errorf("bulk p99 sojourn %d ms > 2 x (interval + round) = %d ms", r.bulkP99/ms, bound/ms)
	}
	if r.probeP99 > bound {
		t.Errorf("probe p99 sojourn %d ms > 2 x (interval + round) = %d ms", r.probeP99/ms, bound/ms)
	}
	if r.maxBacklog > maxBacklog || r.maxBacklog > cfg.Limit/3 {
		t.Errorf("backlog reached %d packets: want <= %d (arrivals over interval + round) and far below the limit %d",
			r.maxBacklog, maxBacklog, cfg.Limit)
	}
	if r.overlimit != 0 {
		t.Errorf("%d overlimit drops once converged: CoDel should keep the queues below the limit", r.overlimit)
	}
}

// TestOverloadLikeFQCoDel: with the same quantum, the shaper under the
// overload workload waits and holds what Linux fq_codel (fqcRef, written
// from sch_fq_codel.c's and RFC 8289's text, on an exact link) does. So a
// difference from a kernel path shaped at the same rate is the quantum,
// not CoDel: CAKE, like Quantum 0 here, scales it with the rate.
func TestOverloadLikeFQCoDel(t *testing.T) {
	for _, q := range []int{DefaultQuantum, RateQuantum(ovRate)} {
		t.Run(fmt.Sprintf("quantum%d", q), func(t *testing.T) {
			got := runOverload(Config{Quantum: q})
			want := runOverloadRef(q)
			t.Logf("shaper:   %v", got)
			t.Logf("fq_codel: %v", want)
			near := func(what string, g, w float64, tol float64) {
				if math.Abs(g-w) > tol {
					t.Errorf("%s: %.0f, fq_codel %.0f (tolerance %.0f)", what, g, w, tol)
				}
			}
			msTol := func(w int64) float64 { return 0.1*float64(w)/float64(ms) + 10 }
			near("bulk p50 sojourn (ms)", float64(got.bulkP50/ms), float64(want.bulkP50/ms), msTol(want.bulkP50))
			near("bulk p99 sojourn (ms)", float64(got.bulkP99/ms), float64(want.bulkP99/ms), msTol(want.bulkP99))
			near("mean backlog (packets)", got.meanBacklog, want.meanBacklog, 0.1*want.meanBacklog)
		})
	}
}

// fqcRef is Linux fq_codel, slow and obvious: per-flow slices, CoDel with
// a float control law, the new/old flow lists, the fattest-flow batch drop
// at the limit that also raises that flow's CoDel count.
type fqcRef struct {
	quantum, limit, batch, mtu int
	target, interval           int64
	flows                      []fqcRefFlow
	newL, oldL                 []int
	qlen, bytes                int
	overlimit                  uint64
}

type fqcRefPkt struct {
	src, size int
	ts        int64
}

type fqcRefFlow struct {
	q                    []fqcRefPkt
	bytes, deficit       int
	listed               bool
	count, lastCount     uint32
	dropping             bool
	firstAbove, dropNext int64
}

func (r *fqcRef) enqueue(p fqcRefPkt, fi int) {
	f := &r.flows[fi]
	f.q = append(f.q, p)
	f.bytes += p.size
	r.bytes += p.size
	r.qlen++
	if !f.listed {
		f.listed = true
		f.deficit = r.quantum
		r.newL = append(r.newL, fi)
	}
	if r.qlen <= r.limit {
		return
	}
	fat := 0
	for i := range r.flows {
		if r.flows[i].bytes > r.flows[fat].bytes {
			fat = i
		}
	}
	ff := &r.flows[fat]
	half, n, gone := ff.bytes/2, 0, 0
	for {
		_, sz := r.pop(ff)
		n++
		gone += sz
		if n >= r.batch || gone >= half {
			break
		}
	}
	ff.count += uint32(n)
	r.overlimit += uint64(n)
}

func (r *fqcRef) pop(f *fqcRefFlow) (fqcRefPkt, int) {
	p := f.q[0]
	f.q = f.q[1:]
	f.bytes -= p.size
	r.bytes -= p.size
	r.qlen--
	return p, p.size
}

// shouldDrop is codel_should_drop for the packet just taken (ok false:
// the flow was empty).
func (r *fqcRef) shouldDrop(f *fqcRefFlow, p fqcRefPkt, ok bool, now int64) bool {
	switch {
	case !ok:
		f.firstAbove = 0
		return false
	case now-p.ts < r.target || r.bytes <= r.mtu:
		f.firstAbove = 0
		return false
	case f.firstAbove == 0:
		f.firstAbove = now + r.interval
		return false
	}
	return now > f.firstAbove
}

func (r *fqcRef) take(f *fqcRefFlow) (fqcRefPkt, bool) {
	if len(f.q) == 0 {
		return fqcRefPkt{}, false
	}
	p, _ := r.pop(f)
	return p, true
}

func (r *fqcRef) controlLaw(t int64, count uint32) int64 {
	return t + int64(float64(r.interval)/math.Sqrt(float64(count)))
}

// codelDequeue is codel_dequeue (no ECN: the workload is not ECN-capable).
func (r *fqcRef) codelDequeue(f *fqcRefFlow, now int64) (fqcRefPkt, bool) {
	p, ok := r.take(f)
	if !ok {
		f.dropping = false
		return p, false
	}
	drop := r.shouldDrop(f, p, ok, now)
	switch {
	case f.dropping && !drop:
		f.dropping = false
	case f.dropping:
		for f.dropping && now >= f.dropNext {
			f.count++
			p, ok = r.take(f)
			if !r.shouldDrop(f, p, ok, now) {
				f.dropping = false
			} else {
				f.dropNext = r.controlLaw(f.dropNext, f.count)
			}
		}
	case drop:
		p, ok = r.take(f)
		r.shouldDrop(f, p, ok, now)
		f.dropping = true
		if delta := f.count - f.lastCount; delta > 1 && now-f.dropNext < 16*r.interval {
			f.count = delta
		} else {
			f.count = 1
		}
		f.lastCount = f.count
		f.dropNext = r.controlLaw(now, f.count)
	}
	return p, ok
}

// dequeue is fq_codel_dequeue.
func (r *fqcRef) dequeue(now int64) (fqcRefPkt, bool) {
	for {
		l := &r.newL
		if len(*l) == 0 {
			l = &r.oldL
			if len(*l) == 0 {
				return fqcRefPkt{}, false
			}
		}
		fi := (*l)[0]
		f := &r.flows[fi]
		if f.deficit <= 0 {
			f.deficit += r.quantum
			*l = (*l)[1:]
			r.oldL = append(r.oldL, fi)
			continue
		}
		p, ok := r.codelDequeue(f, now)
		if !ok {
			*l = (*l)[1:]
			if l == &r.newL && len(r.oldL) > 0 {
				r.oldL = append(r.oldL, fi)
			} else {
				f.listed = false
			}
			continue
		}
		f.deficit -= p.size
		return p, true
	}
}

// runOverloadRef runs the workload through fqcRef on a link that sends
// one packet at a time at exactly the rate.
func runOverloadRef(quantum int) ovResult {
	d := Config{}.WithDefaults()
	r := &fqcRef{quantum: quantum, limit: d.Limit, batch: d.DropBatch, mtu: DefaultQuantum,
		target: d.Target, interval: d.Interval, flows: make([]fqcRefFlow, d.Flows)}
	srcs := ovSources()
	fi := make([]int, len(srcs))
	for i, s := range srcs {
		s.next = max(s.next, 1)
		fi[i] = int(reduce(s.flow, d.Flows))
	}
	tx := int64(ovSize * 8e9 / ovRate)
	var res ovResult
	var bulk, probe []int64
	var sum, n float64
	var overlimit0 uint64
	free := int64(0) // when the link is free
	for now := int64(1); now < ovEnd; {
		next := int64(ovEnd)
		for i, s := range srcs {
			for ; s.next <= now; s.next += s.period {
				r.enqueue(fqcRefPkt{src: i, size: s.size, ts: s.next}, fi[i])
			}
			next = min(next, s.next)
		}
		if now >= free {
			if p, ok := r.dequeue(now); ok {
				free = now + tx
				if p.ts >= ovWarm {
					if p.src == ovFlows {
						probe = append(probe, now-p.ts)
					} else {
						bulk = append(bulk, now-p.ts)
					}
				}
			}
		}
		if now < ovWarm {
			overlimit0 = r.overlimit
		} else {
			res.maxBacklog = max(res.maxBacklog, r.qlen)
			sum += float64(r.qlen)
			n++
		}
		if r.qlen > 0 {
			next = min(next, max(free, now+1))
		}
		now = next
	}
	res.bulkP50, res.bulkP99 = percentile(bulk, 0.5), percentile(bulk, 0.99)
	res.probeP50, res.probeP99 = percentile(probe, 0.5), percentile(probe, 0.99)
	res.meanBacklog = sum / n
	res.overlimit = r.overlimit - overlimit0
	res.quantum = quantum
	return res
}

// TestRateQuantum: Quantum 0 takes CAKE's rate-scaled quantum, and follows
// the bucket's rate when it changes; a configured quantum, or no rate,
// keeps its own.
func TestRateQuantum(t *testing.T) {
	for _, tc := range []struct {
		rate uint64
		want int
	}{
		{0, DefaultQuantum}, {1e6, MinRateQuantum}, {ovRate, MinRateQuantum}, {12_288_000, 375},
		{20e6, 610}, {49_610_752, DefaultQuantum}, {100e6, DefaultQuantum}, {1e13, DefaultQuantum},
	} {
		if got := RateQuantum(tc.rate); got != tc.want {
			t.Errorf("RateQuantum(%d) = %d, want %d", tc.rate, got, tc.want)
		}
	}
	clk := NewManualClock(1)
	b := NewBucket(ovRate, clk)
	auto := New[*tpkt](Config{}, b, clk, &tops{})
	fixed := New[*tpkt](Config{Quantum: 1000}, b, clk, &tops{})
	unlimited := New[*tpkt](Config{}, nil, clk, &tops{})
	check := func(when string, wantAuto int) {
		t.Helper()
		if got := auto.Quantum(); got != wantAuto {
			t.Errorf("%s: quantum %d, want %d", when, got, wantAuto)
		}
		if got := fixed.Quantum(); got != 1000 {
			t.Errorf("%s: configured quantum became %d", when, got)
		}
		if got := unlimited.Quantum(); got != DefaultQuantum {
			t.Errorf("%s: unlimited quantum %d, want %d", when, got, DefaultQuantum)
		}
		if got := auto.Config().Quantum; got != DefaultQuantum {
			t.Errorf("%s: Config().Quantum %d, want the default %d", when, got, DefaultQuantum)
		}
	}
	check("new", MinRateQuantum)
	b.SetRate(20e6)
	out := make([]*tpkt, 1)
	for _, s := range []*FQCoDel[*tpkt]{auto, fixed, unlimited} {
		s.Dequeue(out)
	}
	check("after SetRate", 610)
}

// TestLimitDropRaisesCount: the fattest flow's CoDel count grows by the
// packets a limit drop takes from it (Linux fq_codel_drop), so CoDel drops
// harder there when it next drops.
func TestLimitDropRaisesCount(t *testing.T) {
	clk := NewManualClock(1)
	s := New[*tpkt](Config{Limit: 100}, nil, clk, &tops{})
	const fat uint32 = 0x3c6ef372
	for range 100 {
		s.Enqueue(&tpkt{size: 1000}, fat, 0)
	}
	s.Enqueue(&tpkt{size: 1000}, 1, 0)
	dropped := s.Stats().Drops[DropOverlimit]
	if dropped == 0 {
		t.Fatal("no limit drop")
	}
	if c := s.flows[reduce(fat, len(s.flows))].cv.count; uint64(c) != dropped {
		t.Errorf("fattest flow's CoDel count %d after %d limit drops, want %d", c, dropped, dropped)
	}
}

// TestRateTarget: under a rate, a shaper whose Config leaves Target and
// Interval 0 takes CAKE's: the target grows to one and a half full-size
// packets' transmission time where that exceeds 5 ms, the interval with
// it, both following SetRate; a configured target or interval stays, and
// a configured target alone keeps the default interval.
func TestRateTarget(t *testing.T) {
	for _, tc := range []struct {
		rate             uint64
		target, interval int64
	}{
		{0, DefaultTarget, DefaultInterval},
		{100e6, DefaultTarget, DefaultInterval},
		{10e6, DefaultTarget, DefaultInterval}, // 1.8 ms
		{1e6, 18_000_000, 113_000_000},         // 1500 B = 12 ms
		{100e3, 180_000_000, 360_000_000},      // twice the target
	} {
		got := RateTarget(tc.rate, FullPacket)
		if got != tc.target {
			t.Errorf("RateTarget(%d) = %d, want %d", tc.rate, got, tc.target)
		}
		if iv := RateInterval(tc.rate, got); iv != tc.interval {
			t.Errorf("RateInterval(%d) = %d, want %d", tc.rate, iv, tc.interval)
		}
	}
	clk := NewManualClock(1)
	b := NewBucket(1e6, clk)
	ptm := mustOverhead(t, "pppoe-ptm")
	auto := New[*tpkt](Config{Overhead: ptm}, b, clk, &tops{})
	fixed := New[*tpkt](Config{Target: 3_000_000, Interval: 50_000_000}, b, clk, &tops{})
	targetOnly := New[*tpkt](Config{Target: 3_000_000}, b, clk, &tops{})
	unlimited := New[*tpkt](Config{}, nil, clk, &tops{})
	wire := ptm.WireLen(FullPacket)
	if wire <= FullPacket {
		t.Fatalf("pppoe-ptm adds nothing to %d bytes", FullPacket)
	}
	want := RateTarget(1e6, wire)
	if got := auto.Target(); got != want || got <= 18_000_000 {
		t.Errorf("1 Mbit/s with pppoe-ptm: target %d, want %d (the packet on the wire, above the bare packet's)", got, want)
	}
	if got, want := auto.Interval(), DefaultInterval+want-DefaultTarget; got != want {
		t.Errorf("1 Mbit/s with pppoe-ptm: interval %d, want %d", got, want)
	}
	check := func(when string) {
		t.Helper()
		if fixed.Target() != 3_000_000 || fixed.Interval() != 50_000_000 {
			t.Errorf("%s: configured: target %d interval %d", when, fixed.Target(), fixed.Interval())
		}
		if targetOnly.Target() != 3_000_000 || targetOnly.Interval() != DefaultInterval {
			t.Errorf("%s: target alone configured: target %d interval %d, want 3 ms and the default", when, targetOnly.Target(), targetOnly.Interval())
		}
		if unlimited.Target() != DefaultTarget || unlimited.Interval() != DefaultInterval {
			t.Errorf("%s: unlimited: target %d interval %d", when, unlimited.Target(), unlimited.Interval())
		}
	}
	check("new")
	out := make([]*tpkt, 1)
	for _, rate := range []uint64{50e6, 2e6} {
		b.SetRate(rate)
		for _, s := range []*FQCoDel[*tpkt]{auto, fixed, targetOnly, unlimited} {
			s.Dequeue(out)
		}
		tg := RateTarget(rate, wire)
		if auto.Target() != tg || auto.Interval() != RateInterval(rate, tg) {
			t.Errorf("after SetRate(%d): target %d interval %d, want %d and %d", rate, auto.Target(), auto.Interval(), tg, RateInterval(rate, tg))
		}
		check(fmt.Sprintf("after SetRate(%d)", rate))
	}
	if auto.Target() == DefaultTarget || auto.Interval() == DefaultInterval {
		t.Errorf("at 2 Mbit/s the target (%d) and interval (%d) did not grow", auto.Target(), auto.Interval())
	}
}

// TestRateTargetSlowLink: at 1 Mbit/s a flow that keeps three 1000-byte
// packets queued (a standing queue of two frames, 16 ms, what a TCP
// window of a few packets leaves on a slow uplink) is above a 5 ms
// target, so CoDel with fq_codel's fixed target keeps dropping; with the
// rate's target (18 ms) it drops nothing.
func TestRateTargetSlowLink(t *testing.T) {
	const dur = 20_000 * ms
	for _, tc := range []struct {
		name  string
		cfg   Config
		drops bool
	}{
		{"rate target", Config{NoECN: true}, false},
		{"fixed 5 ms", Config{NoECN: true, Target: DefaultTarget}, true},
	} {
		src := &source{flow: 1, size: 1000, backlog: 3}
		sm := newSim(tc.cfg, 1e6, src)
		sm.run(dur)
		st := sm.s.Stats()
		got := float64(src.sentBytes*8) / (float64(dur) / 1e9)
		t.Logf("%s: target %v, %d CoDel drops, %.0f bit/s", tc.name, time.Duration(sm.s.Target()), st.Drops[DropCoDel], got)
		if (st.Drops[DropCoDel] > 0) != tc.drops {
			t.Errorf("%s: %d CoDel drops, want drops %v", tc.name, st.Drops[DropCoDel], tc.drops)
		}
	}
}

// TestRateIntervalSchedulesDrops: CoDel's first drop comes an interval
// after a flow's sojourn first exceeds the target, and under a rate the
// interval is the followed one: at 1 Mbit/s (target 18 ms, interval
// 113 ms) a flow keeping four full-size packets queued first exceeds the
// target with its third packet, 24 ms in, and loses its first packet
// 113 ms later, not 100.
func TestRateIntervalSchedulesDrops(t *testing.T) {
	src := &source{flow: 1, size: 1500, backlog: 4}
	sm := newSim(Config{NoECN: true}, 1e6, src)
	start := sm.clk.Now()
	first := int64(-1)
	prev := sm.ops.onDrop
	sm.ops.onDrop = func(p *tpkt) {
		if first < 0 {
			first = sm.clk.Now() - start
		}
		prev(p)
	}
	sm.run(start + 400*ms)
	if iv := sm.s.Interval(); iv != 113_000_000 {
		t.Fatalf("interval %d, want 113 ms", iv)
	}
	if first < 24*ms+113*ms || first > 24*ms+113*ms+13*ms {
		t.Errorf("first CoDel drop %v in, want 137-150 ms (24 ms above target, then the 113 ms interval and a packet's time)", time.Duration(first))
	}
}
