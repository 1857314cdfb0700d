package dataplane

import "time"

var clockBase = time.Now()

// monoClock is the default clock: monotonic ns since process start.
type monoClock struct{}

func (monoClock) Now() int64 { return int64(time.Since(clockBase)) }
