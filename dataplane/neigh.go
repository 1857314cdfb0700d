package dataplane

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
