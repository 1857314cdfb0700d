package dataplane

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// Steering targets other than a worker index.
const (
	toControl = -1 // PPPoE discovery, PPP control protocols
	toDrop    = -2 // counted as DropBadPPPoE
	// toNotPPPoE: an EtherType the PPPoE client has no use for (LLDP,
	// broadcasts, IP on the bare WAN): dropped where it arrives, counted
	// as DropUnsupported, so a storm of them costs one classify each.
	toNotPPPoE = -5
	toIPv6     = -3 // PPP IPv6 data: steered by flow hash (steer6)
	// toLaterFrag: an IPv4 fragment other than the first; the steerer
	// sends it where its datagram's first fragment went (see frag.go).
	toLaterFrag = -4
	// steerFirst is or-ed into the worker of a first fragment, so that
	// the steerer remembers where its datagram goes.
	steerFirst = 1 << 16
)

// classify reads a WAN frame's headers through hdr views, at fixed
// offsets, and returns the worker that owns it (by inner destination
// port, ICMP echo id, or for ICMP errors the embedded header's source
// port/id) or a negative target, and for a PPPoE session frame the offset
// of its network header (0 otherwise), which decapsulation reuses. It
// never reads past b. Frames whose inner packet cannot be keyed cheaply
// (IP options, truncated headers) go to worker 0, whose full parser drops
// and counts them. A first fragment's worker has steerFirst or-ed in; a
// later fragment is toLaterFrag.
func classify(b []byte, owner *[65536]uint8) (target, l3 int) {
	eth := hdr.Ethernet(b)
	if !eth.IsValid() {
		return toDrop, 0
	}
	o, et := hdr.EthernetLen, eth.Type()
	if et == hdr.EtherTypeVLAN {
		v := hdr.VLAN(b[o:])
		if !v.IsValid() {
			return toDrop, 0
		}
		o, et = o+hdr.VLANLen, v.Type()
	}
	switch et {
	case hdr.EtherTypePPPoESess:
	case hdr.EtherTypePPPoEDisc:
		return toControl, 0
	default:
		return toNotPPPoE, 0
	}
	p := hdr.PPPoE(b[o:])
	if len(p) < hdr.PPPoELen+hdr.PPPLen || p[0] != 0x11 || p.Code() != 0 {
		return toDrop, 0
	}
	l3 = o + hdr.PPPoELen + hdr.PPPLen
	switch p.PPPProto() {
	case hdr.PPPIPv4:
	case hdr.PPPIPv6:
		return toIPv6, l3
	default:
		return toControl, l3 // PPP control: sessionControl reads its session id
	}
	ip := hdr.IPv4(b[l3:])
	if len(ip) < hdr.IPv4MinLen || ip[0] != 0x45 {
		return 0, l3
	}
	first := 0
	if ip.FragOffset() != 0 {
		return toLaterFrag, l3 // a last fragment may carry less than 8 bytes
	} else if ip.MoreFragments() {
		first = steerFirst
	}
	l4 := ip[hdr.IPv4MinLen:]
	if len(l4) < 8 {
		return 0, l3
	}
	switch ip.Protocol() {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		return int(owner[hdr.Ports(l4).Dst()]) | first, l3
	case hdr.ProtoICMP:
		switch l4[0] {
		case hdr.ICMPEchoReply, hdr.ICMPEcho:
			return int(owner[binary.BigEndian.Uint16(l4[4:])]) | first, l3
		case hdr.ICMPDestUnreach, hdr.ICMPTimeExceeded, hdr.ICMPParamProblem:
			in := hdr.IPv4(l4[hdr.ICMPLen:])
			if len(in) < hdr.IPv4MinLen+8 || in[0] != 0x45 {
				return 0, l3
			}
			q := in[hdr.IPv4MinLen:]
			switch in.Protocol() {
			case hdr.ProtoTCP, hdr.ProtoUDP:
				return int(owner[hdr.Ports(q).Src()]), l3
			case hdr.ProtoICMP:
				return int(owner[binary.BigEndian.Uint16(q[4:])]), l3
			}
		}
	}
	return 0, l3
}

