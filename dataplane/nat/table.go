package nat

import (
	"time"

	"github.com/pppfwd/pppfwd/hdr"
)

// Slot kinds (high nibble of entry.meta); the low nibble is the protocol
// index. meta == 0 is an empty slot.
const (
	kindFlow = 1 << 4
	kindMap  = 2 << 4
	kindPerm = 3 << 4
	kindHost = 4 << 4
	kindFwd  = 5 << 4 // connection state of a port forward (see trackFwd)
	kindMask = 0xf0

	piTCP  = 0
	piUDP  = 1
	piICMP = 2
	numPI  = 3
)

// entry is one table slot (20 bytes, no pointers). A forward state (kindFwd)
// is laid out like a flow: the forward's LAN endpoint, the remote endpoint,
// the forward's ExtPort, TCP state and expiry.
type entry struct {
	lan   uint32 // LAN address
	rem   uint32 // flow/fwd/perm: remote address; map: flow refcount; host: flow count
	lport uint16 // LAN port / echo id (0 for host)
	rport uint16 // flow/fwd: remote port; perm: flow refcount
	ext   uint16 // flow/fwd/map: external port / echo id
	meta  uint8  // kind | protocol index; 0 = empty
	state uint8  // flow/fwd: TCP state bits
	exp   uint32 // flow/fwd: expiry in whole seconds (wrapping)
}

const (
	entrySize = 20
	minSlots  = 16
	// fwdShare: forward states hold at most Capacity/fwdShare slots
	// (at least one), so that however many remotes a forwarded server
	// answers, the LAN keeps the rest of the table.
	fwdShare = 4
	// portReserved marks a port of the range that is never allocated
	// (forward or LocalPorts).
	portReserved = ^uint32(0)
)

// TCP state bits.
const (
	stOut    = 1 << 0 // packet seen LAN->WAN
	stIn     = 1 << 1 // packet seen WAN->LAN
	stEst    = 1 << 2 // handshake completed / two-way ACKs
	stFinOut = 1 << 3
	stFinIn  = 1 << 4
	stRst    = 1 << 5
	stClosed = stFinOut | stFinIn | stRst
)

// Table is one worker's NAT state.
type Table struct {
	cfg   Config
	pub   uint32
	lanM  uint32
	seed  uint64
	slots []entry
	mask  uint32
	used  int
	cur   uint32 // expiry sweep cursor
	// fwdMax bounds the live forward states (stats.Forwards), see fwdShare.
	fwdMax int

	px    portIndex       // the table's ports (ports.go)
	ports [numPI][]uint32 // by port index: mapping slot + 1 (0 free)
	bits  [numPI][]uint64 // by port index: allocation bitmap (used or reserved)
	// lanOf caches, per TCP/UDP external port, the LAN endpoint of its
	// mapping as host<<16 | lport (host = address bits below the LAN
	// prefix), so that Inbound finds a flow with one hash probe instead
	// of port array -> mapping slot -> flow. Only with LANBits >= 16 (nil
	// otherwise). Written when a mapping is created and never cleared: a
	// stale value only leads to a probe that misses (the flow found must
	// carry the packet's external port), and then to the slow path.
	lanOf  [piUDP + 1][]uint32
	lanNet uint32 // LANAddr & lanM

	fwdExt [2][1024]uint64 // forward ExtPort bitmap (TCP, UDP)
	fwdLAN [2][1024]uint64 // forward LANPort bitmap

	toSec [4]uint32 // timeouts in seconds: UDP, TCP est, TCP transitory, ICMP

	stats    Stats
	redirect int
}

const (
	toUDP = iota
	toTCPEst
	toTCPTrans
	toICMP
)

func protoIndex(p uint8) int {
	switch p {
	case hdr.ProtoTCP:
		return piTCP
	case hdr.ProtoUDP:
		return piUDP
	case hdr.ProtoICMP:
		return piICMP
	}
	return -1
}

var piProto = [numPI]uint8{hdr.ProtoTCP, hdr.ProtoUDP, hdr.ProtoICMP}

