package dataplane

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/shaper"
)

// shared is what the control plane publishes and every worker reads at
// the start of each step: immutable snapshots (session, LAN6) and the
// one-writer neighbour tables.
type shared struct {
	session   atomic.Pointer[hdr.Session]
	neighbors atomic.Pointer[Neighbors]
	// lan6 and neighbors6: IPv6 routing (ipv6.go); lan6 nil = off.
	lan6       atomic.Pointer[LAN6]
	neighbors6 atomic.Pointer[Neighbors6]
}

// Engine runs the workers and steering over a LAN and a WAN port.
type Engine struct {
	cfg      Config
	workers  []*Worker
	owner    *[65536]uint8
	lanSteer *nat.LANSteer
	ranges   []nat.Range
	shared
	neighMu sync.Mutex

	// wakers[k] is worker k's, wakers[Workers] the steering thread's
	// (SteerThread), ctlWaker the control plane's: producers wake the
	// consumer of a link they pushed into (pipe.wake).
	wakers   []waker
	ctlWaker waker
	bells    bool // the wakers' bells exist (made by the first Start)

	// steerLinks[s][k]: steerer s -> worker k. One steerer (SteerInline,
	// SteerThread) feeds every worker; with SteerLocal steerer s is worker
	// s's, and steerLinks[s][s] is nil (it handles its own frames).
	steerLinks [][]*pipe
	redirect   [][]*pipe // worker i -> worker j
	excLinks   []*pipe   // worker k -> control (LAN exceptions)
	// ctlLinks[s] and prioLinks[s]: steerer s -> control, WAN control
	// frames (rate-limited) and our session's control frames. One pair
	// per steerer keeps every link single-producer.
	ctlLinks  []*pipe
	prioLinks []*pipe
	// inject[k]: control -> worker k (frames to send). Send uses one
	// worker's link at a time (frames keep their order) and moves on when
	// that worker stops making progress (injectStall), so no control
	// frame waits on one worker being scheduled.
	inject     []*pipe
	injectMu   sync.Mutex
	injectPool *framePool
	injectCur  int       // the link Send uses
	injectBeat uint64    // its worker's beat when last seen
	injectSeen time.Time // when that beat was first seen

	pollSeed      uint64
	steerCounters Counters
	steerPub      counterCell
	// steers are the steering stages: one with SteerInline and
	// SteerThread, one per worker with SteerLocal; steer is the first
	// (the steering thread's with SteerThread).
	steers []*steerer
	steer  *steerer
	// steerProf is the steering thread's stage sampling (SteerThread);
	// stageGate is false while sampling is paused (PauseStages).
	steerProf  stageProf
	stageGate  atomic.Bool
	upBucket   *shaper.Bucket
	downBucket *shaper.Bucket

	stop    atomic.Bool
	wg      sync.WaitGroup
	ready   sync.WaitGroup
	started bool
	// simulated: a Sim steps the engine (Simulate); it never starts.
	simulated bool
	errMu     sync.Mutex
	pinErr    error
	// failErr is the first permanent port error (nic.ErrLinkGone); failed
	// is closed when it is set.
	failErr  error
	failed   chan struct{}
	failOnce sync.Once
}

