package dataplane

import (
	"encoding/binary"

	"github.com/pppfwd/pppfwd/dataplane/hdr"
)

// IPv6 simple security (RFC 6092, RFC 7084 S-1): LAN hosts have public
// addresses, so the router keeps state for what they start and lets in
// from the session only what belongs to it: replies, the ICMPv6 errors
// about it (packet too big keeps path MTU discovery working), echo
// requests (RFC 4890 4.3.1), fragments from a remote the host sent UDP
// to (a large DNS answer), and what Config.Allow6 opens. Each pair of LAN
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

// Firewall timeouts (RFC 6092 REC-11, REC-14: UDP at least 2 minutes,
// established TCP at least 2 hours 4 minutes).
const (
	protoFrag6 = 44 // IPv6 fragment header
	fw6TCP     = 7440e9
	fw6TCPRS   = 10e9 // after a reset
	fw6UDP     = 300e9
	fw6Echo    = 60e9
	fw6Other   = 600e9
	// fw6Probe bounds the slots one key may occupy from its hash.
	fw6Probe = 16
)

// fw6Key identifies a flow from the LAN host's side.
type fw6Key struct {
	lan, remote         hdr.Addr6
	lanPort, remotePort uint16
	proto               uint8
}

// fw6Table is one worker's IPv6 flow state: open addressing with bounded
// probing over slots of one cache line each (key, hash tag, expiry), an
// entry expiring at exp (0: never used). Expired entries are reused by
// inserts and skipped by lookups; when every slot of a key's window is
// live, the one expiring first is replaced. Nothing allocates after
// newFW6.
type fw6Table struct {
	slots   []fw6Slot
	mask    uint32
	evicted uint64 // live entries replaced
}

type fw6Slot struct {
	key fw6Key
	tag uint32 // the key's hash: most mismatches end here
	exp int64
	// pairExp: until when this UDP flow last opened its pair to
	// fragments (touchOut refreshes that entry only now and then).
	pairExp int64
}

func newFW6(capacity int) fw6Table {
	n := 1024
	for n < capacity {
		n <<= 1
	}
	return fw6Table{slots: make([]fw6Slot, n), mask: uint32(n - 1)}
}

