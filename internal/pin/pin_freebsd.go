//go:build freebsd

package pin

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuset_t as passed to cpuset_*affinity: 256 CPUs (32 bytes), which is
// sizeof(cpuset_t) on FreeBSD 13 and accepted as a short mask by 14+.
type cpuSet [4]uint64

const (
	cpuLevelWhich = 3  // CPU_LEVEL_WHICH
	cpuWhichTID   = 1  // CPU_WHICH_TID
	selfID        = -1 // the calling thread / process
)

var startSet, startErr = func() (cpuSet, error) {
	var s cpuSet
	err := getAffinity(cpuWhichTID, &s)
	return s, err
}()

func pin(cpu int) error {
	var s cpuSet
	if cpu >= len(s)*64 {
		return fmt.Errorf("pin: cpu %d beyond the %d CPUs supported", cpu, len(s)*64)
	}
	s[cpu/64] |= 1 << (cpu % 64)
	runtime.LockOSThread()
	if err := setAffinity(&s); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("pin: cpuset_setaffinity(cpu %d): %w", cpu, err)
	}
	return nil
}

func unpin() error {
	if startErr != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("pin: start affinity unknown: %w", startErr)
	}
	s := startSet
	if err := setAffinity(&s); err != nil {
		return fmt.Errorf("pin: restore affinity: %w", err)
	}
	runtime.UnlockOSThread()
	return nil
}

// Allowed returns the CPUs the calling thread may run on, ascending.
func Allowed() []int {
	var s cpuSet
	if err := getAffinity(cpuWhichTID, &s); err != nil {
		return nil
	}
	var out []int
	for i := 0; i < len(s)*64; i++ {
		if s[i/64]&(1<<(i%64)) != 0 {
			out = append(out, i)
		}
	}
	return out
}

// ThreadCPUTime returns the CPU time the calling OS thread has used. Call
// it from a pinned (locked) goroutine.
func ThreadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}