// New builds an engine; Start runs it.
func New(cfg Config) (*Engine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, pollSeed: 0x9e3779b97f4a7c15, failed: make(chan struct{})}
	e.ranges = nat.Partition(cfg.Workers, cfg.PortLo, cfg.PortHi)
	e.cfg.NAT.Forwards = append([]nat.Forward(nil), cfg.NAT.Forwards...)
	nat.AssignForwards(e.ranges, e.cfg.NAT.Forwards)
	e.owner = nat.OwnerTable(e.ranges, e.cfg.NAT.Forwards)
	e.lanSteer = nat.NewLANSteer(cfg.Workers, e.cfg.NAT.Forwards)
	if cfg.Up.Rate != 0 {
		e.upBucket = shaper.NewBucket(cfg.Up.Rate, cfg.Clock)
	}
	if cfg.Down.Rate != 0 {
		e.downBucket = shaper.NewBucket(cfg.Down.Rate, cfg.Clock)
	}
	n := cfg.Workers
	// Control, exception and injection links carry little; they still
	// hold whole batches.
	small := max(cfg.RingSize/4, 2*cfg.Batch)
	e.wakers = make([]waker, n+1)
	e.ctlWaker.ch = make(chan struct{}, 1)
	local := cfg.Steer == SteerLocal
	nSteer := 1
	if local {
		nSteer = n
	}
	e.steerLinks = make([][]*pipe, nSteer)
	e.ctlLinks = make([]*pipe, nSteer)
	e.prioLinks = make([]*pipe, nSteer)
	for s := range e.steerLinks {
		e.steerLinks[s] = make([]*pipe, n)
		for k := range e.steerLinks[s] {
			if !local || s != k {
				e.steerLinks[s][k] = newPipe(cfg.RingSize, &e.wakers[k])
			}
		}
		e.ctlLinks[s] = newPipe(small, &e.ctlWaker)
		e.prioLinks[s] = newPipe(small, &e.ctlWaker)
	}
	e.excLinks = make([]*pipe, n)
	e.redirect = make([][]*pipe, n)
	for i := 0; i < n; i++ {
		e.excLinks[i] = newPipe(small, &e.ctlWaker)
		e.redirect[i] = make([]*pipe, n)
		for j := 0; j < n; j++ {
			if i != j {
				e.redirect[i][j] = newPipe(cfg.RingSize, &e.wakers[j])
			}
		}
	}
	e.inject = make([]*pipe, n)
	for i := range e.inject {
		e.inject[i] = newPipe(small, &e.wakers[i])
	}
	e.injectPool = newFramePool(2*small, 2*small)
	e.neighbors.Store(NewNeighbors(nil))
	e.neighbors6.Store(NewNeighbors6(nil))
	for i := 0; i < n; i++ {
		w, err := newWorker(e, i)
		if err != nil {
			return nil, err
		}
		e.workers = append(e.workers, w)
	}
	if local {
		// Worker k reads the WAN queues q with q mod n == k, from its
		// own pool (newWorker sized it for the rings it feeds).
		for k, w := range e.workers {
			var qs []int
			for q := k; q < cfg.WAN.Queues(); q += n {
				qs = append(qs, q)
			}
			st := newSteerer(e, &w.c, qs, e.steerLinks[k], e.ctlLinks[k], e.prioLinks[k], w.pool, n)
			st.self, st.rounds, st.prof = w, 1, &w.prof
			if st.wait > 0 {
				// Holding its queues back would stall this worker's own
				// frames behind another's full ring (Config.SteerWait).
				st.wait = 0
			}
			w.steer = st
			e.steers = append(e.steers, st)
		}
		e.steer = e.steers[0]
	} else {
		var qs []int
		for q := 0; q < cfg.WAN.Queues(); q++ {
			qs = append(qs, q)
		}
		e.steer = newSteerer(e, &e.steerCounters, qs, e.steerLinks[0], e.ctlLinks[0], e.prioLinks[0], nil, 1)
		e.steers = []*steerer{e.steer}
		e.steer.prof = &e.steerProf
		if cfg.Steer == SteerInline {
			e.steer.c = &e.workers[0].c
			e.steer.prof = &e.workers[0].prof
			e.workers[0].steer = e.steer
		}
	}
	for _, st := range e.steers {
		for _, w := range e.workers {
			st.seen = append(st.seen, &w.fragsSeen)
		}
	}
	return e, nil
}

// Workers returns the workers (for stats).
func (e *Engine) Workers() []*Worker { return e.workers }

// Owner returns the external port -> worker table steering uses.
func (e *Engine) Owner() *[65536]uint8 { return e.owner }

// LANOwner returns the worker that owns a LAN IPv4 packet's mapping (by
// its LAN endpoint, so mappings stay endpoint-independent), or -1 when any
// worker will do. LAN RX distribution (RSS, fanout, XDP) should agree with
// it; packets that arrive elsewhere are redirected between workers.
func (e *Engine) LANOwner(ip []byte) int { return e.lanSteer.Owner(ip) }

// Ranges returns each worker's external port range.
func (e *Engine) Ranges() []nat.Range { return e.ranges }