func (t *Table) init() {
	c := &t.cfg
	t.pub = c.PublicAddr
	if c.LANBits > 0 {
		t.lanM = ^uint32(0) << (32 - c.LANBits)
	}
	t.seed = c.HashSeed
	if t.seed == 0 {
		t.seed = uint64(time.Now().UnixNano()) | 1
	}
	t.lanNet = c.LANAddr & t.lanM
	t.px = newPortIndex(c.Ports)
	span := t.px.span
	for pi := range t.ports {
		t.ports[pi] = make([]uint32, span)
		t.bits[pi] = make([]uint64, (span+63)/64)
	}
	if c.LANBits >= 16 {
		for pi := range t.lanOf {
			t.lanOf[pi] = make([]uint32, span)
		}
	}
	for _, f := range c.Forwards {
		fi := protoIndex(f.Proto)
		t.fwdExt[fi][f.ExtPort>>6] |= 1 << (f.ExtPort & 63)
		t.fwdLAN[fi][f.LANPort>>6] |= 1 << (f.LANPort & 63)
	}
	to := c.Timeouts
	t.toSec = [4]uint32{secs(to.UDP), secs(to.TCPEstablished), secs(to.TCPTransitory), secs(to.ICMP)}
	t.resetPorts()
}

func secs(d time.Duration) uint32 { return uint32((d + time.Second - 1) / time.Second) }

// resetPorts empties the per-port arrays and marks reserved ports.
func (t *Table) resetPorts() {
	for pi := range t.ports {
		clear(t.ports[pi])
		b := t.bits[pi]
		clear(b)
		for i := uint32(0); i < uint32(len(b))*64; i++ { // tail and cut pairs never free
			if i >= t.px.span || !t.px.valid(i) {
				b[i>>6] |= 1 << (i & 63)
			}
		}
	}
	reserve := func(pi int, p uint16) {
		if i := t.px.index(p); i < t.px.span {
			t.ports[pi][i] = portReserved
			t.bits[pi][i>>6] |= 1 << (i & 63)
		}
	}
	for _, f := range t.cfg.Forwards {
		reserve(protoIndex(f.Proto), f.ExtPort)
	}
	lp := t.cfg.LocalPorts
	for p := int(lp.Lo); p < int(lp.Hi); p++ {
		for pi := range t.ports {
			reserve(pi, uint16(p))
		}
	}
}

func (t *Table) alloc() {
	n := uint32(minSlots)
	for int(n)/4*3 < t.cfg.Capacity {
		n *= 2
	}
	t.slots = make([]entry, n)
	t.mask = n - 1
	t.stats.Capacity = uint64(t.cfg.Capacity)
	t.fwdMax = max(1, t.cfg.Capacity/fwdShare)
}

func (t *Table) fixedBytes() int {
	n := 0
	for pi := range t.ports {
		n += len(t.ports[pi])*4 + len(t.bits[pi])*8
	}
	for pi := range t.lanOf {
		n += len(t.lanOf[pi]) * 4
	}
	return n + len(t.fwdExt)*1024*8*2
}

// MemoryBytes returns the bytes the table holds (slots + per-port arrays).
func (t *Table) MemoryBytes() int { return len(t.slots)*entrySize + t.fixedBytes() }

// FixedBytes returns the part of MemoryBytes that does not scale with
// Capacity (per-port arrays of the worker's range).
func (t *Table) FixedBytes() int { return t.fixedBytes() }

// Capacity returns the slot capacity (Config.Capacity after MaxBytes).
func (t *Table) Capacity() int { return t.cfg.Capacity }

// SetPublicAddr changes the public address; like every method it must be
// called from the owning worker (e.g. when it sees a new session
// snapshot). When it differs from the
// current one every flow and mapping is flushed (O(capacity), once per
// reconnect); the same address keeps the flows.
func (t *Table) SetPublicAddr(a uint32) {
	if a == t.pub {
		return
	}
	t.pub = a
	t.cfg.PublicAddr = a
	clear(t.slots)
	t.used = 0
	t.cur = 0
	t.resetPorts()
	t.stats.Entries, t.stats.Mappings, t.stats.Slots, t.stats.Forwards = 0, 0, 0, 0
	t.stats.Flushes++
}

// PublicAddr returns the current public address.
func (t *Table) PublicAddr() uint32 { return t.pub }

