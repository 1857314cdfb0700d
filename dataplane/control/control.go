package control

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// Config configures the control plane of an Engine.
type Config struct {
	// WANMAC is the WAN port's MAC (source of PPPoE control frames).
	WANMAC [6]byte
	// Host, if set, is the host stack's port (a TAP carrying the router's
	// LAN address and RouterMAC): LAN frames for the router go there, and
	// so does what the session sends to the router's own addresses; what
	// it sends goes out on the LAN, or, beyond the LAN, through the fast
	// path into the session (host.go). Without it the control plane
	// answers ARP and ICMP echo for the router's addresses itself.
	Host nic.Port
	// HostGateway is the MAC the host stack is given for the addresses
	// beyond the LAN (the proxy ARP and ND answers, host.go); zero means
	// RouterMAC. A host port on the LAN interface itself (netmap's host
	// rings, whose stack has RouterMAC as its own address) needs another
	// one: a BSD stack ignores an ARP answer from its own MAC and loops
	// a frame addressed to its own MAC back into itself.
	HostGateway [6]byte
	// Queue is the number of WAN control frames buffered for the PPPoE
	// client (64).
	Queue int
	// RA is what the router advertises on the LAN while the engine has an
	// IPv6 LAN prefix (ipv6.go); SetRA changes it.
	RA RAConfig
	// WAN6, if set, receives IPv6 packets for the router from the session
	// that the control plane does not answer itself (DHCPv6 replies). It
	// runs on the exception goroutine and must not keep ip.
	WAN6 func(ip []byte)
}

// MaxNeighbors bounds the LAN neighbour table the control plane learns.
const MaxNeighbors = 16384

// ExceptionQueue is how many exception frames (Dir FromLAN, Unresolved,
// FromWANIP) wait for the exception goroutine; more are dropped and
// counted (Stats.QueueFull).
const ExceptionQueue = 256

// Stats are the control plane's counters.
type Stats struct {
	WANFrames   uint64 `json:"wan_frames"`  // control frames for the PPPoE client
	WANDropped  uint64 `json:"wan_dropped"` // ... dropped (queue full)
	ARPReplies  uint64 `json:"arp_replies"`
	ARPLearned  uint64 `json:"arp_learned"`
	ARPRequests uint64 `json:"arp_requests"` // sent to resolve LAN next hops, and to probe them (NeighborProbe)
	// NeighborProbes: unicast ARP requests and neighbour solicitations
	// sent to learned neighbours near the end of their NeighborTTL (in
	// ARPRequests and IPv6.NSSent too).
	NeighborProbes uint64 `json:"neighbor_probes"`
	EchoReplies    uint64 `json:"echo_replies"` // ICMP echo answered for the router
	ToHost         uint64 `json:"to_host"`      // frames written to the host stack
	FromHost       uint64 `json:"from_host"`    // frames from the host stack passed on (LAN or session)
	// HostRouted: frames from the host stack beyond the LAN, handed to
	// the fast path for the session (in FromHost too); HostProxied: its
	// ARP requests and neighbour solicitations for addresses beyond the
	// LAN, answered with the router's MAC; HostDropped: frames from or
	// for the host stack not passed on (a full ring or port).
	HostRouted  uint64 `json:"host_routed"`
	HostProxied uint64 `json:"host_proxied"`
	HostDropped uint64 `json:"host_dropped"`
	Ignored     uint64 `json:"ignored"` // exceptions nobody handles (counted, dropped)
	// QueueFull: exceptions dropped with ExceptionQueue frames waiting
	// (counted in Ignored too).
	QueueFull uint64 `json:"queue_full"`
	// Frames for unresolved LAN hosts (see HoldPerHost): offered, sent once
	// the host answered ARP, given up (queue full, HoldTimeout, or not
	// sent), and waiting now: Held = HeldSent + HeldDropped + HeldWaiting.
	Held        uint64 `json:"held"`
	HeldSent    uint64 `json:"held_sent"`
	HeldDropped uint64 `json:"held_dropped"`
	HeldWaiting int    `json:"held_waiting"`
	// IPv6: Neighbor Discovery, router advertisements, echo.
	IPv6 Stats6 `json:"ipv6"`
}

