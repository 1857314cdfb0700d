package dataplane

import (
	"sync/atomic"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/nic"
	"github.com/pppfwd/pppfwd/shaper"
)

// Reason is why a frame was dropped (or diverted). Drops are counted per
// reason and per worker; nothing is logged per packet.
type Reason uint8

const (
	DropBadEthernet  Reason = iota // shorter than an Ethernet header
	DropNotOurMAC                  // unicast to another MAC
	DropBadIPv4                    // version, header or total length wrong
	DropBadChecksum                // IPv4 header checksum wrong
	DropIPOptions                  // IPv4 options (not handled on the fast path)
	DropFragment                   // a later IPv4 fragment whose first was not seen, a hairpin's, or a TCP one at offset 8 (frag.go); fragmented ICMP errors count as nat
	DropMartian                    // LAN source outside the LAN prefix
	DropTTLExceeded                // TTL expired (an ICMP error may be sent)
	DropNoSession                  // PPPoE session down
	DropTooBig                     // larger than the PPPoE MTU with DF set (ICMP sent), or unfragmentable
	DropNAT                        // NAT refused (see the NAT's own counters)
	DropNATReject                  // NAT table/host limit (ICMP admin-prohibited sent)
	DropBadPPPoE                   // malformed PPPoE/PPP header
	DropWrongSession               // other session id or AC MAC
	DropNotForUs                   // WAN IPv4 not addressed to the session address
	DropUnsupported                // protocol the fast path does not forward (IPv6 without a LAN prefix, VLAN on LAN)
	DropShaper                     // dropped by FQ-CoDel (limits / CoDel)
	DropTxFull                     // TX ring full
	DropRingFull                   // inter-core ring full
	DropException                  // exception path queue full
	DropNoBuffer                   // frame pool empty when a frame had to be made (fragmenting)
	DropHeadroom                   // not enough headroom to encapsulate
	DropBadIPv6                    // IPv6 version or payload length wrong
	DropFirewall                   // IPv6 from the session that no LAN host asked for (fw6.go)
	DropControlLimit               // WAN control frame not of our session, over the control rate limit
	DropHostLocal                  // a host-stack frame (FromHost) for the LAN or the router itself: not handed back (host.go)
	DropCsumPartial                // marked with an unfinished checksum, but not a TCP or UDP segment the fast path can finish (csum.go)
	numReasons
)

var reasonNames = [numReasons]string{
	"bad_ethernet", "not_our_mac", "bad_ipv4", "bad_checksum", "ip_options",
	"fragment", "martian", "ttl_exceeded", "no_session", "too_big", "nat",
	"nat_reject", "bad_pppoe", "wrong_session", "not_for_us",
	"unsupported", "shaper", "tx_full", "ring_full", "exception_full",
	"no_buffer", "headroom", "bad_ipv6", "firewall", "control_limit",
	"host_local", "csum_partial",
}

// String returns the reason's stable name (used in JSON).
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every drop reason.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// Counters are one thread's packet counters. The owner updates the plain
// fields and publishes them every 64th loop iteration and when it goes
// idle (publishDue); other goroutines read only the published copy.
type Counters struct {
	RxLAN, RxWAN     uint64 // frames taken from the LAN port / from steering
	TxLAN, TxWAN     uint64 // frames handed to the LAN / WAN port
	Exception        uint64 // frames sent to the exception (control/host) path
	ICMPSent         uint64 // ICMP errors generated
	ICMPRateLimited  uint64 // ICMP errors suppressed by the rate limit
	Clamped          uint64 // TCP SYNs whose MSS was clamped
	Redirected       uint64 // frames handed to another worker
	Unresolved       uint64 // LAN next hop unknown: held by the control plane while ARP resolves it
	Fragments        uint64 // IPv4 fragments made for the PPPoE MTU (DF clear)
	NoBufferPolls    uint64 // receives skipped for want of a free frame (the frames wait in the port)
	IPv6Up, IPv6Down uint64 // IPv6 packets forwarded to the session / to the LAN (routed, no NAT)
	NATEntries       uint64 // live NAT flows in this worker's table (a gauge)
	// FromHost: frames of the router's own host stack the worker routed
	// (Send FromHost); ToHost: frames it handed to the host stack (the
	// session's traffic for the router's own addresses, ICMP errors).
	FromHost, ToHost uint64
	// CsumCompleted: LAN frames whose TCP or UDP checksum the sender
	// left unfinished (checksum offload of a VM or container) and the
	// worker finished (csum.go).
	CsumCompleted uint64
	// BytesUp and BytesDown are the IP bytes (no Ethernet or PPPoE
	// header) of the packets the worker forwards towards the session and
	// towards the LAN, counted where forwarding decides (before the shaper
	// of a shaped direction, whose drops count as DropShaper).
	BytesUp, BytesDown uint64
	Drops              [numReasons]uint64
	CPUNanos           uint64 // thread CPU time since start (if measured)
	SteerPackets       uint64 // frames classified by steering on this thread
	SteerNanos         uint64 // time spent steering on this thread
	// SteerRedirected: WAN frames this worker's steerer (SteerLocal) handed
	// to another worker, their owner, over a ring.
	SteerRedirected uint64
	// Sleeps: the thread's sleeps in the kernel with nothing to do (its
	// wakeups). Realtime is a gauge, 1 while the thread waits in the
	// realtime class (Config.RTPrio); RealtimeExits counts the times it
	// left that class for a load (busy for rtBusy without sleeping, or
	// woken frame by frame). Set by the thread's idler.
	Sleeps, Realtime, RealtimeExits uint64
}