// SetRates changes the shaped rates (bits per second) of the uplink and
// the downlink while the engine runs: the workers' shared buckets take
// the new rate at their next lease. A direction shaped at New may get
// any rate (0: no limit, FQ-CoDel still scheduling); one that was not
// shaped cannot be shaped here (its shapers do not exist).
func (e *Engine) SetRates(up, down uint64) error {
	if (e.upBucket == nil && up != 0) || (e.downBucket == nil && down != 0) {
		return errors.New("dataplane: a direction not shaped at start cannot be shaped while running")
	}
	if e.upBucket != nil {
		e.upBucket.SetRate(up)
	}
	if e.downBucket != nil {
		e.downBucket.SetRate(down)
	}
	return nil
}

// Rates returns the shaped rates (bits per second; 0: not limited).
func (e *Engine) Rates() (up, down uint64) { return e.upBucket.Rate(), e.downBucket.Rate() }

// SetSession publishes a new PPPoE session snapshot (nil: session down).
// Workers pick it up at their next batch; an address change flushes NAT.
// The control plane is woken: its router advertisements follow the
// session's IPv6 state.
func (e *Engine) SetSession(s *hdr.Session) {
	e.session.Store(s)
	e.ctlWaker.wake()
}

// Session returns the current snapshot.
func (e *Engine) Session() *hdr.Session { return e.session.Load() }

// Start launches the worker threads (and the steering thread if
// SteerThread).
func (e *Engine) Start() {
	if e.started {
		return
	}
	if e.simulated {
		panic("dataplane: Start on an engine a Sim steps")
	}
	e.started = true
	e.stop.Store(false)
	e.makeBells()
	threads := len(e.workers)
	if e.cfg.Steer == SteerThread {
		threads++
	}
	raiseProcs(threads)
	for _, w := range e.workers {
		e.wg.Add(1)
		e.ready.Add(1)
		go e.runWorker(w)
	}
	if e.cfg.Steer == SteerThread {
		e.wg.Add(1)
		e.ready.Add(1)
		go e.runSteer()
	}
	// Return once every thread is locked, pinned and about to loop: what
	// setting up a thread costs (and allocates) happens before Start
	// returns, not inside a measurement that begins after it.
	e.ready.Wait()
}

// poll runs one iteration of every worker (and the steering) on the
// calling goroutine and returns the frames handled (Sim.Poll).
func (e *Engine) poll() int {
	n := 0
	if e.cfg.Steer == SteerThread {
		n += e.steerStep()
	}
	// Start at a pseudo-random worker: the shared shaper rate is shared
	// fairly between backlogged workers whatever their order, but the
	// leftovers of a share go to whoever asks first, and a fixed order
	// would give them to worker 0 in every simulation.
	e.pollSeed ^= e.pollSeed << 13
	e.pollSeed ^= e.pollSeed >> 7
	e.pollSeed ^= e.pollSeed << 17
	k := int(e.pollSeed % uint64(len(e.workers)))
	for i := range e.workers {
		w := e.workers[(k+i)%len(e.workers)]
		n += w.step()
		w.c.NATEntries = w.nat.Entries()
		w.pub.publish(&w.c)
	}
	return n
}

// nextEvent returns the earliest time (Clock ns) a shaper has a packet to
// release, or 0 if none is waiting on its rate.
func (e *Engine) nextEvent() int64 {
	var t int64
	for _, w := range e.workers {
		for _, s := range []*shaper.FQCoDel[*nic.Frame]{w.up, w.down} {
			if s == nil || s.Len() == 0 {
				continue
			}
			if n := s.NextSend(); n != 0 && (t == 0 || n < t) {
				t = n
			}
		}
	}
	return t
}

