package dataplane

import (
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
)

// waker lets a consumer thread sleep until a producer hands it work. The
// consumer sets sleeping, checks its sources once more, and sleeps; a
// producer that pushed into one of the consumer's rings calls wake, which
// rings the bell (or signals ch) only if the consumer announced sleep.
// Both sides use sequentially consistent atomics (the rings' indices and
// sleeping), so either the consumer sees the frame in its last check or
// the producer sees sleeping: no frame waits for a timeout.
type waker struct {
	sleeping atomic.Bool
	bell     *nic.Bell     // a worker's or the steering thread's doorbell
	ch       chan struct{} // the control plane's (a goroutine, not a thread)
	_        [40]byte      // producers on other cores read sleeping: keep it off neighbours' lines
}

// wake wakes the consumer if it is asleep (or about to be).
func (k *waker) wake() {
	if k == nil || !k.sleeping.Load() || !k.sleeping.CompareAndSwap(true, false) {
		return
	}
	if k.bell != nil {
		k.bell.Ring()
	}
	if k.ch != nil {
		select {
		case k.ch <- struct{}{}:
		default:
		}
	}
}

// Idle policy constants.
const (
	// spinMin and spinMax bound PollAdaptive's budget of empty polls.
	spinMin = 8
	spinMax = 512
	// maxSleep bounds a sleep with nothing due: a port that shows a
	// removed interface only when probed is probed this often while idle
	// (nic.LinkChecker), and no lost wakeup (there should be none) could
	// hold a thread longer.
	maxSleep = 5 * time.Second
	// nap is the sleep of a thread whose ports cannot be waited on (a
	// port without descriptors, such as memport): its doorbell wakes it
	// early, its ports are checked every nap; napFor later it naps
	// napLong.
	nap     = 250 * time.Microsecond
	napLong = time.Millisecond
	napFor  = 50 * time.Millisecond
	// rtBusy is how long a thread in the realtime class (Config.RTPrio)
	// may poll with work without sleeping before it drops to the
	// ordinary class: a light load's frames are handled well within it,
	// and a heavy load does not keep the CPU from ordinary tasks (nor
	// from ksoftirqd, which feeds the thread's own queues) for longer.
	// rtCheck is how many polls with work pass between clock reads for
	// it.
	rtBusy  = 250 * time.Microsecond
	rtCheck = 4
	// rtHold is how long a thread that dropped to the ordinary class
	// stays there: under a sustained load it switches class at most
	// twice per rtHold (each switch is a system call), while a light
	// load never makes it drop.
	rtHold = 10 * time.Millisecond
	// rtWakes is how many wakeups in the realtime class a thread may
	// have per rtHold: a light load wakes it a few times per rtHold, but
	// a producer on the thread's own CPU (a local process, ksoftirqd)
	// that wakes it frame by frame would be preempted at every frame,
	// both threads switching per frame instead of per batch.
	rtWakes = 20
)

// idler is a polling thread's idle state: its policy, its doorbell and
// the set of descriptors it sleeps on.
type idler struct {
	mode     PollMode
	wk       *waker
	set      nic.WaitSet
	canBlock bool // every port the thread receives from has a descriptor
	spin     int  // PollAdaptive's budget of empty polls
	idle     int  // empty polls since the last work
	naps     int  // consecutive naps (ports without descriptors)
	// due is set when a timer of the thread's (nextDue) is due or a
	// sleep bounded by it ended: no port or ring says so, the next
	// shouldPoll must.
	due bool
	// polled are the ports' queues the thread receives from that can
	// say, without a system call, whether they hold a frame.
	polled []polledQueue
	// ready, if set, reports whether a source other than those ports has
	// work (rings, frames to send); nextDue returns the wait until a
	// timer of the thread's is due (negative: none; 0: due now).
	ready   func() bool
	nextDue func() time.Duration
	// timedOut, if set, runs after a sleep that ended with no descriptor
	// ready and no timer due (at most every maxSleep while idle): ports
	// that show a removed interface only when probed are probed then.
	timedOut func()
	// beforeSleep, if set, runs before each sleep (a worker publishes
	// its counters and CPU time then, not at every empty poll).
	beforeSleep func()
	// rt, if set, is the thread's realtime Policy (Config.RTPrio): the
	// thread enters the realtime class before it sleeps and leaves it
	// once it has polled with work for rtBusy without sleeping. fifo is
	// whether it is in it; wokeAt (nanotime) is when its last sleep
	// ended, busyN the polls with work since; rtAfter (nanotime) is when
	// a thread that dropped out may go back.
	// wakes counts its wakeups in the class since winAt (nanotime).
	rt      *pin.Policy
	fifo    bool
	wokeAt  int64
	rtAfter int64
	busyN   uint32
	winAt   int64
	wakes   uint32
	// c, if set, are the thread's counters: the idler keeps their
	// Sleeps, Realtime and RealtimeExits (the thread publishes them).
	c *Counters
}

// polledQueue is queue q of a port that is a nic.Pollable.
type polledQueue struct {
	p nic.Pollable
	q int
	d nic.Drowsy // p's, if it is one
}

// newIdler builds the idle state of a thread receiving from queue
// queues[i] of ports[i], for each i, with doorbell wk.
func newIdler(mode PollMode, wk *waker, ports []nic.Port, queues []int) *idler {
	d := &idler{mode: mode, wk: wk, spin: spinMax / 8, canBlock: true}
	if wk.bell != nil {
		d.set.Add(wk.bell.FD()) // first: sleep reads its readiness as Ready(0)
	}
	for i, p := range ports {
		fd := -1
		pp, ok := p.(nic.Pollable)
		if ok {
			fd = pp.PollFD(queues[i])
			dr, _ := p.(nic.Drowsy)
			d.polled = append(d.polled, polledQueue{pp, queues[i], dr})
		}
		if fd < 0 {
			d.canBlock = false
			continue
		}
		d.set.Add(fd)
	}
	return d
}

