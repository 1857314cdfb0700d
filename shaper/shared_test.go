package shaper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sharedFlow is one flow of a sharedWorker: it keeps a backlog queued, or
// arrives in bursts with gaps between them, in which its queue runs dry.
type sharedFlow struct {
	flow    uint32
	size    int
	backlog int // packets kept queued (0: bursts)
	queued  int
	// bursts: burst packets arrive at once, every gap ns on average
	burst int
	gap   int64
	next  int64
}

// sharedWorker is one worker of runShared: an FQCoDel on the shared
// bucket, woken at irregular times, reading its clock when it wakes.
type sharedWorker struct {
	s     *FQCoDel[*tpkt]
	flows []*sharedFlow
	wake  int64 // when it runs next (real time)
	now   int64 // its clock reading for the step (may lag real time)
}

// sharedPattern is a traffic and scheduling pattern for runShared.
type sharedPattern struct {
	name   string
	flows  func(rng *rand.Rand, w int) []*sharedFlow
	minGap int64 // wakeup gaps drawn from [minGap, maxGap)
	maxGap int64
	lag    int64 // a step's clock reading lags its run by up to lag
	stall  int64 // now and then a wakeup comes this late instead
	dries  bool  // some worker's queue runs dry now and then
	ovh    Overhead
}

// sharedResult is what runShared measured from warm on: the wire bytes
// sent, the largest excess of the bytes sent in an interval over the
// interval's rate (intervals taken between steps, on the real time of
// the steps), and how often a worker's queue ran dry.
type sharedResult struct {
	sent  int64
	worst float64
	dry   int
}

// runShared runs k workers with one Bucket of rate bits/s for dur of
// simulated time after warm, the workers stepped in the order they wake.
func runShared(rate uint64, k int, pat sharedPattern, seed uint64, warm, dur int64) sharedResult {
	rng := rand.New(rand.NewPCG(seed, uint64(k)))
	clk := NewManualClock(0)
	b := NewBucket(rate, clk)
	ws := make([]*sharedWorker, k)
	pool := make([]tpkt, 1<<16)
	npool := 0
	for i := range ws {
		w := &sharedWorker{flows: pat.flows(rng, i)}
		ops := &tops{}
		ops.onDrop = func(p *tpkt) { w.flows[p.id].queued-- }
		w.s = New[*tpkt](Config{Overhead: pat.ovh}, b, clk, ops)
		w.wake = rng.Int64N(pat.maxGap)
		ws[i] = w
	}
	out := make([]*tpkt, 32)
	bytesPerNs := float64(rate) / 8e9
	var total int64 // wire bytes since warm
	dry := 0
	f := func(t int64) float64 { return float64(total) - bytesPerNs*float64(t-warm) }
	minF, worst := 0.0, math.Inf(-1)
	for {
		// The next worker to run.
		w := ws[0]
		for _, x := range ws[1:] {
			if x.wake < w.wake {
				w = x
			}
		}
		real := w.wake
		if real >= warm+dur {
			break
		}
		clk.Set(real)
		// It read its clock up to lag before it got here (a thread
		// descheduled between the read and the shaper), never before
		// its previous reading.
		w.now = max(w.now, real-rng.Int64N(pat.lag+1))
		now := w.now
		for i, fl := range w.flows {
			if fl.backlog > 0 {
				for ; fl.queued < fl.backlog; fl.queued++ {
					p := &pool[npool%len(pool)]
					npool++
					*p = tpkt{id: uint32(i), size: fl.size}
					w.s.EnqueueAt(p, fl.flow, 0, now)
				}
				continue
			}
			for fl.next <= now {
				for range fl.burst {
					p := &pool[npool%len(pool)]
					npool++
					*p = tpkt{id: uint32(i), size: fl.size}
					w.s.EnqueueAt(p, fl.flow, 0, now)
					fl.queued++
				}
				fl.next += 1 + rng.Int64N(2*fl.gap)
			}
		}
		busy := w.s.Len() > 0
		for {
			n := w.s.DequeueAt(out, now)
			for _, p := range out[:n] {
				w.flows[p.id].queued--
				if real >= warm {
					total += int64(pat.ovh.WireLen(p.size))
				}
			}
			if n < len(out) {
				break
			}
		}
		if busy && w.s.Len() == 0 && real >= warm {
			dry++
		}
		if real >= warm {
			worst = max(worst, f(real)-minF)
			minF = min(minF, f(real))
		}
		gap := pat.minGap + rng.Int64N(pat.maxGap-pat.minGap)
		if pat.stall > 0 && rng.IntN(50) == 0 {
			gap = pat.stall
		}
		// A worker blocked on the rate sleeps until the release, if that
		// comes before its wakeup; it still wakes late.
		if ns := w.s.NextSend(); ns != 0 && ns > real && ns < real+gap {
			gap = ns - real + pat.minGap + rng.Int64N(pat.maxGap-pat.minGap)/4
		}
		w.wake = real + gap
	}
	return sharedResult{sent: total, worst: worst, dry: dry}
}

