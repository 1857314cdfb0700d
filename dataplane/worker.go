package dataplane

import (
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/internal/pin"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/shaper"
)

// Frame.Flags bits of frames handed between workers (Frame.Kind holds
// a Dir on the control plane's links).
const (
	flagFromWAN     = 1
	flagRedirected  = 2 // handed over once
	flagRedirected2 = 4 // handed over twice (a hairpin's second hop)
	// flagFromHost: the host stack sent it (Send FromHost): its source
	// may be the router's own address, and nothing of it goes back to the
	// control plane (host.go). It stays with the frame when handed over.
	flagFromHost = 8
	// flagToHost: a downlink frame for the router's own address, waiting
	// in the downlink shaper: it leaves for the host stack, not the LAN.
	flagToHost = 16
)

// Worker is one pinned thread: it owns LAN RX/TX queue k, WAN TX queue k,
// a NAT table for its port range and one shaper per direction. Nothing it
// touches per packet is written by another thread.
type Worker struct {
	id    int
	cfg   *Config
	links workerLinks
	sh    *shared
	// steer is the steering stage this worker runs: every WAN queue's
	// (worker 0, SteerInline) or its own queues' (SteerLocal); nil
	// otherwise.
	steer *steerer
	// portErr reports a port's error to the engine; steerClock is
	// steering's clock (fragsSeen deadlines are in its time).
	portErr    func(nic.Port, error)
	steerClock func() int64
	nat        *nat.Table
	// frags maps downlink datagrams to the LAN host their first fragment
	// was translated for (frag.go).
	frags fragTable
	// fragsSeen publishes those datagrams to the steerer.
	fragsSeen fragSeen
	// fw6 is the IPv6 firewall state of the flows this worker owns.
	fw6 fw6Table

	pool *framePool
	rx   []*nic.Frame
	tmp  []*nic.Frame
	inj  []*nic.Frame // drainInject's
	lanQ []*nic.Frame // pending LAN TX
	wanQ []*nic.Frame // pending WAN TX

	up, down *shaper.FQCoDel[*nic.Frame]

	steerOwed []int // per steerIn link
	redirOwed []int
	redirOut  [][]*nic.Frame
	excOut    []*nic.Frame

	sess    *hdr.Session
	pubAddr uint32
	mss     uint16
	neigh   *Neighbors
	neigh6  *Neighbors6
	lan6    *LAN6
	lanMask uint32
	now     int64
	icmp    tokenBucket

	c     Counters
	pub   counterCell
	steps uint64
	wk    *waker // the worker's (Engine.wakers[id])
	// beat is the worker's step count, for Send to see it making
	// progress; stall is a pending fault-injection sleep (StallWorker).
	beat  atomic.Uint64
	stall atomic.Int64
	sink  byte // keeps touch's loads alive
	// prof is the worker's stage sampling (stages.go); its steerer
	// (SteerInline, SteerLocal) marks into it too.
	prof stageProf
}

// workerLinks are the SPSC links a worker takes frames from and hands
// them to; it is given them at construction.
type workerLinks struct {
	steerIn  []*pipe // the steering stages -> this worker
	redirIn  []*pipe // [j]: worker j -> this worker (nil for itself)
	redirOut []*pipe // [j]: this worker -> worker j (nil for itself)
	exc      *pipe   // this worker -> the control plane
	inject   *pipe   // the control plane -> this worker (frames to send)
}

type upOps struct{ w *Worker }

func (o upOps) Len(f *nic.Frame) int     { return f.Len }
func (o upOps) MarkCE(f *nic.Frame) bool { return markCE(f.Data()) }
func (o upOps) Drop(f *nic.Frame)        { o.w.c.Drops[DropShaper]++; o.w.pool.Put(f) }

type downOps struct{ w *Worker }

func (o downOps) Len(f *nic.Frame) int     { return f.Len - hdr.EthernetLen }
func (o downOps) MarkCE(f *nic.Frame) bool { return markCE(f.Data()[hdr.EthernetLen:]) }

// markCE sets CE on the IPv4 or IPv6 packet b if it is ECN-capable.
func markCE(b []byte) bool {
	if b[0]>>4 == 6 {
		return hdr.IPv6(b).SetECNCE()
	}
	return hdr.IPv4(b).SetECNCE()
}
func (o downOps) Drop(f *nic.Frame) { o.w.c.Drops[DropShaper]++; o.w.pool.Put(f) }

