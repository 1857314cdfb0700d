package iobench

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAwake: each loop runs SCHED_IDLE on its CPU and keeps that CPU out
// of the idle loop; stop ends them.
func TestAwake(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	stop, pids, err := awakeLoops([]int{cpu})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if len(pids) != 1 {
		t.Fatalf("pids %v", pids)
	}
	a, err := unix.SchedGetAttr(pids[0], 0)
	if err != nil || a.Policy != unix.SCHED_IDLE {
		t.Fatalf("loop's policy %+v (%v), want SCHED_IDLE", a, err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(pids[0], &set); err != nil || set.Count() != 1 || !set.IsSet(cpu) {
		t.Fatalf("loop's CPUs: %d set, CPU %d %v (%v)", set.Count(), cpu, set.IsSet(cpu), err)
	}
	b0, t0 := cpuStat([]int{cpu})
	time.Sleep(300 * time.Millisecond)
	b1, t1 := cpuStat([]int{cpu})
	if t1 <= t0 || float64(b1-b0) < 0.8*float64(t1-t0) {
		t.Errorf("CPU %d busy %d of %d jiffies with the loop on it", cpu, b1-b0, t1-t0)
	}
	stop()
	if err := unix.Kill(pids[0], 0); err == nil {
		t.Errorf("loop %d still there after stop", pids[0])
	}
}
