package dataplane

import (
	"testing"
	"time"
)

// shapedRig is primedRig with both directions shaped at a rate the test
// never reaches, so every packet passes through the shapers (on the real
// clock: the shapers' credit comes with time).
func shapedRig(t testing.TB, workers, flows int, before func(*rig)) *rig {
	r := newRig(t, workers, func(c *Config) {
		c.Up.Rate, c.Down.Rate = 10e9, 10e9
		c.Clock = monoClock{}
	})
	if before != nil {
		before(r)
	}
	lanPkts, wanPkts := buildTraffic(t, r, flows, 64)
	for q := range lanPkts {
		if len(lanPkts[q]) > 0 {
			r.lan.Replay(q, lanPkts[q])
		}
		r.lan.Sink(q, nil)
		r.wan.Sink(q, nil)
	}
	if r.e.Steering() == SteerLocal {
		per := make([][][]byte, workers)
		for _, b := range wanPkts {
			q := max(r.e.WANOwner(b), 0)
			per[q] = append(per[q], b)
		}
		for q, bs := range per {
			if len(bs) > 0 {
				r.wan.Replay(q, bs)
			}
		}
	} else {
		r.wan.Replay(0, wanPkts)
	}
	return r
}

func natAllocations(e *Engine) uint64 {
	var n uint64
	for _, w := range e.workers {
		n += w.nat.Allocations()
	}
	return n
}

// TestStageSampling: with every step sampled, each flow's first packet
// is charged to nat_insert exactly once and no other packet is; every
// stage of the path is entered; the charged time never exceeds the time
// the sampled steps took; and the sampled packets are the frames the
// steps handled.
func TestStageSampling(t *testing.T) {
	const flows = 96
	for _, m := range []SteerMode{SteerInline, SteerLocal, SteerThread} {
		t.Run(m.String(), func(t *testing.T) {
			defer func(old SteerMode) { rigSteer = old }(rigSteer)
			rigSteer = m
			r := shapedRig(t, 2, flows, func(r *rig) { r.e.SampleStages(0) })
			c := r.e.Stages()
			if got := natAllocations(r.e); c.Events[StageNATInsert] != got || got != flows {
				t.Fatalf("priming: nat_insert events %d, flows created %d, want %d", c.Events[StageNATInsert], got, flows)
			}
			if c.Ns[StageNATInsert] <= 0 {
				t.Fatalf("priming: %d NAT inserts charged %d ns", flows, c.Ns[StageNATInsert])
			}
			if c.ClockNs <= 0 {
				t.Fatalf("clock read cost %d ns", c.ClockNs)
			}

			r.e.SampleStages(0)
			handled := 0
			t0 := time.Now()
			for i := 0; i < 200; i++ {
				handled += r.e.poll()
			}
			wall := time.Since(t0)
			c = r.e.Stages()
			if handled == 0 || c.Packets != uint64(handled) {
				t.Fatalf("sampled packets %d, handled %d", c.Packets, handled)
			}
			if c.Events[StageNATInsert] != 0 {
				t.Fatalf("replayed traffic of known flows charged %d NAT inserts", c.Events[StageNATInsert])
			}
			var sum int64
			for s := Stage(0); s < NumStages; s++ {
				sum += c.Ns[s]
			}
			if sum <= 0 || time.Duration(sum) > wall {
				t.Fatalf("charged %v over sampled steps that took %v", time.Duration(sum), wall)
			}
			for _, s := range []Stage{StagePort, StageSteer, StageParse, StageNATLookup, StageForward, StageShaperEnq, StageShaperDeq, StageEncap} {
				if c.Events[s] == 0 {
					t.Errorf("stage %v never entered: %+v", s, c.Events)
				}
			}
			// Each forwarded packet meets parse, the NAT and the
			// shaper once (a hand-over to another worker can add one).
			tx := r.e.Totals().TxLAN + r.e.Totals().TxWAN
			if c.Events[StageNATLookup] < uint64(handled)/2 || c.Events[StageShaperEnq] < uint64(handled)/2 || tx == 0 {
				t.Fatalf("handled %d: nat_lookup %d, shaper_enq %d events (tx %d)", handled, c.Events[StageNATLookup], c.Events[StageShaperEnq], tx)
			}
		})
	}
}

// TestStageSamplingRate: with one step in 2^k sampled, only those steps
// are charged, and with sampling off nothing is.
func TestStageSamplingRate(t *testing.T) {
	r := shapedRig(t, 2, 64, nil)
	steps := func() uint64 {
		var n uint64
		for _, w := range r.e.workers {
			n += w.steps
		}
		return n
	}
	run := func() {
		for i := 0; i < 256; i++ {
			r.e.poll()
		}
	}
	run()
	if c := r.e.Stages(); c != (StageCosts{}) {
		t.Fatalf("sampling off, yet charged: %+v", c)
	}
	r.e.SampleStages(3)
	s0 := steps()
	run()
	n := steps() - s0
	c := r.e.Stages()
	// Each worker samples one step in 8: its first may or may not be
	// one, so the count is within one of n/8 per worker.
	if lo, hi := n/8-2, n/8+2; c.Steps < lo || c.Steps > hi {
		t.Fatalf("%d steps, %d sampled, want %d..%d", n, c.Steps, lo, hi)
	}
	if c.Events[StageParse] == 0 {
		t.Fatalf("sampled steps charged nothing: %+v", c)
	}
}

// TestStageSamplingZeroAlloc: a sampled step allocates nothing.
func TestStageSamplingZeroAlloc(t *testing.T) {
	r := shapedRig(t, 2, 256, nil)
	r.e.SampleStages(0)
	step := r.step
	step()
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Fatalf("sampled step allocates %.1f times", a)
	}
	if c := r.e.Stages(); c.Packets == 0 {
		t.Fatal("nothing sampled")
	}
}
