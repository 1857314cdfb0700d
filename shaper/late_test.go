package shaper

import (
	"fmt"
	"math"
	"testing"
)

// TestLateWorkerKeepsRate: a worker with a saturating backlog that runs
// only every W of clock time (a coarse timer, a loaded or emulated CPU)
// still sends at the rate: each late run catches up on the time it
// missed. In no window does it send more than the rate allows plus two
// leases (the one that ran past the window's end and the credit left
// from before it): the catch-up is time that was owed, not a burst on
// top.
func TestLateWorkerKeepsRate(t *testing.T) {
	const dur = 2_000 * ms
	for _, tc := range []struct {
		rate uint64
		size int
	}{
		{2e6, 64}, {2e6, 1500}, {10e6, 64}, {10e6, 1500}, {500e6, 1500},
	} {
		for _, w := range []int64{1 * ms, 4 * ms, 10 * ms, 20 * ms} {
			t.Run(fmt.Sprintf("%dMbit/%dB/wake%dms", tc.rate/1e6, tc.size, w/ms), func(t *testing.T) {
				// The source refills the queue at each step: keep more
				// than a wakeup's worth queued, or it is the source, not
				// the rate, that limits.
				perWake := int(float64(tc.rate) / 8e9 * float64(w) / float64(tc.size))
				src := &source{flow: 1, size: tc.size, backlog: 2*perWake + 64}
				sm := newSim(Config{}, tc.rate, src)
				sm.poll = w
				bytesPerNs := float64(tc.rate) / 8e9
				lease := float64(max(sm.s.b.Chunk(), int64(tc.size)))
				// Windowed bound: with f(t) = sent(t) - rate*t, f after
				// any step may rise by at most two leases above its value
				// at the end of an earlier step.
				var sent int64
				f := func(now int64) float64 { return float64(sent) - bytesPerNs*float64(now) }
				minF, worst := f(sm.clk.Now()), math.Inf(-1)
				sm.onSend = func(p *tpkt, now int64) {
					sent += int64(p.size)
					worst = max(worst, f(now)-minF)
				}
				sm.onStep = func(now int64) { minF = min(minF, f(now)) }
				sm.run(dur)
				got := float64(sent*8) / (float64(dur) / 1e9)
				errPct := (got - float64(tc.rate)) / float64(tc.rate) * 100
				t.Logf("rate %.0f Mbit/s, wake every %d ms: sent %.3f Mbit/s (%+.2f %%), worst window excess %.0f B (two leases %.0f B)",
					float64(tc.rate)/1e6, w/ms, got/1e6, errPct, worst, 2*lease)
				if math.Abs(errPct) > 2 {
					t.Errorf("rate error %+.2f %% > 2 %% with the worker woken every %d ms", errPct, w/ms)
				}
				if worst > 2*lease {
					t.Errorf("sent %.0f bytes above the rate in a window, more than two leases (%.0f)", worst, 2*lease)
				}
			})
		}
	}
}

// TestLeaseWaitingCatchUp: after idle time a worker whose queue just
// filled catches up on at most Burst; one whose queue waited catches up
// on the time it waited, up to CatchUp.
func TestLeaseWaitingCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		since   int64 // how long before now the queue filled
		wantTat int64 // tat after one 100-byte lease, relative to now
	}{
		{"just-filled", 0, -DefaultBurst + 100_000},
		{"waited-5ms", 5 * ms, -5*ms + 100_000},
		{"waited-long", 500 * ms, -DefaultCatchUp + 100_000},
	} {
		clk := NewManualClock(0)
		b := NewBucket(8e6, clk) // 1 byte per us
		b.SetChunk(100)
		now := clk.Advance(1000 * ms) // idle for a second
		if g, _ := b.LeaseWaiting(now, 1, now-tc.since); g != 100 {
			t.Fatalf("%s: granted %d, want 100", tc.name, g)
		}
		if got := b.Ready() - now; got != tc.wantTat {
			t.Errorf("%s: tat now%+d ns, want now%+d", tc.name, got, tc.wantTat)
		}
	}
}
