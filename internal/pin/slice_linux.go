//go:build linux

package pin

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// shortSlice asks EEVDF for a custom slice (sched_attr.sched_runtime of a
// SCHED_OTHER or SCHED_BATCH thread, Linux 6.12 and later; older kernels
// accept and ignore it). A thread with a shorter slice than the running
// task's preempts it on wakeup (PREEMPT_SHORT) instead of waiting for its
// slice to end; its weight, and so its share of the CPU, is unchanged.
func shortSlice(ns int64) (func(), error) {
	ns = min(max(ns, MinSlice.Nanoseconds()), MaxSlice.Nanoseconds())
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return func() {}, fmt.Errorf("pin: sched_getattr: %w", err)
	}
	if old.Policy != unix.SCHED_NORMAL && old.Policy != unix.SCHED_BATCH {
		return func() {}, fmt.Errorf("pin: slice: thread policy %d is not SCHED_OTHER or SCHED_BATCH", old.Policy)
	}
	a := *old
	a.Runtime = uint64(ns)
	a.Flags = 0
	if err := unix.SchedSetAttr(0, &a, 0); err != nil {
		return func() {}, fmt.Errorf("pin: sched_setattr(slice %d ns): %w", ns, err)
	}
	return func() {
		// Runtime 0 puts the kernel's default slice back; sched_getattr
		// reports that default, not 0, so old.Runtime would pin it.
		r := *old
		r.Flags, r.Runtime = 0, 0
		_ = unix.SchedSetAttr(0, &r, 0)
	}, nil
}

// threadSlice returns the calling thread's slice in ns: its custom
// slice, or the kernel's default.
func threadSlice() (int64, error) {
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return 0, err
	}
	return int64(a.Runtime), nil
}