// Control is the off-fast-path side of an Engine: one goroutine (Run)
// takes control and exception frames from the workers and feeds PPPoE
// control frames to the client through a WANConn; a second one, fed by
// Run in order through a bounded queue of frame copies, answers or
// forwards LAN exceptions, learns and resolves LAN neighbours (ARP, ND),
// and sends frames back through the engine. Nothing here runs per data
// packet.
type Control struct {
	e   *dataplane.Engine
	cfg Config
	// The engine's LAN addressing (dataplane.Config, fixed at New).
	routerMAC                   [6]byte
	hostGW                      [6]byte // Config.HostGateway, or routerMAC
	routerAddr, lanNet, lanMask uint32
	lanBits                     int

	in   chan []byte // WAN control frames for the PPPoE client
	free chan []byte
	// inPrio carries our session's control frames (FromWANSession) with
	// buffers of their own: other WAN control traffic, however much,
	// cannot take their place. The client reads it first.
	inPrio   chan []byte
	wakeRead chan struct{} // WANConn.WakeReader
	freePrio chan []byte
	stats    struct {
		wan, wanDrop, arpRep, arpLearn, arpReq, echo, toHost, fromHost, ignored, queueFull atomic.Uint64
		hostRouted, hostProxied, hostDropped, neighProbes                                  atomic.Uint64
	}
	// Exceptions travel from Run to the exception goroutine in excQueue,
	// each in its own buffer from excFree: Run never blocks (with none
	// free it drops), and the goroutine takes them in the order they came.
	// excQueue has room for every buffer and the nil that stops the
	// goroutine.
	excFree    chan *exception
	excQueue   chan *exception
	dispatchFn func(dataplane.Dir, []byte)
	hostRx     []*nic.Frame
	hostMu     sync.Mutex
	hostTx     []*nic.Frame // sendHost's (hostMu)
	closed     chan struct{}
	once       sync.Once
	arpMu      sync.Mutex
	lastARP    map[uint32]time.Time
	// lastMove: when a known host's MAC last changed (locktime).
	lastMove map[uint32]time.Time
	hold     holdQueue[uint32]
	hold6    holdQueue[hdr.Addr6]
	v6       control6
	// lastMove6: when a known IPv6 neighbour's MAC last changed.
	lastMove6 map[hdr.Addr6]time.Time
	heldSent  atomic.Uint64 // held frames sent
}

// exception is a copy of one exception frame (f.Off is nic.Headroom)
// and where it came from.
type exception struct {
	d dataplane.Dir
	f nic.Frame
}

// New returns the control plane for e.
func New(e *dataplane.Engine, cfg Config) *Control {
	if cfg.Queue <= 0 {
		cfg.Queue = 64
	}
	ec := e.Config()
	c := &Control{e: e, cfg: cfg, routerMAC: ec.RouterMAC, routerAddr: ec.RouterAddr, lanNet: ec.LANNet,
		lanMask: ec.LANMask(), lanBits: ec.LANBits,
		in: make(chan []byte, cfg.Queue), free: make(chan []byte, cfg.Queue),
		wakeRead: make(chan struct{}, 1), inPrio: make(chan []byte, cfg.Queue), freePrio: make(chan []byte, cfg.Queue),
		excFree: make(chan *exception, ExceptionQueue), excQueue: make(chan *exception, ExceptionQueue+1),
		closed: make(chan struct{}), lastARP: map[uint32]time.Time{}, lastMove: map[uint32]time.Time{}}
	for i := 0; i < cfg.Queue; i++ {
		c.free <- make([]byte, nic.BufSize)
		c.freePrio <- make([]byte, nic.BufSize)
	}
	exc := make([]exception, ExceptionQueue)
	for i, f := range nic.NewFrames(ExceptionQueue) {
		exc[i].f = *f
		c.excFree <- &exc[i]
	}
	c.dispatchFn = c.dispatch
	c.v6.ra = cfg.RA
	c.v6.ra.setDefaults(true)
	c.v6.nsLimit = dataplane.NewTokenBucket(NSRate, NSRate)
	for i := range c.v6.srcLimit {
		c.v6.srcLimit[i] = dataplane.NewTokenBucket(srcRate, srcBurst)
	}
	c.v6.rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x70707066))
	c.v6.srcSeed = maphash.MakeSeed()
	c.hostGW = cfg.HostGateway
	if c.hostGW == ([6]byte{}) {
		c.hostGW = c.routerMAC
	}
	if cfg.Host != nil {
		c.hostRx = nic.NewFrames(32)
		c.hostTx = nic.NewFrames(1)
	}
	return c
}

