package shaper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fairWorker is one worker of runFair: an FQCoDel on the shared bucket,
// fed at a fixed share of the rate and polled every poll ns.
type fairWorker struct {
	load  float64 // arrivals, as a fraction of the rate
	poll  int64   // ns between polls (a multiple of fairStep)
	flows int     // flows its arrivals spread over (default 4)
	hosts int     // LAN hosts its flows belong to (0: no per-host fairness)

	s       *FQCoDel[*tpkt]
	pkt     tpkt
	pending float64 // bytes arrived, not yet enqueued
	last    int64   // last poll
	next    uint32
	sent    int64 // bytes dequeued in the measured window
}

const (
	fairStep = 10_000 // 10 µs: the fastest poller's period
	fairWarm = 200 * ms
	fairDur  = 2_000 * ms // measured, after fairWarm
	fairSize = 1500
)

// runFair runs ws on one Bucket of rate bits/s with the injected clock.
// At each step the workers due to poll run in the order order gives:
// each enqueues what arrived since its last poll (its RX batch) and
// dequeues all the shaper releases. It returns the bytes each sent from
// fairWarm on (over fairDur).
func runFair(rate uint64, ws []*fairWorker, order func(step int64) []int) {
	clk := NewManualClock(0)
	b := NewBucket(rate, clk)
	out := make([]*tpkt, 64)
	for _, w := range ws {
		w.s = New[*tpkt](Config{HostFair: w.hosts > 0}, b, clk, &tops{})
		w.pkt = tpkt{size: fairSize}
		w.flows = max(w.flows, 1)
	}
	perNs := float64(rate) / 8e9
	for step := int64(0); ; step++ {
		now := clk.Now()
		if now >= fairWarm+fairDur {
			return
		}
		for _, i := range order(step) {
			w := ws[i]
			if now%w.poll != 0 {
				continue
			}
			w.pending += w.load * perNs * float64(now-w.last)
			w.last = now
			for ; w.pending >= fairSize; w.pending -= fairSize {
				w.next++
				var host uint32
				if w.hosts > 0 {
					host = 0x85ebca6b * (w.next%uint32(w.flows)%uint32(w.hosts) + uint32(i)*64)
				}
				w.s.EnqueueAt(&w.pkt, 0x9e3779b9*(w.next%uint32(w.flows)+uint32(i)*64), host, now)
			}
			for {
				n := w.s.DequeueAt(out, now)
				if now >= fairWarm {
					w.sent += int64(n) * fairSize
				}
				if n < len(out) {
					break
				}
			}
		}
		clk.Advance(fairStep)
	}
}

func fixedOrder(k int) func(int64) []int {
	o := make([]int, k)
	for i := range o {
		o[i] = i
	}
	return func(int64) []int { return o }
}

// TestBucketFairBacklogged: workers that are all backlogged share the
// rate equally, whichever reaches the bucket first and however often
// each polls, and together they send at the rate. The orders and
// pollers are the adversarial ones for a first-come bucket: worker 0
// always steps first, or polls every 10 µs while another polls every
// 1 ms (a worker whose thread sleeps until the next release).
func TestBucketFairBacklogged(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6} {
		for _, k := range []int{2, 4} {
			for _, tc := range []struct {
				name  string
				slow  []int64 // poll period per worker (0: every step)
				order func(k int) func(int64) []int
			}{
				{"worker0-first", nil, fixedOrder},
				{"last-first", nil, func(k int) func(int64) []int {
					o := make([]int, k)
					for i := range o {
						o[i] = k - 1 - i
					}
					return func(int64) []int { return o }
				}},
				{"slow-poller", []int64{0, 1 * ms}, fixedOrder},
				{"slow-poller-first", []int64{1 * ms}, fixedOrder},
				{"two-slow", []int64{0, 1 * ms, 0, 500_000}, fixedOrder},
				{"random", nil, func(k int) func(int64) []int {
					rng := rand.New(rand.NewPCG(7, uint64(k)))
					return func(int64) []int { return rng.Perm(k) }
				}},
			} {
				if len(tc.slow) > k {
					continue
				}
				t.Run(fmt.Sprintf("%dMbit/%dworkers/%s", rate/1e6, k, tc.name), func(t *testing.T) {
					ws := make([]*fairWorker, k)
					for i := range ws {
						ws[i] = &fairWorker{load: 1, poll: fairStep, flows: 4}
						if i < len(tc.slow) && tc.slow[i] > 0 {
							ws[i].poll = tc.slow[i]
						}
					}
					runFair(rate, ws, tc.order(k))
					checkFair(t, rate, ws, nil)
				})
			}
		}
	}
}

