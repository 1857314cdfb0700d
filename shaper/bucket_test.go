package shaper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBucketShared runs several workers (one FQCoDel each) on one Bucket and
// checks, at every step, that the bytes sent by all of them never exceed
// rate*t plus one chunk per worker, and that the rate is reached whoever is
// busy (an idle worker's share goes to the busy ones).
func TestBucketShared(t *testing.T) {
	const (
		workers = 4
		rate    = 100e6
		dur     = 2_000 * ms
		step    = 20_000 // 20 us
	)
	for _, tc := range []struct {
		name string
		busy func(w int, now int64) bool
	}{
		{"all-busy", func(int, int64) bool { return true }},
		{"one-busy-three-idle", func(w int, _ int64) bool { return w == 0 }},
		{"rotating", func(w int, now int64) bool { return int(now/(250*ms))%workers == w || int(now/(375*ms))%workers == w }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := NewManualClock(0)
			b := NewBucket(rate, clk)
			rng := rand.New(rand.NewPCG(1, 2))
			ws := make([]*FQCoDel[*tpkt], workers)
			for i := range ws {
				ws[i] = New[*tpkt](Config{}, b, clk, &tops{})
			}
			pkts := make([]tpkt, 4096)
			next := 0
			out := make([]*tpkt, 32)
			perWorker := make([]int64, workers)
			var sent int64
			for now := int64(0); now < dur; now = clk.Advance(step) {
				for _, w := range rng.Perm(workers) {
					s := ws[w]
					if tc.busy(w, now) {
						for s.Len() < 16 {
							p := &pkts[next%len(pkts)]
							next++
							*p = tpkt{size: 64 + rng.IntN(1437)}
							s.Enqueue(p, rng.Uint32(), 0)
						}
					}
					if rng.IntN(4) == 0 { // workers do not all run every step
						continue
					}
					for n := s.Dequeue(out); n > 0; n = s.Dequeue(out) {
						for _, p := range out[:n] {
							sent += int64(p.size)
							perWorker[w] += int64(p.size)
						}
					}
					if limit := int64(float64(now)*rate/8e9) + workers*b.Chunk(); sent > limit {
						t.Fatalf("t=%d us: sent %d bytes > rate*t + %d chunks = %d", now/1000, sent, workers, limit)
					}
				}
			}
			got := float64(sent*8) / (float64(dur) / 1e9)
			t.Logf("%.2f Mbit/s; per worker %v", got/1e6, perWorker)
			if math.Abs(got-rate)/rate > 0.01 {
				t.Errorf("aggregate %.2f Mbit/s, want %.0f within 1 %%", got/1e6, rate/1e6)
			}
		})
	}
}

// TestBucketConcurrent hammers one Bucket from goroutines (run with -race):
// what it grants never exceeds rate*elapsed plus one lease per worker.
func TestBucketConcurrent(t *testing.T) {
	const workers = 4
	const rate = 1e9
	clk := MonoClock{}
	b := NewBucket(rate, clk)
	start := clk.Now()
	var granted atomic.Int64
	var wg sync.WaitGroup
	stop := start + int64(100*time.Millisecond)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for now := clk.Now(); now < stop; now = clk.Now() {
				g, _ := b.Lease(now, int64(rng.IntN(1500)))
				if g > 0 && rng.IntN(8) == 0 {
					r := int64(rng.IntN(int(g)))
					b.Return(r)
					g -= r
				}
				granted.Add(g)
			}
		}()
	}
	wg.Wait()
	elapsed := clk.Now() - start
	limit := int64(float64(elapsed)*rate/8e9) + workers*b.Chunk()
	t.Logf("granted %d bytes in %v (limit %d)", granted.Load(), time.Duration(elapsed), limit)
	if granted.Load() > limit {
		t.Errorf("granted %d > %d", granted.Load(), limit)
	}
	if granted.Load() == 0 {
		t.Error("nothing granted")
	}
}

