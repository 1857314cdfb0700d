package dataplane

import _ "unsafe" // go:linkname

// nanotime is the runtime's monotonic clock (ns): the cheapest clock
// read there is, used where a mark's own cost must stay small (stage
// sampling).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
