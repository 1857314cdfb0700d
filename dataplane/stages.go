package dataplane

import "sync/atomic"

// Stage sampling: the per-stage cost of the packet path, for the
// benchmarks (bench pipeline --stages). Off by default; when on, one step
// in every 2^k of each worker (and poll of a steering thread) is a sampled
// step: from its start to its end the thread's wall time is charged to
// the stage it is in, switching at the marks placed along the path
// (enter). Every nanosecond of a sampled step is charged to exactly one
// stage, so the stages add up to the sampled steps' time. The cost of
// the clock read a mark makes is calibrated when sampling is turned on
// and taken off each charge. Steps that are not sampled pay one load of
// a bool per mark.

// Stage is one stage of the packet path.
type Stage uint8

const (
	// StagePort: port receive and transmit calls, the frame pool,
	// handing batches over rings and taking frames back.
	StagePort Stage = iota
	// StageSteer: classifying WAN frames to their owning worker.
	StageSteer
	// StageParse: PPPoE decapsulation and the Ethernet and IP checks
	// before NAT; for IPv6, the whole path up to the shaper (the
	// firewall included).
	StageParse
	// StageNATLookup: a NAT lookup that found state.
	StageNATLookup
	// StageNATInsert: a NAT lookup that created a flow.
	StageNATInsert
	// StageForward: TTL, header checksums, MSS clamping, fragmenting.
	StageForward
	// StageShaperEnq and StageShaperDeq: FQ-CoDel enqueue; dequeue
	// (with the token bucket's lease).
	StageShaperEnq
	StageShaperDeq
	// StageEncap: PPPoE encapsulation (uplink); the Ethernet header and
	// the neighbour lookup (downlink).
	StageEncap
	// StageOther: the rest of a step (control frames to send, the
	// session snapshot, NAT expiry, the steps that found no work).
	StageOther
	NumStages
)

var stageNames = [NumStages]string{"port", "steer", "parse", "nat_lookup", "nat_insert", "forward", "shaper_enq", "shaper_deq", "encap", "other"}

func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "stage?"
}

// StageCosts are the sums over sampled steps.
type StageCosts struct {
	// Ns is the time charged to each stage (clock read cost removed);
	// Events counts the marks entering it (NAT lookups and inserts
	// count one per packet).
	Ns     [NumStages]int64
	Events [NumStages]uint64
	// Packets: frames handled in sampled steps; Steps: sampled steps.
	Packets, Steps uint64
	// ClockNs is the calibrated cost of one clock read (taken off each
	// charge).
	ClockNs int64
}

// Add sums o into c (ClockNs: the larger of the two).
func (c *StageCosts) Add(o StageCosts) {
	for i := range c.Ns {
		c.Ns[i] += o.Ns[i]
		c.Events[i] += o.Events[i]
	}
	c.Packets += o.Packets
	c.Steps += o.Steps
	c.ClockNs = max(c.ClockNs, o.ClockNs)
}

// stageProf is one thread's sampling state. Only its thread touches it
// while the engine runs.
type stageProf struct {
	gate    *atomic.Bool // sampling is not paused (Engine.PauseStages)
	on      bool         // this step is sampled
	enabled bool         // sampling is turned on
	mask    uint64       // a step is sampled when its number & mask == 0
	cur     Stage
	last    int64
	n       uint64 // steps seen (the steering thread's own count)
	c       StageCosts
}

// setSampling turns sampling on for one step in every 2^shift (shift < 0:
// off) and clears the sums.
func (p *stageProf) setSampling(shift int, gate *atomic.Bool) {
	*p = stageProf{gate: gate}
	if shift < 0 {
		return
	}
	p.enabled = true
	p.mask = 1<<uint(min(shift, 62)) - 1
	p.c.ClockNs = clockReadNs()
}

// begin starts a sampled step if step number i is one.
func (p *stageProf) begin(i uint64) {
	if !p.enabled || i&p.mask != 0 || !p.gate.Load() {
		return
	}
	p.on = true
	p.cur = StageOther
	p.last = nanotime()
}

// enter charges the time since the last mark to the current stage and
// makes s current; it returns the stage it left.
func (p *stageProf) enter(s Stage) Stage {
	t := nanotime()
	p.c.Ns[p.cur] += t - p.last - p.c.ClockNs
	p.last = t
	prev := p.cur
	p.cur = s
	p.c.Events[s]++
	return prev
}

// resume makes s current again after a nested stage, charging the time
// since the last mark as enter does, without counting an event.
func (p *stageProf) resume(s Stage) {
	p.enter(s)
	p.c.Events[s]--
}

// end closes a sampled step that handled n frames.
func (p *stageProf) end(n int) {
	if !p.on {
		return
	}
	p.resume(StageOther)
	p.c.Packets += uint64(n)
	p.c.Steps++
	p.on = false
}

// clockReadNs is the cost of one nanotime call: the median of short
// back-to-back runs.
func clockReadNs() int64 {
	const runs, reads = 31, 64
	var d [runs]int64
	for i := range d {
		t0 := nanotime()
		for j := 0; j < reads-1; j++ {
			nanotime()
		}
		d[i] = (nanotime() - t0) / reads
	}
	for i := 1; i < runs; i++ { // insertion sort: runs is small
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
	return d[runs/2]
}

// enter marks the worker's path entering stage s (sampled steps only).
func (w *Worker) enter(s Stage) {
	if w.prof.on {
		w.prof.enter(s)
	}
}

// natBegin enters StageNATLookup before a NAT call and returns what
// natDone needs to tell an insert from a lookup.
func (w *Worker) natBegin() uint64 {
	if !w.prof.on {
		return 0
	}
	w.prof.enter(StageNATLookup)
	return w.nat.Allocations()
}

// natDone, after the NAT call natBegin preceded, charges the call to
// StageNATInsert when it created a flow, else StageNATLookup, and
// enters StageForward.
func (w *Worker) natDone(allocs uint64) {
	if !w.prof.on {
		return
	}
	if w.nat.Allocations() != allocs {
		w.prof.c.Events[StageNATLookup]--
		w.prof.c.Events[StageNATInsert]++
		w.prof.cur = StageNATInsert
	}
	w.prof.enter(StageForward)
}

// SampleStages turns stage sampling on for one step in every 2^shift of
// each worker and the steering thread (shift < 0: off), and clears the
// sums. Call it only while the engine is stopped.
func (e *Engine) SampleStages(shift int) {
	e.stageGate.Store(true)
	for _, w := range e.workers {
		w.prof.setSampling(shift, &e.stageGate)
	}
	e.steerProf.setSampling(shift, &e.stageGate)
}

// PauseStages pauses (or resumes) the sampling SampleStages turned on,
// while the engine runs: a paused thread samples no step, so that a
// benchmark can compare its rate with sampling and without in one run.
func (e *Engine) PauseStages(pause bool) { e.stageGate.Store(!pause) }

// Stages returns the sampled stage costs of all threads. Call it only
// while the engine is stopped.
func (e *Engine) Stages() StageCosts {
	var c StageCosts
	for _, w := range e.workers {
		c.Add(w.prof.c)
	}
	c.Add(e.steerProf.c)
	return c
}
