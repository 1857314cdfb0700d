//go:build linux

package dataplane

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pppfwd/pppfwd/internal/pin"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("realtime priority needs root (CAP_SYS_NICE)")
	}
}

// policyOf returns thread tid's scheduling policy.
func policyOf(t *testing.T, tid int) uint32 {
	t.Helper()
	a, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		t.Fatalf("sched_getattr(%d): %v", tid, err)
	}
	return a.Policy
}

// An idler with a realtime Policy sleeps in the realtime class, drops to
// the ordinary class once it has polled with work for rtBusy without a
// sleep, and goes back before a sleep rtHold later; its counters say so
// (Realtime, RealtimeExits, Sleeps).
func TestIdlerRT(t *testing.T) {
	needRoot(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p, err := pin.NewPolicy(1)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = p.Normal() }()
		var stop atomic.Bool
		d := newIdler(PollBlock, &waker{}, nil, nil)
		d.rt = p
		var c Counters
		d.c = &c
		d.nextDue = func() time.Duration { return 50 * time.Microsecond } // a short sleep
		check := func(when string, want uint32) {
			if got := policyOf(t, 0); got != want {
				t.Errorf("%s: policy %d, want %d", when, got, want)
			}
			if rt := c.Realtime == 1; rt != (want == unix.SCHED_FIFO) {
				t.Errorf("%s: counters' Realtime %d", when, c.Realtime)
			}
		}
		check("before any sleep", unix.SCHED_NORMAL)
		d.empty(&stop)
		check("after a sleep", unix.SCHED_FIFO)
		// Busy for less than rtBusy: stays.
		for i := 0; i < 4*rtCheck; i++ {
			d.busy()
		}
		check("briefly busy", unix.SCHED_FIFO)
		// Busy past rtBusy without a sleep: ordinary.
		for end := time.Now().Add(rtBusy + time.Millisecond); time.Now().Before(end); {
			d.busy()
		}
		check("busy past rtBusy", unix.SCHED_NORMAL)
		d.empty(&stop)
		check("a sleep within rtHold", unix.SCHED_NORMAL)
		time.Sleep(rtHold)
		d.empty(&stop)
		check("a sleep after rtHold", unix.SCHED_FIFO)
		// Woken more than rtWakes times within rtHold: ordinary, then
		// back after rtHold.
		time.Sleep(rtHold)
		d.empty(&stop)
		check("before many wakeups", unix.SCHED_FIFO)
		for i := 0; i < rtWakes; i++ {
			d.empty(&stop)
		}
		check("after rtWakes+1 wakeups", unix.SCHED_NORMAL)
		time.Sleep(rtHold)
		d.empty(&stop)
		check("a sleep rtHold after", unix.SCHED_FIFO)
		// A timer that is always due keeps the thread from sleeping
		// without any poll finding work: it leaves the class too.
		d.nextDue = func() time.Duration { return 0 }
		for end := time.Now().Add(rtBusy + time.Millisecond); time.Now().Before(end); {
			d.empty(&stop)
		}
		check("awake on due timers past rtBusy", unix.SCHED_NORMAL)
		// Left for load three times: busy, woken frame by frame, due
		// timers. Slept at every empty call but the due timers'.
		if c.RealtimeExits != 3 || c.Sleeps != uint64(5+rtWakes) {
			t.Errorf("RealtimeExits %d, Sleeps %d; want 3 and %d", c.RealtimeExits, c.Sleeps, 5+rtWakes)
		}
	}()
	<-done
}

// Engine threads with Config.RTPrio wait in the realtime class; with
// PollBusy or RTPrio 0 they never enter it; Stop leaves none there.
func TestWorkerRT(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		name   string
		prio   int
		poll   PollMode
		wantRT bool
	}{{"rtprio 1", 1, PollAdaptive, true}, {"rtprio 0", 0, PollAdaptive, false}, {"busy", 1, PollBusy, false}} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]uint32{} // thread id -> its policy at a publish
			runIdleEngine(t, Config{RTPrio: c.prio, Poll: c.poll}, func(tid int) {
				a, _ := unix.SchedGetAttr(0, 0)
				mu.Lock()
				if seen[tid] != unix.SCHED_FIFO { // keep a realtime sighting
					seen[tid] = a.Policy
				}
				mu.Unlock()
			})
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 2 {
				t.Fatalf("%d polling threads seen, want 2", len(seen))
			}
			for tid, pol := range seen {
				if (pol == unix.SCHED_FIFO) != c.wantRT {
					t.Errorf("thread %d seen with policy %d, want realtime %v", tid, pol, c.wantRT)
				}
				if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_NORMAL {
					t.Errorf("thread %d left with policy %d after Stop", tid, a.Policy)
				}
			}
		})
	}
}

// TestWorkerRTCounters: a worker with Config.RTPrio publishes that it
// waits in the realtime class and counts a sleep for each frame that
// wakes it from one; a stopped worker is published out of the class.
func TestWorkerRTCounters(t *testing.T) {
	needRoot(t)
	lan, wan := newPollPort(t, "lan", 1), newPollPort(t, "wan", 1)
	e, err := New(Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Poll: PollAdaptive, RTPrio: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	w := e.Workers()[0]
	frame := make([]byte, 60) // to another MAC: dropped, a wakeup
	frame[0], frame[5], frame[12] = 0x02, 0x77, 0x08
	for i := 0; i < 3; i++ {
		// Asleep (its sleeps so far published as it went to sleep), a
		// frame wakes it: one more sleep, published at the next.
		waitFor(t, 2*time.Second, "the worker's sleep", func() bool { return e.wakers[0].sleeping.Load() })
		s0 := w.Counters().Sleeps
		lan.Inject(0, frame)
		waitFor(t, 2*time.Second, "the wakeup's count", func() bool { return w.Counters().Sleeps > s0 })
	}
	if c := w.Counters(); c.Realtime != 1 || c.Sleeps < 3 || c.RealtimeExits != 0 || c.Drops[DropNotOurMAC] != 3 {
		t.Errorf("running idle: Realtime %d, Sleeps %d, RealtimeExits %d, drops %d; want 1, >= 3, 0, 3", c.Realtime, c.Sleeps, c.RealtimeExits, c.Drops[DropNotOurMAC])
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	if c := w.Counters(); c.Realtime != 0 {
		t.Errorf("stopped: Realtime %d", c.Realtime)
	}
}
