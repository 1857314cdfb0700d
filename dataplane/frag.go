package dataplane

import (
	"sync/atomic"

	"github.com/pppfwd/pppfwd/hdr"
)

// IPv4 fragments cross the NAT without reassembly. The first fragment of a
// datagram carries its ports and is translated like any packet (its
// transport checksum, which covers the whole datagram, is updated
// incrementally). Later fragments carry only the IP header:
//   - uplink, they need only the public source address, so any worker
//     forwards them without state;
//   - downlink, the worker that took a datagram's first fragment
//     remembers, once the NAT let it in, which LAN host it was for, keyed
//     by (source, IP id, protocol) for fragTimeout, and publishes that it
//     holds the datagram (fragSeen) for the steerer to send the later
//     fragments there. Only datagrams the NAT let in are published, so a
//     flood of first fragments cannot displace them; the steerer's own
//     table of where it sent first fragments serves the later fragments
//     that arrive before the worker has published (the same batch). A later fragment that
//     arrives before its first one, or after the timeout, is dropped and
//     counted (DropFragment), as is a later TCP fragment at offset 8
//     (RFC 1858).
//
// Uplink, the fragments keep the host's IP id: two LAN hosts sending
// fragmented datagrams to one destination with the same id at the same
// moment collide in its reassembly (a reassembling NAT that keeps ids,
// as Linux's does, shares this).
//
// The shaper hashes every fragment by addresses and protocol, so the
// fragments of a datagram share a queue.

// fragTable maps a datagram's key to what its first fragment decided. It
// is a fixed direct-mapped table (a newer datagram takes the slot of an
// older one); only its owner thread touches it.
type fragTable struct {
	e [fragSlots]fragEntry
}

type fragEntry struct {
	src   uint32
	val   uint32
	until int64
	id    uint16
	proto uint8
}

const (
	fragSlots = 1024
	// fragTimeout bounds how long a datagram's later fragments are taken
	// after its first (ns). A datagram's fragments come within
	// milliseconds; a short life keeps a lost first fragment's key (the
	// sender's IP id counter wraps) from sending a later datagram's
	// fragments where the old one went.
	fragTimeout = 5e9
)

func fragSlot(src uint32, id uint16, proto uint8) int {
	h := src*0x9e3779b1 ^ uint32(id)*0x85ebca77 ^ uint32(proto)<<24
	return int(h>>22) & (fragSlots - 1)
}

// put remembers val for the datagram of ip (a first fragment).
func (t *fragTable) put(ip hdr.IPv4, val uint32, now int64) {
	src, id, proto := ip.Src(), ip.ID(), ip.Protocol()
	t.e[fragSlot(src, id, proto)] = fragEntry{src: src, val: val, until: now + fragTimeout, id: id, proto: proto}
}

// get returns what the first fragment of ip's datagram decided.
func (t *fragTable) get(ip hdr.IPv4, now int64) (uint32, bool) {
	src, id, proto := ip.Src(), ip.ID(), ip.Protocol()
	e := &t.e[fragSlot(src, id, proto)]
	if e.src != src || e.id != id || e.proto != proto || e.until < now {
		return 0, false
	}
	return e.val, true
}

// laterFragment reports whether ip is a fragment other than the first.
func laterFragment(ip hdr.IPv4) bool { return ip.FragOffset() != 0 }

// overlapsTCPHeader reports a later TCP fragment at offset 8, which can
// only serve to overwrite the flags of the first fragment's TCP header
// (RFC 1858 section 3.2: drop it).
func overlapsTCPHeader(ip hdr.IPv4) bool {
	return ip.FragOffset() == 8 && ip.Protocol() == hdr.ProtoTCP
}

// fragSeen is one worker's published set of downlink datagrams whose first
// fragment the NAT let in: written by the worker, read by the steerer.
// A slot is rewritten key first (to 0), then its deadline, then its key:
// a reader that sees the same key before and after reading the deadline
// has that key's deadline.
type fragSeen struct {
	e [fragSlots]fragSeenSlot
}

type fragSeenSlot struct {
	key   atomic.Uint64
	until atomic.Int64
}

func fragSeenKey(ip hdr.IPv4) (uint64, int) {
	src, id, proto := ip.Src(), ip.ID(), ip.Protocol()
	return uint64(src)<<32 | uint64(id)<<16 | uint64(proto)<<8 | 1, fragSlot(src, id, proto)
}

// put publishes ip's datagram until until (steering clock).
func (t *fragSeen) put(ip hdr.IPv4, until int64) {
	k, i := fragSeenKey(ip)
	s := &t.e[i]
	if s.key.Load() == k {
		s.until.Store(until)
		return
	}
	s.key.Store(0)
	s.until.Store(until)
	s.key.Store(k)
}

// has reports whether ip's datagram is published and not past its time.
func (t *fragSeen) has(ip hdr.IPv4, now int64) bool {
	k, i := fragSeenKey(ip)
	s := &t.e[i]
	if s.key.Load() != k {
		return false
	}
	u := s.until.Load()
	return s.key.Load() == k && u >= now
}
