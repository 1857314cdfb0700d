//go:build linux || freebsd

package pin

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadSleep blocks the calling OS thread for about d with nanosleep(2).
// A worker locked to its thread wakes within tens of microseconds, where
// the Go runtime's timers (time.Sleep) may take a millisecond or more for
// a sub-millisecond sleep.
func ThreadSleep(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}