// counterCell is where an owner publishes its Counters for readers.
type counterCell struct {
	w   [countersWords]atomic.Uint64
	cpu atomic.Uint64
	// src, when set (before the owner thread starts: Engine.PublishDetail),
	// is what publish also copies into d; only the owner thread reads
	// its sources.
	src *detailSource
	d   [detailWords]atomic.Uint64
}

const countersWords = 26 + int(numReasons)

func (c *Counters) words() [countersWords]uint64 {
	var w [countersWords]uint64
	w[0], w[1], w[2], w[3] = c.RxLAN, c.RxWAN, c.TxLAN, c.TxWAN
	w[4], w[5], w[6], w[7] = c.Exception, c.ICMPSent, c.ICMPRateLimited, c.Clamped
	w[8], w[9], w[10] = c.Redirected, c.SteerPackets, c.SteerNanos
	w[11], w[12], w[13] = c.Unresolved, c.Fragments, c.NoBufferPolls
	w[14], w[15], w[16] = c.IPv6Up, c.IPv6Down, c.NATEntries
	w[17], w[18] = c.BytesUp, c.BytesDown
	w[19], w[20], w[21], w[22] = c.FromHost, c.ToHost, c.CsumCompleted, c.SteerRedirected
	w[23], w[24], w[25] = c.Sleeps, c.Realtime, c.RealtimeExits
	copy(w[26:], c.Drops[:])
	return w
}

// publish makes the owner's counters visible to load.
func (p *counterCell) publish(c *Counters) {
	w := c.words()
	for i := range w {
		p.w[i].Store(w[i])
	}
	if p.src != nil {
		p.publishDetail()
	}
}

// load returns the last published counters (safe from any goroutine).
func (p *counterCell) load() Counters {
	var s Counters
	var w [countersWords]uint64
	for i := range w {
		w[i] = p.w[i].Load()
	}
	s.CPUNanos = p.cpu.Load()
	s.RxLAN, s.RxWAN, s.TxLAN, s.TxWAN = w[0], w[1], w[2], w[3]
	s.Exception, s.ICMPSent, s.ICMPRateLimited, s.Clamped = w[4], w[5], w[6], w[7]
	s.Redirected, s.SteerPackets, s.SteerNanos = w[8], w[9], w[10]
	s.Unresolved, s.Fragments, s.NoBufferPolls = w[11], w[12], w[13]
	s.IPv6Up, s.IPv6Down, s.NATEntries = w[14], w[15], w[16]
	s.BytesUp, s.BytesDown = w[17], w[18]
	s.FromHost, s.ToHost, s.CsumCompleted, s.SteerRedirected = w[19], w[20], w[21], w[22]
	s.Sleeps, s.Realtime, s.RealtimeExits = w[23], w[24], w[25]
	copy(s.Drops[:], w[26:])
	return s
}

// Add accumulates o into c (for totals).
func (c *Counters) Add(o *Counters) {
	c.RxLAN += o.RxLAN
	c.RxWAN += o.RxWAN
	c.TxLAN += o.TxLAN
	c.TxWAN += o.TxWAN
	c.Exception += o.Exception
	c.ICMPSent += o.ICMPSent
	c.ICMPRateLimited += o.ICMPRateLimited
	c.Clamped += o.Clamped
	c.Redirected += o.Redirected
	c.Unresolved += o.Unresolved
	c.NoBufferPolls += o.NoBufferPolls
	c.Fragments += o.Fragments
	c.NATEntries += o.NATEntries
	c.IPv6Up += o.IPv6Up
	c.IPv6Down += o.IPv6Down
	c.BytesUp += o.BytesUp
	c.BytesDown += o.BytesDown
	c.FromHost += o.FromHost
	c.ToHost += o.ToHost
	c.CsumCompleted += o.CsumCompleted
	c.SteerPackets += o.SteerPackets
	c.SteerNanos += o.SteerNanos
	c.SteerRedirected += o.SteerRedirected
	c.CPUNanos += o.CPUNanos
	c.Sleeps += o.Sleeps
	c.Realtime += o.Realtime
	c.RealtimeExits += o.RealtimeExits
	for i := range c.Drops {
		c.Drops[i] += o.Drops[i]
	}
}

