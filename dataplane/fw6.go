package dataplane

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/pppfwd/pppfwd/hdr"
)

// IPv6 simple security (RFC 6092, RFC 7084 S-1): LAN hosts have public
// addresses, so the router keeps state for what they start and lets in
// from the session only what belongs to it: replies, the ICMPv6 errors
// about it (packet too big keeps path MTU discovery working), echo
// requests (RFC 4890 4.3.1), the later fragments of a datagram whose
// first fragment got in (a large DNS answer), and what Config.Allow6
// opens. A packet is judged by the upper-layer protocol and ports behind
// its extension headers (walk6), never by the fixed header's next header
// alone: a first fragment carries the whole chain (RFC 7112), and one
// that does not, or a chain too long to walk, is dropped. Each pair of LAN
// host and remote address has one owner worker, as NAT mappings do:
// uplink and downlink packets between them, errors quoting them and
// fragments hash to the same worker (flowOwner6), so the state needs no
// locks.

// Allow6 opens inbound IPv6 to LAN hosts past the firewall.
type Allow6 struct {
	Proto uint8 // hdr.ProtoTCP or hdr.ProtoUDP; 0: any protocol
	Port  uint16
	// Host is the LAN host: a full address, or with its upper 64 bits
	// zero an interface identifier in whatever prefix the LAN has (a
	// delegated prefix may change); all zero: every LAN host.
	Host hdr.Addr6
}

func (a *Allow6) match(proto uint8, port uint16, dst *hdr.Addr6) bool {
	if a.Proto != 0 && (a.Proto != proto || a.Port != port) {
		return false
	}
	switch {
	case a.Host == hdr.Addr6{}:
		return true
	case binary.BigEndian.Uint64(a.Host[:8]) == 0:
		return [8]byte(a.Host[8:]) == [8]byte(dst[8:])
	}
	return a.Host == *dst
}

// Extension headers walk6 steps over (RFC 8200 4); every other next
// header value (AH and ESP too) is an upper layer.
const (
	protoHopByHop = 0
	protoRouting  = 43
	protoFrag6    = 44
	protoDestOpts = 60
)

// Firewall timeouts (RFC 6092 REC-11, REC-14: UDP at least 2 minutes,
// established TCP at least 2 hours 4 minutes; RFC 8200 4.5: reassembly
// gives up 60 s after the first fragment).
const (
	fw6TCP   = 7440e9
	fw6TCPRS = 10e9 // after a reset
	fw6UDP   = 300e9
	fw6Echo  = 60e9
	fw6Other = 600e9
	fw6Frag  = 60e9
	// fw6Probe bounds the slots one key may occupy from its hash.
	fw6Probe = 16
	// walk6 follows at most fw6ChainHeaders extension headers, and the
	// upper-layer header must start within fw6ChainBytes after the fixed
	// header.
	fw6ChainHeaders = 8
	fw6ChainBytes   = 512
)

// Fragmentation of a packet (fw6Pkt.frag).
const (
	fragWhole = iota // no fragment header, or an atomic fragment (offset 0, M=0)
	fragFirst        // offset 0, more fragments follow
	fragLater        // offset not 0: no upper-layer header
)

// chain6 is where walk6 found a packet's upper layer.
type chain6 struct {
	off   int    // the upper-layer header's offset; a later fragment's data
	id    uint32 // the fragment header's identification, if any
	proto uint8  // the upper-layer protocol; protoFrag6 for a later fragment
	frag  uint8
	ok    bool
}

// walk6 follows the extension headers of the IPv6 packet ip (at least
// the fixed header long; nothing past len(ip) is read) to its upper-layer
// header. It stops at a fragment header with a nonzero offset: a later
// fragment has no upper-layer header. ok is false, and the rest is not
// to be trusted, for more than fw6ChainHeaders extension headers, an
// upper-layer header starting past fw6ChainBytes, a chain cut short by
// the end of ip, a hop-by-hop header that is not first, or a second
// fragment header.
func walk6(ip []byte) (c chain6) {
	c.proto, c.off = ip[6], hdr.IPv6Len
	end := min(len(ip), hdr.IPv6Len+fw6ChainBytes)
	fragSeen := false
	for n := 0; ; n++ {
		switch c.proto {
		case protoHopByHop, protoRouting, protoDestOpts, protoFrag6:
		default:
			c.ok = c.off <= end
			return c
		}
		if n == fw6ChainHeaders || c.off+8 > end || c.proto == protoHopByHop && n != 0 {
			return c
		}
		h := ip[c.off : c.off+8]
		if c.proto != protoFrag6 {
			c.proto = h[0]
			c.off += (int(h[1]) + 1) * 8
			continue
		}
		if fragSeen {
			return c
		}
		fragSeen = true
		fo := binary.BigEndian.Uint16(h[2:])
		c.id = binary.BigEndian.Uint32(h[4:])
		c.off += 8
		if fo>>3 != 0 {
			c.proto, c.frag, c.ok = protoFrag6, fragLater, true
			return c
		}
		if fo&1 != 0 {
			c.frag = fragFirst
		}
		c.proto = h[0]
	}
}

