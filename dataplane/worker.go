package dataplane

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/nic/pin"
	"github.com/pppfwd/pppfwd/pppoe"
	"github.com/pppfwd/pppfwd/shaper"
)

// sleepIdle is a polling thread's idle sleep. For the first IdleNapFor of
// idleness it naps IdleNap at a time with nanosleep on the thread
// (time.Sleep rounds a sub-millisecond sleep up to a millisecond or more,
// and a packet reaching an idle router would wait that long), then sleeps
// 1 ms at a time. A nap costs a wakeup: on the lab VM about 20 µs of CPU
// each, so napping costs about 7 % of a core per thread (measured: 2941
// wakeups/s) while traffic keeps coming at least every IdleNapFor, and
// 2 % once idle.
func sleepIdle(idle int) {
	if idle-idleSleepFrom < idleNaps {
		pin.ThreadSleep(IdleNap)
		return
	}
	time.Sleep(time.Millisecond)
}

// Idle policy (Backoff): spin, then yield, then naps, then 1 ms sleeps.
const (
	idleSleepFrom = 256
	IdleNap       = 250 * time.Microsecond
	IdleNapFor    = 50 * time.Millisecond
	idleNaps      = int(IdleNapFor / IdleNap)
)

// Frame.Aux bits used on inter-worker links.
const (
	auxFromWAN     = 1
	auxRedirected  = 2 // handed over once
	auxRedirected2 = 4 // handed over twice (a hairpin's second hop)
)