// Stats returns the counters.
func (c *Control) Stats() Stats {
	s := Stats{WANFrames: c.stats.wan.Load(), WANDropped: c.stats.wanDrop.Load(),
		ARPReplies: c.stats.arpRep.Load(), ARPLearned: c.stats.arpLearn.Load(), ARPRequests: c.stats.arpReq.Load(),
		EchoReplies: c.stats.echo.Load(), ToHost: c.stats.toHost.Load(), FromHost: c.stats.fromHost.Load(),
		Ignored: c.stats.ignored.Load(), QueueFull: c.stats.queueFull.Load(), HeldSent: c.heldSent.Load(),
		HostRouted: c.stats.hostRouted.Load(), HostProxied: c.stats.hostProxied.Load(), HostDropped: c.stats.hostDropped.Load(),
		NeighborProbes: c.stats.neighProbes.Load()}
	s.Held, s.HeldDropped, s.HeldWaiting = c.hold.counts()
	h6, d6, w6 := c.hold6.counts()
	s.Held, s.HeldDropped, s.HeldWaiting = s.Held+h6, s.HeldDropped+d6, s.HeldWaiting+w6
	s.IPv6 = c.Stats6()
	return s
}

// Run polls until ctx is done; one Run at a time. Exceptions are handled
// on a goroutine of its own, in the order they came (a TCP session to the
// router's host stack must not see its segments reordered), through a
// queue of ExceptionQueue frames: a flood aimed at the router is dropped
// and counted there, never queued without bound. Run returns once that
// goroutine has handled what was queued.
func (c *Control) Run(ctx context.Context) error {
	done := make(chan struct{})
	go c.exceptions(done)
	defer func() {
		c.excQueue <- nil // never blocks: excQueue has room for it
		<-done
	}()
	defer c.once.Do(func() { close(c.closed) })
	// Run sleeps until a worker or the steering hands it a frame
	// (Engine.ControlIdle), the host port has one, or its housekeeping is
	// due (hold queue expiry, router advertisements, neighbour sweeps,
	// which it looks at every tick): no polling.
	tick := time.NewTimer(controlTick)
	defer tick.Stop()
	hostReady := make(chan struct{}, 1)
	if c.cfg.Host != nil {
		hctx, hcancel := context.WithCancel(ctx)
		defer hcancel()
		go nic.Notify(hctx, c.cfg.Host, 0, time.Second, hostReady)
	}
	lastExpire := time.Now()
	for {
		n := c.e.PollControl(c.dispatchFn)
		n += c.pollHost()
		now := time.Now()
		if now.Sub(lastExpire) > time.Second {
			c.hold.expire(now) // frames for hosts that never answered
			c.hold6.expire(now)
			lastExpire = now
		}
		c.advertise(now)
		c.sweepNeighbors(now)
		if n > 0 {
			continue
		}
		wake := c.e.ControlIdle()
		if wake == nil {
			continue
		}
		if !tick.Stop() {
			select {
			case <-tick.C:
			default:
			}
		}
		tick.Reset(controlTick)
		select {
		case <-ctx.Done():
			c.e.ControlAwake()
			return ctx.Err()
		case <-wake:
		case <-hostReady:
		case <-tick.C:
		}
		c.e.ControlAwake()
	}
}

// controlTick is how often an idle control plane looks at its
// housekeeping (hold queues, RAs, neighbour sweeps): those run on second
// and minute scales. A new prefix or session state wakes it at once
// (Engine.SetLAN6, SetSession).
const controlTick = time.Second

func (c *Control) pollHost() int {
	if c.cfg.Host == nil {
		return 0
	}
	for _, f := range c.hostRx {
		f.Reset()
	}
	n, err := c.cfg.Host.Recv(0, c.hostRx)
	if err != nil {
		return 0
	}
	for _, f := range c.hostRx[:n] {
		c.fromHost(f)
	}
	return n
}

// dispatch takes one frame from PollControl (Run's goroutine).
func (c *Control) dispatch(d dataplane.Dir, b []byte) {
	switch d {
	case dataplane.FromWANSession:
		c.toClient(c.inPrio, c.freePrio, b)
	case dataplane.FromWAN:
		c.toClient(c.in, c.free, b)
	default:
		c.queueException(d, b)
	}
}

