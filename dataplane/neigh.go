package dataplane

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/pppfwd/pppfwd/hdr"
)

// The neighbour tables (the LAN's ARP and ND caches the workers read) are
// open-addressing hash tables with one writer and any number of readers:
// the control plane changes them under Engine.neighMu, in place, and the
// workers look them up with no lock and no allocation.
//
// Invariants that make that safe:
//   - a slot's key, once published, never changes (only a rebuild, which
//     makes a new table, moves keys); a slot is published by storing its
//     key (IPv4) or state (IPv6) last, after its MAC;
//   - a MAC is one word: a store replaces it whole, so a reader sees the
//     old or the new MAC, never a mix; macValid clear marks a deleted
//     entry (a tombstone: its key stays and ends no probe chain);
//   - at most half the slots are ever used, so every probe chain ends at
//     an empty slot.
//
// Learning costs O(1) amortised: an insert that would fill more than half
// the slots rebuilds the table at four times its live entries (dropping
// tombstones) and publishes it with an atomic pointer swap; a worker
// still reading the old table during its step misses only the changes
// made since.

// macValid marks a live entry's MAC word.
const macValid = 1 << 63

func packMAC(m [6]byte) uint64 {
	return macValid | uint64(m[0])<<40 | uint64(m[1])<<32 | uint64(m[2])<<24 | uint64(m[3])<<16 | uint64(m[4])<<8 | uint64(m[5])
}

func unpackMAC(w uint64) [6]byte {
	return [6]byte{byte(w >> 40), byte(w >> 32), byte(w >> 24), byte(w >> 16), byte(w >> 8), byte(w)}
}

// neighSize is the table size for n live entries.
func neighSize(n int) int {
	size := 16
	for size < 4*n {
		size <<= 1
	}
	return size
}

// Neighbors is the IPv4 -> MAC table for the LAN.
type Neighbors struct {
	// keys[i] and macs[i] are slot i: keys is probed densely (16 to a
	// cache line), the MAC read once the key matched. A key 0 is an
	// empty slot (0.0.0.0 is never a neighbour).
	keys []atomic.Uint32
	macs []atomic.Uint64
	mask uint32
	used int // slots with a key, tombstones included (writer only)
	live atomic.Int64
}

// NewNeighbors builds a table from m.
func NewNeighbors(m map[uint32][6]byte) *Neighbors {
	n := newNeighbors(len(m))
	for ip, mac := range m {
		n.put(ip, mac)
	}
	return n
}

func newNeighbors(live int) *Neighbors {
	size := neighSize(live)
	return &Neighbors{keys: make([]atomic.Uint32, size), macs: make([]atomic.Uint64, size), mask: uint32(size - 1)}
}

func neighHash(ip uint32) uint32 { return (ip * 0x9e3779b1) >> 7 }

// Lookup returns the MAC for ip.
func (n *Neighbors) Lookup(ip uint32) ([6]byte, bool) {
	if n == nil || ip == 0 {
		return [6]byte{}, false
	}
	i := neighHash(ip) & n.mask
	for k := n.keys[i].Load(); k != ip; k = n.keys[i].Load() {
		if k == 0 {
			return [6]byte{}, false
		}
		i = (i + 1) & n.mask
	}
	w := n.macs[i].Load()
	return unpackMAC(w), w&macValid != 0
}

// put sets ip's MAC in place when it has room (writer only) and reports
// whether it did.
func (n *Neighbors) put(ip uint32, mac [6]byte) bool {
	if ip == 0 {
		return true
	}
	for i := neighHash(ip) & n.mask; ; i = (i + 1) & n.mask {
		switch n.keys[i].Load() {
		case ip:
			if n.macs[i].Swap(packMAC(mac))&macValid == 0 {
				n.live.Add(1)
			}
			return true
		case 0:
			if 2*(n.used+1) > len(n.keys) {
				return false
			}
			n.macs[i].Store(packMAC(mac))
			n.keys[i].Store(ip) // publishes the slot
			n.used++
			n.live.Add(1)
			return true
		}
	}
}

// set sets ip's MAC and returns the table that holds it: n, or a rebuilt
// one the caller must publish (writer only).
func (n *Neighbors) set(ip uint32, mac [6]byte) *Neighbors {
	if n.put(ip, mac) {
		return n
	}
	t := NewNeighbors(n.Map())
	if t.used+1 > len(t.keys)/2 {
		t = newNeighbors(int(n.live.Load()) + 1)
		for ip, mac := range n.Map() {
			t.put(ip, mac)
		}
	}
	t.put(ip, mac)
	return t
}

// del removes ip (writer only).
func (n *Neighbors) del(ip uint32) {
	if ip == 0 {
		return
	}
	for i := neighHash(ip) & n.mask; ; i = (i + 1) & n.mask {
		switch n.keys[i].Load() {
		case ip:
			if n.macs[i].Swap(0)&macValid != 0 {
				n.live.Add(-1)
			}
			return
		case 0:
			return
		}
	}
}

// Len returns the number of entries.
func (n *Neighbors) Len() int {
	if n == nil {
		return 0
	}
	return int(n.live.Load())
}

// Map returns a copy of the entries.
func (n *Neighbors) Map() map[uint32][6]byte {
	m := map[uint32][6]byte{}
	if n == nil {
		return m
	}
	for i := range n.keys {
		if k := n.keys[i].Load(); k != 0 {
			if w := n.macs[i].Load(); w&macValid != 0 {
				m[k] = unpackMAC(w)
			}
		}
	}
	return m
}

