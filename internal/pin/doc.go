// Package pin binds worker goroutines to CPUs and measures the CPU time of
// the calling thread.
//
// A pppfwd worker calls Pin(cpu) once at start: the goroutine is locked to
// its OS thread (runtime.LockOSThread) and the thread's affinity is set to
// that one CPU (sched_setaffinity on Linux, cpuset_setaffinity on FreeBSD).
// ThreadCPUTime reads CLOCK_THREAD_CPUTIME_ID without allocating, so a
// benchmark can report CPU nanoseconds per packet per worker.
//
// It may import nic and x/sys/unix only.
package pin