// queueException queues a copy of b for the exception goroutine; with
// ExceptionQueue frames waiting (or b too long for a frame) it is dropped
// and counted.
func (c *Control) queueException(d dataplane.Dir, b []byte) {
	select {
	case x := <-c.excFree:
		x.f.Reset()
		if !x.f.SetData(b) {
			c.excFree <- x
			c.stats.ignored.Add(1)
			return
		}
		x.d = d
		c.excQueue <- x // never blocks: it has room for every buffer
	default:
		c.stats.queueFull.Add(1)
		c.stats.ignored.Add(1)
	}
}

// exceptions handles queued exceptions until it takes a nil, then closes
// done.
func (c *Control) exceptions(done chan<- struct{}) {
	defer close(done)
	for x := range c.excQueue {
		if x == nil {
			return
		}
		c.handle(x.d, &x.f)
		c.excFree <- x
	}
}

// toClient queues a copy of b for the PPPoE client on in, with a buffer
// from free; with none free it is dropped and counted.
func (c *Control) toClient(in, free chan []byte, b []byte) {
	select {
	case buf := <-free:
		n := copy(buf, b)
		in <- buf[:n]
		c.stats.wan.Add(1)
	default:
		c.stats.wanDrop.Add(1)
	}
}

// handle handles one exception; f is a copy the handler may change (it
// has nic.Headroom in front).
func (c *Control) handle(d dataplane.Dir, f *nic.Frame) {
	b := f.Data()
	switch d {
	case dataplane.FromLAN:
		c.fromLAN(b)
	case dataplane.Unresolved:
		if len(b) >= hdr.EthernetLen && hdr.Ethernet(b).Type() == hdr.EtherTypeIPv6 {
			c.unresolved6(b)
			return
		}
		if len(b) < hdr.EthernetLen+hdr.IPv4MinLen {
			c.stats.ignored.Add(1)
			return
		}
		dst := hdr.IPv4(b[hdr.EthernetLen:]).Dst()
		c.hold.add(dst, b, time.Now())
		c.resolve(dst)
		// The host may have answered between the worker's lookup and now.
		if mac, ok := c.e.Neighbors().Lookup(dst); ok {
			c.sendHeld(dst, mac)
		}
	case dataplane.ToHost:
		c.toHostFrame(b)
	case dataplane.FromWANIP:
		if len(b) > 0 && b[0]>>4 == 6 {
			if !c.fromWAN6(f) {
				c.stats.ignored.Add(1)
			}
			return
		}
		if !c.echoReplyWAN(f) {
			c.stats.ignored.Add(1)
		}
	default:
		c.stats.ignored.Add(1)
	}
}

// moveAllowed reports whether a known host's entry may change now: a
// gratuitous ARP always moves it, any other ARP not within a second of
// the last change. It records the change.
func (c *Control) moveAllowed(ip uint32, gratuitous bool) bool {
	now := time.Now()
	c.arpMu.Lock()
	defer c.arpMu.Unlock()
	if t, ok := c.lastMove[ip]; ok && !gratuitous && now.Sub(t) < time.Second {
		return false
	}
	if len(c.lastMove) >= MaxNeighbors {
		clear(c.lastMove)
	}
	c.lastMove[ip] = now
	return true
}

// sendHeld sends the frames held for ip, now that its MAC is known.
func (c *Control) sendHeld(ip uint32, mac [6]byte) { sendHeldFrom(c, &c.hold, ip, mac) }

// sendHeldFrom sends the frames q holds for ip to mac.
func sendHeldFrom[K comparable](c *Control, q *holdQueue[K], ip K, mac [6]byte) {
	frames := q.take(ip, time.Now())
	if frames == nil {
		return
	}
	failed := 0
	for _, b := range frames {
		copy(b[0:6], mac[:])
		if c.e.Send(dataplane.ToLAN, b) == nil {
			c.heldSent.Add(1)
		} else {
			failed++
		}
	}
	if failed > 0 {
		q.notSent(failed)
	}
	q.giveBack(frames)
}

