//go:build linux

package pin

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadPolicy returns the calling thread's policy and realtime priority.
func threadPolicy(t *testing.T) (policy, prio uint32) {
	t.Helper()
	a, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return a.Policy, a.Priority
}

// A Policy moves its own thread between SCHED_FIFO at its priority and
// the thread's ordinary attributes (its custom slice kept), leaves other
// threads alone, and switches without allocating.
func TestPolicy(t *testing.T) {
	for _, bad := range []int{0, -1, 100} {
		if _, err := NewPolicy(bad); err == nil {
			t.Errorf("NewPolicy(%d): no error", bad)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if os.Geteuid() != 0 {
		var lim unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_RTPRIO, &lim) == nil && lim.Cur >= 5 {
			t.Skip("RLIMIT_RTPRIO allows priority 5 without root")
		}
		if _, err := NewPolicy(5); !errors.Is(err, unix.EPERM) {
			t.Fatalf("NewPolicy(5) without root: %v, want EPERM", err)
		}
		return
	}
	mainPol, _ := threadPolicy(t)
	done, ready, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		slices := kernelAtLeast(t, 6, 12)
		restore, err := ShortSlice(300 * time.Microsecond)
		if err != nil {
			t.Error(err)
			return
		}
		defer restore()
		p, err := NewPolicy(5)
		if err != nil {
			t.Error(err)
			return
		}
		if pol, _ := threadPolicy(t); pol != unix.SCHED_NORMAL {
			t.Errorf("after NewPolicy: policy %d, want SCHED_OTHER", pol)
		}
		if err := p.Realtime(); err != nil {
			t.Error(err)
		}
		if pol, prio := threadPolicy(t); pol != unix.SCHED_FIFO || prio != 5 {
			t.Errorf("Realtime: policy %d priority %d, want SCHED_FIFO 5", pol, prio)
		}
		if err := p.Normal(); err != nil {
			t.Error(err)
		}
		if pol, _ := threadPolicy(t); pol != unix.SCHED_NORMAL {
			t.Errorf("Normal: policy %d, want SCHED_OTHER", pol)
		}
		if s, _ := ThreadSlice(); slices && s != 300*time.Microsecond {
			t.Errorf("Normal: slice %v, want the 300µs the thread had", s)
		}
		if n := testing.AllocsPerRun(100, func() {
			_ = p.Realtime()
			_ = p.Normal()
		}); n != 0 {
			t.Errorf("a switch allocates %.1f times", n)
		}
		// The main test thread is checked while this one is realtime.
		_ = p.Realtime()
		ready <- struct{}{}
		<-release
		_ = p.Normal()
	}()
	select {
	case <-ready:
		if pol, _ := threadPolicy(t); pol != mainPol {
			t.Errorf("another thread's policy changed: %d, was %d", pol, mainPol)
		}
		close(release)
	case <-done:
	}
	<-done
}