// RedirectTarget is the worker the last Redirect verdict named.
func (t *Table) RedirectTarget() int { return t.redirect }

// Allocations returns the flows and forward states created so far
// (Stats().Allocations, without copying the stats).
func (t *Table) Allocations() uint64 { return t.stats.Allocations }

// Entries returns the live flows (conntrack entries), for the owner to
// publish.
func (t *Table) Entries() uint64 { return t.stats.Entries }

// Stats returns the counters.
func (t *Table) Stats() Stats {
	s := t.stats
	s.Slots = uint64(t.used)
	return s
}

// nowSec converts monotonic ns to the table's wrapping seconds.
func nowSec(now int64) uint32 { return uint32(uint64(now) / 1e9) }

// expired reports whether a flow with expiry exp is dead at second s.
func expired(exp, s uint32) bool { return int32(s-exp) > 0 }

func (t *Table) hash(meta uint8, lan, rem uint32, lport, rport uint16) uint32 {
	a := uint64(lan)<<32 | uint64(rem)
	b := uint64(lport)<<32 | uint64(rport)<<16 | uint64(meta)
	h := (a ^ t.seed) * 0x9e3779b97f4a7c15
	h ^= h >> 32
	h = (h ^ b) * 0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	return uint32(h)
}

func (t *Table) entryHash(e *entry) uint32 {
	switch e.meta & kindMask {
	case kindFlow, kindFwd:
		return t.hash(e.meta, e.lan, e.rem, e.lport, e.rport)
	case kindMap:
		return t.hash(e.meta, e.lan, 0, e.lport, 0)
	case kindPerm:
		return t.hash(e.meta, e.lan, e.rem, e.lport, 0)
	}
	return t.hash(e.meta, e.lan, 0, 0, 0)
}

// findFlow returns the slot of flow (pi, lan, lport, rem, rport) or -1.
func (t *Table) findFlow(pi int, lan uint32, lport uint16, rem uint32, rport uint16) int {
	meta := uint8(kindFlow | pi)
	i := t.hash(meta, lan, rem, lport, rport) & t.mask
	for {
		e := &t.slots[i]
		if e.meta == meta && e.lan == lan && e.rem == rem && e.lport == lport && e.rport == rport {
			return int(i)
		}
		if e.meta == 0 {
			return -1
		}
		i = (i + 1) & t.mask
	}
}

// findFwd returns the slot of the forward state (pi, lan, lport, rem,
// rport) or -1; lan:lport is the forward's LAN endpoint.
func (t *Table) findFwd(pi int, lan uint32, lport uint16, rem uint32, rport uint16) int {
	meta := uint8(kindFwd | pi)
	i := t.hash(meta, lan, rem, lport, rport) & t.mask
	for {
		e := &t.slots[i]
		if e.meta == meta && e.lan == lan && e.rem == rem && e.lport == lport && e.rport == rport {
			return int(i)
		}
		if e.meta == 0 {
			return -1
		}
		i = (i + 1) & t.mask
	}
}

func (t *Table) findMap(pi int, lan uint32, lport uint16) int {
	meta := uint8(kindMap | pi)
	i := t.hash(meta, lan, 0, lport, 0) & t.mask
	for {
		e := &t.slots[i]
		if e.meta == meta && e.lan == lan && e.lport == lport {
			return int(i)
		}
		if e.meta == 0 {
			return -1
		}
		i = (i + 1) & t.mask
	}
}

func (t *Table) findPerm(pi int, lan uint32, lport uint16, rem uint32) int {
	meta := uint8(kindPerm | pi)
	i := t.hash(meta, lan, rem, lport, 0) & t.mask
	for {
		e := &t.slots[i]
		if e.meta == meta && e.lan == lan && e.lport == lport && e.rem == rem {
			return int(i)
		}
		if e.meta == 0 {
			return -1
		}
		i = (i + 1) & t.mask
	}
}

func (t *Table) findHost(lan uint32) int {
	const meta = kindHost
	i := t.hash(meta, lan, 0, 0, 0) & t.mask
	for {
		e := &t.slots[i]
		if e.meta == meta && e.lan == lan {
			return int(i)
		}
		if e.meta == 0 {
			return -1
		}
		i = (i + 1) & t.mask
	}
}