// steerer moves WAN frames from the WAN port's RX queues to the owning
// workers in batches. One steerer runs on worker 0's thread (SteerInline)
// or a thread of its own (SteerThread) and reads every WAN queue; with
// SteerLocal each worker runs one over its own queues, hands the frames
// it owns to its worker directly (self) and the others' over rings. Only
// the thread running a steerer touches it.
type steerer struct {
	wan    nic.Port
	queues []int // the WAN RX queues it reads
	owner  *[65536]uint8
	// links[k]: to worker k; nil for self's (SteerLocal: self handles
	// its own frames without a ring).
	links []*pipe
	// self is the worker running this steerer in SteerLocal mode (nil
	// otherwise): frames it owns, and frames any worker may take, go to
	// it directly.
	self    *Worker
	ctl     *pipe // other control frames, rate-limited (consumer: the control goroutine)
	prio    *pipe // our session's control frames (consumer: the control goroutine)
	session func() *hdr.Session
	portErr func(nic.Port, error)
	pool    *framePool
	rx      []*nic.Frame
	out     [][]*nic.Frame // pending batch per worker
	ctlOut  []*nic.Frame
	prioOut []*nic.Frame
	// ctlLimit bounds the control frames that are not our session's
	// (broadcast discovery, other sessions) handed to the control plane;
	// with SteerLocal each worker's steerer has an equal share of the
	// rate and burst, so their sum stays within ctlRate.
	ctlLimit tokenBucket
	// fullSince[k]: when worker k's ring was first seen without room for a
	// batch (0: it has room). Steering waits for a slow worker at most
	// wait; after that the worker's frames are dropped and counted
	// (ringFull[k]) while the other workers' traffic flows.
	fullSince []int64
	// wait is Config.SteerWait in ns (negative: never drop), or 0 for a
	// SteerLocal steerer with SteerWait >= 0: it never holds its queues
	// back, since that would stall self's own frames and cannot make
	// another worker drain sooner; a full ring's frames are dropped and
	// counted at once.
	wait     int64
	ringFull []atomic.Uint64
	// rounds is how many batches poll takes from one queue: one per
	// worker when one steerer feeds them all, one with SteerLocal (its
	// worker has LAN work too).
	rounds  int
	batch   int
	c       *Counters
	clock   func() int64
	rearm   []*nic.Frame
	minFree int
	// prof is the stage sampling of the thread running the steerer.
	prof  *stageProf
	frags fragTable   // datagram -> worker its first fragment was sent to
	seen  []*fragSeen // per worker: datagrams the NAT let in
}

// newSteerer returns a steerer reading queues and feeding links (links[k]
// nil: worker k is self), sending control frames on ctl and prio. pool
// nil gives it a pool of its own, sized to fill every ring it feeds;
// ctlShare divides the control rate limit among steerers.
func newSteerer(e *Engine, c *Counters, queues []int, links []*pipe, ctl, prio *pipe, pool *framePool, ctlShare int) *steerer {
	s := &steerer{
		wan:       e.cfg.WAN,
		queues:    queues,
		owner:     e.owner,
		links:     links,
		ctl:       ctl,
		prio:      prio,
		session:   e.session.Load,
		portErr:   e.portErr,
		wait:      int64(e.cfg.SteerWait),
		ctlLimit:  newTokenBucket(max(ctlRate/ctlShare, 1), max(ctlBurst/ctlShare, 1)),
		fullSince: make([]int64, len(links)),
		ringFull:  make([]atomic.Uint64, len(links)),
		rounds:    len(links),
		batch:     e.cfg.Batch,
		c:         c,
		clock:     steerClock,
		rx:        make([]*nic.Frame, e.cfg.Batch),
		rearm:     make([]*nic.Frame, e.cfg.Batch),
		pool:      pool,
		prof:      &stageProf{}, // its thread's, once the engine assigns it
	}
	if pool == nil {
		// Enough frames to fill every ring and the control rings, plus a batch.
		n := (len(links)+2)*e.cfg.RingSize + 2*e.cfg.Batch
		s.pool = newFramePool(n, n)
	}
	s.out = make([][]*nic.Frame, len(links))
	for i := range s.out {
		s.out[i] = make([]*nic.Frame, 0, e.cfg.Batch)
	}
	s.ctlOut = make([]*nic.Frame, 0, e.cfg.Batch)
	s.prioOut = make([]*nic.Frame, 0, e.cfg.Batch)
	s.minFree = e.cfg.Batch
	return s
}

// mark marks steering's thread entering stage st (sampled steps only).
func (s *steerer) mark(st Stage) {
	if s.prof.on {
		s.prof.enter(st)
	}
}

// steerClock is steering's clock: its cost and its fragment deadlines
// are real time, whatever the shaper's clock.
func steerClock() int64 { return monoClock{}.Now() }

// reclaim takes back the free frames workers returned.
func (s *steerer) reclaim() {
	for _, l := range s.links {
		if l != nil {
			s.reclaimLink(l)
		}
	}
	s.reclaimLink(s.ctl)
	s.reclaimLink(s.prio)
}