// TestBucketFairPerFlow: backlogged workers share the rate by their
// active flows, as one fq_codel shares it among all their flows: a flow
// alone on its worker beside a worker with three gets a quarter, not
// half. Under per-host fairness they share it by their active hosts.
func TestBucketFairPerFlow(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6} {
		for _, tc := range []struct {
			name         string
			flows, hosts []int
			want         []float64
		}{
			{"1-beside-3", []int{1, 3}, nil, []float64{0.25, 0.75}},
			{"1-beside-7", []int{1, 7}, nil, []float64{0.125, 0.875}},
			{"1-1-2", []int{1, 1, 2}, nil, []float64{0.25, 0.25, 0.5}},
			{"hosts-1-beside-3", []int{4, 3}, []int{1, 3}, []float64{0.25, 0.75}},
		} {
			t.Run(fmt.Sprintf("%dMbit/%s", rate/1e6, tc.name), func(t *testing.T) {
				ws := make([]*fairWorker, len(tc.flows))
				for i := range ws {
					ws[i] = &fairWorker{load: 2, poll: fairStep, flows: tc.flows[i]}
					if tc.hosts != nil {
						ws[i].hosts = tc.hosts[i]
					}
				}
				runFair(rate, ws, fixedOrder(len(ws)))
				checkFair(t, rate, ws, tc.want)
			})
		}
	}
}

// checkFair checks that the aggregate is the rate within 2 % and that
// each worker got want[i] of it within 10 points (want nil: 1/k each).
func checkFair(t *testing.T, rate uint64, ws []*fairWorker, want []float64) {
	t.Helper()
	var total int64
	for _, w := range ws {
		total += w.sent
	}
	agg := float64(total*8) / (float64(fairDur) / 1e9)
	shares := make([]float64, len(ws))
	for i, w := range ws {
		shares[i] = float64(w.sent) / float64(total)
	}
	t.Logf("aggregate %.3f Mbit/s (%+.2f %%), shares %.3f", agg/1e6, (agg-float64(rate))/float64(rate)*100, shares)
	if math.Abs(agg-float64(rate))/float64(rate) > 0.02 {
		t.Errorf("aggregate %.3f Mbit/s, want %.3f within 2 %%", agg/1e6, float64(rate)/1e6)
	}
	for i, sh := range shares {
		wi := 1 / float64(len(ws))
		if want != nil {
			wi = want[i]
		}
		if math.Abs(sh-wi) > 0.10 {
			t.Errorf("worker %d (polls every %d us) sent %.1f %% of the bytes, want %.1f %% +- 10", i, ws[i].poll/1000, sh*100, wi*100)
		}
	}
}

// TestBucketFairWorkConserving: a share no backlogged worker uses goes to
// the others. One backlogged worker gets the whole rate beside idle
// ones; beside workers with a light load, the backlogged ones get all
// that load leaves, in equal parts.
func TestBucketFairWorkConserving(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6} {
		for _, tc := range []struct {
			name string
			load []float64
			poll []int64
			want []float64
		}{
			{"one-of-two", []float64{2, 0}, nil, []float64{1, 0}},
			{"one-of-four", []float64{0, 0, 2, 0}, nil, []float64{0, 0, 1, 0}},
			{"one-slow-of-two", []float64{0, 2}, []int64{fairStep, 1 * ms}, []float64{0, 1}},
			{"beside-light", []float64{2, 0.1}, nil, []float64{0.9, 0.1}},
			{"beside-light-slow", []float64{0.1, 2}, []int64{1 * ms, fairStep}, []float64{0.1, 0.9}},
			{"three-beside-light", []float64{0.1, 2, 2, 2}, nil, []float64{0.1, 0.3, 0.3, 0.3}},
			{"two-beside-two-light", []float64{0.1, 0.1, 2, 2}, nil, []float64{0.1, 0.1, 0.4, 0.4}},
			{"two-beside-near-share", []float64{0.3, 2, 2}, nil, []float64{0.3, 0.35, 0.35}},
		} {
			t.Run(fmt.Sprintf("%dMbit/%s", rate/1e6, tc.name), func(t *testing.T) {
				ws := make([]*fairWorker, len(tc.load))
				for i := range ws {
					ws[i] = &fairWorker{load: tc.load[i], poll: fairStep, flows: 4}
					if tc.poll != nil {
						ws[i].poll = tc.poll[i]
					}
				}
				runFair(rate, ws, fixedOrder(len(ws)))
				checkFair(t, rate, ws, tc.want)
				for i, w := range ws {
					// tight where the load, not the share, decides
					if tc.want[i] < 0.2 && math.Abs(float64(w.sent)/(float64(rate)/8*float64(fairDur)/1e9)-tc.want[i]) > 0.01 {
						t.Errorf("worker %d with load %.1f sent %d bytes", i, tc.load[i], w.sent)
					}
				}
			})
		}
	}
}