// insert stores e (whose key is absent) and returns its slot. The caller
// has checked t.used < capacity < len(slots). Inserts never move entries.
func (t *Table) insert(e entry) int {
	i := t.entryHash(&e) & t.mask
	for t.slots[i].meta != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i] = e
	t.used++
	return int(i)
}

// del empties slot i with backward-shift deletion; entries after it in
// the probe cluster may move to lower slots.
func (t *Table) del(i uint32) {
	t.used--
	for {
		j := i
		for {
			j = (j + 1) & t.mask
			e := &t.slots[j]
			if e.meta == 0 {
				t.slots[i] = entry{}
				return
			}
			home := t.entryHash(e) & t.mask
			// e may move to i unless its home lies cyclically in (i, j].
			if (j-home)&t.mask >= (j-i)&t.mask {
				t.slots[i] = *e
				if e.meta&kindMask == kindMap {
					t.ports[e.meta&0xf][t.px.index(t.slots[i].ext)] = i + 1
				}
				i = j
				break
			}
		}
	}
}

func (t *Table) freePort(pi int, ext uint16) {
	i := t.px.index(ext)
	t.ports[pi][i] = 0
	t.bits[pi][i>>6] &^= 1 << (i & 63)
}

func (t *Table) drop(r Reason) Verdict {
	t.stats.Reasons[r]++
	t.stats.Drops++
	return Drop
}

func (t *Table) reject(r Reason) Verdict {
	t.stats.Reasons[r]++
	t.stats.Rejects++
	return Reject
}

// lookupFlow finds a live flow; an expired one is removed and reported
// absent.
func (t *Table) lookupFlow(pi int, lan uint32, lport uint16, rem uint32, rport uint16, s uint32) int {
	i := t.findFlow(pi, lan, lport, rem, rport)
	if i >= 0 && expired(t.slots[i].exp, s) {
		t.delFlow(uint32(i))
		t.stats.Expired++
		return -1
	}
	return i
}

// createFlow creates flow (pi, lan, lport, rem, rport) with its mapping,
// ADF permission and host counter. It returns the flow slot, or -1 and
// the reject reason. Checks come first, so a failure changes nothing.
func (t *Table) createFlow(pi int, lan uint32, lport uint16, rem uint32, rport uint16) (int, Reason) {
	need := 1
	h := t.findHost(lan)
	if h < 0 {
		need++
	} else if t.cfg.MaxPerHost > 0 && int(t.slots[h].rem) >= t.cfg.MaxPerHost {
		return -1, ReasonHostLimit
	}
	m := t.findMap(pi, lan, lport)
	if m < 0 {
		need++
	}
	p := -1
	adf := t.cfg.Filtering == AddressDependent
	if adf {
		p = t.findPerm(pi, lan, lport, rem)
		if p < 0 {
			need++
		} else if t.slots[p].rport == 0xffff {
			return -1, ReasonTableFull
		}
	}
	if t.used+need > t.cfg.Capacity {
		return -1, ReasonTableFull
	}
	var ext uint16
	if m < 0 {
		var ok bool
		if ext, ok = t.allocPort(pi, lport); !ok {
			return -1, ReasonPortsExhausted
		}
		m = t.insert(entry{meta: uint8(kindMap | pi), lan: lan, lport: lport, ext: ext, rem: 1})
		xi := t.px.index(ext)
		t.ports[pi][xi] = uint32(m) + 1
		if pi < len(t.lanOf) && t.lanOf[pi] != nil {
			t.lanOf[pi][xi] = (lan&^t.lanM)<<16 | uint32(lport)
		}
		t.stats.Mappings++
		t.stats.MappingAllocs++
	} else {
		ext = t.slots[m].ext
		t.slots[m].rem++
	}
	if h < 0 {
		t.insert(entry{meta: kindHost, lan: lan, rem: 1})
	} else {
		t.slots[h].rem++
	}
	if adf {
		if p < 0 {
			t.insert(entry{meta: uint8(kindPerm | pi), lan: lan, lport: lport, rem: rem, rport: 1})
		} else {
			t.slots[p].rport++
		}
	}
	f := t.insert(entry{meta: uint8(kindFlow | pi), lan: lan, lport: lport, rem: rem, rport: rport, ext: ext})
	t.stats.Entries++
	t.stats.Allocations++
	return f, 0
}