// shouldPoll reports, without a system call or a clock read, whether
// the thread should poll: it found work last time, its ports cannot be
// waited on, a timer of its is due (a shaper release: nothing but a poll
// runs it), or a source has work.
func (d *idler) shouldPoll() bool {
	if d.idle == 0 || !d.canBlock || d.due {
		d.due = false
		return true
	}
	return d.pending()
}

// pending reports, without a system call or a clock read, whether a poll
// would find work.
func (d *idler) pending() bool {
	if d.ready != nil && d.ready() {
		return true
	}
	for _, pq := range d.polled {
		if pq.p.RxReady(pq.q) {
			return true
		}
	}
	return false
}

// empty notes an empty poll and sleeps if the policy says so.
func (d *idler) empty(stop *atomic.Bool) {
	d.idle++
	switch d.mode {
	case PollBusy:
		// Never asleep, but a shaper release that falls due shows in no
		// port or ring: poll for it (nextDue reads the clock only while
		// a shaper holds packets).
		if d.nextDue != nil && d.nextDue() == 0 {
			d.due = true
		}
		return
	case PollAdaptive:
		if d.idle < d.spin {
			return
		}
	}
	if d.sleep(stop) && d.mode == PollAdaptive {
		d.spin = max(d.spin/2, spinMin)
	}
}

// busy notes a poll that found work.
func (d *idler) busy() {
	if d.idle > 0 && d.mode == PollAdaptive && d.idle < d.spin {
		// The spin paid: frames came before it ran out.
		d.spin = min(d.spin*2, spinMax)
	}
	d.idle, d.naps = 0, 0
	d.rtTick()
}

// rtTick notes a poll that did not end in a sleep (one with work, or a
// sleep cut short by a due timer or a source with work): a thread in the
// realtime class that has gone rtBusy without sleeping leaves it, so it
// never keeps a CPU from ordinary tasks for longer, whatever keeps it
// awake.
func (d *idler) rtTick() {
	if !d.fifo {
		return
	}
	if d.busyN++; d.busyN%rtCheck == 0 {
		if now := nanotime(); now-d.wokeAt > int64(rtBusy) {
			d.leaveRT(now) // loaded
		}
	}
}

// stopped notes that the thread polls no more: it leaves the realtime
// class, so that its last publish says so.
func (d *idler) stopped() {
	if d.fifo {
		d.setRT(false)
	}
}

// leaveRT makes the thread an ordinary task, sharing its CPU, until
// rtHold after now (nanotime).
func (d *idler) leaveRT(now int64) {
	d.setRT(false)
	if d.c != nil {
		d.c.RealtimeExits++
	}
	d.rtAfter = now + int64(rtHold)
}

// setRT moves the thread into the realtime class or out of it; a failed
// switch leaves fifo as it was (the next sleep or busy spell tries
// again).
func (d *idler) setRT(on bool) {
	var err error
	if on {
		err = d.rt.Realtime()
	} else {
		err = d.rt.Normal()
	}
	if err != nil {
		return
	}
	d.fifo = on
	if d.c != nil {
		d.c.Realtime = 0
		if on {
			d.c.Realtime = 1
		}
	}
}

// sleep sleeps until a source may have work or a timer is due, and
// reports whether it slept.
func (d *idler) sleep(stop *atomic.Bool) bool {
	timeout := time.Duration(-1)
	if d.nextDue != nil {
		if timeout = d.nextDue(); timeout == 0 {
			d.due = true
			d.rtTick()
			return false
		}
	}
	timer := timeout > 0 // the sleep ends when a timer is due
	if !d.canBlock {
		t := nap
		if d.naps++; time.Duration(d.naps)*nap > napFor {
			t = napLong
		}
		if timeout < 0 || t < timeout {
			timeout, timer = t, false
		}
	}
	if timeout < 0 || timeout > maxSleep {
		timeout, timer = maxSleep, false
	}
	if d.beforeSleep != nil {
		d.beforeSleep()
	}
	for _, pq := range d.polled {
		if pq.d != nil {
			pq.d.Drowse(pq.q)
		}
	}
	d.wk.sleeping.Store(true)
	if stop.Load() || d.pending() {
		d.wk.sleeping.Store(false)
		d.rtTick()
		return false
	}
	if d.rt != nil && !d.fifo && nanotime() >= d.rtAfter {
		d.setRT(true) // wake in the realtime class
	}
	if d.set.Len() == 0 {
		pin.ThreadSleep(timeout)
		d.due = timer
	} else if ready, _ := d.set.Wait(timeout); !ready {
		// Timed out: the timer is due (poll, whatever the ports say),
		// or the thread has been idle for a while (probe the ports).
		if timer {
			d.due = true
		} else if d.timedOut != nil {
			d.timedOut()
		}
	}
	d.wk.sleeping.Store(false)
	if d.c != nil {
		d.c.Sleeps++
	}
	if d.wk.bell != nil && d.set.Ready(0) {
		// The bell (the set's first descriptor) rang: empty it. A ring
		// after the wait returned is left for the next wait, which it
		// ends at once: a spare poll, never a lost wakeup; an
		// unrung bell costs no read.
		d.wk.bell.Clear()
	}
	if d.fifo {
		now := nanotime()
		d.wokeAt, d.busyN = now, 0
		if now-d.winAt > int64(rtHold) {
			d.winAt, d.wakes = now, 0
		}
		if d.wakes++; d.wakes > rtWakes {
			d.leaveRT(now) // woken frame by frame
		}
	}
	return true
}
