//go:build linux || freebsd

package dataplane

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/memport"
	"github.com/pppfwd/pppfwd/shaper"
)

// pollPort is a memport whose queues can be waited on: Inject rings the
// queue's bell, as a kernel makes a socket readable.
type pollPort struct {
	*memport.Port
	bells []*nic.Bell
}

func newPollPort(t *testing.T, name string, queues int) *pollPort {
	p := &pollPort{Port: memport.New(name, queues, 1024)}
	for q := 0; q < queues; q++ {
		b, err := nic.NewBell()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		p.bells = append(p.bells, b)
	}
	return p
}

func (p *pollPort) Inject(q int, b []byte) bool {
	ok := p.Port.Inject(q, b)
	p.bells[q].Ring()
	return ok
}

func (p *pollPort) Recv(q int, frames []*nic.Frame) (int, error) {
	n, err := p.Port.Recv(q, frames)
	if p.Port.RxRing(q).Len() == 0 {
		p.bells[q].Clear()
	}
	return n, err
}

func (p *pollPort) PollFD(q int) int       { return p.bells[q].FD() }
func (p *pollPort) RxReady(q int) bool     { return p.Port.RxRing(q).Len() > 0 }
func (p *pollPort) steps(e *Engine) uint64 { return e.workers[0].beat.Load() }

var _ nic.Pollable = (*pollPort)(nil)

// TestIdleWorkerSleeps: with PollAdaptive and PollBlock, a started engine
// whose ports can be waited on stops polling once idle (a handful of
// steps, asleep whenever looked at), a
// LAN frame and a control-plane Send still wake it within milliseconds,
// and Stop does not wait for a sleep to end. PollBusy keeps polling.
func TestIdleWorkerSleeps(t *testing.T) {
	for _, mode := range []PollMode{PollAdaptive, PollBlock, PollBusy} {
		t.Run(mode.String(), func(t *testing.T) {
			lan, wan := newPollPort(t, "lan", 1), newPollPort(t, "wan", 1)
			e, err := New(Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
				RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Poll: mode})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			stopped := false
			defer func() {
				if !stopped {
					e.Stop()
				}
			}()
			time.Sleep(50 * time.Millisecond)
			s0 := lan.steps(e)
			asleep := 0
			for i := 0; i < 300; i++ {
				if e.wakers[0].sleeping.Load() {
					asleep++
				}
				time.Sleep(time.Millisecond)
			}
			idleSteps := lan.steps(e) - s0
			if mode == PollBusy {
				if asleep != 0 {
					t.Fatalf("a busy-polling worker was asleep at %d of 300 looks", asleep)
				}
			} else if idleSteps > 20 || asleep < 290 {
				t.Fatalf("an idle worker made %d steps and was asleep at only %d of 300 looks: it polls instead of sleeping", idleSteps, asleep)
			}

			// A LAN frame (not for our MAC: dropped and counted) wakes it.
			frame := make([]byte, 60)
			frame[0], frame[5], frame[12] = 0x02, 0x77, 0x08
			t0 := time.Now()
			lan.Inject(0, frame)
			waitFor(t, 200*time.Millisecond, "the LAN frame", func() bool { return e.Totals().Drops[DropNotOurMAC] == 1 })
			t.Logf("%s: %d steps idle, asleep at %d of 300 looks; LAN frame handled after %v", mode, idleSteps, asleep, time.Since(t0))
			// Its sleeps are counted (published as it goes back to sleep).
			if mode == PollBusy {
				if n := e.Totals().Sleeps; n != 0 {
					t.Fatalf("a busy-polling worker counted %d sleeps", n)
				}
			} else {
				waitFor(t, 200*time.Millisecond, "the sleeps' count", func() bool { return e.Totals().Sleeps >= 1 })
			}

			// The control plane's Send wakes it: the frame leaves on the WAN.
			time.Sleep(50 * time.Millisecond)
			var sent atomic.Int64
			wan.Sink(0, func(int, *nic.Frame) { sent.Add(1) })
			if err := e.Send(ToWAN, frame); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 200*time.Millisecond, "the injected frame", func() bool { return sent.Load() == 1 })

			time.Sleep(50 * time.Millisecond)
			t0 = time.Now()
			e.Stop()
			stopped = true
			if d := time.Since(t0); d > 200*time.Millisecond {
				t.Fatalf("Stop took %v: it waited for a sleep to end", d)
			}
		})
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(100 * time.Microsecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not handled within %v", what, d)
		}
	}
}

