//go:build unix

package shaper

import "syscall"

// cpuNanos returns the process's user+system CPU time, or 0 if unknown.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