// SetNeighbor adds or replaces a LAN neighbour.
func (e *Engine) SetNeighbor(ip uint32, mac [6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	n := e.neighbors.Load()
	if t := n.set(ip, mac); t != n {
		e.neighbors.Store(t)
	}
}

// DeleteNeighbors removes LAN neighbours.
func (e *Engine) DeleteNeighbors(ips []uint32) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	n := e.neighbors.Load()
	for _, ip := range ips {
		n.del(ip)
	}
}

// SetNeighbors replaces the whole LAN neighbour table.
func (e *Engine) SetNeighbors(m map[uint32][6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	e.neighbors.Store(NewNeighbors(m))
}

// Neighbors6 is the IPv6 -> MAC table for the LAN, read like Neighbors.
type Neighbors6 struct {
	slots []neigh6Slot
	mask  uint32
	used  int // writer only
	live  atomic.Int64
}

type neigh6Slot struct {
	state  atomic.Uint32 // 0: empty; 1: key published
	hi, lo atomic.Uint64 // the key (never changes once published)
	mac    atomic.Uint64
}

func addr6Words(a *hdr.Addr6) (uint64, uint64) {
	return binary.LittleEndian.Uint64(a[:8]), binary.LittleEndian.Uint64(a[8:])
}

// NewNeighbors6 builds a table from m.
func NewNeighbors6(m map[hdr.Addr6][6]byte) *Neighbors6 {
	n := newNeighbors6(len(m))
	for ip, mac := range m {
		n.put(&ip, mac)
	}
	return n
}

func newNeighbors6(live int) *Neighbors6 {
	size := neighSize(live)
	return &Neighbors6{slots: make([]neigh6Slot, size), mask: uint32(size - 1)}
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

// find returns ip's slot, or the empty slot ending its probe chain.
func (n *Neighbors6) find(ip *hdr.Addr6) *neigh6Slot { return &n.slots[n.index(ip)] }

// index is find's slot index.
func (n *Neighbors6) index(ip *hdr.Addr6) uint32 {
	hi, lo := addr6Words(ip)
	for i := neigh6Hash(ip) & n.mask; ; i = (i + 1) & n.mask {
		s := &n.slots[i]
		if s.state.Load() == 0 || s.hi.Load() == hi && s.lo.Load() == lo {
			return i
		}
	}
}

// Lookup returns the MAC for ip.
func (n *Neighbors6) Lookup(ip *hdr.Addr6) ([6]byte, bool) {
	if n == nil || *ip == (hdr.Addr6{}) {
		return [6]byte{}, false
	}
	s := n.find(ip)
	if s.state.Load() == 0 {
		return [6]byte{}, false
	}
	if w := s.mac.Load(); w&macValid != 0 {
		return unpackMAC(w), true
	}
	return [6]byte{}, false
}

// put is Neighbors.put for IPv6.
func (n *Neighbors6) put(ip *hdr.Addr6, mac [6]byte) bool {
	if *ip == (hdr.Addr6{}) {
		return true
	}
	s := n.find(ip)
	if s.state.Load() != 0 {
		if s.mac.Swap(packMAC(mac))&macValid == 0 {
			n.live.Add(1)
		}
		return true
	}
	if 2*(n.used+1) > len(n.slots) {
		return false
	}
	hi, lo := addr6Words(ip)
	s.hi.Store(hi)
	s.lo.Store(lo)
	s.mac.Store(packMAC(mac))
	s.state.Store(1) // publishes the slot
	n.used++
	n.live.Add(1)
	return true
}

// set is Neighbors.set for IPv6.
func (n *Neighbors6) set(ip hdr.Addr6, mac [6]byte) *Neighbors6 {
	if n.put(&ip, mac) {
		return n
	}
	m := n.Map()
	t := newNeighbors6(len(m) + 1)
	for a, mac := range m {
		t.put(&a, mac)
	}
	t.put(&ip, mac)
	return t
}

// del removes ip (writer only).
func (n *Neighbors6) del(ip *hdr.Addr6) {
	if *ip == (hdr.Addr6{}) {
		return
	}
	if s := n.find(ip); s.state.Load() != 0 && s.mac.Swap(0)&macValid != 0 {
		n.live.Add(-1)
	}
}

// Len returns the number of entries.
func (n *Neighbors6) Len() int {
	if n == nil {
		return 0
	}
	return int(n.live.Load())
}

// Map returns a copy of the entries.
func (n *Neighbors6) Map() map[hdr.Addr6][6]byte {
	m := map[hdr.Addr6][6]byte{}
	if n == nil {
		return m
	}
	for i := range n.slots {
		s := &n.slots[i]
		if s.state.Load() == 0 {
			continue
		}
		if w := s.mac.Load(); w&macValid != 0 {
			var a hdr.Addr6
			binary.LittleEndian.PutUint64(a[:8], s.hi.Load())
			binary.LittleEndian.PutUint64(a[8:], s.lo.Load())
			m[a] = unpackMAC(w)
		}
	}
	return m
}

// SetNeighbor6 adds or replaces an IPv6 LAN neighbour.
func (e *Engine) SetNeighbor6(ip hdr.Addr6, mac [6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	n := e.neighbors6.Load()
	if t := n.set(ip, mac); t != n {
		e.neighbors6.Store(t)
	}
}

// SetNeighbors6 replaces the whole IPv6 neighbour table.
func (e *Engine) SetNeighbors6(m map[hdr.Addr6][6]byte) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	e.neighbors6.Store(NewNeighbors6(m))
}

// DeleteNeighbors6 removes IPv6 neighbours.
func (e *Engine) DeleteNeighbors6(ips []hdr.Addr6) {
	e.neighMu.Lock()
	defer e.neighMu.Unlock()
	n := e.neighbors6.Load()
	for i := range ips {
		n.del(&ips[i])
	}
}

// Neighbors6 returns the current IPv6 neighbour table.
func (e *Engine) Neighbors6() *Neighbors6 { return e.neighbors6.Load() }