// TestIdlerSpinBudget: PollAdaptive's spin budget halves each time a
// spin ends in sleep (down to spinMin) and doubles when frames come
// before it runs out (up to spinMax); PollBlock sleeps on the first empty
// poll; PollBusy never sleeps.
func TestIdlerSpinBudget(t *testing.T) {
	var stop atomic.Bool
	wk := &waker{}
	slept := 0
	mk := func(m PollMode) *idler {
		d := newIdler(m, wk, nil, nil)
		d.ready = func() bool { return false }
		d.nextDue = func() time.Duration { return time.Microsecond }
		d.beforeSleep = func() { slept++ }
		return d
	}
	d := mk(PollAdaptive)
	start := d.spin
	for i := 0; i < start; i++ {
		d.empty(&stop)
	}
	if slept != 1 || d.spin != start/2 {
		t.Fatalf("after %d empty polls: slept %d times, budget %d; want 1 and %d", start, slept, d.spin, start/2)
	}
	for i := 0; i < 2*spinMax; i++ {
		d.empty(&stop)
	}
	if d.spin != spinMin {
		t.Fatalf("budget %d after many sleeps, want %d", d.spin, spinMin)
	}
	for i := 0; i < 20; i++ {
		d.busy()
		d.empty(&stop) // one empty poll, then work again: the spin paid
		d.busy()
	}
	if d.spin != spinMax {
		t.Fatalf("budget %d after spins that paid, want %d", d.spin, spinMax)
	}
	slept = 0
	b := mk(PollBlock)
	b.empty(&stop)
	if slept != 1 {
		t.Fatalf("PollBlock: %d sleeps after one empty poll", slept)
	}
	slept = 0
	u := mk(PollBusy)
	for i := 0; i < 10000; i++ {
		u.empty(&stop)
	}
	if slept != 0 {
		t.Fatalf("PollBusy slept %d times", slept)
	}
}

// startShaped starts one worker on pollable ports with cfg's Poll and
// Clock and the uplink shaped at rate, the session up and the LAN host
// known; it returns the engine (the caller stops it), the LAN port to
// inject into and the count of frames the WAN sent.
func startShaped(t *testing.T, cfg Config, rate uint64) (*Engine, *pollPort, *atomic.Int64) {
	t.Helper()
	lan, wan := newPollPort(t, "lan", 1), newPollPort(t, "wan", 1)
	cfg = Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Poll: cfg.Poll, Clock: cfg.Clock}
	cfg.Up.Rate = rate
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.SetSession(testSession())
	e.SetNeighbor(hostIP, hostMAC)
	sent := new(atomic.Int64)
	wan.Sink(0, func(int, *nic.Frame) { sent.Add(1) })
	e.Start()
	time.Sleep(20 * time.Millisecond)
	return e, lan, sent
}

