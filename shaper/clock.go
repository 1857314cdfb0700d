package shaper

import (
	"sync/atomic"
	"time"
)

// Clock returns monotonic nanoseconds.
type Clock interface{ Now() int64 }

// ManualClock is a Clock that moves only when told to. It is safe for
// concurrent use; tests drive the shaper with it.
type ManualClock struct{ t atomic.Int64 }

// NewManualClock returns a manual clock reading t ns.
func NewManualClock(t int64) *ManualClock {
	c := &ManualClock{}
	c.t.Store(t)
	return c
}

// Now returns the clock's time.
func (c *ManualClock) Now() int64 { return c.t.Load() }

// Set moves the clock to t (it may go backwards; the shaper tolerates it).
func (c *ManualClock) Set(t int64) { c.t.Store(t) }

// Advance moves the clock forward by d ns and returns the new time.
func (c *ManualClock) Advance(d int64) int64 { return c.t.Add(d) }

var monoBase = time.Now()

// MonoClock is the production clock: monotonic ns since process start.
type MonoClock struct{}

// Now returns monotonic nanoseconds since the process started.
func (MonoClock) Now() int64 { return int64(time.Since(monoBase)) }