func newWorker(e *Engine, id int) (*Worker, error) {
	cfg := &e.cfg
	w := &Worker{id: id, cfg: cfg, lanMask: cfg.lanMask(), sh: &e.shared,
		portErr: e.portErr, steerClock: steerClock, wk: &e.wakers[id]}
	w.links = workerLinks{exc: e.excLinks[id], inject: e.inject[id],
		redirIn: make([]*pipe, cfg.Workers), redirOut: e.redirect[id]}
	for _, ls := range e.steerLinks {
		if ls[id] != nil { // nil: its own steerer (SteerLocal)
			w.links.steerIn = append(w.links.steerIn, ls[id])
		}
	}
	w.steerOwed = make([]int, len(w.links.steerIn))
	for j := range w.links.redirIn {
		w.links.redirIn[j] = e.redirect[j][id] // nil for j == id
	}
	nc := cfg.NAT
	nc.LANAddr, nc.LANBits = cfg.LANNet, cfg.LANBits
	nc.Ports, nc.Ranges, nc.Worker = e.ranges[id], e.ranges, id
	var err error
	if w.nat, err = nat.New(nc); err != nil {
		return nil, err
	}
	b := cfg.Batch
	frames := cfg.PoolFrames
	if cfg.Steer == SteerLocal {
		// Its steerer receives from this pool: enough more to fill the
		// rings to the other workers and its control rings, plus a batch.
		frames += (cfg.Workers-1)*cfg.RingSize + 2*e.ctlLinks[0].Data.Cap() + 2*b
	}
	w.pool = newFramePool(frames, frames+4*cfg.RingSize*(cfg.Workers+2))
	w.rx = make([]*nic.Frame, b)
	w.tmp = make([]*nic.Frame, b)
	w.inj = make([]*nic.Frame, b)
	w.lanQ = make([]*nic.Frame, 0, b)
	w.wanQ = make([]*nic.Frame, 0, b)
	w.redirOut = make([][]*nic.Frame, cfg.Workers)
	for j := range w.redirOut {
		w.redirOut[j] = make([]*nic.Frame, 0, b)
	}
	w.redirOwed = make([]int, cfg.Workers)
	w.excOut = make([]*nic.Frame, 0, b)
	w.icmp = newTokenBucket(cfg.ICMPRate, cfg.ICMPBurst)
	if !cfg.NoFirewall6 {
		w.fw6 = newFW6(cfg.Firewall6Capacity)
	}
	if cfg.Up.Rate != 0 {
		w.up = shaper.New[*nic.Frame](cfg.Up.Config, e.upBucket, cfg.Clock, upOps{w})
	}
	if cfg.Down.Rate != 0 {
		w.down = shaper.New[*nic.Frame](cfg.Down.Config, e.downBucket, cfg.Clock, downOps{w})
	}
	return w, nil
}

// ID returns the worker index.
func (w *Worker) ID() int { return w.id }

// NAT returns the worker's NAT table (read its Stats only while stopped).
func (w *Worker) NAT() *nat.Table { return w.nat }

// Counters returns the last published counters.
func (w *Worker) Counters() Counters {
	return w.pub.load()
}

// releaseCredit hands back the credit the shapers' empty queues keep
// (shaper.CreditKeep): a sleeping worker holds none of the rate.
func (w *Worker) releaseCredit() {
	if w.up != nil {
		w.up.ReleaseCredit()
	}
	if w.down != nil {
		w.down.ReleaseCredit()
	}
}

// loop runs the worker on the calling thread (locked and pinned by the
// engine, with its realtime Policy rt or nil) until stop is set; ready is
// called once it is about to loop.
func (w *Worker) loop(stop *atomic.Bool, rt *pin.Policy, ready func()) {
	var cpu0 int64
	if w.cfg.ThreadCPU != nil {
		cpu0 = w.cfg.ThreadCPU()
	}
	lanF, _ := w.cfg.LAN.(nic.Flusher)
	wanF, _ := w.cfg.WAN.(nic.Flusher)
	d := w.idler()
	d.rt = rt
	d.beforeSleep = func() {
		w.releaseCredit()
		w.publish(cpu0, true)
	}
	ready()
	for iter := uint(0); !stop.Load(); iter++ {
		// After an empty poll, poll again only when a source has work
		// or a shaper release is due (no clock read, no system call
		// per empty poll), or always for ports that cannot tell.
		if d.shouldPoll() && w.step() > 0 {
			d.busy()
		} else {
			if d.idle == 0 {
				// Idle: push out anything a port still holds, and
				// publish, so a quiet engine's counters are exact (its
				// CPU time is published before it sleeps: the thread
				// CPU clock is a system call).
				if lanF != nil {
					_ = lanF.Flush(w.id)
				}
				if wanF != nil {
					_ = wanF.Flush(w.id)
				}
				w.publish(cpu0, false)
			}
			d.empty(stop)
		}
		// The thread CPU clock is a system call: read it now and then.
		if iter&63 == 0 {
			w.publish(cpu0, iter&255 == 0)
		}
	}
	// What the control plane queued last (a PADT on shutdown) still goes
	// out.
	w.drainInject()
	w.flush()
	d.stopped()
	w.publish(cpu0, true)
}