// isExt6 reports whether walk6 steps over next header value p.
func isExt6(p uint8) bool {
	return p == protoHopByHop || p == protoRouting || p == protoDestOpts || p == protoFrag6
}

// fw6Key identifies a flow from the LAN host's side. A later fragment's
// key has proto protoFrag6 and the fragment identification for ports
// (lanPort the upper half): the record its first fragment left.
type fw6Key struct {
	lan, remote         hdr.Addr6
	lanPort, remotePort uint16
	proto               uint8
}

// Who made an entry (fw6Slot.by), in the order eviction prefers them.
const (
	fw6ByWAN = 1 // a packet from the session: an Allow6 opening, a first fragment's record
	fw6ByLAN = 2 // a LAN host's packet (it created or refreshed the entry)
)

// fw6Table is one worker's IPv6 flow state: open addressing with bounded
// probing over slots of one cache line each (key, maker, hash tag,
// expiry), an entry expiring at exp (0: never used). Expired entries are
// reused by inserts and skipped by lookups. When every slot of a key's
// window is live, an insert by a LAN host replaces an entry the session
// made, else the LAN entry expiring first; an insert by a packet from the
// session replaces only an entry the session made, and when there is none
// it is not kept (refused): what outsiders send cannot push out the
// state of flows LAN hosts started. The slot hash is seeded per table,
// so nobody outside can aim packets at one window. Nothing allocates
// after newFW6.
type fw6Table struct {
	slots      []fw6Slot
	mask       uint32
	seed       uint64
	evicted    uint64 // live entries replaced
	evictedLAN uint64 // of which a LAN host had made (only by LAN inserts)
	refused    uint64 // session-made inserts with no slot they may take
}

type fw6Slot struct {
	key fw6Key
	by  uint8  // fw6ByWAN or fw6ByLAN
	tag uint32 // the key's hash: most mismatches end here
	exp int64
	_   [8]byte // to a cache line
}

func newFW6(capacity int) fw6Table {
	n := 1024
	for n < capacity {
		n <<= 1
	}
	return fw6Table{slots: make([]fw6Slot, n), mask: uint32(n - 1), seed: rand.Uint64()}
}

// hash is k's hash in t, seeded with t's seed (the zero table's is 0).
func (t *fw6Table) hash(k *fw6Key) uint32 {
	return uint32(mix64(flowWord(&k.lan, &k.remote, k.lanPort, k.remotePort, k.proto) ^ t.seed))
}

// refresh extends a live entry to now+ttl; a TCP reset's shorter ttl
// cuts it.
func (s *fw6Slot) refresh(now, ttl int64) {
	if ttl < fw6TCP && s.key.proto == hdr.ProtoTCP {
		s.exp = now + ttl
		return
	}
	s.exp = max(s.exp, now+ttl)
}

// touch records traffic of k, whose hash is h, until now+ttl, made by
// by (fw6ByLAN: a LAN host's packet; fw6ByWAN: one from the session). It
// reports whether k has an entry now (a session-made insert may be
// refused).
func (t *fw6Table) touch(k *fw6Key, h uint32, now, ttl int64, by uint8) bool {
	i := h & t.mask
	var free, victim *fw6Slot
probe:
	for p := uint32(0); p < fw6Probe; p++ {
		s := &t.slots[(i+p)&t.mask]
		switch {
		case s.exp != 0 && s.tag == h && s.key == *k:
			if s.exp <= now {
				s.by = by // expired: made anew
			} else {
				s.by = max(s.by, by)
			}
			s.refresh(now, ttl)
			return true
		case s.exp <= now:
			if free == nil {
				free = s
			}
			if s.exp == 0 {
				break probe // no key of this window lies past a slot never used
			}
		case s.by == fw6ByLAN && by != fw6ByLAN:
			// never evicted by the session's packets
		case victim == nil || s.by < victim.by || s.by == victim.by && s.exp < victim.exp:
			victim = s
		}
	}
	if free == nil {
		if victim == nil {
			t.refused++
			return false
		}
		free = victim
		t.evicted++
		if victim.by == fw6ByLAN {
			t.evictedLAN++
		}
	}
	*free = fw6Slot{key: *k, by: by, tag: h, exp: now + ttl}
	return true
}

