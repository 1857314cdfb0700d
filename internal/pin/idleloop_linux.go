//go:build linux

package pin

import (
	"fmt"
	"os/exec"

	"golang.org/x/sys/unix"
)

// IdleLoops starts one SCHED_IDLE busy loop pinned to each of cpus (a
// shell's, so that no Go scheduler is involved) and returns a func that
// kills them (never nil) and their process ids. Interrupts, softirqs and
// any other woken task preempt such a loop; what it does is keep its CPU
// out of the idle loop, so that a VM's vCPU never halts (see bench io
// --awake).
func IdleLoops(cpus []int) (stop func(), pids []int, err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	fail := func(err error) (func(), []int, error) {
		stop()
		return func() {}, nil, err
	}
	for _, cpu := range cpus {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			return fail(fmt.Errorf("pin: idle loop: %w", err))
		}
		cmds = append(cmds, c)
		var set unix.CPUSet
		set.Set(cpu)
		pid := c.Process.Pid
		pids = append(pids, pid)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return fail(fmt.Errorf("pin: idle loop on CPU %d: %w", cpu, err))
		}
		if err := unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0); err != nil {
			return fail(fmt.Errorf("pin: idle loop SCHED_IDLE: %w", err))
		}
	}
	return stop, pids, nil
}