// publish makes the worker's counters and CPU time visible to readers.
// A publish is one atomic store per counter word, so a busy worker does
// it every 64th iteration, not per batch.
func (w *Worker) publish(cpu0 int64, cpu bool) {
	w.c.NATEntries = w.nat.Entries()
	w.pub.publish(&w.c)
	if cpu && w.cfg.ThreadCPU != nil {
		w.pub.cpu.Store(uint64(w.cfg.ThreadCPU() - cpu0))
	}
}

// idler returns the worker's idle state: it sleeps on its LAN queue, the
// WAN queues it steers (SteerInline, SteerLocal) and its doorbell.
func (w *Worker) idler() *idler {
	ports, qs := []nic.Port{w.cfg.LAN}, []int{w.id}
	if w.steer != nil {
		for _, q := range w.steer.queues {
			ports, qs = append(ports, w.steer.wan), append(qs, q)
		}
	}
	d := newIdler(w.cfg.Poll, w.wk, ports, qs)
	d.c = &w.c
	d.ready = w.ready
	d.nextDue = w.nextDue
	d.timedOut = func() {
		checkLink(w.cfg.LAN, w.id, w.portErr)
		if w.steer != nil {
			w.steer.checkLinks() // the WAN queues it reads, this worker's included
		} else {
			checkLink(w.cfg.WAN, w.id, w.portErr)
		}
	}
	return d
}

// checkLink probes queue q of p if it is a nic.LinkChecker and reports an
// error to portErr.
func checkLink(p nic.Port, q int, portErr func(nic.Port, error)) {
	if c, ok := p.(nic.LinkChecker); ok {
		if err := c.CheckLink(q); err != nil {
			portErr(p, err)
		}
	}
}

// ready reports, without a system call or a clock read, whether a
// source other than the ports has work: a frame on a ring, frames
// waiting to be sent, a stall to serve (the idler looks at the ports).
func (w *Worker) ready() bool {
	l := &w.links
	if l.inject.Data.Len() > 0 || len(w.lanQ)+len(w.wanQ) > 0 || w.stall.Load() != 0 {
		return true
	}
	for _, r := range l.steerIn {
		if r.Data.Len() > 0 {
			return true
		}
	}
	for _, r := range l.redirIn {
		if r != nil && r.Data.Len() > 0 {
			return true
		}
	}
	return false
}

// nextDue returns how long until a shaper may release a packet (0: now;
// negative: no packet waits on the rate). It caps the wait at napLong:
// another worker's lease can move the release either way.
func (w *Worker) nextDue() time.Duration {
	due := time.Duration(-1)
	for _, s := range [2]*shaper.FQCoDel[*nic.Frame]{w.up, w.down} {
		if s == nil || s.Len() == 0 {
			continue
		}
		t := s.NextSend()
		if t == 0 {
			return 0
		}
		d := time.Duration(t - w.cfg.Clock.Now())
		if d <= 0 {
			return 0
		}
		d = min(d, napLong)
		if due < 0 || d < due {
			due = d
		}
	}
	return due
}