// TestSharedBucketBound: workers that share one Bucket, woken late and
// irregularly, with queues that stay backlogged, or run dry and refill,
// or both, send together no more than the rate over a long window plus
// what the bucket lets the window start with: CatchUp of rate (the
// catch-up of a worker that waited, for time the window owes no one)
// and a lease per worker held at the start plus the one that runs past
// the end. The same bound holds in every interval of the window. Every
// pattern's load fills the rate, so credit that leaks shows as bytes
// above it.
func TestSharedBucketBound(t *testing.T) {
	const (
		warm = 200 * ms
		dur  = 4_000 * ms
	)
	type flows = func(rng *rand.Rand, w int) []*sharedFlow
	bulk := func(rng *rand.Rand, w int) []*sharedFlow {
		return []*sharedFlow{
			{flow: uint32(w * 64), size: 1500, backlog: 8},
			{flow: uint32(w*64 + 1), size: 1500, backlog: 8},
		}
	}
	// bursty: bursts of 1 to 12 full-size packets, load of the rate over
	// the n workers that carry them.
	bursty := func(rate uint64, n int, load float64) flows {
		return func(rng *rand.Rand, w int) []*sharedFlow {
			fs := make([]*sharedFlow, 4)
			for i := range fs {
				burst := 1 + rng.IntN(12)
				gap := int64(float64(burst*1500) / (load * float64(rate) / 8e9 / float64(n*len(fs))))
				fs[i] = &sharedFlow{flow: uint32(w*64 + i), size: 1500, burst: burst, gap: gap}
			}
			// and the ACKs of a download: two for every 30 full-size
			// packets
			ackGap := int64(float64(2*52) / (load / 15 * 52 / 1500 * float64(rate) / 8e9 / float64(n)))
			return append(fs, &sharedFlow{flow: uint32(w*64 + 10), size: 52, burst: 2, gap: ackGap})
		}
	}
	// dribble: single packets of three sizes, load of the rate over the n
	// workers that carry them; below its share a queue runs dry at most
	// wakeups, with credit left from a lease larger than what it sent.
	dribble := func(rate uint64, n int, load float64) flows {
		return func(rng *rand.Rand, w int) []*sharedFlow {
			fs := make([]*sharedFlow, 3)
			for i := range fs {
				size := []int{1500, 576, 52}[i]
				gap := int64(float64(size) / (load * float64(rate) / 8e9 / float64(n*len(fs))))
				fs[i] = &sharedFlow{flow: uint32(w*64 + i), size: size, burst: 1, gap: gap}
			}
			return fs
		}
	}
	// half: even workers get a's flows, odd ones b's.
	half := func(a, b flows) flows {
		return func(rng *rand.Rand, w int) []*sharedFlow {
			if w%2 == 0 {
				return a(rng, w)
			}
			return b(rng, w)
		}
	}
	pppoe := Overhead{Bytes: 34}
	for _, rate := range []uint64{2e6, 10e6} {
		for _, k := range []int{2, 4} {
			pats := []sharedPattern{
				{name: "backlogged", flows: bulk},
				{name: "backlogged-lagging", flows: bulk, lag: 2 * ms},
				{name: "bursty-overload-stalls", flows: bursty(rate, k, 2), lag: 2 * ms, stall: 15 * ms, ovh: pppoe},
				{name: "bulk-beside-dribble", flows: half(bulk, dribble(rate, k/2, 0.3)), lag: 1 * ms, ovh: pppoe, dries: true},
				{name: "bulk-beside-bursty", flows: half(bulk, bursty(rate, k/2, 0.25)), lag: 1 * ms, stall: 30 * ms, dries: true},
				{name: "dribble-near-rate", flows: dribble(rate, k, 0.95), lag: 1 * ms, ovh: pppoe},
			}
			for _, pat := range pats {
				pat.minGap, pat.maxGap = 100_000, 5*ms
				t.Run(fmt.Sprintf("%dMbit/%dworkers/%s", rate/1e6, k, pat.name), func(t *testing.T) {
					lease := float64(max(NewBucket(rate, nil).Chunk(), int64(pat.ovh.WireLen(1500))))
					bound := float64(rate)/8e9*float64(DefaultCatchUp) + float64(k+1)*lease
					limit := float64(rate) / 8e9 * float64(dur)
					for seed := range uint64(3) {
						r := runShared(rate, k, pat, seed, warm, dur)
						t.Logf("seed %d: %.4f Mbit/s (%+.2f %% of the rate), worst interval excess %.0f B (bound %.0f B); queues ran dry %d times",
							seed, float64(r.sent*8)/(float64(dur)/1e9)/1e6, (float64(r.sent)/limit-1)*100, r.worst, bound, r.dry)
						if float64(r.sent) > limit+bound {
							t.Errorf("seed %d: sent %d B in %d ms, more than the rate's %.0f B plus %.0f B",
								seed, r.sent, dur/ms, limit, bound)
						}
						if r.worst > bound {
							t.Errorf("seed %d: sent %.0f B above the rate in an interval, bound %.0f B", seed, r.worst, bound)
						}
						// The load fills the rate, so a leak would show
						// (this checks the pattern, not the shaper).
						if float64(r.sent) < 0.8*limit {
							t.Errorf("seed %d: sent %d B in %d ms, less than 80 %% of the rate's %.0f B", seed, r.sent, dur/ms, limit)
						}
						if pat.dries && r.dry == 0 {
							t.Errorf("seed %d: no queue ran dry", seed)
						}
					}
				})
			}
		}
	}
}