func (s *steerer) reclaimLink(l *pipe) {
	for {
		n := l.Ret.Pop(s.rearm)
		s.pool.PutN(s.rearm[:n])
		if n < len(s.rearm) {
			return
		}
	}
}

// poll receives and steers at most rounds batches from each of its WAN
// RX queues and returns the number of frames received. When a worker's
// ring lacks room for a whole batch it leaves the frames in the NIC ring
// (back-pressure instead of drops), for at most Config.SteerWait: a
// worker that stays behind longer loses its own frames (counted), never
// the others' or the session's control frames. A SteerLocal steerer does
// not hold back unless SteerWait < 0 (wait is 0): it drops and counts a
// full ring's frames at once and takes self's.
func (s *steerer) poll() int {
	s.reclaim()
	total := 0
	for _, q := range s.queues {
		// One WAN queue feeds every worker: take up to a batch per
		// worker from it per round, so steering keeps up with all of them.
		for i := 0; i < s.rounds; i++ {
			n := s.pollQueue(q)
			if n < 0 {
				return total
			}
			total += n
			if n < s.batch {
				break
			}
		}
	}
	return total
}

// Steering limits.
const (
	// steerWait is Config.SteerWait's default (ns).
	steerWait = 2e6
	// ctlRate and ctlBurst bound the control frames per second that are
	// not our session's (a PADI or broadcast storm on the access network).
	ctlRate  = 1000
	ctlBurst = 256
)

// pollQueue steers one batch from queue q; -1 means no room downstream
// (held back, or no free frame).
func (s *steerer) pollQueue(q int) int {
	if s.wait != 0 && s.holdBack() {
		return -1
	}
	// The control link is not waited for: a slow control plane must not
	// hold session data back. What does not fit there is dropped and
	// counted (DropRingFull) by push.
	s.mark(StagePort)
	n := s.pool.GetN(s.rx)
	if n == 0 {
		s.c.NoBufferPolls++
		return -1
	}
	got, err := s.wan.Recv(q, s.rx[:n])
	if err != nil {
		s.portErr(s.wan, err)
	}
	s.pool.PutN(s.rx[got:n])
	if got == 0 {
		return 0
	}
	s.mark(StageSteer)
	t0 := s.clock()
	sess := s.session()
	for _, f := range s.rx[:got] {
		w, l3 := classify(f.Data(), s.owner)
		f.L3 = uint16(l3)
		if w >= steerFirst || w == toLaterFrag {
			w = s.steerFragment(f, w, t0)
		}
		switch {
		case w >= 0:
			s.out[w] = append(s.out[w], f)

		case w == toControl:
			switch {
			case sessionControl(f.Data(), l3, sess):
				s.prioOut = append(s.prioOut, f)
			case s.ctlLimit.allow(t0):
				s.ctlOut = append(s.ctlOut, f)
			default:
				s.c.Drops[DropControlLimit]++
				s.pool.Put(f)
			}
		case w == toNotPPPoE:
			s.c.Drops[DropUnsupported]++
			s.pool.Put(f)
		case w == toIPv6:
			k := steer6(f.Data(), l3, len(s.links))
			s.out[k] = append(s.out[k], f)
		default:
			s.c.Drops[DropBadPPPoE]++
			s.pool.Put(f)
		}
	}
	s.mark(StagePort)
	for w, l := range s.links {
		if len(s.out[w]) == 0 || l == nil {
			continue
		}
		k := s.push(l, s.out[w])
		if k < len(s.out[w]) {
			s.ringFull[w].Add(uint64(len(s.out[w]) - k))
		}
		if s.self != nil {
			s.c.SteerRedirected += uint64(k)
		}
		s.out[w] = s.out[w][:0]
	}
	s.c.Exception += uint64(s.push(s.prio, s.prioOut))
	s.prioOut = s.prioOut[:0]
	s.c.Exception += uint64(s.push(s.ctl, s.ctlOut))
	s.ctlOut = s.ctlOut[:0]
	s.c.SteerPackets += uint64(got)
	s.c.SteerNanos += uint64(s.clock() - t0)
	if s.self != nil {
		// Ours (SteerLocal): handled here, on this thread, without a
		// ring, once the others' are on their way.
		own := s.out[s.self.id]
		s.self.takeWAN(own)
		s.out[s.self.id] = own[:0]
	}
	return got
}