// Flush waits up to timeout for frames queued with Send to be handed to
// the ports (call it before Stop, e.g. after the PPPoE client's last PADT).
func (e *Engine) Flush(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for _, l := range e.inject {
		for l.Data.Len() > 0 {
			if !e.started || time.Now().After(deadline) {
				return false
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	return true
}

// Stop stops every thread and waits for them. The error is for backends
// that fail on the way out; pinning failures are in PinErr.
func (e *Engine) Stop() error {
	e.stop.Store(true)
	for i := range e.wakers {
		if b := e.wakers[i].bell; b != nil {
			b.Ring() // a sleeping thread sees stop now
		}
	}
	e.wg.Wait()
	e.started = false
	return nil
}

// pin pins the calling thread (locked by the caller) to the n-th allowed
// CPU, gives it the configured slice and prepares its realtime Policy
// (nil: none); a failure is kept for PinErr and the thread runs
// unpinned, with the kernel's slice or without realtime priority. The
// caller runs restore before it unlocks the thread: it puts the thread
// back in its ordinary class with the kernel's slice.
func (e *Engine) pin(n int) (rt *pin.Policy, restore func()) {
	unslice := func() {}
	if e.cfg.Pin != nil {
		if err := e.cfg.Pin(n); err != nil {
			e.notePinErr(fmt.Errorf("dataplane: pinning thread %d: %w (running unpinned)", n, err))
		}
	}
	if e.cfg.Slice > 0 {
		var err error
		if unslice, err = pin.ShortSlice(e.cfg.Slice); err != nil {
			e.notePinErr(fmt.Errorf("dataplane: thread %d: %w (the kernel's slice)", n, err))
		}
	}
	if e.cfg.RTPrio > 0 && e.cfg.Poll != PollBusy {
		var err error
		if rt, err = pin.NewPolicy(e.cfg.RTPrio); err != nil {
			e.notePinErr(fmt.Errorf("dataplane: thread %d: %w (no realtime priority)", n, err))
		}
	}
	return rt, func() {
		if rt != nil {
			_ = rt.Normal()
		}
		unslice()
	}
}

// notePinErr keeps the first pinning failure for PinErr.
func (e *Engine) notePinErr(err error) {
	e.errMu.Lock()
	if e.pinErr == nil {
		e.pinErr = err
	}
	e.errMu.Unlock()
}

// portErr notes an error a port returned. Transient ones (a full ring, a
// link that is down) are the port's to count; a permanent one
// (nic.ErrLinkGone: the interface was removed) is kept, and Failed is
// closed, so that the router ends with an error naming the interface.
func (e *Engine) portErr(p nic.Port, err error) {
	if !errors.Is(err, nic.ErrLinkGone) {
		return
	}
	e.failOnce.Do(func() {
		e.errMu.Lock()
		e.failErr = fmt.Errorf("dataplane: port %s: %w", p.Name(), err)
		e.errMu.Unlock()
		close(e.failed)
	})
}

// Failed is closed when a port failed for good (Err says how).
func (e *Engine) Failed() <-chan struct{} { return e.failed }

// Err returns the first permanent port error, or nil.
func (e *Engine) Err() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.failErr
}

// NATEntries returns the live NAT flows of every worker, as last
// published.
func (e *Engine) NATEntries() int {
	n := 0
	for _, w := range e.workers {
		n += int(w.pub.load().NATEntries)
	}
	return n
}

// PinErr returns the first pinning failure (nil if every thread pinned).
func (e *Engine) PinErr() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.pinErr
}

// runWorker runs worker w on a locked, pinned OS thread until Stop.
func (e *Engine) runWorker(w *Worker) {
	defer e.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rt, restore := e.pin(w.id)
	defer restore()
	w.loop(&e.stop, rt, e.ready.Done)
}

func (e *Engine) runSteer() {
	defer e.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rt, restore := e.pin(e.cfg.Workers)
	defer restore()
	var cpu0 int64
	if e.cfg.ThreadCPU != nil {
		cpu0 = e.cfg.ThreadCPU()
	}
	d := e.steer.idler(e.cfg.Poll, &e.wakers[e.cfg.Workers])
	d.rt = rt
	d.c = &e.steerCounters
	e.ready.Done()
	for iter := uint(0); !e.stop.Load(); iter++ {
		if d.shouldPoll() && e.steerStep() > 0 {
			d.busy()
		} else {
			if d.idle == 0 {
				e.steerPub.publish(&e.steerCounters)
			}
			d.empty(&e.stop)
		}
		if iter&63 == 0 {
			e.steerPub.publish(&e.steerCounters)
		}
	}
	if e.cfg.ThreadCPU != nil {
		e.steerPub.cpu.Store(uint64(e.cfg.ThreadCPU() - cpu0))
	}
	d.stopped()
	e.steerPub.publish(&e.steerCounters)
}

// steerStep is one poll of the steering thread, sampled for stage costs
// as a worker's step is.
func (e *Engine) steerStep() int {
	p := &e.steerProf
	p.begin(p.n)
	p.n++
	n := e.steer.poll()
	p.end(n)
	return n
}

// SteerCounters returns the steering thread's counters (SteerThread mode).
func (e *Engine) SteerCounters() Counters {
	return e.steerPub.load()
}

// Totals sums all counters (workers and steering thread).
func (e *Engine) Totals() Counters {
	var t Counters
	for _, w := range e.workers {
		c := w.Counters()
		t.Add(&c)
	}
	if e.cfg.Steer == SteerThread {
		c := e.SteerCounters()
		t.Add(&c)
	}
	return t
}

// Dir tells the control plane where a frame came from or goes.
type Dir uint8

const (
	FromLAN    Dir = iota // exceptions from the LAN side (Ethernet frame)
	FromWAN               // control frames steered off the WAN (Ethernet frame)
	FromWANIP             // decapsulated IPv4 (NAT Local) or IPv6 for the router itself
	Unresolved            // Ethernet+IPv4 or IPv6 for a LAN host whose MAC is unknown
	ToWAN                 // frame to send on the WAN
	ToLAN                 // frame to send on the LAN
	// FromWANSession: our session's control frames (LCP, authentication,
	// IPCP/IPv6CP, the AC's discovery), on a path of their own that other
	// WAN control traffic cannot crowd out (Ethernet frame).
	FromWANSession
	// FromHost (Send): a frame the host stack sent to a destination beyond
	// the LAN (Ethernet to RouterMAC). A worker routes it as a LAN host's
	// frame whose source may be the router's own LAN address (host.go):
	// ownership hand-over, NAT, MSS clamping, shaping and the session.
	FromHost
	// ToHost: an Ethernet frame (to RouterMAC) for the host stack from the
	// fast path: traffic from the session to the router's own LAN address
	// (IPv4, after the NAT) or LAN prefix address (IPv6, after the
	// firewall), and ICMP errors about frames the host sent.
	ToHost
)

// PollControl hands every pending control (WAN) and exception (LAN) frame
// to fn and returns how many it handled. It must be called from a single
// goroutine (the control plane). fn must not retain the frame or its data.
func (e *Engine) PollControl(fn func(d Dir, b []byte)) int {
	var buf [32]*nic.Frame
	total := 0
	// kind: each frame's Dir is in its Kind (the exception links).
	poll := func(l *pipe, d Dir, kind bool) {
		for {
			n := l.Data.Pop(buf[:])
			for _, f := range buf[:n] {
				if kind {
					d = Dir(f.Kind)
				}
				fn(d, f.Data())
			}
			// Give the same frames back: the control plane keeps none.
			for k := 0; k < n; {
				k += l.Ret.Push(buf[k:n])
				if k < n {
					runtime.Gosched()
				}
			}
			total += n
			if n < len(buf) {
				return
			}
		}
	}
	// Our session's control frames first, from every steerer.
	for _, l := range e.prioLinks {
		poll(l, FromWANSession, false)
	}
	for _, l := range e.ctlLinks {
		poll(l, FromWAN, false)
	}
	for _, l := range e.excLinks {
		poll(l, FromLAN, true)
	}
	return total
}

// ErrInjectFull is returned when no worker's injection ring has room: a
// transient condition (the frame was not sent; a later one may be).
var ErrInjectFull = errors.New("dataplane: injection ring full")

// injectStall is how long a worker may hold injected frames without
// making progress before Send moves on to the next worker.
const injectStall = 20 * time.Millisecond

// Send queues a frame (Ethernet header included) for transmission on the
// WAN (ToWAN) or LAN (ToLAN) by a worker, or for a worker to route as the
// host stack's (FromHost). Safe for concurrent use; for the control plane
// and the host-stack path, not for bulk traffic. Frames
// keep their order while the worker carrying them makes progress; one
// that stalls (injectStall) is passed over, and frames it still holds go
// out when it resumes.
func (e *Engine) Send(d Dir, b []byte) error {
	e.injectMu.Lock()
	defer e.injectMu.Unlock()
	var buf [32]*nic.Frame
	for _, l := range e.inject {
		for {
			n := l.Ret.Pop(buf[:])
			e.injectPool.PutN(buf[:n])
			if n < len(buf) {
				break
			}
		}
	}
	f := e.injectPool.Get()
	if f == nil {
		return ErrInjectFull
	}
	if !f.SetData(b) {
		e.injectPool.Put(f)
		return errors.New("dataplane: frame too large")
	}
	f.Kind = uint8(d)
	e.pickInject()
	for i := range e.inject {
		k := (e.injectCur + i) % len(e.inject)
		if e.inject[k].push([]*nic.Frame{f}) == 1 {
			return nil
		}
	}
	e.injectPool.Put(f)
	return ErrInjectFull
}

// pickInject moves injectCur on when its worker holds injected frames and
// its beat has not changed for injectStall. Called with injectMu held.
func (e *Engine) pickInject() {
	if len(e.inject) == 1 || e.inject[e.injectCur].Data.Len() == 0 {
		return
	}
	now := time.Now()
	if b := e.workers[e.injectCur].beat.Load(); b != e.injectBeat || e.injectSeen.IsZero() {
		e.injectBeat, e.injectSeen = b, now
		return
	}
	if now.Sub(e.injectSeen) < injectStall {
		return
	}
	e.injectCur = (e.injectCur + 1) % len(e.inject)
	e.injectBeat, e.injectSeen = e.workers[e.injectCur].beat.Load(), now
}

// StallWorker makes worker i sleep for d at its next step: fault
// injection for tests of a worker that is not scheduled (the other
// workers, steering on a thread of its own, and the session must carry
// on).
func (e *Engine) StallWorker(i int, d time.Duration) {
	e.workers[i].stall.Store(int64(d))
	e.wakers[i].wake()
}

// makeBells gives every polling thread's waker a doorbell, once: the
// bells live as long as the engine (a producer may ring one just after
// its thread stopped) and are closed when the engine is collected.
func (e *Engine) makeBells() {
	if e.bells {
		return
	}
	e.bells = true
	var bells []*nic.Bell
	for i := range e.wakers {
		b, err := nic.NewBell()
		if err != nil {
			continue // that thread naps instead of sleeping on a bell
		}
		e.wakers[i].bell = b
		bells = append(bells, b)
	}
	runtime.AddCleanup(e, func(bs []*nic.Bell) {
		for _, b := range bs {
			b.Close()
		}
	}, bells)
}

// ControlIdle announces that the control plane is about to wait and
// returns the channel a worker or the steering signals when it hands the
// control plane a frame; nil means frames already wait (poll again).
// Call ControlAwake after the wait.
func (e *Engine) ControlIdle() <-chan struct{} {
	e.ctlWaker.sleeping.Store(true)
	for _, ls := range [][]*pipe{e.prioLinks, e.ctlLinks, e.excLinks} {
		for _, l := range ls {
			if l.Data.Len() > 0 {
				e.ctlWaker.sleeping.Store(false)
				return nil
			}
		}
	}
	return e.ctlWaker.ch
}

// ControlAwake ends a wait ControlIdle began.
func (e *Engine) ControlAwake() { e.ctlWaker.sleeping.Store(false) }

// raiseProcs makes sure the Go scheduler has a P for each of threads
// locked polling threads beyond one per CPU. A thread waking from its
// sleep in the kernel must take a P before it runs Go code; with only
// one per CPU, a P held by other goroutines (the control plane, a
// generator in the same process) delays the first frame after a sleep
// by a scheduling round, milliseconds in the tail. The OS still
// schedules threads onto CPUs: an idle worker holds neither.
func raiseProcs(threads int) {
	if want := runtime.NumCPU() + threads; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// Steering returns the steering mode the engine runs (SteerAuto
// resolved).
func (e *Engine) Steering() SteerMode { return e.cfg.Steer }
