//go:build linux

package pin

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTicks is a process's user + system time in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// TestIdleLoops: each loop runs SCHED_IDLE on its CPU and spins; stop
// ends them.
func TestIdleLoops(t *testing.T) {
	cpu := runtime.NumCPU() - 1
	stop, pids, err := IdleLoops([]int{cpu})
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
	// The loop spins: at 100 ticks/s it gathers well over 10 ticks in
	// 400 ms even beside the test run's other processes.
	c0 := cpuTicks(t, pids[0])
	time.Sleep(400 * time.Millisecond)
	if c := cpuTicks(t, pids[0]) - c0; c < 10 {
		t.Errorf("the loop ran %d ticks in 400 ms", c)
	}
	stop()
	if err := unix.Kill(pids[0], 0); err == nil {
		t.Errorf("loop %d still there after stop", pids[0])
	}
}
