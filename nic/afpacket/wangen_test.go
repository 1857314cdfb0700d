package afpacket

import (
	"encoding/binary"
	"math/rand/v2"
)

// WANTestPorts are Ports entries over the ports GenWANFrame draws from.
func WANTestPorts(workers int) []WANPort {
	return []WANPort{{Port: 80, Queue: workers - 1}, {Port: 40000, Queue: workers / 2}, {Port: 65535, Queue: 1 % workers}}
}

// genWANIPv4 returns a downlink IPv4 packet of a random kind: replies to
// ports and echo ids, ICMP errors quoting an uplink packet, fragments,
// options, other protocols, and headers damaged in every field the WAN
// function reads.
func genWANIPv4(r *rand.Rand) []byte {
	proto := genProto(r)
	src, dst := genAddr(r), genAddr(r)
	var l4 []byte
	switch k := r.IntN(10); {
	case k < 6:
		l4 = genL4(r, proto, genPort(r))
		switch proto {
		case 6, 17: // the steered port is the destination
			binary.BigEndian.PutUint16(l4[2:], genPort(r))
		case 1:
			if r.IntN(2) == 0 {
				l4[0] = 0 // echo reply
			}
		}
	case k < 9: // an ICMP error quoting a packet dst sent
		iproto := genProto(r)
		inner := genIPv4(r, genIHL(r), iproto, dst, genAddr(r), genL4(r, iproto, genPort(r)))
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
	ihl := 5
	if r.IntN(8) == 0 {
		ihl = genIHL(r)
	}
	ip := genIPv4(r, ihl, proto, src, dst, l4)
	switch r.IntN(12) {
	case 0: // first fragment
		ip[6] |= 0x20
	case 1: // later fragment
		binary.BigEndian.PutUint16(ip[6:], uint16(1+r.IntN(0x1fff))|uint16(r.IntN(2))<<13)
	case 2: // total length wrong (the function reads the frame's length)
		binary.BigEndian.PutUint16(ip[2:], uint16(r.IntN(len(ip)+8)))
	case 3: // padding after the datagram
		ip = append(ip, make([]byte, r.IntN(40))...)
	case 4: // version or IHL damaged
		ip[0] = byte(r.Uint32())
	case 5: // DF or reserved bit
		ip[6] |= []byte{0x40, 0x80}[r.IntN(2)]
	case 6: // cut short
		ip = ip[:r.IntN(len(ip)+1)]
	}
	return ip
}

// genWANIPv6 returns an IPv6 packet of a random kind: transport
// protocols, extension headers, ICMPv6 informational and error
// messages, and damaged or short headers.
func genWANIPv6(r *rand.Rand) []byte {
	b := genPacket6(r)
	if len(b) >= 40 {
		b[6] = []byte{6, 17, 58, 58, 0, 43, 44, 60, 59, 17, 6}[r.IntN(11)]
		if len(b) > 40 && b[6] == 58 {
			b[40] = []byte{1, 3, 128, 129, 135, 2}[r.IntN(6)]
		}
	}
	return b
}

// GenWANFrame returns a WAN Ethernet frame of a random kind for the WAN
// function: PPPoE session frames (some with an 802.1Q tag) carrying
// IPv4, IPv6, PPP control and damaged PPPoE headers; PPPoE discovery;
// other Ethernet types. Its source MAC is 02:af:af:00:00:01.
func GenWANFrame(r *rand.Rand) []byte {
	var payload []byte
	proto := uint16(pppIPv4)
	switch k := r.IntN(20); {
	case k < 12:
		payload = genWANIPv4(r)
	case k < 16:
		proto, payload = pppIPv6, genWANIPv6(r)
	case k < 18: // PPP control
		proto, payload = []uint16{0xc021, 0x8021, 0x8057, 0xc023, 0xc223}[r.IntN(5)], make([]byte, 4+r.IntN(20))
	default: // random bytes as IPv4
		payload = make([]byte, r.IntN(48))
		for i := range payload {
			payload[i] = byte(r.Uint32())
		}
		if len(payload) > 0 && r.IntN(2) == 0 {
			payload[0] = 0x45
		}
	}
	pppoe := make([]byte, 8, 8+len(payload))
	pppoe[0], pppoe[1] = 0x11, 0
	binary.BigEndian.PutUint16(pppoe[2:], uint16(r.Uint32()))
	binary.BigEndian.PutUint16(pppoe[4:], uint16(2+len(payload)))
	binary.BigEndian.PutUint16(pppoe[6:], proto)
	pppoe = append(pppoe, payload...)
	et := uint16(etherPPPoESes)
	switch r.IntN(24) {
	case 0:
		pppoe[0] = byte(r.Uint32()) // version/type
	case 1:
		pppoe[1] = byte(r.Uint32()) // code
	case 2:
		pppoe = pppoe[:r.IntN(9)] // short
	case 3:
		et = 0x8863 // discovery
	case 4:
		et = []uint16{0x0800, 0x86dd, 0x0806, 0x88cc}[r.IntN(4)]
	}
	f := []byte{0x02, 0, 0, 0, 0, 0xbb, 0x02, 0xaf, 0xaf, 0, 0, 0x01}
	if r.IntN(4) == 0 {
		f = append(f, 0x81, 0, byte(r.IntN(16)), byte(r.Uint32()))
	}
	f = binary.BigEndian.AppendUint16(f, et)
	return append(f, pppoe...)
}