// delFlow removes flow slot i and releases its references.
func (t *Table) delFlow(i uint32) {
	e := t.slots[i]
	pi := int(e.meta & 0xf)
	t.del(i)
	t.stats.Entries--
	if m := t.findMap(pi, e.lan, e.lport); m >= 0 {
		if t.slots[m].rem--; t.slots[m].rem == 0 {
			t.freePort(pi, t.slots[m].ext)
			t.del(uint32(m))
			t.stats.Mappings--
		}
	}
	if t.cfg.Filtering == AddressDependent {
		if p := t.findPerm(pi, e.lan, e.lport, e.rem); p >= 0 {
			if t.slots[p].rport--; t.slots[p].rport == 0 {
				t.del(uint32(p))
			}
		}
	}
	if h := t.findHost(e.lan); h >= 0 {
		if t.slots[h].rem--; t.slots[h].rem == 0 {
			t.del(uint32(h))
		}
	}
}

// Forward states.
//
// A port forward is a static mapping, but an ICMP error quoting it must
// still match a connection (RFC 5508 REQ-3/4, RFC 5382): otherwise anyone
// can make the forwarded server drop or degrade its real connections with
// a forged port unreachable or frag-needed quoting "public:ExtPort ->
// R" for a remote R it never talked to. So the forward's worker keeps one
// forward state (kindFwd) per remote endpoint the forwarded LAN endpoint
// has sent to through the WAN: created by the server's first packet to
// that remote (usually its answer), refreshed by packets both ways with
// the flow timers and TCP state machine, and required by icmpErrorIn. A
// forward's packets pass whether or not their state exists: state only
// gates ICMP errors. Forward states hold no mapping, permission or host
// counter reference (MaxPerHost does not count them), live within
// Capacity, and are at most fwdMax: a flood the server answers can take
// neither LAN-created state nor more than that share of the table; past
// the share a new remote goes untracked (Stats.ForwardUntracked) and its
// ICMP errors are dropped until an old state expires.

// lookupFwd finds a live forward state; an expired one is removed and
// reported absent.
func (t *Table) lookupFwd(pi int, lan uint32, lport uint16, rem uint32, rport uint16, s uint32) int {
	if t.stats.Forwards == 0 {
		return -1
	}
	i := t.findFwd(pi, lan, lport, rem, rport)
	if i >= 0 && expired(t.slots[i].exp, s) {
		t.delFwd(uint32(i))
		t.stats.Expired++
		return -1
	}
	return i
}

// trackFwd creates or refreshes the state of forward f for a packet from
// its LAN endpoint to remote rem:rport through the WAN. A TCP RST creates
// none; a full share or table leaves the packet untracked.
func (t *Table) trackFwd(f *Forward, pi int, rem uint32, rport uint16, flags uint8, s uint32) {
	i := t.lookupFwd(pi, f.LANAddr, f.LANPort, rem, rport, s)
	if i < 0 {
		if pi == piTCP && flags&hdr.TCPRst != 0 {
			return
		}
		if int(t.stats.Forwards) >= t.fwdMax || t.used >= t.cfg.Capacity {
			t.stats.ForwardUntracked++
			return
		}
		i = t.insert(entry{meta: uint8(kindFwd | pi), lan: f.LANAddr, lport: f.LANPort, rem: rem, rport: rport, ext: f.ExtPort})
		t.stats.Entries++
		t.stats.Forwards++
		t.stats.Allocations++
	}
	t.touch(&t.slots[i], pi, flags, true, s)
}

// delFwd removes forward state slot i.
func (t *Table) delFwd(i uint32) {
	t.del(i)
	t.stats.Entries--
	t.stats.Forwards--
}

