package iobench

import (
	"fmt"
	"os/exec"

	"golang.org/x/sys/unix"
)

// awake keeps cpus out of the idle loop while a latency probe runs: one
// SCHED_IDLE busy loop (a shell's, so that the Go scheduler is not
// involved) pinned to each. Any other task preempts a SCHED_IDLE one on
// wakeup, and interrupts and softirqs run at once; what it removes is the
// halt of an idle vCPU, whose wakeup by the hypervisor (milliseconds on a
// loaded host) otherwise decides both sides' tails. Both sides are probed
// under the same loops. stop kills them; it is never nil.
func awake(cpus []int) (stop func(), err error) {
	stop, _, err = awakeLoops(cpus)
	return stop, err
}

// awakeLoops is awake, with the loops' process ids.
func awakeLoops(cpus []int) (stop func(), pids []int, err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	for _, cpu := range cpus {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return func() {}, nil, fmt.Errorf("iobench: awake loop: %w", err)
		}
		cmds = append(cmds, c)
		var set unix.CPUSet
		set.Set(cpu)
		pid := c.Process.Pid
		pids = append(pids, pid)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			stop()
			return func() {}, nil, fmt.Errorf("iobench: awake loop on CPU %d: %w", cpu, err)
		}
		if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0); err != nil {
			stop()
			return func() {}, nil, fmt.Errorf("iobench: awake loop SCHED_IDLE: %w", err)
		}
	}
	return stop, pids, nil
}
