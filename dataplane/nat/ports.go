package nat

import "math/bits"

// Port index.
//
// A table's ports are its Range's ports of [Lo, Hi) (the high segment)
// and its low share of [1, LowHi()) (the low segment). The per-port
// arrays (ports, bits, lanOf) hold them compacted: a port p of pair
// b = p/2, owned when b mod n == slot, sits at 2*(b/n) + p%2 (relative
// to the segment's first pair), so a port's parity is its index's, and
// index order is port order within a segment. Indexes of pairs cut by a
// segment's ends (the port 0, ports below Lo or from Hi on) are marked
// used for good in every bitmap.

// portIndex is the layout of a table's ports.
type portIndex struct {
	n, slot uint32 // pair interleave: pair b is owned when b%n == slot
	magic   uint64 // ceil(2^32/n): b/n == b*magic>>32 for every pair b
	lowHi   uint32 // low segment [1, lowHi), none when lowHi <= 1
	lowLen  uint32 // indexes [0, lowLen) are the low segment
	hiLo    uint32 // high segment [hiLo, hiHi)
	hiHi    uint32
	hiBase  uint32 // b/n of the high segment's first pair
	span    uint32 // number of indexes; index() == span: not a table port
}

func newPortIndex(r Range) portIndex {
	x := portIndex{n: 1, hiLo: uint32(r.Lo), hiHi: uint32(r.Hi), lowHi: uint32(r.LowHi())}
	if r.Of > 1 {
		x.n, x.slot = uint32(r.Of), uint32(r.Slot)
	}
	x.magic = (1<<32 + uint64(x.n) - 1) / uint64(x.n)
	if x.lowHi > 1 {
		x.lowLen = ((x.lowHi-1)>>1/x.n + 1) * 2
	}
	x.span = x.lowLen
	if x.hiHi > x.hiLo {
		x.hiBase = x.hiLo >> 1 / x.n
		x.span += ((x.hiHi-1)>>1/x.n - x.hiBase + 1) * 2
	}
	return x
}

// index returns p's index, or span when p is not one of the table's
// ports. It never divides.
func (x *portIndex) index(p uint16) uint32 {
	q := uint32(p)
	b := q >> 1
	c := uint32(uint64(b) * x.magic >> 32)
	if b-c*x.n != x.slot {
		return x.span
	}
	if q-x.hiLo < x.hiHi-x.hiLo {
		return x.lowLen + (c-x.hiBase)<<1 | q&1
	}
	if q != 0 && q < x.lowHi {
		return c<<1 | q&1
	}
	return x.span
}

// port is index's inverse; for an index of a cut pair it returns a port
// that is not the table's (possibly >= 65536).
func (x *portIndex) port(i uint32) uint32 {
	c := i >> 1
	if i >= x.lowLen {
		c = (i-x.lowLen)>>1 + x.hiBase
	}
	return (c*x.n+x.slot)<<1 | i&1
}

// valid reports whether index i holds a table port.
func (x *portIndex) valid(i uint32) bool {
	p := x.port(i)
	return p < 1<<16 && x.index(uint16(p)) == i
}

// segment returns the index bounds [lo, hi) of the segment allocations
// for LAN port pref start in, and whether a low segment pref may fall
// back to the high one: the segment holding pref; else the low one for
// pref below 1024 when there is one; else the high one.
func (x *portIndex) segment(pref uint16) (lo, hi uint32, low bool) {
	q := uint32(pref)
	inHigh := q-x.hiLo < x.hiHi-x.hiLo
	if !inHigh && q < lowPorts && x.lowLen > 0 {
		return 0, x.lowLen, true
	}
	return x.lowLen, x.span, false
}

// start returns the index of the first index of [lo, hi) whose port is
// at or above pref (lo when none is: the scan wraps).
func (x *portIndex) start(pref uint16, lo, hi uint32) uint32 {
	b := uint32(pref) >> 1
	c := b / x.n
	if c*x.n+x.slot < b {
		c++
	}
	var i uint32
	if lo < x.lowLen {
		i = c << 1
	} else {
		if c < x.hiBase {
			return lo
		}
		i = x.lowLen + (c-x.hiBase)<<1
	}
	if c*x.n+x.slot == b {
		i |= uint32(pref) & 1
	}
	if i < lo || i >= hi {
		return lo
	}
	return i
}

// Parity patterns of a bitmap word: even indexes (even ports), odd ones.
const (
	evenBits = 0x5555555555555555
	oddBits  = ^uint64(evenBits)
)

// allocPort takes a free external port for protocol index pi for LAN
// port / id pref: pref itself when free; else, in pref's segment (the
// low one for pref below 1024, RFC 4787 REQ-3a), the first free port
// from pref upward (wrapping) of pref's parity (REQ-4), then of either
// parity; a low pref then tries the high segment the same way.
func (t *Table) allocPort(pi int, pref uint16) (uint16, bool) {
	x := &t.px
	words := t.bits[pi]
	lo, hi, low := x.segment(pref)
	par := uint64(evenBits)
	if pref&1 != 0 {
		par = oddBits
	}
	for {
		s := x.start(pref, lo, hi)
		for _, pat := range [2]uint64{par, ^uint64(0)} {
			i, ok := scanFree(words, s, hi, pat)
			if !ok {
				i, ok = scanFree(words, lo, s, pat)
			}
			if ok {
				words[i>>6] |= 1 << (i & 63)
				return uint16(x.port(i)), true
			}
		}
		if !low {
			return 0, false
		}
		lo, hi, low = x.lowLen, x.span, false
	}
}

// scanFree returns the first clear bit of words in [a, b) that pat allows.
func scanFree(words []uint64, a, b uint32, pat uint64) (uint32, bool) {
	if a >= b {
		return 0, false
	}
	last := (b - 1) >> 6
	for w := a >> 6; w <= last; w++ {
		x := ^words[w] & pat
		if w == a>>6 {
			x &= ^uint64(0) << (a & 63)
		}
		if w == last && b&63 != 0 {
			x &= 1<<(b&63) - 1
		}
		if x != 0 {
			return w<<6 | uint32(bits.TrailingZeros64(x)), true
		}
	}
	return 0, false
}