// Expire runs an incremental expiry step visiting at most budget slots
// from a cursor and removing the flows and forward states whose timer ran
// out at now. It returns the number removed.
func (t *Table) Expire(now int64, budget int) int {
	s := nowSec(now)
	n := 0
	slots, mask, cur := t.slots, t.mask, t.cur
	for ; budget > 0; budget-- {
		e := &slots[cur&mask]
		k := e.meta & kindMask
		if (k != kindFlow && k != kindFwd) || !expired(e.exp, s) {
			cur++
			continue
		}
		// Backward shift may move another entry into this slot: look
		// at it again on the next step.
		if k == kindFlow {
			t.delFlow(cur & mask)
		} else {
			t.delFwd(cur & mask)
		}
		n++
	}
	t.cur = cur & mask
	t.stats.Expired += uint64(n)
	return n
}

// Lookup returns the external port of a live flow (proto, LAN endpoint,
// remote endpoint) at now, for diagnostics and benchmarks.
func (t *Table) Lookup(proto uint8, lan uint32, lport uint16, rem uint32, rport uint16, now int64) (uint16, bool) {
	pi := protoIndex(proto)
	if pi < 0 {
		return 0, false
	}
	i := t.findFlow(pi, lan, lport, rem, rport)
	if i < 0 || expired(t.slots[i].exp, nowSec(now)) {
		return 0, false
	}
	return t.slots[i].ext, true
}

// touch updates a flow's TCP state and timer for a packet in direction
// out (LAN->WAN) or in.
func (t *Table) touch(e *entry, pi int, flags uint8, out bool, s uint32) {
	var to uint32
	switch pi {
	case piUDP:
		to = t.toSec[toUDP]
	case piICMP:
		to = t.toSec[toICMP]
	default:
		e.state = tcpNext(e.state, flags, out)
		to = t.toSec[toTCPTrans]
		if e.state&stClosed == 0 && e.state&stEst != 0 {
			to = t.toSec[toTCPEst]
		}
	}
	e.exp = s + to
}

// tcpNext is the TCP state machine: enough to pick the timer.
func tcpNext(st, flags uint8, out bool) uint8 {
	dir, other, fin := uint8(stIn), uint8(stOut), uint8(stFinIn)
	if out {
		dir, other, fin = stOut, stIn, stFinOut
	}
	if flags&hdr.TCPRst != 0 {
		return st | dir | stRst
	}
	if flags&(hdr.TCPSyn|hdr.TCPAck) == hdr.TCPSyn && st&stClosed != 0 {
		st = 0 // a new connection reuses the tuple
	}
	st |= dir
	if flags&hdr.TCPFin != 0 {
		st |= fin
	}
	if flags&(hdr.TCPSyn|hdr.TCPAck) == hdr.TCPAck && st&other != 0 {
		st |= stEst
	}
	return st
}

// forward lookups: bitmap first, then the short list.
func (t *Table) fwdByExt(pi int, p uint16) *Forward {
	if pi > piUDP || t.fwdExt[pi][p>>6]&(1<<(p&63)) == 0 {
		return nil
	}
	proto := piProto[pi]
	for i := range t.cfg.Forwards {
		if f := &t.cfg.Forwards[i]; f.Proto == proto && f.ExtPort == p {
			return f
		}
	}
	return nil
}

func (t *Table) fwdByLAN(pi int, a uint32, p uint16) *Forward {
	if pi > piUDP || t.fwdLAN[pi][p>>6]&(1<<(p&63)) == 0 {
		return nil
	}
	proto := piProto[pi]
	for i := range t.cfg.Forwards {
		if f := &t.cfg.Forwards[i]; f.Proto == proto && f.LANAddr == a && f.LANPort == p {
			return f
		}
	}
	return nil
}

// endpointOwner is the LAN endpoint's worker (forward endpoints excluded).
func (t *Table) endpointOwner(pi int, a uint32, p uint16) int {
	if len(t.cfg.Ranges) <= 1 {
		return t.cfg.Worker
	}
	return EndpointOwner(piProto[pi], a, p, len(t.cfg.Ranges))
}

// extOwner returns the worker owning external port p for a packet to
// the public address, or -1 when p belongs to no NAT range or forward.
func (t *Table) extOwner(pi int, p uint16) int {
	if f := t.fwdByExt(pi, p); f != nil {
		return f.Worker
	}
	if t.cfg.LocalPorts.Contains(p) {
		return -1
	}
	for j, r := range t.cfg.Ranges {
		if r.Contains(p) {
			return j
		}
	}
	return -1
}