// step runs one iteration: steering (worker 0 with SteerInline, every
// worker with SteerLocal, which handles its own WAN frames there), one
// LAN batch, the frames steered to this worker, redirected frames,
// shapers, flush.
// It returns the number of frames it handled.
func (w *Worker) step() int {
	if w.stall.Load() != 0 {
		time.Sleep(time.Duration(w.stall.Swap(0)))
	}
	w.beat.Store(w.steps)
	w.prof.begin(w.steps)
	w.now = w.cfg.Clock.Now()
	w.refreshSession()
	w.neigh = w.sh.neighbors.Load()
	w.neigh6 = w.sh.neighbors6.Load()
	w.lan6 = w.sh.lan6.Load()
	work := w.drainInject()
	if w.steer != nil {
		work += w.steer.poll()
	}
	// LAN RX.
	w.enter(StagePort)
	n := w.pool.GetN(w.rx)
	if n > 0 {
		got, err := w.cfg.LAN.Recv(w.id, w.rx[:n])
		if err != nil {
			w.portErr(w.cfg.LAN, err)
		}
		w.pool.PutN(w.rx[got:n])
		w.c.RxLAN += uint64(got)
		for _, f := range w.rx[:got] {
			w.fromLAN(f)
		}
		work += got
	} else {
		w.c.NoBufferPolls++
	}
	// WAN frames steered to us.
	for i, l := range w.links.steerIn {
		w.enter(StagePort)
		got := l.Data.Pop(w.rx)
		w.c.RxWAN += uint64(got)
		w.touch(w.rx[:got])
		for _, f := range w.rx[:got] {
			w.fromWAN(f)
		}
		w.enter(StagePort)
		w.steerOwed[i] = giveBack(l, w.pool, w.steerOwed[i]+got, w.tmp)
		work += got
	}
	// Frames other workers redirected to us.
	for j, rl := range w.links.redirIn {
		if rl == nil {
			continue
		}
		w.enter(StagePort)
		k := rl.Data.Pop(w.rx)
		for _, f := range w.rx[:k] {
			if f.Flags&flagFromWAN != 0 {
				w.inbound(f, true)
			} else {
				w.fromLAN(f)
			}
		}
		w.enter(StagePort)
		w.redirOwed[j] = giveBack(rl, w.pool, w.redirOwed[j]+k, w.tmp)
		work += k
	}
	w.shape()
	w.enter(StagePort)
	w.flush()
	w.reclaim()
	w.enter(StageOther)
	// Incremental NAT expiry: 256 slots every 8th step (lookups already
	// treat expired entries as gone; this reclaims them).
	if w.steps++; w.steps&7 == 0 {
		w.nat.Expire(w.now, 256)
	}
	w.prof.end(work)
	return work
}

// takeWAN handles WAN frames this worker's own steerer (SteerLocal)
// found it owns: no ring, no other core has touched them.
func (w *Worker) takeWAN(fs []*nic.Frame) {
	w.c.RxWAN += uint64(len(fs))
	for _, f := range fs {
		w.fromWAN(f)
	}
}

func (w *Worker) refreshSession() {
	s := w.sh.session.Load()
	if s == w.sess {
		return
	}
	w.sess = s
	if s == nil {
		return
	}
	if s.LocalAddr != w.pubAddr {
		w.pubAddr = s.LocalAddr
		w.nat.SetPublicAddr(s.LocalAddr)
	}
	w.mss = uint16(sessionMTU(s) - hdr.IPv4MinLen - hdr.TCPMinLen)
}

// reclaim takes back frames from links where this worker is the producer.
func (w *Worker) reclaim() {
	for _, l := range w.links.redirOut {
		if l != nil {
			w.reclaimLink(l)
		}
	}
	w.reclaimLink(w.links.exc)
	// (The injection links are the other way round: worker k consumes
	// inject[k].Data and produces its Ret; Engine.Send reclaims.)
}

func (w *Worker) reclaimLink(l *pipe) {
	for {
		n := l.Ret.Pop(w.tmp)
		w.pool.PutN(w.tmp[:n])
		if n < len(w.tmp) {
			return
		}
	}
}

func (w *Worker) drop(f *nic.Frame, r Reason) {
	w.c.Drops[r]++
	w.pool.Put(f)
}

// toException queues f for the control plane with its Dir in f.Kind.
func (w *Worker) toException(f *nic.Frame, d Dir) {
	f.Kind = uint8(d)
	w.excOut = append(w.excOut, f)
	if len(w.excOut) == cap(w.excOut) {
		w.flushException()
	}
}

func (w *Worker) redirect(f *nic.Frame, to int, fromWAN bool) {
	if to < 0 || to >= len(w.redirOut) || to == w.id {
		w.drop(f, DropNAT)
		return
	}
	if f.Flags&flagRedirected != 0 {
		f.Flags |= flagRedirected2
	}
	f.Flags |= flagRedirected
	if fromWAN {
		f.Flags |= flagFromWAN
	}
	w.c.Redirected++
	w.redirOut[to] = append(w.redirOut[to], f)
	if len(w.redirOut[to]) == cap(w.redirOut[to]) {
		w.flushRedirect(to)
	}
}

