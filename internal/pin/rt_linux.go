//go:build linux

package pin

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// rtAttrs are a thread's two scheduling attributes for Policy.
type rtAttrs struct {
	rt, normal unix.SchedAttr
}

func newPolicy(prio int) (*Policy, error) {
	if prio < MinRTPrio || prio > MaxRTPrio {
		return nil, fmt.Errorf("pin: realtime priority %d outside %d..%d", prio, MinRTPrio, MaxRTPrio)
	}
	cur, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil, fmt.Errorf("pin: sched_getattr: %w", err)
	}
	if cur.Policy != unix.SCHED_NORMAL && cur.Policy != unix.SCHED_BATCH {
		return nil, fmt.Errorf("pin: realtime: thread policy %d is not SCHED_OTHER or SCHED_BATCH", cur.Policy)
	}
	p := &Policy{}
	p.a.normal = *cur
	p.a.normal.Flags = 0
	p.a.rt = unix.SchedAttr{Size: cur.Size, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	// Try it once: a process without CAP_SYS_NICE (or an RLIMIT_RTPRIO
	// of prio) learns it here, not in the loop.
	if err := unix.SchedSetAttr(0, &p.a.rt, 0); err != nil {
		return nil, fmt.Errorf("pin: sched_setattr(SCHED_FIFO %d): %w", prio, err)
	}
	if err := unix.SchedSetAttr(0, &p.a.normal, 0); err != nil {
		return nil, fmt.Errorf("pin: sched_setattr(back to SCHED_OTHER): %w", err)
	}
	return p, nil
}

func (p *Policy) set(rt bool) error {
	a := &p.a.normal
	if rt {
		a = &p.a.rt
	}
	return unix.SchedSetAttr(0, a, 0)
}