func (k *fw6Key) hash() uint32 {
	return flowOwnerHash(&k.lan, &k.remote, k.lanPort, k.remotePort, k.proto)
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

// touch records outbound traffic of k, whose hash is h, (until now+ttl)
// and returns its slot.
func (t *fw6Table) touch(k *fw6Key, h uint32, now, ttl int64) *fw6Slot {
	i := h & t.mask
	var free, oldest *fw6Slot
	for p := uint32(0); p < fw6Probe; p++ {
		s := &t.slots[(i+p)&t.mask]
		switch {
		case s.exp != 0 && s.tag == h && s.key == *k:
			s.refresh(now, ttl)
			return s
		case s.exp <= now:
			if free == nil {
				free = s
			}
		case oldest == nil || s.exp < oldest.exp:
			oldest = s
		}
	}
	if free == nil {
		free = oldest
		t.evicted++
	}
	*free = fw6Slot{key: *k, tag: h, exp: now + ttl}
	return free
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
// of a flow give the same value.
//
// Addresses vary in few bits, and in the same bits on both sides (the
// last bytes of the interface id): the LAN side is mixed on its own
// before the remote side and the ports join, or pairs would collide.
func flowOwnerHash(lan, remote *hdr.Addr6, lanPort, remotePort uint16, proto uint8) uint32 {
	return uint32(mix64(addrMix(lan) ^ addrWord(remote) ^ (uint64(lanPort)<<24|uint64(remotePort)<<8|uint64(proto))*0x27d4eb2f165667c5))
}

// addrWord folds an address into a word, injectively for addresses that
// share their upper half (a prefix); addrMix also spreads it over every
// bit.
func addrWord(a *hdr.Addr6) uint64 {
	return binary.LittleEndian.Uint64(a[:8]) ^ binary.LittleEndian.Uint64(a[8:])*0x9e3779b97f4a7c15
}

func addrMix(a *hdr.Addr6) uint64 { return mix64(addrWord(a)) }

// fw6Flow reads the firewall key of the IPv6 packet ip (lanIsSrc: an
// uplink packet) and the state timeout its kind gets. Ports are those of
// TCP and UDP right behind the fixed header and the ICMPv6 echo id;
// other protocols (and extension headers) key on addresses alone.
func fw6Flow(ip hdr.IPv6, lanIsSrc bool) (k fw6Key, ttl int64) {
	k.proto = ip.NextHeader()
	var sport, dport uint16
	ttl = fw6Other
	l4 := ip[hdr.IPv6Len:]
	switch k.proto {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		ttl = fw6UDP
		if k.proto == hdr.ProtoTCP {
			ttl = fw6TCP
			if len(l4) >= 14 && l4[13]&0x04 != 0 { // RST
				ttl = fw6TCPRS
			}
		}
		if len(l4) >= 4 { // a quote in an ICMPv6 error may stop there
			sport, dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
		}
	case protoFrag6:
		ttl = fw6UDP
	case hdr.ProtoICMP6:
		ttl = fw6Echo
		if len(l4) >= 8 && (l4[0] == hdr.ICMP6EchoRequest || l4[0] == hdr.ICMP6EchoReply) {
			// The echo id is the LAN host's, whichever way it goes.
			id := binary.BigEndian.Uint16(l4[4:])
			if lanIsSrc {
				sport = id
			} else {
				dport = id
			}
		}
	}
	if lanIsSrc {
		k.lan, k.remote = ip.Src(), ip.Dst()
		k.lanPort, k.remotePort = sport, dport
	} else {
		k.lan, k.remote = ip.Dst(), ip.Src()
		k.lanPort, k.remotePort = dport, sport
	}
	return k, ttl
}

// flowOwner6 is the worker owning the pair of LAN host and remote
// address of IPv6 packet ip (lanIsSrc: an uplink packet). An ICMPv6 error
// belongs to the pair of the packet it quotes.
func flowOwner6(ip hdr.IPv6, lanIsSrc bool, workers int) int {
	if workers == 1 {
		return 0
	}
	if !lanIsSrc && ip.NextHeader() == hdr.ProtoICMP6 && len(ip) >= hdr.IPv6Len+8+hdr.IPv6Len && ip[hdr.IPv6Len] < 128 {
		if inner := hdr.IPv6(ip[hdr.IPv6Len+8:]); inner[0]>>4 == 6 {
			ip, lanIsSrc = inner, true // the quoted packet went out from the LAN
		}
	}
	lan, remote := (*hdr.Addr6)(ip[8:24]), (*hdr.Addr6)(ip[24:40])
	if !lanIsSrc {
		lan, remote = remote, lan
	}
	return int(uint64(flowOwnerHash(lan, remote, 0, 0, 0)) * uint64(workers) >> 32)
}

// touchOut records an uplink packet's flow k (hash h, from fw6Flow); UDP
// also opens the pair to fragments (later fragments carry no ports).
func (t *fw6Table) touchOut(k fw6Key, h uint32, now, ttl int64) {
	s := t.touch(&k, h, now, ttl)
	// The pair's entry is refreshed at most every ttl/2, not on every
	// packet of the flow, and made to last ttl/2 longer than the flow's:
	// it outlives the flow's state whenever the skipped packets came.
	// (Should the table evict it, fragments wait for the next refresh.)
	if k.proto == hdr.ProtoUDP && s.pairExp-now < ttl/2 {
		s.pairExp = now + ttl
		k.proto, k.lanPort, k.remotePort = protoFrag6, 0, 0
		t.touch(&k, k.hash(), now, ttl+ttl/2)
	}
}

// fw6Inbound decides whether the downlink IPv6 packet ip, whose flow is k
// (hash h, timeout ttl, from fw6Flow), may pass, refreshing the state it
// belongs to.
func (w *Worker) fw6Inbound(ip hdr.IPv6, k *fw6Key, h uint32, ttl int64) bool {
	if w.cfg.NoFirewall6 {
		return true
	}
	l4 := ip[hdr.IPv6Len:]
	if ip.NextHeader() == hdr.ProtoICMP6 && len(l4) >= 8 {
		switch t := l4[0]; {
		case t == hdr.ICMP6EchoRequest:
			return true
		case t < 128:
			// An error: it must quote a packet of a flow the LAN host
			// it goes to started (the quote's source is that host).
			inner := hdr.IPv6(l4[8:])
			if len(inner) < hdr.IPv6Len || inner[0]>>4 != 6 || [16]byte(inner[8:24]) != [16]byte(ip[24:40]) {
				return false
			}
			q, _ := fw6Flow(inner, true)
			return w.fw6.lookup(&q, q.hash(), w.now, 0)
		}
	}
	if w.fw6.lookup(k, h, w.now, ttl) {
		return true
	}
	for i := range w.cfg.Allow6 {
		if w.cfg.Allow6[i].match(k.proto, k.lanPort, &k.lan) {
			w.fw6.touch(k, h, w.now, ttl)
			return true
		}
	}
	return false
}