// lookup reports whether k, whose hash is h, has live state, refreshing
// it for ttl (not when ttl is 0).
func (t *fw6Table) lookup(k *fw6Key, h uint32, now, ttl int64) bool {
	i := h & t.mask
	for p := uint32(0); p < fw6Probe; p++ {
		s := &t.slots[(i+p)&t.mask]
		if s.exp == 0 {
			return false
		}
		if s.exp > now && s.tag == h && s.key == *k {
			if ttl != 0 {
				s.refresh(now, ttl)
			}
			return true
		}
	}
	return false
}

// flowOwnerHash hashes a flow from the LAN host's side: both directions
// of a flow give the same value. It is not seeded: it only picks a
// worker.
func flowOwnerHash(lan, remote *hdr.Addr6, lanPort, remotePort uint16, proto uint8) uint32 {
	return uint32(mix64(flowWord(lan, remote, lanPort, remotePort, proto)))
}

// flowWord folds a flow into a word for mix64.
//
// Addresses vary in few bits, and in the same bits on both sides (the
// last bytes of the interface id): the LAN side is mixed on its own
// before the remote side and the ports join, or pairs would collide.
func flowWord(lan, remote *hdr.Addr6, lanPort, remotePort uint16, proto uint8) uint64 {
	return addrMix(lan) ^ addrWord(remote) ^ (uint64(lanPort)<<24|uint64(remotePort)<<8|uint64(proto))*0x27d4eb2f165667c5
}

// addrWord folds an address into a word, injectively for addresses that
// share their upper half (a prefix); addrMix also spreads it over every
// bit.
func addrWord(a *hdr.Addr6) uint64 {
	return binary.LittleEndian.Uint64(a[:8]) ^ binary.LittleEndian.Uint64(a[8:])*0x9e3779b97f4a7c15
}

func addrMix(a *hdr.Addr6) uint64 { return mix64(addrWord(a)) }

// fw6Pkt is what the firewall reads of an IPv6 packet (fw6Flow).
type fw6Pkt struct {
	key fw6Key
	ttl int64  // the state timeout the packet's kind gets
	l4  int    // the upper-layer header's offset in the packet
	id  uint32 // the fragment identification (frag is not fragWhole)
	// frag is fragWhole, fragFirst or fragLater; ok is false when the
	// chain could not be walked or the upper-layer header is cut short
	// (then key holds the addresses, and serves the shaper only).
	frag uint8
	ok   bool
}

// fw6Flow reads the firewall key of the IPv6 packet ip (lanIsSrc: an
// uplink packet) behind its extension headers: the ports of TCP and UDP,
// the ICMPv6 echo id, a later fragment's identification; other protocols
// key on addresses and protocol alone. The upper-layer header must be
// whole (TCP 20 bytes, UDP 8, ICMPv6 4 and an echo 8), but in a quote
// (the packet an ICMPv6 error carries, which may stop there) TCP and UDP
// need only their ports.
func fw6Flow(ip hdr.IPv6, lanIsSrc, quote bool) (p fw6Pkt) {
	c := walk6(ip)
	p.key.proto, p.l4, p.id, p.frag, p.ok = c.proto, c.off, c.id, c.frag, c.ok
	p.ttl = fw6Other
	var sport, dport uint16
	if p.ok {
		l4 := ip[c.off:]
		switch c.proto {
		case hdr.ProtoTCP, hdr.ProtoUDP:
			need := 8
			p.ttl = fw6UDP
			if c.proto == hdr.ProtoTCP {
				need = hdr.TCPMinLen
				p.ttl = fw6TCP
				if len(l4) >= 14 && l4[13]&0x04 != 0 { // RST
					p.ttl = fw6TCPRS
				}
			}
			if quote {
				need = 4
			}
			if len(l4) < need {
				p.ok = false
				break
			}
			sport, dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
		case protoFrag6:
			p.ttl = fw6Frag
		case hdr.ProtoICMP6:
			p.ttl = fw6Echo
			if len(l4) < 4 {
				p.ok = false
				break
			}
			if l4[0] == hdr.ICMP6EchoRequest || l4[0] == hdr.ICMP6EchoReply {
				if len(l4) < 8 {
					p.ok = false
					break
				}
				// The echo id is the LAN host's, whichever way it goes.
				id := binary.BigEndian.Uint16(l4[4:])
				if lanIsSrc {
					sport = id
				} else {
					dport = id
				}
			}
		}
	}
	k := &p.key
	if lanIsSrc {
		k.lan, k.remote = ip.Src(), ip.Dst()
		k.lanPort, k.remotePort = sport, dport
	} else {
		k.lan, k.remote = ip.Dst(), ip.Src()
		k.lanPort, k.remotePort = dport, sport
	}
	if p.ok && p.frag == fragLater {
		k.lanPort, k.remotePort = uint16(p.id>>16), uint16(p.id)
	}
	return p
}

