//go:build linux

package pin

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// startSet is the affinity of the thread that initialised the package.
var startSet, startErr = func() (unix.CPUSet, error) {
	var s unix.CPUSet
	err := unix.SchedGetaffinity(0, &s)
	return s, err
}()

func pin(cpu int) error {
	var s unix.CPUSet
	if cpu >= len(s)*64 {
		return fmt.Errorf("pin: cpu %d beyond the %d CPUs a CPUSet holds", cpu, len(s)*64)
	}
	s.Set(cpu)
	runtime.LockOSThread()
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("pin: cpu %d not available to this process (allowed %v): %w", cpu, Allowed(), err)
		}
		return fmt.Errorf("pin: sched_setaffinity(cpu %d): %w", cpu, err)
	}
	return nil
}

func unpin() error {
	if startErr != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("pin: start affinity unknown: %w", startErr)
	}
	s := startSet
	err := unix.SchedSetaffinity(0, &s)
	if err != nil {
		// Keep the thread locked: it must not run other goroutines
		// with a one-CPU mask. It exits with the goroutine.
		return fmt.Errorf("pin: restore affinity: %w", err)
	}
	runtime.UnlockOSThread()
	return nil
}

// Allowed returns the CPUs the calling thread may run on, ascending.
func Allowed() []int {
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return nil
	}
	var out []int
	for i := 0; i < len(s)*64; i++ {
		if s.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// ThreadCPUTime returns the CPU time the calling OS thread has used. Call
// it from a pinned (locked) goroutine: otherwise the thread may change
// between two calls.
func ThreadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