func TestBucketLease(t *testing.T) {
	clk := NewManualClock(1000)
	b := NewBucket(8e6, clk) // 1 byte/us
	b.SetChunk(100)
	b.SetBurst(0)
	for i, tc := range []struct {
		now, need     int64
		granted, wait int64
	}{
		{1000, 10, 100, 0},     // chunk
		{1000, 10, 0, 101_000}, // tat in the future
		{101_000, 500, 500, 0}, // need above chunk
		{700_000, 10, 100, 0},  // idle: no catch-up with burst 0
		{799_999, 1, 0, 800_000},
	} {
		g, w := b.Lease(tc.now, tc.need)
		if g != tc.granted || w != tc.wait {
			t.Errorf("%d: Lease(%d, %d) = %d, %d; want %d, %d", i, tc.now, tc.need, g, w, tc.granted, tc.wait)
		}
	}
	b.Return(50)
	if r := b.Ready(); r != 750_000 {
		t.Errorf("after Return(50): Ready %d, want 750000", r)
	}
	if NewBucket(0, clk).Rate() != 0 || (*Bucket)(nil).Rate() != 0 {
		t.Error("unlimited bucket has a rate")
	}
	for _, r := range []uint64{1e3, 1e6, 100e6, 10e9} {
		c := NewBucket(r, nil).Chunk()
		if c < MinChunk || c > MaxChunk {
			t.Errorf("%s: chunk %d", fmt.Sprint(r), c)
		}
	}
}

// TestBucketSetRate: a shaper kept busy on one bucket sends at the
// configured rate, and at the new one right after SetRate (both ways),
// within 0.5 %.
func TestBucketSetRate(t *testing.T) {
	clk := NewManualClock(0)
	b := NewBucket(100e6, clk)
	s := New[*tpkt](Config{}, b, clk, &tops{})
	pkts := make([]tpkt, 4096)
	next := 0
	out := make([]*tpkt, 32)
	run := func(d int64) (bits float64) {
		end := clk.Now() + d
		for now := clk.Now(); now < end; now = clk.Advance(20_000) {
			for s.Len() < 16 {
				p := &pkts[next%len(pkts)]
				*p = tpkt{size: 1500, flow: uint32(next % 4)}
				next++
				s.EnqueueAt(p, p.flow, 0, now)
			}
			for {
				n := s.DequeueAt(out, now)
				for _, p := range out[:n] {
					bits += float64(p.size) * 8
				}
				if n < len(out) {
					break
				}
			}
		}
		return bits / (float64(d) / 1e9)
	}
	run(100 * ms) // settle
	for _, rate := range []uint64{100e6, 20e6, 500e6} {
		b.SetRate(rate)
		run(50 * ms) // the change takes effect within a lease or two
		got := run(1000 * ms)
		if math.Abs(got-float64(rate))/float64(rate) > 0.005 {
			t.Errorf("rate %d: sent %.0f bit/s", rate, got)
		}
		if b.Rate() != rate || b.Chunk() < MinChunk {
			t.Errorf("Rate %d Chunk %d after SetRate(%d)", b.Rate(), b.Chunk(), rate)
		}
	}
}

// TestBucketSetRateConcurrent: leases, returns and rate changes from
// several goroutines at once (run with -race); what is granted stays
// within the highest rate set plus a lease and a burst per worker.
func TestBucketSetRateConcurrent(t *testing.T) {
	clk := NewManualClock(0)
	b := NewBucket(100e6, clk)
	const workers = 4
	var granted atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if g, _ := b.Lease(clk.Now(), 1500); g > 0 {
					if i%7 == 0 {
						b.Return(g / 2)
						g -= g / 2
					}
					granted.Add(g)
				}
			}
		}()
	}
	const steps = 2000
	for i := 0; i < steps; i++ {
		b.SetRate([]uint64{100e6, 20e6, 300e6}[i%3])
		clk.Advance(10_000) // 10 us
	}
	close(stop)
	wg.Wait()
	limit := 300e6/8*float64(steps*10_000)/1e9 + float64(workers)*(MaxChunk+300e6/8*DefaultBurst/1e9)
	if g := float64(granted.Load()); g > limit {
		t.Fatalf("granted %.0f bytes, more than %.0f", g, limit)
	}
}