// fragKey is the record an admitted first fragment p leaves for the
// later fragments of its datagram.
func (p *fw6Pkt) fragKey() fw6Key {
	k := p.key
	k.proto, k.lanPort, k.remotePort = protoFrag6, uint16(p.id>>16), uint16(p.id)
	return k
}

// flowOwner6 is the worker owning the pair of LAN host and remote
// address of IPv6 packet ip (lanIsSrc: an uplink packet). An ICMPv6 error
// (behind extension headers too) belongs to the pair of the packet it
// quotes.
func flowOwner6(ip hdr.IPv6, lanIsSrc bool, workers int) int {
	if workers == 1 {
		return 0
	}
	if !lanIsSrc {
		next, off := ip.NextHeader(), hdr.IPv6Len
		if isExt6(next) {
			if c := walk6(ip); c.ok {
				next, off = c.proto, c.off
			}
		}
		if next == hdr.ProtoICMP6 && len(ip) >= off+8+hdr.IPv6Len && ip[off] < 128 {
			if inner := hdr.IPv6(ip[off+8:]); inner[0]>>4 == 6 {
				ip, lanIsSrc = inner, true // the quoted packet went out from the LAN
			}
		}
	}
	lan, remote := (*hdr.Addr6)(ip[8:24]), (*hdr.Addr6)(ip[24:40])
	if !lanIsSrc {
		lan, remote = remote, lan
	}
	return int(uint64(flowOwnerHash(lan, remote, 0, 0, 0)) * uint64(workers) >> 32)
}

// touchOut records the uplink packet p (hash h, from fw6Flow): state for
// its flow, made by the LAN host. A later fragment (it has no ports; its
// first fragment made the state) and a packet whose chain could not be
// walked make none.
func (t *fw6Table) touchOut(p *fw6Pkt, h uint32, now int64) {
	if p.ok && p.frag != fragLater {
		t.touch(&p.key, h, now, p.ttl, fw6ByLAN)
	}
}

// fw6Inbound decides whether the downlink IPv6 packet ip, read by fw6Flow
// into p (hash h), may pass, refreshing the state it belongs to. A first
// fragment that passes leaves a record (fragKey) letting its later
// fragments in for the reassembly time.
func (w *Worker) fw6Inbound(ip hdr.IPv6, p *fw6Pkt, h uint32) bool {
	if w.cfg.NoFirewall6 {
		return true
	}
	if !w.fw6Admit(ip, p, h) {
		return false
	}
	if p.frag == fragFirst {
		k := p.fragKey()
		w.fw6.touch(&k, w.fw6.hash(&k), w.now, fw6Frag, fw6ByWAN)
	}
	return true
}

func (w *Worker) fw6Admit(ip hdr.IPv6, p *fw6Pkt, h uint32) bool {
	if !p.ok {
		return false
	}
	t := &w.fw6
	ttl := p.ttl
	switch p.key.proto {
	case protoFrag6:
		ttl = 0 // the record lasts the reassembly time from the first fragment
	case hdr.ProtoICMP6:
		l4 := ip[p.l4:] // at least 4 bytes (fw6Flow)
		switch typ := l4[0]; {
		case typ == hdr.ICMP6EchoRequest:
			return true
		case typ < 128:
			// An error: it must quote a packet of a flow the LAN host
			// it goes to started (the quote's source is that host).
			if len(l4) < 8+hdr.IPv6Len {
				return false
			}
			inner := hdr.IPv6(l4[8:])
			if inner[0]>>4 != 6 || [16]byte(inner[8:24]) != [16]byte(ip[24:40]) {
				return false
			}
			q := fw6Flow(inner, true, true)
			return q.ok && q.frag != fragLater && t.lookup(&q.key, t.hash(&q.key), w.now, 0)
		}
	}
	if t.lookup(&p.key, h, w.now, ttl) {
		return true
	}
	for i := range w.cfg.Allow6 {
		if w.cfg.Allow6[i].match(p.key.proto, p.key.lanPort, &p.key.lan) {
			t.touch(&p.key, h, w.now, p.ttl, fw6ByWAN)
			return true
		}
	}
	return false
}