// holdBack reports whether a worker's ring lacks room for a batch and
// has lacked it for less than s.wait (always, when s.wait < 0): then the
// queue's frames stay in the NIC ring until it drains.
func (s *steerer) holdBack() bool {
	var now int64
	for k, l := range s.links {
		if l == nil || l.Data.Free() >= s.minFree {
			s.fullSince[k] = 0
			continue
		}
		if now == 0 {
			now = s.clock()
		}
		if s.fullSince[k] == 0 {
			s.fullSince[k] = now
		}
		if s.wait < 0 || now-s.fullSince[k] < s.wait {
			return true
		}
	}
	return false
}

// steerFragment remembers the worker of a first fragment (w has
// steerFirst set) and sends a later one to the worker its first went to
// (worker 0, which drops it, when none is known).
func (s *steerer) steerFragment(f *nic.Frame, w int, now int64) int {
	ip := hdr.IPv4(f.Data()[f.L3:])
	if w >= steerFirst {
		w &^= steerFirst
		s.frags.put(ip, uint32(w), now)
		return w
	}
	for k, t := range s.seen {
		if t.has(ip, now) {
			return k
		}
	}
	if k, ok := s.frags.get(ip, now); ok && int(k) < len(s.links) {
		return int(k)
	}
	return 0
}

func (s *steerer) push(l *pipe, fs []*nic.Frame) int {
	if len(fs) == 0 {
		return 0
	}
	k := l.push(fs)
	if k < len(fs) {
		s.c.Drops[DropRingFull] += uint64(len(fs) - k)
		s.pool.PutN(fs[k:])
	}
	return k
}

// sessionControl reports whether the PPPoE frame b (classify said
// toControl; l3 is 0 for discovery, else where the session frame's
// payload begins) belongs to our session's control traffic, which gets the
// control plane's priority path: with a session up, session frames with
// its id and discovery frames (PADT) from its access concentrator; before
// that, PPPoE frames unicast to us (PADO, PADS, LCP and authentication
// during login). Broadcast discovery (other hosts' PADIs) and other
// sessions' frames are not.
func sessionControl(b []byte, l3 int, s *hdr.Session) bool {
	if b[0]&1 != 0 {
		return false
	}
	if s == nil {
		return true
	}
	if [6]byte(hdr.Ethernet(b).Src()) != s.PeerMAC {
		return false
	}
	if l3 == 0 { // discovery (PADT): classify found no session header
		return true
	}
	return hdr.PPPoE(b[l3-hdr.PPPoELen-hdr.PPPLen:]).SessionID() == s.ID
}

// RingFullDrops returns, per worker, the WAN frames steering dropped
// because that worker's ring stayed full past Config.SteerWait.
func (e *Engine) RingFullDrops() []uint64 {
	out := make([]uint64, len(e.workers))
	for _, s := range e.steers {
		for i := range s.ringFull {
			out[i] += s.ringFull[i].Load()
		}
	}
	return out
}

// steer6 picks the worker for a PPPoE frame carrying IPv6 (ip is the
// offset of its IPv6 header): the flow's owner (flowOwner6), which also
// handles its uplink packets.
func steer6(b []byte, ip, workers int) int {
	if workers == 1 || len(b) < ip+hdr.IPv6Len {
		return 0
	}
	return flowOwner6(hdr.IPv6(b[ip:]), false, workers)
}

// idler returns the idle state of a thread running this steering stage
// on its own (SteerThread), woken by wk.
func (s *steerer) idler(mode PollMode, wk *waker) *idler {
	var ports []nic.Port
	for range s.queues {
		ports = append(ports, s.wan)
	}
	d := newIdler(mode, wk, ports, s.queues)
	d.timedOut = s.checkLinks
	return d
}

// checkLinks probes the WAN queues for a removed interface.
func (s *steerer) checkLinks() {
	for _, q := range s.queues {
		checkLink(s.wan, q, s.portErr)
	}
}

// WANOwner returns the worker steering gives WAN frame b (Ethernet,
// PPPoE session) to: the owner of its inner destination port or echo id,
// the IPv6 flow's owner, worker 0 for IPv4 it cannot key cheaply; or -1
// for frames that are no worker's (control, malformed, not PPPoE) and
// for later fragments (they follow their first). A WAN receive path
// that delivers each frame to the queue of WANOwner's worker lets every
// worker handle its frames where they arrive (SteerLocal).
func (e *Engine) WANOwner(b []byte) int {
	w, l3 := classify(b, e.owner)
	switch {
	case w >= steerFirst:
		return w &^ steerFirst
	case w >= 0:
		return w
	case w == toIPv6:
		return steer6(b, l3, len(e.workers))
	}
	return -1
}
