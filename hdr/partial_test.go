package hdr

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// partialSeg builds a TCP or UDP segment of n bytes (n >= the header)
// with seeded contents, between src and dst (4 or 16 bytes each), and
// returns it with its checksum field holding only the pseudo-header sum
// (as a sender leaves it for an offload), the pseudo-header's sum, and
// the checksum field's offset.
func partialSeg(rng *rand.Rand, src, dst []byte, proto uint8, n int) (seg []byte, pseudo uint32, off int) {
	seg = make([]byte, n)
	for i := range seg {
		seg[i] = byte(rng.Uint32())
	}
	off = 16
	if proto == ProtoUDP {
		off = 6
		binary.BigEndian.PutUint16(seg[4:], uint16(n))
	}
	if len(src) == 4 {
		pseudo = PseudoSum(src, dst, proto, n)
	} else {
		pseudo = PseudoSum6((*Addr6)(src), (*Addr6)(dst), proto, n)
	}
	binary.BigEndian.PutUint16(seg[off:], Fold(pseudo))
	return seg, pseudo, off
}

// recompute is the slow obvious checksum of seg: field zeroed, pseudo
// plus every byte, complemented; 0 sent as 0xffff for UDP.
func recompute(seg []byte, pseudo uint32, off int, udp bool) uint16 {
	b := append([]byte(nil), seg...)
	b[off], b[off+1] = 0, 0
	var s uint64 = uint64(pseudo)
	for i := 0; i+1 < len(b); i += 2 {
		s += uint64(b[i])<<8 | uint64(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint64(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	c := ^uint16(s)
	if c == 0 && udp {
		c = 0xffff
	}
	return c
}

func TestFinishPartial(t *testing.T) {
	src4, dst4 := []byte{192, 168, 77, 2}, []byte{203, 0, 113, 7}
	src6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
	dst6 := []byte{0x20, 0x01, 0x0d, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name     string
		src, dst []byte
		proto    uint8
		lens     []int
	}{
		{"ipv4/tcp", src4, dst4, ProtoTCP, []int{20, 21, 40, 1460, 1480}},
		{"ipv4/udp", src4, dst4, ProtoUDP, []int{8, 9, 28, 1472}},
		{"ipv6/tcp", src6, dst6, ProtoTCP, []int{20, 33, 1440}},
		{"ipv6/udp", src6, dst6, ProtoUDP, []int{8, 13, 1452}},
	} {
		t.Run(c.name, func(t *testing.T) {
			udp := c.proto == ProtoUDP
			for _, n := range c.lens {
				for i := 0; i < 50; i++ {
					seg, pseudo, off := partialSeg(rng, c.src, c.dst, c.proto, n)
					want := recompute(seg, pseudo, off, udp)
					FinishPartial(seg, off, udp)
					if got := binary.BigEndian.Uint16(seg[off:]); got != want {
						t.Fatalf("len %d: finished %#04x, recomputed %#04x", n, got, want)
					}
					if Fold(Sum(seg, pseudo)) != 0xffff {
						t.Fatalf("len %d: finished segment does not verify", n)
					}
				}
			}
		})
	}
}

// TestFinishPartialZero: a checksum that comes out 0 is sent as 0xffff
// for UDP (0 would mean none) and left 0 for TCP.
func TestFinishPartialZero(t *testing.T) {
	src, dst := []byte{192, 168, 77, 2}, []byte{203, 0, 113, 7}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		proto uint8
		want  uint16
	}{{ProtoUDP, 0xffff}, {ProtoTCP, 0}} {
		seg, pseudo, off := partialSeg(rng, src, dst, c.proto, 32)
		// Choose the last two bytes so that the whole sum is 0xffff.
		seg[30], seg[31] = 0, 0
		field := binary.BigEndian.Uint16(seg[off:])
		seg[off], seg[off+1] = 0, 0
		binary.BigEndian.PutUint16(seg[30:], ^Fold(Sum(seg, pseudo)))
		binary.BigEndian.PutUint16(seg[off:], field)
		if r := recompute(seg, pseudo, off, false); r != 0 {
			t.Fatalf("proto %d: fixture's checksum is %#04x, want 0", c.proto, r)
		}
		FinishPartial(seg, off, c.proto == ProtoUDP)
		if got := binary.BigEndian.Uint16(seg[off:]); got != c.want {
			t.Fatalf("proto %d: checksum %#04x, want %#04x", c.proto, got, c.want)
		}
		if Fold(Sum(seg, pseudo)) != 0xffff {
			t.Fatalf("proto %d: does not verify", c.proto)
		}
	}
}

func TestFinishPartialAllocs(t *testing.T) {
	seg, _, off := partialSeg(rand.New(rand.NewPCG(5, 6)), []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}, ProtoTCP, 1460)
	field := binary.BigEndian.Uint16(seg[off:])
	if a := testing.AllocsPerRun(100, func() {
		binary.BigEndian.PutUint16(seg[off:], field)
		FinishPartial(seg, off, false)
	}); a != 0 {
		t.Fatalf("FinishPartial allocates %v", a)
	}
}