// TestShapedBacklogDrainsAsleep: a worker whose ports can be waited on,
// holding a shaped backlog and receiving nothing more, sleeps until each
// release and then polls: the backlog leaves at the rate without a new
// frame to wake the worker, and the worker sleeps between releases
// instead of spinning; under workers.poll busy, which never sleeps, the
// backlog leaves at the rate too.
func TestShapedBacklogDrainsAsleep(t *testing.T) {
	const (
		rate   = 2e6
		frames = 20
		ipLen  = 1000 // 4 ms each at the rate
	)
	for _, mode := range []PollMode{PollAdaptive, PollBlock, PollBusy} {
		t.Run(mode.String(), func(t *testing.T) {
			e, lan, sent := startShaped(t, Config{Poll: mode}, rate)
			defer e.Stop()
			for i := 0; i < frames; i++ {
				lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: ip4(198, 51, 100, 9), sport: 1000, dport: 53,
					proto: layers.IPProtocolUDP, payload: ipLen - 28}))
			}
			t0 := time.Now()
			asleep, looks := 0, 0
			for sent.Load() < frames && time.Since(t0) < 2*time.Second {
				if e.wakers[0].sleeping.Load() {
					asleep++
				}
				looks++
				time.Sleep(500 * time.Microsecond)
			}
			took := time.Since(t0)
			t.Logf("%s: %d of %d frames out in %v; asleep at %d of %d looks", mode, sent.Load(), frames, took, asleep, looks)
			if sent.Load() < frames {
				t.Fatalf("only %d of %d shaped frames out in 2 s (%v at the rate): the backlog waits for a new frame", sent.Load(), frames, time.Duration(frames*ipLen*8e9/rate))
			}
			if mode != PollBusy && asleep < looks/2 { // busy spins by design
				t.Fatalf("asleep at %d of %d looks while the backlog drained: the worker spins", asleep, looks)
			}
		})
	}
}

// drowsyPort records the Drowse calls a thread makes before it sleeps.
type drowsyPort struct {
	*pollPort
	drowsed atomic.Int64
}

func (p *drowsyPort) Drowse(q int) { p.drowsed.Add(1) }

var _ nic.Drowsy = (*drowsyPort)(nil)

// TestIdlerDrowsesBeforeSleep: a worker tells a nic.Drowsy port before
// each sleep on it, and never while it busy-polls.
func TestIdlerDrowsesBeforeSleep(t *testing.T) {
	for _, mode := range []PollMode{PollAdaptive, PollBusy} {
		lan := &drowsyPort{pollPort: newPollPort(t, "lan", 1)}
		wan := newPollPort(t, "wan", 1)
		e, err := New(Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
			RouterAddr: routerIP, LANNet: lanNet, LANBits: 24, Poll: mode})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		time.Sleep(50 * time.Millisecond)
		e.Stop()
		n := lan.drowsed.Load()
		if mode == PollBusy && n != 0 {
			t.Fatalf("busy: %d Drowse calls", n)
		}
		if mode != PollBusy && n == 0 {
			t.Fatalf("%v: the worker slept without Drowse", mode)
		}
	}
}

// TestSleepingWorkerHoldsNoCredit: a worker whose shaped queue ran dry
// keeps its lease's leftover credit while it polls (shaper.CreditKeep)
// and hands it back before it sleeps, so an idle worker holds none of
// the rate: after one small frame and a sleep the bucket is back to
// where the frame alone put it, not a whole chunk ahead.
func TestSleepingWorkerHoldsNoCredit(t *testing.T) {
	const now = int64(10_000_000_000)
	clk := shaper.NewManualClock(now) // stands still: the bucket's arithmetic is exact
	// 1 Gbit/s: a 25000-byte chunk, 200 us of rate.
	e, lan, sent := startShaped(t, Config{Clock: clk}, 1e9)
	defer e.Stop()
	lan.Inject(0, lanFrame(t, pkt{src: hostIP, dst: ip4(198, 51, 100, 9), sport: 1000, dport: 53,
		proto: layers.IPProtocolUDP, payload: 72}))
	deadline := time.Now().Add(2 * time.Second)
	for (sent.Load() < 1 || !e.wakers[0].sleeping.Load()) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Microsecond)
	}
	if sent.Load() != 1 || !e.wakers[0].sleeping.Load() {
		t.Fatalf("sent %d, asleep %v", sent.Load(), e.wakers[0].sleeping.Load())
	}
	// The bucket starts at now (NewBucket); the lease moved it a chunk
	// ahead (200 us); the leftover handed back leaves the frame's time
	// alone (about 1 ns per byte at 1 Gbit/s).
	if got := e.upBucket.Ready(); got-now > 10_000 {
		t.Errorf("asleep, the bucket stands %d ns ahead of now (a chunk's lease: 200000): the worker kept its credit", got-now)
	} else if got-now <= 0 {
		t.Errorf("the bucket stands %d ns ahead of now: the frame was not charged", got-now)
	}
}
