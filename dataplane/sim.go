package dataplane

// Sim drives an engine that is never started: its workers and steering
// run on the caller's goroutine, one iteration per Poll, on the clock the
// engine's Config gives (a manual clock in simulations). It is the only
// way to step an engine by hand; a started engine runs on its own
// threads and has no such entry.
type Sim struct{ e *Engine }

// Simulate returns a Sim for e. It panics if e is started, and Start
// panics once e has a Sim: the two ways of running cannot mix.
func Simulate(e *Engine) *Sim {
	if e.started {
		panic("dataplane: Simulate on a started engine")
	}
	e.simulated = true
	return &Sim{e: e}
}

// Poll runs one iteration of every worker (and the steering) and returns
// the frames handled.
func (s *Sim) Poll() int { return s.e.poll() }

// NextEvent returns the earliest time (Clock ns) a shaper has a packet to
// release, or 0 if none is waiting on its rate.
func (s *Sim) NextEvent() int64 { return s.e.nextEvent() }