// resolve sends an ARP request for a LAN address (at most once a second).
func (c *Control) resolve(ip uint32) {
	now := time.Now()
	c.arpMu.Lock()
	t, ok := c.lastARP[ip]
	if ok && now.Sub(t) < time.Second {
		c.arpMu.Unlock()
		return
	}
	if len(c.lastARP) > 4096 {
		clear(c.lastARP)
	}
	c.lastARP[ip] = now
	c.arpMu.Unlock()
	c.sendARPRequest(ip, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

// sendARPRequest sends an ARP request for ip from the router, to the
// Ethernet address dst (broadcast to resolve; a host's own to probe it),
// and reports whether the LAN port took it.
func (c *Control) sendARPRequest(ip uint32, dst [6]byte) bool {
	var buf [42]byte
	b := buf[:]
	copy(b[0:6], dst[:])
	copy(b[6:12], c.routerMAC[:])
	binary.BigEndian.PutUint16(b[12:], hdr.EtherTypeARP)
	arp := b[14:]
	binary.BigEndian.PutUint32(arp[0:], 0x00010800) // Ethernet, IPv4
	arp[4], arp[5] = 6, 4
	binary.BigEndian.PutUint16(arp[6:], 1) // request
	copy(arp[8:14], c.routerMAC[:])
	binary.BigEndian.PutUint32(arp[14:], c.routerAddr)
	clear(arp[18:24])
	binary.BigEndian.PutUint32(arp[24:], ip)
	if c.e.Send(dataplane.ToLAN, b) != nil {
		return false
	}
	c.stats.arpReq.Add(1)
	return true
}

// lanHost4 reports whether a is an address a LAN host may have: inside
// the LAN prefix, not the router's, and (for prefixes of /30 and wider)
// neither the network nor the broadcast address.
func (c *Control) lanHost4(a uint32) bool {
	if a&c.lanMask != c.lanNet || a == c.routerAddr {
		return false
	}
	if c.lanBits <= 30 && (a == c.lanNet || a == c.lanNet|^c.lanMask) {
		return false
	}
	return a != 0
}

func (c *Control) fromLAN(b []byte) {
	if len(b) < hdr.EthernetLen {
		return
	}
	eth := hdr.Ethernet(b)
	if eth.Type() == hdr.EtherTypeIPv6 && c.fromLAN6(b) {
		return
	}
	if eth.Type() == hdr.EtherTypeARP && len(b) >= hdr.ARPLen {
		arp := b[hdr.EthernetLen:]
		op := binary.BigEndian.Uint16(arp[6:])
		sha := [6]byte(arp[8:14])
		spa := binary.BigEndian.Uint32(arp[14:])
		tpa := binary.BigEndian.Uint32(arp[24:])
		// Learn a LAN host from ARP that concerns the router: a request for
		// its address or a reply to it (not every ARP on the segment), and
		// only up to MaxNeighbors hosts: a LAN host cannot grow the table
		// without bound by spoofing senders.
		//
		// A host already known is updated by any ARP it sends with a new
		// MAC (as Linux updates existing entries): a gratuitous ARP that
		// moves a VRRP/keepalived address, a replaced device. As with
		// Linux's locktime, a non-gratuitous change within a second of the
		// last one is ignored, so two hosts claiming one address do not
		// make the entry flap.
		aboutUs := (op == 1 && tpa == c.routerAddr) || (op == 2 && [6]byte(eth.Dst()) == c.routerMAC)
		if binary.BigEndian.Uint32(arp[0:]) == 0x00010800 && arp[4] == 6 && arp[5] == 4 &&
			c.lanHost4(spa) && sha[0]&1 == 0 && sha != [6]byte{} {
			mac, known := c.e.Neighbors().Lookup(spa)
			learned := false
			switch {
			case known && mac != sha && c.moveAllowed(spa, spa == tpa):
				c.e.SetNeighbor(spa, sha)
				c.stats.arpLearn.Add(1)
				learned = true
			case !known && aboutUs && c.e.Neighbors().Len() < MaxNeighbors:
				c.e.SetNeighbor(spa, sha)
				c.stats.arpLearn.Add(1)
				known, learned = true, true
			}
			if known {
				c.seenARP(spa, learned)
				c.sendHeld(spa, sha)
			}
		}
		if c.cfg.Host == nil {
			if op == 1 && tpa == c.routerAddr {
				// Answer in place: b is the exception's copy.
				if c.e.Send(dataplane.ToLAN, hdr.ARPReplyInPlace(b, c.routerMAC, c.routerAddr)) == nil {
					c.stats.arpRep.Add(1)
				}
			}
			return
		}
	}
	if c.cfg.Host != nil {
		c.sendHost(b)
		return
	}
	if eth.Type() == hdr.EtherTypeIPv4 && c.echoReplyLAN(b) {
		return
	}
	c.stats.ignored.Add(1)
}

// echoReplyLAN answers, in place, an ICMP echo request from the LAN to
// one of the router's addresses (b is an Ethernet frame the handler owns).
func (c *Control) echoReplyLAN(b []byte) bool {
	// The router answers on its LAN address and on the session address
	// (a LAN host pinging the public address reaches the router).
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	addr := c.routerAddr
	if s := c.e.Session(); s != nil && ip.IsValid() && ip.Dst() == s.LocalAddr {
		addr = s.LocalAddr
	}
	if !c.echoInPlace(b[hdr.EthernetLen:], addr) {
		return false
	}
	eth := hdr.Ethernet(b)
	eth.SetAddrs([6]byte(eth.Src()), c.routerMAC)
	return c.sent(c.e.Send(dataplane.ToLAN, b[:hdr.EthernetLen+hdr.IPv4(b[hdr.EthernetLen:]).TotalLen()]))
}

// echoReplyWAN answers an ICMP echo request that came over the session to
// the session address; f holds the IPv4 packet and has headroom for the
// PPPoE encapsulation.
func (c *Control) echoReplyWAN(f *nic.Frame) bool {
	s := c.e.Session()
	if s == nil || !c.echoInPlace(f.Data(), s.LocalAddr) {
		return false
	}
	f.Truncate(hdr.IPv4(f.Data()).TotalLen())
	if !s.Encap(f) {
		return false
	}
	return c.sent(c.e.Send(dataplane.ToWAN, f.Data()))
}

func (c *Control) sent(err error) bool {
	if err == nil {
		c.stats.echo.Add(1)
	}
	return err == nil
}

// echoInPlace turns an echo request to addr into its reply.
func (c *Control) echoInPlace(ipb []byte, addr uint32) bool {
	ip := hdr.IPv4(ipb)
	if !ip.IsValid() || ip.Protocol() != hdr.ProtoICMP || ip.IsFragment() || ip.Dst() != addr {
		return false
	}
	ipb = ipb[:ip.TotalLen()]
	ic := hdr.ICMP(ipb[ip.HeaderLen():])
	if !ic.IsValid() || ic.Type() != hdr.ICMPEcho {
		return false
	}
	src := ip.Src()
	binary.BigEndian.PutUint32(ip[12:], addr)
	binary.BigEndian.PutUint32(ip[16:], src)
	ip[8] = 64
	ip.ComputeChecksum()
	ic[0] = hdr.ICMPEchoReply
	ic.SetChecksum(0)
	ic.SetChecksum(hdr.Checksum(ic, 0))
	return true
}

// WANConn returns the Conn through which the PPPoE client talks to the
// access concentrator over the engine's WAN port. It has the methods of
// pppoe.Conn (this package does not import pppoe): ReadFrame's
// timeout is os.ErrDeadlineExceeded, a closed Conn's error net.ErrClosed.
func (c *Control) WANConn() WANConn { return WANConn{c} }

// WANConn carries the PPPoE client's frames (see Control.WANConn).
type WANConn struct{ c *Control }

func (cc WANConn) ReadFrame(b []byte, timeout time.Duration) (int, error) {
	c := cc.c
	// Our session's frames first, whatever else waits.
	select {
	case buf := <-c.inPrio:
		n := copy(b, buf)
		c.freePrio <- buf[:cap(buf)]
		return n, nil
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case buf := <-c.inPrio:
		n := copy(b, buf)
		c.freePrio <- buf[:cap(buf)]
		return n, nil
	case buf := <-c.in:
		n := copy(b, buf)
		c.free <- buf[:cap(buf)]
		return n, nil
	case <-t.C:
		return 0, os.ErrDeadlineExceeded
	case <-c.wakeRead:
		return 0, os.ErrDeadlineExceeded
	case <-c.closed:
		return 0, net.ErrClosed
	}
}

// WakeReader makes a ReadFrame in progress return os.ErrDeadlineExceeded
// (the method set of pppoe.ReaderWaker).
func (cc WANConn) WakeReader() {
	select {
	case cc.c.wakeRead <- struct{}{}:
	default:
	}
}

// WriteFrame queues b on the WAN. dataplane.ErrInjectFull is transient
// (the client retries); after Close it returns net.ErrClosed, the
// permanent error.
func (cc WANConn) WriteFrame(b []byte) error {
	select {
	case <-cc.c.closed:
		return net.ErrClosed
	default:
	}
	return cc.c.e.Send(dataplane.ToWAN, b)
}

func (cc WANConn) HardwareAddr() [6]byte { return cc.c.cfg.WANMAC }

func (cc WANConn) Close() error {
	cc.c.once.Do(func() { close(cc.c.closed) })
	return nil
}