// TestBucketFairConcurrent: backlogged shapers on goroutines share one
// Bucket on the real clock (run with -race). The bytes sent never exceed
// the rate's plus a lease per worker, and neither worker is starved,
// also when one polls continuously and the other sleeps between polls.
// The bounds leave room for a loaded machine: a worker descheduled for a
// while sends less, but what it is owed waits for it.
func TestBucketFairConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test")
	}
	const (
		rate    = 50e6
		workers = 2
		dur     = 300 * time.Millisecond
	)
	for _, tc := range []struct {
		name  string
		sleep [workers]time.Duration
	}{
		{"both-spin", [workers]time.Duration{}},
		{"one-sleeps", [workers]time.Duration{0, 500 * time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := MonoClock{}
			b := NewBucket(rate, clk)
			start := clk.Now()
			stop := start + int64(dur)
			var total atomic.Int64
			var over atomic.Int64 // the largest excess seen over the bound
			sent := make([]int64, workers)
			var wg sync.WaitGroup
			for w := range workers {
				s := New[*tpkt](Config{}, b, clk, &tops{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					pkt := &tpkt{size: fairSize}
					out := make([]*tpkt, 32)
					var next uint32
					for now := clk.Now(); now < stop; now = clk.Now() {
						for s.Len() < 256 {
							next++
							s.EnqueueAt(pkt, next%4+uint32(w)*64, 0, now)
						}
						n := s.DequeueAt(out, now)
						if n > 0 {
							sent[w] += int64(n) * fairSize
							got := total.Add(int64(n) * fairSize)
							limit := int64(float64(clk.Now()-start)*rate/8e9) + workers*b.Chunk()
							if ex := got - limit; ex > over.Load() {
								over.Store(ex)
							}
						}
						if tc.sleep[w] > 0 {
							time.Sleep(tc.sleep[w])
						} else if n == 0 {
							runtime.Gosched()
						}
					}
				}()
			}
			wg.Wait()
			elapsed := stop - start // no worker sends after stop
			agg := float64(total.Load()*8) / (float64(elapsed) / 1e9)
			t.Logf("aggregate %.2f Mbit/s over %v; per worker %v bytes", agg/1e6, time.Duration(elapsed), sent)
			if ex := over.Load(); ex > 0 {
				t.Errorf("sent %d bytes more than the rate allows plus a lease per worker", ex)
			}
			if agg < rate/2 {
				t.Errorf("aggregate %.2f Mbit/s, less than half the rate", agg/1e6)
			}
			for w, n := range sent {
				if sh := float64(n) / float64(total.Load()); sh < 0.25 {
					t.Errorf("worker %d (sleeps %v between polls) sent %.1f %% of the bytes, want > 25 %%", w, tc.sleep[w], sh*100)
				}
			}
		})
	}
}

// TestBucketFairAllocs: leases through lessees, refused ones included,
// allocate nothing.
func TestBucketFairAllocs(t *testing.T) {
	clk := NewManualClock(1)
	b := NewBucket(100e6, clk)
	ss := []*FQCoDel[*tpkt]{New[*tpkt](Config{}, b, clk, &tops{}), New[*tpkt](Config{}, b, clk, &tops{})}
	pkt := &tpkt{size: fairSize}
	out := make([]*tpkt, 64)
	var refused uint64
	allocs := testing.AllocsPerRun(200, func() {
		for i, s := range ss {
			for s.Len() < 64 {
				s.Enqueue(pkt, uint32(i), 0)
			}
			s.Dequeue(out)
			_ = s.NextSend()
		}
		clk.Advance(fairStep)
	})
	for _, s := range ss {
		refused += s.Stats().RateLimited
		s.Flush()
	}
	if allocs != 0 {
		t.Errorf("%v allocs per step", allocs)
	}
	if refused == 0 {
		t.Error("no lease was refused: the test did not exercise the shares")
	}
}