// shape moves what the rate allows from the shapers to the TX queues.
func (w *Worker) shape() {
	if w.up != nil {
		for {
			w.enter(StageShaperDeq)
			n := w.up.DequeueAt(w.tmp, w.now)
			for _, f := range w.tmp[:n] {
				w.toWAN(f)
			}
			if n < len(w.tmp) {
				break
			}
		}
	}
	if w.down != nil {
		for {
			w.enter(StageShaperDeq)
			n := w.down.DequeueAt(w.tmp, w.now)
			for _, f := range w.tmp[:n] {
				if f.Flags&flagToHost != 0 {
					w.handToHost(f)
					continue
				}
				w.lanQ = append(w.lanQ, f)
				if len(w.lanQ) == cap(w.lanQ) {
					w.flushLAN()
				}
			}
			if n < len(w.tmp) {
				break
			}
		}
	}
}

func (w *Worker) flush() {
	w.flushWAN()
	w.flushLAN()
	for j := range w.redirOut {
		w.flushRedirect(j)
	}
	w.flushException()
}

func (w *Worker) flushWAN() {
	if len(w.wanQ) == 0 {
		return
	}
	var prev Stage
	if w.prof.on {
		prev = w.prof.enter(StagePort)
	}
	n, err := w.cfg.WAN.Send(w.id, w.wanQ)
	if err != nil {
		w.portErr(w.cfg.WAN, err)
	}
	w.c.TxWAN += uint64(n)
	if n < len(w.wanQ) {
		w.c.Drops[DropTxFull] += uint64(len(w.wanQ) - n)
	}
	w.pool.PutN(w.wanQ)
	w.wanQ = w.wanQ[:0]
	if w.prof.on {
		w.prof.resume(prev)
	}
}

func (w *Worker) flushLAN() {
	if len(w.lanQ) == 0 {
		return
	}
	var prev Stage
	if w.prof.on {
		prev = w.prof.enter(StagePort)
	}
	n, err := w.cfg.LAN.Send(w.id, w.lanQ)
	if err != nil {
		w.portErr(w.cfg.LAN, err)
	}
	w.c.TxLAN += uint64(n)
	if n < len(w.lanQ) {
		w.c.Drops[DropTxFull] += uint64(len(w.lanQ) - n)
	}
	w.pool.PutN(w.lanQ)
	w.lanQ = w.lanQ[:0]
	if w.prof.on {
		w.prof.resume(prev)
	}
}

func (w *Worker) flushRedirect(j int) {
	q := w.redirOut[j]
	if len(q) == 0 {
		return
	}
	k := w.links.redirOut[j].push(q)
	if k < len(q) {
		w.c.Drops[DropRingFull] += uint64(len(q) - k)
		w.pool.PutN(q[k:])
	}
	w.redirOut[j] = q[:0]
}

func (w *Worker) flushException() {
	if len(w.excOut) == 0 {
		return
	}
	k := w.links.exc.push(w.excOut)
	w.c.Exception += uint64(k)
	if k < len(w.excOut) {
		w.c.Drops[DropException] += uint64(len(w.excOut) - k)
		w.pool.PutN(w.excOut[k:])
	}
	w.excOut = w.excOut[:0]
}

// drainInject sends frames the control plane queued for this worker, and
// routes those the host stack sent (FromHost).
func (w *Worker) drainInject() int {
	l := w.links.inject
	n := l.Data.Pop(w.inj)
	for i, f := range w.inj[:n] {
		if Dir(f.Kind) == FromHost {
			w.fromHost(f)
			continue
		}
		p := w.cfg.WAN
		if Dir(f.Kind) == ToLAN {
			p = w.cfg.LAN
		}
		k, err := p.Send(w.id, w.inj[i:i+1])
		if err != nil {
			w.portErr(p, err)
		}
		if p == w.cfg.LAN {
			w.c.TxLAN += uint64(k)
		} else {
			w.c.TxWAN += uint64(k)
		}
		if k == 0 {
			w.c.Drops[DropTxFull]++
		}
	}
	// Return the same frames (now empty) to the control plane's pool.
	for k := 0; k < n; {
		k += l.Ret.Push(w.inj[k:n])
	}
	return n
}

// touch reads the first bytes of every frame of a batch another core
// filled, before any is processed: the loads are independent, so the CPU
// overlaps their cache misses instead of taking them one packet at a time
// (Go has no prefetch intrinsic).
func (w *Worker) touch(fs []*nic.Frame) {
	var x byte
	for _, f := range fs {
		if f.Len > 0 {
			x ^= f.Buf[f.Off]
		}
		// The second line holds an IPv6 packet's ports (and the end of
		// its addresses) behind PPPoE.
		if f.Len > 64 {
			x ^= f.Buf[f.Off+64]
		}
	}
	w.sink ^= x
}
