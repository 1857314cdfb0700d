package afpacket

import (
	"encoding/binary"
	"math/rand/v2"
)

// OwnerTestForwards are forwards over the endpoints GenOwnerFrame draws
// from (distinct LAN endpoints, as the NAT's configuration requires).
func OwnerTestForwards(workers int) []OwnerForward {
	return []OwnerForward{
		{Proto: 6, Addr: 0xc0a80105, Port: 80, Queue: workers - 1},
		{Proto: 17, Addr: 0xc0a80105, Port: 53, Queue: 0},
		{Proto: 17, Addr: 0xc0a80107, Port: 40000, Queue: workers / 2},
		{Proto: 6, Addr: 0xc0a80102, Port: 443, Queue: 1 % workers},
		{Proto: 17, Addr: 0xc0a80109, Port: 65535, Queue: workers - 1},
	}
}

var (
	genAddrs = []uint32{0xc0a80102, 0xc0a80105, 0xc0a80107, 0xc0a80109, 0x0a000001, 0xfffffffe, 0x80000000}
	genPorts = []uint16{0, 53, 80, 443, 1024, 40000, 65535}
)

func genAddr(r *rand.Rand) uint32 {
	if r.IntN(4) == 0 {
		return r.Uint32()
	}
	return genAddrs[r.IntN(len(genAddrs))]
}

func genPort(r *rand.Rand) uint16 {
	if r.IntN(4) == 0 {
		return uint16(r.Uint32())
	}
	return genPorts[r.IntN(len(genPorts))]
}

// genIPv4 returns an IPv4 header (IHL words, options random) with
// protocol proto, source src, destination dst, followed by payload.
// The total length counts it all; the checksum is left zero (the owner
// function does not read it).
func genIPv4(r *rand.Rand, ihl int, proto uint8, src, dst uint32, payload []byte) []byte {
	b := make([]byte, ihl*4+len(payload))
	b[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], uint16(r.Uint32()))
	b[8], b[9] = 64, proto
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], dst)
	for i := 20; i < ihl*4; i++ {
		b[i] = byte(r.Uint32())
	}
	copy(b[ihl*4:], payload)
	return b
}

func genIHL(r *rand.Rand) int {
	if r.IntN(3) == 0 {
		return 5 + r.IntN(11)
	}
	return 5
}

// genL4 returns a transport header of proto from port sport (TCP, UDP) or
// with echo id sport (ICMP echo request), and some payload.
func genL4(r *rand.Rand, proto uint8, sport uint16) []byte {
	n := 8 + r.IntN(24)
	if proto == 6 {
		n += 12
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	switch proto {
	case 6, 17:
		binary.BigEndian.PutUint16(b, sport)
	case 1:
		b[0], b[1] = []byte{8, 0, 3, 11, 12, 4, 5, 13, 14}[r.IntN(9)], 0
		if r.IntN(2) == 0 {
			b[0] = 8
		}
		binary.BigEndian.PutUint16(b[4:], sport)
	}
	return b
}

func genProto(r *rand.Rand) uint8 {
	return []uint8{6, 17, 1, 6, 17, 1, 47, 0, 58}[r.IntN(9)]
}

// genPacket4 returns an IPv4 packet of a random kind: whole packets of
// every protocol, ICMP errors quoting any of those, fragments, and
// headers damaged in every field the owner function reads.
func genPacket4(r *rand.Rand) []byte {
	proto := genProto(r)
	src, dst := genAddr(r), genAddr(r)
	var l4 []byte
	switch k := r.IntN(10); {
	case k < 6:
		l4 = genL4(r, proto, genPort(r))
	case k < 9: // an ICMP error quoting a packet sent to src
		iproto := genProto(r)
		inner := genIPv4(r, genIHL(r), iproto, genAddr(r), src, genL4(r, iproto, genPort(r)))
		if r.IntN(4) == 0 {
			inner = inner[:r.IntN(len(inner)+1)]
		}
		if r.IntN(8) == 0 && len(inner) > 0 {
			inner[0] = byte(r.Uint32())
		}
		l4 = append([]byte{[]byte{3, 11, 12, 4, 5}[r.IntN(5)], 0, 0, 0, 0, 0, 0, 0}, inner...)
		proto = 1
	default:
		l4 = make([]byte, r.IntN(12))
		for i := range l4 {
			l4[i] = byte(r.Uint32())
		}
	}
	ip := genIPv4(r, genIHL(r), proto, src, dst, l4)
	switch r.IntN(12) {
	case 0: // first fragment
		ip[6] |= 0x20
	case 1: // later fragment
		binary.BigEndian.PutUint16(ip[6:], uint16(1+r.IntN(0x1fff))|uint16(r.IntN(2))<<13)
	case 2: // total length shorter (truncating the transport header) or longer
		binary.BigEndian.PutUint16(ip[2:], uint16(r.IntN(len(ip)+8)))
	case 3: // padding after the datagram
		ip = append(ip, make([]byte, r.IntN(40))...)
	case 4: // version or IHL damaged
		ip[0] = byte(r.Uint32())
	case 5: // DF or reserved bit
		ip[6] |= []byte{0x40, 0x80}[r.IntN(2)]
	}
	return ip
}

func genPacket6(r *rand.Rand) []byte {
	b := make([]byte, 40+r.IntN(64))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0x60 | b[0]&0xf
	if r.IntN(3) == 0 { // shared prefixes, as on a LAN
		copy(b[8:16], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1})
		copy(b[24:32], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 2})
	}
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	switch r.IntN(8) {
	case 0:
		b[0] = byte(r.Uint32())
	case 1:
		binary.BigEndian.PutUint16(b[4:], uint16(r.Uint32()))
	case 2:
		b = b[:r.IntN(40)]
	}
	return b
}

// GenOwnerFrame returns an Ethernet frame of a random kind for the owner
// function: IPv4 (genPacket4), IPv6, short and random network headers,
// and other Ethernet types. Its source MAC is 02:af:af:00:00:01.
func GenOwnerFrame(r *rand.Rand) []byte {
	var et uint16
	var l3 []byte
	switch k := r.IntN(20); {
	case k < 13:
		et, l3 = etherIPv4, genPacket4(r)
	case k < 17:
		et, l3 = etherIPv6, genPacket6(r)
	case k < 18: // random bytes as IPv4, short ones too
		et, l3 = etherIPv4, make([]byte, r.IntN(48))
		for i := range l3 {
			l3[i] = byte(r.Uint32())
		}
		if len(l3) > 0 && r.IntN(2) == 0 {
			l3[0] = 0x45
		}
	default:
		et, l3 = []uint16{0x0806, 0x8100, 0x88b5, 0x8864}[r.IntN(4)], genPacket4(r)
	}
	f := make([]byte, 14+len(l3))
	copy(f, []byte{0x02, 0, 0, 0, 0, 0xbb, 0x02, 0xaf, 0xaf, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:], et)
	copy(f[14:], l3)
	return f
}
