package pin

import (
	"fmt"
	"time"
)

// Unpin undoes Pin: the thread may again run on every CPU the process was
// allowed at start, and the goroutine is unlocked from its thread.
func Unpin() error { return unpin() }

// Pin locks the calling goroutine to its OS thread and restricts the thread
// to cpu. On error the goroutine stays unlocked.
func Pin(cpu int) error {
	if cpu < 0 {
		return fmt.Errorf("pin: bad cpu %d", cpu)
	}
	return pin(cpu)
}

// PinNth pins the calling thread to the n-th CPU (modulo their count) of
// the set the process may run on (its affinity mask, e.g. from taskset or
// a cgroup cpuset), not to CPU n itself.
func PinNth(n int) error {
	a := Allowed()
	if len(a) == 0 {
		return Pin(n)
	}
	if n < 0 {
		n = -n
	}
	return Pin(a[n%len(a)])
}

// ThreadCPUNanos is ThreadCPUTime in nanoseconds, 0 where it cannot be
// read: the shape dataplane.Config.ThreadCPU takes.
func ThreadCPUNanos() int64 {
	d, err := ThreadCPUTime()
	if err != nil {
		return 0
	}
	return int64(d)
}

// Bounds of a custom scheduling slice (Linux's): ShortSlice clamps to
// them.
const (
	MinSlice = 100 * time.Microsecond
	MaxSlice = 100 * time.Millisecond
)

// ShortSlice asks the scheduler to give the calling thread, which must be
// locked to its goroutine, a scheduling slice of d (clamped to MinSlice..MaxSlice):
// on Linux 6.12 and later a thread woken with a shorter slice than the
// running task's preempts it at once, so a frame that wakes a worker does
// not wait for another task's slice (milliseconds) to end. The thread's
// share of the CPU does not change. restore gives the thread the kernel's
// default slice again (call it on the same thread before unlocking it); it
// is never nil.
func ShortSlice(d time.Duration) (restore func(), err error) { return shortSlice(d.Nanoseconds()) }

// ThreadSlice returns the calling thread's scheduling slice (its own, or
// the kernel's default), where the OS has one.
func ThreadSlice() (time.Duration, error) {
	ns, err := threadSlice()
	return time.Duration(ns), err
}

// Bounds of a realtime (SCHED_FIFO) priority.
const (
	MinRTPrio = 1
	MaxRTPrio = 99
)

// Policy switches one thread, locked to its goroutine, between SCHED_FIFO
// at a fixed priority and the ordinary attributes (policy, nice, slice)
// it had when NewPolicy was called. A switch is one system call and
// allocates nothing. Use a Policy only on the thread that made it.
type Policy struct {
	a rtAttrs
}

// NewPolicy prepares the calling thread's Policy with realtime priority
// prio (MinRTPrio..MaxRTPrio), checking once that the process may use it
// (CAP_SYS_NICE, or an RLIMIT_RTPRIO of prio). The thread leaves it in
// the ordinary class.
func NewPolicy(prio int) (*Policy, error) { return newPolicy(prio) }

// Realtime puts the thread in SCHED_FIFO at the Policy's priority: it
// preempts every ordinary task on its CPU when it wakes.
func (p *Policy) Realtime() error { return p.set(true) }

// Normal puts the thread back in its ordinary class.
func (p *Policy) Normal() error { return p.set(false) }

// MoveThreads moves every thread of the process that is not pinned to one
// CPU (the Go runtime's monitor, garbage collector and idle threads, any
// goroutine's thread) onto cpus, and reports how many it moved. Threads
// started later inherit the mask of the thread that starts them. restore
// gives the process's start affinity back to every thread that still has
// exactly cpus and was not pinned when MoveThreads ran (a thread started
// since is included, and so is one pinned to cpus since: pin none in
// between); it is never nil.
func MoveThreads(cpus []int) (restore func(), moved int, err error) { return moveThreads(cpus) }