// TotalDrops sums the drops over every reason.
func (c Counters) TotalDrops() uint64 {
	var t uint64
	for _, d := range c.Drops {
		t += d
	}
	return t
}

// DropMap returns the non-zero drops by reason name.
func (c Counters) DropMap() map[string]uint64 {
	m := map[string]uint64{}
	for i, d := range c.Drops {
		if d != 0 {
			m[Reason(i).String()] = d
		}
	}
	return m
}

// Detail is what a worker publishes beside its Counters when the engine
// was asked to (Engine.PublishDetail): its NAT table's counters and its
// shapers' (zero for a direction that is not shaped). It is published
// with the Counters, from the worker's own thread, so reading it never
// touches the worker's tables.
type Detail struct {
	NAT                  nat.Stats
	Up, Down             shaper.Stats
	ShapedUp, ShapedDown bool
}

// detailSource is a worker's NAT table and shapers (nil when unshaped).
type detailSource struct {
	nat      *nat.Table
	up, down *shaper.FQCoDel[*nic.Frame]
}

const (
	natWords    = 15 + int(nat.NumReasons)
	shaperWords = 8 + int(shaper.NumDropReasons)
	detailWords = natWords + 2*shaperWords
)

func natToWords(w []uint64, s *nat.Stats) {
	w[0], w[1], w[2], w[3] = s.Entries, s.Forwards, s.Mappings, s.Slots
	w[4], w[5], w[6], w[7] = s.Capacity, s.Allocations, s.MappingAllocs, s.Expired
	w[8], w[9], w[10], w[11] = s.Flushes, s.Drops, s.Rejects, s.Redirects
	w[12], w[13], w[14] = s.Hairpins, s.Locals, s.ForwardUntracked
	copy(w[15:], s.Reasons[:])
}

func natFromWords(w []uint64) nat.Stats {
	var s nat.Stats
	s.Entries, s.Forwards, s.Mappings, s.Slots = w[0], w[1], w[2], w[3]
	s.Capacity, s.Allocations, s.MappingAllocs, s.Expired = w[4], w[5], w[6], w[7]
	s.Flushes, s.Drops, s.Rejects, s.Redirects = w[8], w[9], w[10], w[11]
	s.Hairpins, s.Locals, s.ForwardUntracked = w[12], w[13], w[14]
	copy(s.Reasons[:], w[15:])
	return s
}

func shaperToWords(w []uint64, s *shaper.Stats) {
	w[0], w[1], w[2], w[3] = s.Enqueued, s.Dequeued, s.Dropped, s.Marked
	w[4], w[5], w[6], w[7] = uint64(s.Backlog), uint64(s.BacklogBytes), s.Leases, s.RateLimited
	copy(w[8:], s.Drops[:])
}

func shaperFromWords(w []uint64) shaper.Stats {
	var s shaper.Stats
	s.Enqueued, s.Dequeued, s.Dropped, s.Marked = w[0], w[1], w[2], w[3]
	s.Backlog, s.BacklogBytes, s.Leases, s.RateLimited = int(w[4]), int64(w[5]), w[6], w[7]
	copy(s.Drops[:], w[8:])
	return s
}

// publishDetail copies the sources' counters into d (owner thread only).
func (p *counterCell) publishDetail() {
	var w [detailWords]uint64
	ns := p.src.nat.Stats()
	natToWords(w[:natWords], &ns)
	if p.src.up != nil {
		s := p.src.up.Stats()
		shaperToWords(w[natWords:natWords+shaperWords], &s)
	}
	if p.src.down != nil {
		s := p.src.down.Stats()
		shaperToWords(w[natWords+shaperWords:], &s)
	}
	for i := range w {
		p.d[i].Store(w[i])
	}
}

// loadDetail returns the last published Detail (any goroutine).
func (p *counterCell) loadDetail() Detail {
	var w [detailWords]uint64
	for i := range w {
		w[i] = p.d[i].Load()
	}
	d := Detail{NAT: natFromWords(w[:natWords]),
		Up:   shaperFromWords(w[natWords : natWords+shaperWords]),
		Down: shaperFromWords(w[natWords+shaperWords:])}
	if p.src != nil {
		d.ShapedUp, d.ShapedDown = p.src.up != nil, p.src.down != nil
	}
	return d
}