// Worker is one pinned thread: it owns LAN RX/TX queue k, WAN TX queue k,
// a NAT table for its port range and one shaper per direction. Nothing it
// touches per packet is written by another thread.
type Worker struct {
	id  int
	e   *Engine
	cfg *Config
	nat *nat.Table
	// frags maps downlink datagrams to the LAN host their first fragment
	// was translated for (frag.go).
	frags fragTable
	// fragsSeen publishes those datagrams to the steerer.
	fragsSeen fragSeen
	// fw6 is the IPv6 firewall state of the flows this worker owns.
	fw6 fw6Table

	pool *Pool
	rx   []*nic.Frame
	tmp  []*nic.Frame
	lanQ []*nic.Frame // pending LAN TX
	wanQ []*nic.Frame // pending WAN TX

	up, down *shaper.FQCoDel[*nic.Frame]

	steerOwed int
	redirOwed []int
	redirOut  [][]*nic.Frame
	excOut    []*nic.Frame

	sess    *pppoe.Session
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
	// beat is the worker's step count, for Send to see it making
	// progress; stall is a pending fault-injection sleep (StallWorker).
	beat  atomic.Uint64
	stall atomic.Int64
	sink  byte // keeps touch's loads alive
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
	w := &Worker{id: id, e: e, cfg: cfg, lanMask: cfg.lanMask()}
	nc := cfg.NAT
	nc.LANAddr, nc.LANBits = cfg.LANNet, cfg.LANBits
	nc.Ports, nc.Ranges, nc.Worker = e.ranges[id], e.ranges, id
	var err error
	if w.nat, err = nat.New(nc); err != nil {
		return nil, err
	}
	b := cfg.Batch
	w.pool = NewPool(cfg.PoolFrames, cfg.PoolFrames+4*cfg.RingSize*(cfg.Workers+2))
	w.rx = make([]*nic.Frame, b)
	w.tmp = make([]*nic.Frame, b)
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

func (w *Worker) run() {
	defer w.e.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w.e.pin(w.id)
	var cpu0 int64
	if w.cfg.ThreadCPU != nil {
		cpu0 = w.cfg.ThreadCPU()
	}
	idle := 0
	lanF, _ := w.cfg.LAN.(nic.Flusher)
	wanF, _ := w.cfg.WAN.(nic.Flusher)
	w.e.ready.Done()
	for iter := uint(0); !w.e.stop.Load(); iter++ {
		if w.step() == 0 {
			if idle == 0 {
				// Idle: push out anything a port still holds.
				if lanF != nil {
					_ = lanF.Flush(w.id)
				}
				if wanF != nil {
					_ = wanF.Flush(w.id)
				}
			}
			idle = Backoff(idle)
		} else {
			idle = 0
		}
		if publishDue(iter, idle) {
			w.c.NATEntries = w.nat.Entries()
			w.pub.publish(&w.c)
		}
		// The thread CPU clock is a system call: read it now and then.
		if w.cfg.ThreadCPU != nil && iter&255 == 0 {
			w.pub.cpu.Store(uint64(w.cfg.ThreadCPU() - cpu0))
		}
	}
	// What the control plane queued last (a PADT on shutdown) still goes
	// out.
	w.drainInject()
	w.flush()
	if w.cfg.ThreadCPU != nil {
		w.pub.cpu.Store(uint64(w.cfg.ThreadCPU() - cpu0))
	}
	w.pub.publish(&w.c)
}

// step runs one iteration: steering (worker 0, inline mode), one LAN batch,
// the frames steered to this worker, redirected frames, shapers, flush.
// It returns the number of frames it handled.
func (w *Worker) step() int {
	if w.stall.Load() != 0 {
		time.Sleep(time.Duration(w.stall.Swap(0)))
	}
	w.beat.Store(w.steps)
	w.now = w.cfg.Clock.Now()
	w.refreshSession()
	w.neigh = w.e.neighbors.Load()
	w.neigh6 = w.e.neighbors6.Load()
	w.lan6 = w.e.lan6.Load()
	work := w.drainInject()
	if w.id == 0 && w.cfg.Steer == SteerInline {
		work += w.e.steer.poll()
	}
	// LAN RX.
	n := w.pool.GetN(w.rx)
	if n > 0 {
		got, err := w.cfg.LAN.Recv(w.id, w.rx[:n])
		if err != nil {
			w.e.portErr(w.cfg.LAN, err)
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
	l := w.e.steerLinks[w.id]
	got := l.Data.Pop(w.rx)
	w.c.RxWAN += uint64(got)
	w.touch(w.rx[:got])
	for _, f := range w.rx[:got] {
		w.fromWAN(f)
	}
	w.steerOwed = giveBack(l, w.pool, w.steerOwed+got, w.tmp)
	work += got
	// Frames other workers redirected to us.
	for j := range w.e.redirect {
		if j == w.id {
			continue
		}
		rl := w.e.redirect[j][w.id]
		k := rl.Data.Pop(w.rx)
		for _, f := range w.rx[:k] {
			if f.Aux&auxFromWAN != 0 {
				w.inbound(f, true)
			} else {
				w.fromLAN(f)
			}
		}
		w.redirOwed[j] = giveBack(rl, w.pool, w.redirOwed[j]+k, w.tmp)
		work += k
	}
	w.shape()
	w.flush()
	w.reclaim()
	// Incremental NAT expiry: 256 slots every 8th step (lookups already
	// treat expired entries as gone; this reclaims them).
	if w.steps++; w.steps&7 == 0 {
		w.nat.Expire(w.now, 256)
	}
	return work
}

func (w *Worker) refreshSession() {
	s := w.e.session.Load()
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
	for j, l := range w.e.redirect[w.id] {
		if j == w.id {
			continue
		}
		w.reclaimLink(l)
	}
	w.reclaimLink(w.e.excLinks[w.id])
	// (The injection links are the other way round: worker k consumes
	// inject[k].Data and produces its Ret; Engine.Send reclaims.)
}

func (w *Worker) reclaimLink(l *Link) {
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

// toException queues f for the control plane with its Dir in f.Aux.
func (w *Worker) toException(f *nic.Frame, d Dir) {
	f.Aux = uint32(d)
	w.excOut = append(w.excOut, f)
	if len(w.excOut) == cap(w.excOut) {
		w.flushException()
	}
}

// fromLAN handles a frame received on the LAN (Ethernet at the front).
func (w *Worker) fromLAN(f *nic.Frame) {
	b := f.Data()
	if len(b) < hdr.EthernetLen {
		w.drop(f, DropBadEthernet)
		return
	}
	eth := hdr.Ethernet(b)
	if b[0]&1 != 0 { // broadcast / multicast: ARP, DHCP, ND... for the host
		w.toException(f, FromLAN)
		return
	}
	if [6]byte(eth.Dst()) != w.cfg.RouterMAC {
		w.drop(f, DropNotOurMAC)
		return
	}
	switch eth.Type() {
	case hdr.EtherTypeIPv4:
	case hdr.EtherTypeIPv6:
		w.fromLAN6(f)
		return
	case hdr.EtherTypeARP:
		w.toException(f, FromLAN)
		return
	default:
		w.drop(f, DropUnsupported)
		return
	}
	ip := hdr.IPv4(b[hdr.EthernetLen:])
	if r, ok := checkIPv4(ip); !ok {
		w.drop(f, r)
		return
	}
	f.Truncate(hdr.EthernetLen + ip.TotalLen()) // strip Ethernet padding
	ip = ip[:ip.TotalLen()]
	dst, src := ip.Dst(), ip.Src()
	if dst == w.cfg.RouterAddr {
		w.toException(f, FromLAN)
		return
	}
	// A redirected hairpin may already carry the public source address.
	if (src&w.lanMask != w.cfg.LANNet || src == w.cfg.RouterAddr) && f.Aux&auxRedirected == 0 {
		w.drop(f, DropMartian)
		return
	}
	if dst&w.lanMask == w.cfg.LANNet || dst>>28 == 0xe || dst == 0xffffffff {
		w.toException(f, FromLAN) // same-subnet or multicast: the host stack decides
		return
	}
	later := laterFragment(ip)
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	mtu := sessionMTU(s)
	// To the public address: a hairpin or the router itself. Neither
	// crosses the session, so neither is checked against its MTU, and the
	// router's own traffic is received whatever its TTL (RFC 1812 5.3.1).
	toPublic := dst == w.pubAddr
	if !toPublic {
		if ip.TTL() <= 1 {
			w.c.Drops[DropTTLExceeded]++
			w.icmpToLAN(f, hdr.ICMPTimeExceeded, hdr.ICMPCodeTTLExceeded, 0)
			return
		}
		if ip.TotalLen() > mtu && ip.DF() {
			w.c.Drops[DropTooBig]++
			w.icmpToLAN(f, hdr.ICMPDestUnreach, hdr.ICMPCodeFragNeeded, uint16(mtu))
			return
		}
	}
	flow := flowHash(ip)
	if later {
		// No ports here: the public source address is all it needs (a
		// hairpin's would need state, and is dropped).
		if toPublic || overlapsTCPHeader(ip) {
			w.drop(f, DropFragment)
			return
		}
		ip.SetSrc(w.pubAddr)
		w.forwardIP(ip)
		f.Pull(hdr.EthernetLen)
		if ip.TotalLen() > mtu {
			w.fragment(f, mtu, flow, src)
			return
		}
		w.upstream(f, flow, src)
		return
	}
	switch w.nat.Outbound(ip, w.now) {
	case nat.Pass:
	case nat.Hairpin:
		if ip.TTL() <= 1 { // already translated: no ICMP quoting it
			w.drop(f, DropTTLExceeded)
			return
		}
		ip.DecTTL()
		w.toLAN(f, ip.Dst(), src)
		return
	case nat.Reject:
		w.c.Drops[DropNATReject]++
		w.icmpToLAN(f, hdr.ICMPDestUnreach, hdr.ICMPCodeAdminProhib, 0)
		return
	case nat.Redirect:
		// A frame is handed over at most twice: to the worker owning its
		// LAN endpoint, and for a hairpin (now from the public address)
		// on to the worker owning the external port it is sent to.
		if f.Aux&auxRedirected2 != 0 || (f.Aux&auxRedirected != 0 && !toPublic) {
			w.drop(f, DropNAT)
			return
		}
		w.redirect(f, w.nat.RedirectTarget(), false)
		return
	case nat.Local:
		w.toException(f, FromLAN)
		return
	default:
		w.drop(f, DropNAT)
		return
	}
	w.forwardIP(ip)
	f.Pull(hdr.EthernetLen)
	if ip.TotalLen() > mtu { // DF clear (checked above): fragment
		w.fragment(f, mtu, flow, src)
		return
	}
	w.upstream(f, flow, src)
}

// upstream hands an IPv4 packet bound for the session to the shaper, or
// straight to the WAN when the uplink is not shaped.
func (w *Worker) upstream(f *nic.Frame, flow, host uint32) {
	if w.up != nil {
		w.up.EnqueueAt(f, flow, host, w.now)
		return
	}
	w.toWAN(f)
}

// fragment splits the IPv4 packet in f (DF clear, no options; it may be
// a fragment itself) into fragments that fit mtu (RFC 791), the first in
// f and the rest in frames from the pool, and sends them upstream in
// order.
func (w *Worker) fragment(f *nic.Frame, mtu int, flow, host uint32) {
	ip := hdr.IPv4(f.Data())
	payload := ip.Payload()
	base, more := ip.FragOffset(), ip.MoreFragments()
	chunk := (mtu - hdr.IPv4MinLen) &^ 7
	if chunk <= 0 {
		w.drop(f, DropTooBig)
		return
	}
	// Build the later fragments first: they copy from f before f is cut.
	if (len(payload)+chunk-1)/chunk > maxFragments+1 {
		w.drop(f, DropTooBig) // an MTU this small is not worth fragmenting for
		return
	}
	var rest [maxFragments]*nic.Frame
	n := 0
	for off := chunk; off < len(payload); off += chunk {
		g := w.pool.Get()
		if g == nil || n == len(rest) {
			if g != nil {
				w.pool.Put(g)
			}
			w.pool.PutN(rest[:n])
			w.drop(f, DropNoBuffer)
			return
		}
		end := min(off+chunk, len(payload))
		b := g.Extend(hdr.IPv4MinLen + end - off)
		copy(b, ip[:hdr.IPv4MinLen])
		copy(b[hdr.IPv4MinLen:], payload[off:end])
		setFragment(hdr.IPv4(b), base+off, end < len(payload) || more)
		rest[n] = g
		n++
	}
	f.Truncate(hdr.IPv4MinLen + chunk)
	setFragment(hdr.IPv4(f.Data()), base, true)
	w.c.Fragments += uint64(n + 1)
	w.upstream(f, flow, host)
	for _, g := range rest[:n] {
		w.upstream(g, flow, host)
	}
}

// maxFragments bounds the fragments of one packet (a 1920-byte frame over
// an MTU of 576 makes 4).
const maxFragments = 8

// setFragment writes a fragment's length, offset and MF flag and its
// header checksum.
func setFragment(ip hdr.IPv4, off int, more bool) {
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	v := uint16(off / 8)
	if more {
		v |= 0x2000
	}
	binary.BigEndian.PutUint16(ip[6:], v)
	ip.ComputeChecksum()
}

// toWAN encapsulates an IPv4 packet for the session and queues it.
func (w *Worker) toWAN(f *nic.Frame) {
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	if !s.Encap(f) {
		w.drop(f, DropHeadroom)
		return
	}
	w.wanQ = append(w.wanQ, f)
	if len(w.wanQ) == cap(w.wanQ) {
		w.flushWAN()
	}
}

// toLAN writes the Ethernet header for an IPv4 packet at the front of f
// (or already behind an Ethernet header when f starts with one: hasEth)
// addressed to LAN host dst and queues it; host is the LAN host for
// fairness.
func (w *Worker) toLAN(f *nic.Frame, dst, host uint32) {
	b := f.Data()
	if len(b) < hdr.EthernetLen {
		w.drop(f, DropBadEthernet)
		return
	}
	eth := hdr.Ethernet(b)
	mac, ok := w.neigh.Lookup(dst)
	if !ok {
		w.unresolved(f)
		return
	}
	eth.SetAddrs(mac, w.cfg.RouterMAC)
	eth.SetType(hdr.EtherTypeIPv4)
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// icmpToLAN replaces the LAN frame f (Ethernet at the front) by an ICMP
// error to its sender, rate-limited.
func (w *Worker) icmpToLAN(f *nic.Frame, typ, code uint8, mtu uint16) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	srcMAC := [6]byte(f.Data()[6:12])
	f.Pull(hdr.EthernetLen)
	if !makeICMPError(f, w.cfg.RouterAddr, typ, code, mtu) {
		w.pool.Put(f)
		return
	}
	w.errorBackToLAN(f, srcMAC, hdr.EtherTypeIPv4)
}

// errorBackToLAN queues the ICMP or ICMPv6 error in f (IP at the front)
// on the LAN to the host at mac that caused it.
func (w *Worker) errorBackToLAN(f *nic.Frame, mac [6]byte, et uint16) {
	eth := hdr.Ethernet(f.Push(hdr.EthernetLen))
	eth.SetAddrs(mac, w.cfg.RouterMAC)
	eth.SetType(et)
	w.c.ICMPSent++
	w.lanQ = append(w.lanQ, f)
	if len(w.lanQ) == cap(w.lanQ) {
		w.flushLAN()
	}
}

// icmpToWAN replaces the WAN packet f (IPv4 at the front) by an ICMP error
// to its sender over the session, rate-limited.
func (w *Worker) icmpToWAN(f *nic.Frame, typ, code uint8) {
	if !w.icmp.allow(w.now) {
		w.c.ICMPRateLimited++
		w.pool.Put(f)
		return
	}
	if !makeICMPError(f, w.pubAddr, typ, code, 0) {
		w.pool.Put(f)
		return
	}
	w.c.ICMPSent++
	w.toWAN(f)
}

// unresolved hands an Ethernet+IPv4 frame whose LAN next hop is unknown
// to the control plane, which resolves it (ARP).
func (w *Worker) unresolved(f *nic.Frame) {
	eth := hdr.Ethernet(f.Data())
	eth.SetAddrs([6]byte{}, w.cfg.RouterMAC)
	eth.SetType(hdr.EtherTypeIPv4)
	w.c.Unresolved++
	w.toException(f, Unresolved)
}

func (w *Worker) redirect(f *nic.Frame, to int, fromWAN bool) {
	if to < 0 || to >= len(w.redirOut) || to == w.id {
		w.drop(f, DropNAT)
		return
	}
	if f.Aux&auxRedirected != 0 {
		f.Aux |= auxRedirected2
	}
	f.Aux |= auxRedirected
	if fromWAN {
		f.Aux |= auxFromWAN
	}
	w.c.Redirected++
	w.redirOut[to] = append(w.redirOut[to], f)
	if len(w.redirOut[to]) == cap(w.redirOut[to]) {
		w.flushRedirect(to)
	}
}

// fromWAN handles a PPPoE frame steered to this worker.
func (w *Worker) fromWAN(f *nic.Frame) {
	s := w.sess
	if s == nil {
		w.drop(f, DropNoSession)
		return
	}
	switch s.Decap(f) {
	case pppoe.DecapIPv4:
	case pppoe.DecapWrongSession:
		w.drop(f, DropWrongSession)
		return
	case pppoe.DecapIPv6:
		w.inbound6(f)
		return
	case pppoe.DecapNotPPPoE:
		w.drop(f, DropUnsupported)
		return
	case pppoe.DecapControl:
		w.toException(f, FromWAN)
		return
	default:
		w.drop(f, DropBadPPPoE)
		return
	}
	w.inbound(f, false)
}

// inbound continues fromWAN at the IPv4 header; redirected is set for
// frames another worker handed over (they are not redirected again).
func (w *Worker) inbound(f *nic.Frame, redirected bool) {
	ip := hdr.IPv4(f.Data())
	if r, ok := checkIPv4(ip); !ok {
		w.drop(f, r)
		return
	}
	f.Truncate(ip.TotalLen())
	ip = ip[:ip.TotalLen()]
	if ip.Dst() != w.pubAddr {
		w.drop(f, DropNotForUs)
		return
	}
	if w.martianFromWAN(ip.Src()) {
		w.drop(f, DropMartian)
		return
	}
	first := false
	if ip.IsFragment() {
		if laterFragment(ip) {
			w.laterFragmentIn(f, ip)
			return
		}
		first = true
	}
	if ip.TTL() <= 1 {
		// The router's own traffic is received whatever its TTL (RFC 1812
		// 5.3.1): an echo request to the session address is answered.
		if ic := hdr.ICMP(ip[hdr.IPv4MinLen:]); ip.Protocol() == hdr.ProtoICMP && ic.IsValid() && ic.Type() == hdr.ICMPEcho {
			w.toException(f, FromWANIP)
			return
		}
		w.c.Drops[DropTTLExceeded]++
		w.icmpToWAN(f, hdr.ICMPTimeExceeded, hdr.ICMPCodeTTLExceeded)
		return
	}
	switch w.nat.Inbound(ip, w.now) {
	case nat.Pass:
	case nat.Redirect:
		// Steering chose by port; the NAT knows better (e.g. a forward
		// whose state lives elsewhere). Hand it over once.
		if redirected {
			w.drop(f, DropNAT)
			return
		}
		w.redirect(f, w.nat.RedirectTarget(), true)
		return
	case nat.Local:
		w.toException(f, FromWANIP)
		return
	default:
		w.drop(f, DropNAT)
		return
	}
	if first {
		w.frags.put(ip, ip.Dst(), w.now) // the LAN host, translated
		w.fragsSeen.put(ip, w.e.steer.clock()+fragTimeout)
	}
	w.forwardIP(ip)
	w.downstream(f, ip)
}

// martianFromWAN reports a source no packet from the session may claim
// (RFC 1812 5.3.7, as the kernel's rp_filter and pf's antispoof rules
// drop them): this network (0/8), loopback (127/8), multicast and
// reserved (224/4, 240/4 and the broadcast address), the LAN's own
// prefix and the router's addresses, and the session's public address.
func (w *Worker) martianFromWAN(src uint32) bool {
	switch {
	case src>>24 == 0, src>>24 == 127, src>>28 >= 0xe:
		return true
	}
	return src&w.lanMask == w.cfg.LANNet || src == w.cfg.RouterAddr || src == w.pubAddr
}

// laterFragmentIn sends a downlink fragment other than the first to the
// LAN host its datagram's first fragment was translated for.
func (w *Worker) laterFragmentIn(f *nic.Frame, ip hdr.IPv4) {
	host, ok := w.frags.get(ip, w.now)
	if !ok || overlapsTCPHeader(ip) {
		w.drop(f, DropFragment)
		return
	}
	if ip.TTL() <= 1 {
		w.drop(f, DropTTLExceeded)
		return
	}
	ip.SetDst(host)
	w.forwardIP(ip)
	w.downstream(f, ip)
}

// downstream hands a translated downlink IPv4 packet to the shaper, or
// straight to the LAN when the downlink is not shaped.
func (w *Worker) downstream(f *nic.Frame, ip hdr.IPv4) {
	dst := ip.Dst()
	if f.Push(hdr.EthernetLen) == nil {
		w.drop(f, DropHeadroom)
		return
	}
	if w.down != nil {
		mac, ok := w.neigh.Lookup(dst)
		if !ok {
			w.unresolved(f)
			return
		}
		eth := hdr.Ethernet(f.Data())
		eth.SetAddrs(mac, w.cfg.RouterMAC)
		eth.SetType(hdr.EtherTypeIPv4)
		w.down.EnqueueAt(f, flowHash(ip), dst, w.now)
		return
	}
	w.toLAN(f, dst, dst)
}

// shape moves what the rate allows from the shapers to the TX queues.
func (w *Worker) shape() {
	if w.up != nil {
		for {
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
			n := w.down.DequeueAt(w.tmp, w.now)
			for _, f := range w.tmp[:n] {
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
	n, err := w.cfg.WAN.Send(w.id, w.wanQ)
	if err != nil {
		w.e.portErr(w.cfg.WAN, err)
	}
	w.c.TxWAN += uint64(n)
	if n < len(w.wanQ) {
		w.c.Drops[DropTxFull] += uint64(len(w.wanQ) - n)
	}
	w.pool.PutN(w.wanQ)
	w.wanQ = w.wanQ[:0]
}

func (w *Worker) flushLAN() {
	if len(w.lanQ) == 0 {
		return
	}
	n, err := w.cfg.LAN.Send(w.id, w.lanQ)
	if err != nil {
		w.e.portErr(w.cfg.LAN, err)
	}
	w.c.TxLAN += uint64(n)
	if n < len(w.lanQ) {
		w.c.Drops[DropTxFull] += uint64(len(w.lanQ) - n)
	}
	w.pool.PutN(w.lanQ)
	w.lanQ = w.lanQ[:0]
}

func (w *Worker) flushRedirect(j int) {
	q := w.redirOut[j]
	if len(q) == 0 {
		return
	}
	k := w.e.redirect[w.id][j].Data.Push(q)
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
	k := w.e.excLinks[w.id].Data.Push(w.excOut)
	w.c.Exception += uint64(k)
	if k < len(w.excOut) {
		w.c.Drops[DropException] += uint64(len(w.excOut) - k)
		w.pool.PutN(w.excOut[k:])
	}
	w.excOut = w.excOut[:0]
}

// drainInject sends frames the control plane queued for this worker.
func (w *Worker) drainInject() int {
	l := w.e.inject[w.id]
	n := l.Data.Pop(w.tmp)
	for i, f := range w.tmp[:n] {
		p := w.cfg.WAN
		if Dir(f.Aux) == ToLAN {
			p = w.cfg.LAN
		}
		k, err := p.Send(w.id, w.tmp[i:i+1])
		if err != nil {
			w.e.portErr(p, err)
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
		k += l.Ret.Push(w.tmp[k:n])
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

// checkIPv4 validates an IPv4 header for forwarding: lengths, no
// options (not handled on the fast path), header checksum.
func checkIPv4(ip hdr.IPv4) (Reason, bool) {
	switch {
	case !ip.IsValid():
		return DropBadIPv4, false
	case ip.HeaderLen() != hdr.IPv4MinLen:
		return DropIPOptions, false
	case !ip.HeaderChecksumOK():
		return DropBadChecksum, false
	}
	return 0, true
}

// forwardIP does what every forwarded packet gets after NAT: TTL
// decrement and TCP MSS clamping to the session MTU.
func (w *Worker) forwardIP(ip hdr.IPv4) {
	ip.DecTTL()
	if !w.cfg.NoMSSClamp && ip.Protocol() == hdr.ProtoTCP && !laterFragment(ip) {
		if t := hdr.TCP(ip[hdr.IPv4MinLen:]); t.IsValid() && t.ClampMSS(w.mss) {
			w.c.Clamped++
		}
	}
}

// flowHash hashes the 5-tuple of a valid IPv4 packet for the shaper
// (addresses and protocol only for a fragment: every fragment of a
// datagram lands in the same queue).
func flowHash(ip hdr.IPv4) uint32 {
	h := ip.Src()*0x9e3779b1 ^ ip.Dst()*0x85ebca77 ^ uint32(ip.Protocol())
	if p := ip.Protocol(); (p == hdr.ProtoTCP || p == hdr.ProtoUDP) && len(ip) >= hdr.IPv4MinLen+4 && !ip.IsFragment() {
		h ^= binary.BigEndian.Uint32(ip[hdr.IPv4MinLen:]) * 0xc2b2ae3d
	}
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	return h
}
