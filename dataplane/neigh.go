package dataplane

import "github.com/pppfwd/pppfwd/dataplane/hdr"

// Neighbors is an immutable IPv4 -> MAC table for the LAN (the ARP cache
// the workers read). The control plane builds a new one on change and
// publishes it with an atomic pointer swap; lookups never lock or allocate.
type Neighbors struct {
	keys  []uint32 // 0 = empty slot (0.0.0.0 is never a neighbor)
	macs  [][6]byte
	mask  uint32
	count int
}

// NewNeighbors builds a table from m.
func NewNeighbors(m map[uint32][6]byte) *Neighbors {
	size := 16
	for size < 2*len(m) {
		size <<= 1
	}
	n := &Neighbors{keys: make([]uint32, size), macs: make([][6]byte, size), mask: uint32(size - 1)}
	for ip, mac := range m {
		if ip == 0 {
			continue
		}
		i := neighHash(ip) & n.mask
		for n.keys[i] != 0 {
			i = (i + 1) & n.mask
		}
		n.keys[i], n.macs[i] = ip, mac
		n.count++
	}
	return n
}

func neighHash(ip uint32) uint32 { return (ip * 0x9e3779b1) >> 7 }

// Lookup returns the MAC for ip.
func (n *Neighbors) Lookup(ip uint32) ([6]byte, bool) {
	if n == nil || ip == 0 {
		return [6]byte{}, false
	}
	i := neighHash(ip) & n.mask
	for {
		k := n.keys[i]
		if k == ip {
			return n.macs[i], true
		}
		if k == 0 {
			return [6]byte{}, false
		}
		i = (i + 1) & n.mask
	}
}

// Len returns the number of entries.
func (n *Neighbors) Len() int {
	if n == nil {
		return 0
	}
	return n.count
}

// Map returns a copy of the entries.
func (n *Neighbors) Map() map[uint32][6]byte {
	m := map[uint32][6]byte{}
	if n == nil {
		return m
	}
	for i, k := range n.keys {
		if k != 0 {
			m[k] = n.macs[i]
		}
	}
	return m
}

// SetNeighbor6 adds or replaces an IPv6 LAN neighbour (copy-on-write).
func (e *Engine) SetNeighbor6(ip hdr.Addr6, mac [6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	m := e.neighbors6.Load().Map()
	if old, ok := m[ip]; ok && old == mac {
		return
	}
	m[ip] = mac
	e.neighbors6.Store(NewNeighbors6(m))
}

// SetNeighbors6 replaces the whole IPv6 neighbour table.
func (e *Engine) SetNeighbors6(m map[hdr.Addr6][6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	e.neighbors6.Store(NewNeighbors6(m))
}

// DeleteNeighbors6 removes IPv6 neighbours (copy-on-write).
func (e *Engine) DeleteNeighbors6(ips []hdr.Addr6) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	m := e.neighbors6.Load().Map()
	for _, ip := range ips {
		delete(m, ip)
	}
	e.neighbors6.Store(NewNeighbors6(m))
}

// Neighbors6 returns the current IPv6 neighbour table.
func (e *Engine) Neighbors6() *Neighbors6 { return e.neighbors6.Load() }

// Neighbors6 is an immutable IPv6 -> MAC table, read like Neighbors.
type Neighbors6 struct {
	keys  []hdr.Addr6 // the zero address marks an empty slot (:: is never a neighbour)
	macs  [][6]byte
	mask  uint32
	count int
}

// NewNeighbors6 builds a table from m.
func NewNeighbors6(m map[hdr.Addr6][6]byte) *Neighbors6 {
	size := 16
	for size < 2*len(m) {
		size <<= 1
	}
	n := &Neighbors6{keys: make([]hdr.Addr6, size), macs: make([][6]byte, size), mask: uint32(size - 1)}
	for ip, mac := range m {
		if ip == (hdr.Addr6{}) {
			continue
		}
		i := neigh6Hash(&ip) & n.mask
		for n.keys[i] != (hdr.Addr6{}) {
			i = (i + 1) & n.mask
		}
		n.keys[i], n.macs[i] = ip, mac
		n.count++
	}
	return n
}

// neigh6Hash mixes every bit of the address into the low bits the table
// indexes by (LAN hosts share the prefix and often differ in a few bits
// of the interface id only).
func neigh6Hash(a *hdr.Addr6) uint32 { return uint32(addrMix(a)) }

// mix64 is splitmix64's finalizer: every input bit reaches every output
// bit (addresses vary in a few high bits of a word; the tables index by
// low bits, the worker choice by high ones).
func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// Lookup returns the MAC for ip.
func (n *Neighbors6) Lookup(ip *hdr.Addr6) ([6]byte, bool) {
	if n == nil || *ip == (hdr.Addr6{}) {
		return [6]byte{}, false
	}
	i := neigh6Hash(ip) & n.mask
	for {
		k := &n.keys[i]
		if *k == *ip {
			return n.macs[i], true
		}
		if *k == (hdr.Addr6{}) {
			return [6]byte{}, false
		}
		i = (i + 1) & n.mask
	}
}

// Len returns the number of entries.
func (n *Neighbors6) Len() int {
	if n == nil {
		return 0
	}
	return n.count
}

// Map returns a copy of the entries.
func (n *Neighbors6) Map() map[hdr.Addr6][6]byte {
	m := map[hdr.Addr6][6]byte{}
	if n == nil {
		return m
	}
	for i, k := range n.keys {
		if k != (hdr.Addr6{}) {
			m[k] = n.macs[i]
		}
	}
	return m
}
