package dataplane

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/nat"
	"github.com/pppfwd/pppfwd/hdr"
)

// Raw packet builders for the ingress table: extension headers, odd TCP
// flags and ICMP quotes are easier written out than layered.

const (
	igFIN = 0x01
	igSYN = 0x02
	igRST = 0x04
	igACK = 0x10

	igESP = 50
	igAH  = 51
	// IPv6 extension headers (RFC 8200 4).
	igHopByHop = 0
	igRouting  = 43
	igFragment = 44
	igDestOpts = 60
	igNoNext   = 59
)

// igTCP is a 20-byte TCP header (checksum left 0) and n payload bytes.
func igTCP(sport, dport uint16, flags uint8, n int) []byte {
	b := make([]byte, 20+n)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], 1000)
	if flags&igACK != 0 {
		binary.BigEndian.PutUint32(b[8:], 2000)
	}
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	return b
}

// igUDP is a UDP header (checksum left 0) and n payload bytes.
func igUDP(sport, dport uint16, n int) []byte {
	b := make([]byte, 8+n)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+n))
	return b
}

// igICMP is an ICMP or ICMPv6 message: type, code, 4 bytes of rest of
// header, and body (checksum left 0).
func igICMP(typ, code uint8, rest uint32, body []byte) []byte {
	b := make([]byte, 8, 8+len(body))
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint32(b[4:], rest)
	return append(b, body...)
}

func igBE32(a uint32) []byte { return binary.BigEndian.AppendUint32(nil, a) }

// igSum4 fills in the TCP, UDP or ICMP checksum of l4 (the whole
// transport segment) sent from src to dst, and returns l4.
func igSum4(src, dst uint32, proto uint8, l4 []byte) []byte {
	switch proto {
	case hdr.ProtoTCP:
		binary.BigEndian.PutUint16(l4[16:], hdr.Checksum(l4, hdr.PseudoSum(igBE32(src), igBE32(dst), proto, len(l4))))
	case hdr.ProtoUDP:
		c := hdr.Checksum(l4, hdr.PseudoSum(igBE32(src), igBE32(dst), proto, len(l4)))
		if c == 0 {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(l4[6:], c)
	case hdr.ProtoICMP:
		binary.BigEndian.PutUint16(l4[2:], hdr.Checksum(l4, 0))
	}
	return l4
}

// igSum6 is igSum4 for IPv6 (ICMPv6 includes the pseudo header).
func igSum6(src, dst hdr.Addr6, proto uint8, l4 []byte) []byte {
	off := map[uint8]int{hdr.ProtoTCP: 16, hdr.ProtoUDP: 6, hdr.ProtoICMP6: 2}[proto]
	if off == 0 {
		return l4
	}
	c := hdr.Checksum(l4, hdr.PseudoSum6(&src, &dst, proto, len(l4)))
	if c == 0 && proto == hdr.ProtoUDP {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(l4[off:], c)
	return l4
}

// igIPv4 is an IPv4 header (no options, TTL 64, id 7) in front of l4.
func igIPv4(src, dst uint32, proto uint8, l4 []byte) []byte {
	b := make([]byte, 20, 20+len(l4))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(20+len(l4)))
	binary.BigEndian.PutUint16(b[4:], 7)
	b[8], b[9] = 64, proto
	binary.BigEndian.PutUint32(b[12:], src)
	binary.BigEndian.PutUint32(b[16:], dst)
	hdr.IPv4(b).ComputeChecksum()
	return append(b, l4...)
}

// igExt is an IPv6 extension header; its first byte (next header) is
// filled in by igIPv6.
type igExt struct {
	typ uint8
	b   []byte
}

func igHBH() igExt { return igExt{igHopByHop, []byte{0, 0, 1, 4, 0, 0, 0, 0}} } // PadN
func igDst() igExt { return igExt{igDestOpts, []byte{0, 0, 1, 4, 0, 0, 0, 0}} }

// igRH0 is a routing header of type 0 with segments left 0 (so a
// router that does not drop it passes on to the next header).
func igRH0(via hdr.Addr6) igExt {
	return igExt{igRouting, append([]byte{0, 2, 0, 0, 0, 0, 0, 0}, via[:]...)}
}

// igFrag is a fragment header: offset in 8-byte units, M flag, id.
func igFrag(off uint16, more bool, id uint32) igExt {
	b := make([]byte, 8)
	v := off << 3
	if more {
		v |= 1
	}
	binary.BigEndian.PutUint16(b[2:], v)
	binary.BigEndian.PutUint32(b[4:], id)
	return igExt{igFragment, b}
}

// igIPv6 is an IPv6 header (hop limit 64), the extension headers exts
// chained in order, then upper-layer proto with bytes l4.
func igIPv6(src, dst hdr.Addr6, exts []igExt, proto uint8, l4 []byte) []byte {
	b := make([]byte, hdr.IPv6Len)
	next := proto
	if len(exts) > 0 {
		next = exts[0].typ
	}
	n := len(l4)
	for _, e := range exts {
		n += len(e.b)
	}
	hdr.IPv6(b).SetHeader(next, 64, n, &src, &dst)
	for i, e := range exts {
		h := append([]byte(nil), e.b...)
		h[0] = proto
		if i+1 < len(exts) {
			h[0] = exts[i+1].typ
		}
		b = append(b, h...)
	}
	return append(b, l4...)
}

// The ingress test's LAN, forwards and remotes.
var (
	igFwdHost  = ip4(192, 168, 1, 3)
	igFwdMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x03}
	igRemote2  = ip4(203, 0, 113, 66) // never contacted by the LAN
	igRemote26 = netip.MustParseAddr("2001:db8:ffff::66").As16()
)

const (
	igFwdPort  = 8080 // forwarded to igFwdHost:80
	igUnmapped = 40001
)

// igIPsecAllow6 is what the router opens by default for IPsec (RFC 6092
// REC-22..24; dataplane/router's igIPsecAllow6): ESP, AH, IKE.
var igIPsecAllow6 = []Allow6{{Proto: igESP}, {Proto: igAH}, {Proto: hdr.ProtoUDP, Port: 500}}

// igRig is one engine of TestIngressTable with its live flows.
type igRig struct {
	*rig
	name  string
	adf   bool // NAT filtering address-dependent (else the default, EIF)
	ipsec bool // the IPv6 firewall opens IPsec as the router's default does
	// The live flows' external ports (IPv4) and their LAN ports.
	udp4, tcp4 uint16
	live       []igLive
}

// igLive is a reply of a live flow: the WAN frame and what must reach
// the LAN for it.
type igLive struct {
	name   string
	frames [][]byte // one, or a datagram's fragments
	mac    [6]byte
	v6     bool
	dst    []byte // destination address on the LAN
	dport  uint16 // checked on unfragmented frames
}

func newIgRig(t *testing.T, workers int, adf, ipsec bool) *igRig {
	x := &igRig{adf: adf, ipsec: ipsec, name: fmt.Sprintf("%dw", workers)}
	x.rig = rig6(t, workers, func(c *Config) {
		if adf {
			c.NAT.Filtering = nat.AddressDependent
		}
		c.NAT.Forwards = []nat.Forward{{Proto: hdr.ProtoTCP, ExtPort: igFwdPort, LANAddr: igFwdHost, LANPort: 80}}
		if ipsec {
			c.Allow6 = igIPsecAllow6
		}
		// Smaller than the floods below: a table that kept state for
		// what a flood brings would have to evict to make room.
		c.Firewall6Capacity = 4096
	})
	x.e.SetNeighbor(igFwdHost, igFwdMAC)
	if adf {
		x.name += "/adf"
	} else {
		x.name += "/eif"
	}
	if ipsec {
		x.name += "/ipsec"
	}
	return x
}

// settle polls until nothing moves (frames handed between workers take
// more than one round).
func (x *igRig) settle() {
	for i := 0; i < 32; i++ {
		if x.e.poll()+x.e.poll() == 0 {
			return
		}
	}
}

// uplink sends one LAN frame and requires it on the WAN; it returns the
// IP packet that left.
func (x *igRig) uplink(t *testing.T, frame []byte) []byte {
	t.Helper()
	x.lan.Inject(0, frame)
	x.settle()
	out := x.drainWAN()
	if len(out) != 1 {
		t.Fatalf("%d uplink frames, want 1; drops %v", len(out), x.e.Totals().DropMap())
	}
	return out[0][22:]
}

func igLAN4(mac [6]byte, ipb []byte) []byte {
	return append(append(append(append([]byte(nil), routerMAC[:]...), mac[:]...), 0x08, 0x00), ipb...)
}

func igLAN6(ipb []byte) []byte {
	return append(append(append(append([]byte(nil), routerMAC[:]...), hostMAC[:]...), 0x86, 0xdd), ipb...)
}

// open starts the live flows from the LAN (IPv4 UDP and TCP through the
// NAT, IPv6 UDP and TCP through the firewall), opens the port forward
// from the Internet, and records the replies that must keep arriving.
func (x *igRig) open(t *testing.T) {
	t.Helper()
	up := x.uplink(t, igLAN4(hostMAC, igIPv4(hostIP, remoteIP, hdr.ProtoUDP, igSum4(hostIP, remoteIP, hdr.ProtoUDP, igUDP(5000, 53, 20)))))
	x.udp4 = be16(up[20:])
	up = x.uplink(t, igLAN4(hostMAC, igIPv4(hostIP, remoteIP, hdr.ProtoTCP, igSum4(hostIP, remoteIP, hdr.ProtoTCP, igTCP(5001, 443, igSYN, 0)))))
	x.tcp4 = be16(up[20:])
	if x.udp4 == igUnmapped || x.tcp4 == igUnmapped || x.udp4 == igFwdPort || x.tcp4 == igFwdPort {
		t.Fatalf("external ports %d, %d collide with the test's", x.udp4, x.tcp4)
	}
	x.uplink(t, igLAN6(igIPv6(host6IP, remote6IP, nil, hdr.ProtoUDP, igSum6(host6IP, remote6IP, hdr.ProtoUDP, igUDP(6000, 53, 20)))))
	x.uplink(t, igLAN6(igIPv6(host6IP, remote6IP, nil, hdr.ProtoTCP, igSum6(host6IP, remote6IP, hdr.ProtoTCP, igTCP(6001, 443, igSYN, 0)))))
	w4 := func(src uint32, proto uint8, l4 []byte) []byte {
		return wanIPFrame(t, igIPv4(src, pubIP, proto, igSum4(src, pubIP, proto, l4)))
	}
	w6 := func(proto uint8, l4 []byte) []byte {
		return wanIPFrame(t, igIPv6(remote6IP, host6IP, nil, proto, igSum6(remote6IP, host6IP, proto, l4)))
	}
	// A large answer in fragments (IPv4: the fragment table; IPv6: the
	// firewall lets in fragments from a remote the host sent UDP to).
	big4 := igIPv4(remoteIP, pubIP, hdr.ProtoUDP, igSum4(remoteIP, pubIP, hdr.ProtoUDP, igUDP(53, x.udp4, 100)))
	big6 := igSum6(remote6IP, host6IP, hdr.ProtoUDP, igUDP(53, 6000, 100))
	var frags4 [][]byte
	for _, fr := range fragmentIPv4(t, big4, 64) {
		frags4 = append(frags4, wanIPFrame(t, fr))
	}
	frags6 := [][]byte{
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(0, true, 0x600d)}, hdr.ProtoUDP, big6[:64])),
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(8, false, 0x600d)}, hdr.ProtoUDP, big6[64:])),
	}
	one := func(b []byte) [][]byte { return [][]byte{b} }
	x.live = []igLive{
		{"ipv4 udp reply", one(w4(remoteIP, hdr.ProtoUDP, igUDP(53, x.udp4, 30))), hostMAC, false, igBE32(hostIP), 5000},
		{"ipv4 udp reply in fragments", frags4, hostMAC, false, igBE32(hostIP), 5000},
		{"ipv4 tcp reply", one(w4(remoteIP, hdr.ProtoTCP, igTCP(443, x.tcp4, igSYN|igACK, 0))), hostMAC, false, igBE32(hostIP), 5001},
		{"ipv4 port forward", one(w4(igRemote2, hdr.ProtoTCP, igTCP(40000, igFwdPort, igSYN, 0))), igFwdMAC, false, igBE32(igFwdHost), 80},
		{"ipv6 udp reply", one(w6(hdr.ProtoUDP, igUDP(53, 6000, 30))), hostMAC, true, host6IP[:], 6000},
		{"ipv6 udp reply in fragments", frags6, hostMAC, true, host6IP[:], 6000},
		{"ipv6 tcp reply", one(w6(hdr.ProtoTCP, igTCP(443, 6001, igSYN|igACK, 0))), hostMAC, true, host6IP[:], 6001},
	}
	x.checkLive(t, "at the start")
	// The forwarded host answers: it leaves from the forward's port.
	up = x.uplink(t, igLAN4(igFwdMAC, igIPv4(igFwdHost, igRemote2, hdr.ProtoTCP, igSum4(igFwdHost, igRemote2, hdr.ProtoTCP, igTCP(80, 40000, igSYN|igACK, 0)))))
	if hdr.IPv4(up).Src() != pubIP || be16(up[20:]) != igFwdPort {
		t.Fatalf("the forward's answer left as %x:%d", hdr.IPv4(up).Src(), be16(up[20:]))
	}
}

// checkLive sends every live reply and requires each on the LAN, to its
// host, checksums intact.
func (x *igRig) checkLive(t *testing.T, when string) {
	t.Helper()
	for _, l := range x.live {
		for _, fr := range l.frames {
			x.wan.Inject(0, fr)
		}
		x.settle()
		got := x.drainLAN()
		x.drainWAN()
		if len(got) != len(l.frames) {
			t.Errorf("%s: %s: %d frames on the LAN, want %d; drops %v", when, l.name, len(got), len(l.frames), x.e.Totals().DropMap())
			continue
		}
		for _, b := range got {
			var dst, l4 []byte
			frag := false
			if l.v6 {
				if frag = hdr.IPv6(b[14:]).NextHeader() == igFragment; !frag {
					decodeIPv6(t, b[14:])
				}
				dst, l4 = b[14+24:14+40], b[14+40:]
			} else {
				if frag = hdr.IPv4(b[14:]).IsFragment(); frag {
					if !hdr.IPv4(b[14:]).HeaderChecksumOK() {
						t.Errorf("%s: %s: bad IPv4 header checksum", when, l.name)
					}
				} else {
					decodeIPv4(t, b[14:])
				}
				dst, l4 = b[14+16:14+20], b[14+20:]
			}
			if [6]byte(b[0:6]) != l.mac || string(dst) != string(l.dst) || !frag && be16(l4[2:]) != l.dport {
				t.Errorf("%s: %s reached %x %x port %d, want %x %x port %d", when, l.name, b[0:6], dst, be16(l4[2:]), l.mac, l.dst, l.dport)
			}
		}
	}
}

// igRow is one class of unsolicited WAN traffic.
type igRow struct {
	name   string
	frames [][]byte
	// want lists the drop reasons the row may get (nil: any reason).
	want []Reason
	// pass is how many of the frames the configuration lets in by
	// policy (IPsec opened); every other frame must be dropped.
	pass int
}

// igResult is what one row got.
type igResult struct {
	name            string
	frames, pass    int
	lan, exc, wanTx int
	drops           Counters
	ok              bool
}

func (x *igRig) rows(t *testing.T) []igRow {
	w4 := func(src uint32, proto uint8, l4 []byte) []byte {
		return wanIPFrame(t, igIPv4(src, pubIP, proto, igSum4(src, pubIP, proto, l4)))
	}
	w6 := func(src hdr.Addr6, exts []igExt, proto uint8, l4 []byte) []byte {
		return wanIPFrame(t, igIPv6(src, host6IP, exts, proto, igSum6(src, host6IP, proto, l4)))
	}
	nat4 := []Reason{DropNAT}
	fw := []Reason{DropFirewall}
	martian := []Reason{DropMartian}
	var rows []igRow
	add := func(name string, want []Reason, frames ...[]byte) {
		rows = append(rows, igRow{name: name, frames: frames, want: want})
	}

	// IPv4, no state.
	add("v4 udp to an unmapped port", nat4, w4(remoteIP, hdr.ProtoUDP, igUDP(53, igUnmapped, 10)))
	add("v4 tcp syn to an unmapped port", nat4, w4(remoteIP, hdr.ProtoTCP, igTCP(443, igUnmapped, igSYN, 0)))
	add("v4 tcp syn to port 22", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(40000, 22, igSYN, 0)))
	add("v4 tcp ack without a flow", nat4, w4(remoteIP, hdr.ProtoTCP, igTCP(443, igUnmapped, igACK, 0)))
	add("v4 tcp rst without a flow", nat4, w4(remoteIP, hdr.ProtoTCP, igTCP(443, igUnmapped, igRST, 0)))
	add("v4 esp", nat4, w4(remoteIP, igESP, make([]byte, 40)))
	add("v4 echo reply, unknown id", nat4, w4(remoteIP, hdr.ProtoICMP, igICMP(hdr.ICMPEchoReply, 0, 0x77770001, nil)))
	add("v4 tcp syn to the mapped udp port", nat4, w4(remoteIP, hdr.ProtoTCP, igTCP(53, x.udp4, igSYN, 0)))
	later := igIPv4(remoteIP, pubIP, hdr.ProtoUDP, make([]byte, 16))
	binary.BigEndian.PutUint16(later[4:], 0x4242) // a datagram whose first fragment never came
	binary.BigEndian.PutUint16(later[6:], 3)      // offset 24 bytes, last
	hdr.IPv4(later).ComputeChecksum()
	add("v4 later fragment without a first", []Reason{DropFragment}, wanIPFrame(t, later))
	// A first fragment to an unmapped port (dropped), then its later one.
	first := igIPv4(remoteIP, pubIP, hdr.ProtoUDP, igSum4(remoteIP, pubIP, hdr.ProtoUDP, igUDP(53, igUnmapped, 40))[:24])
	binary.BigEndian.PutUint16(first[4:], 0x4343)
	binary.BigEndian.PutUint16(first[6:], 0x2000) // offset 0, more fragments
	hdr.IPv4(first).ComputeChecksum()
	add("v4 first fragment to an unmapped port", nat4, wanIPFrame(t, first))
	later2 := append([]byte(nil), later...)
	binary.BigEndian.PutUint16(later2[4:], 0x4343)
	hdr.IPv4(later2).ComputeChecksum()
	add("v4 later fragment of that dropped first fragment", []Reason{DropFragment}, wanIPFrame(t, later2))
	opts := igIPv4(remoteIP, pubIP, hdr.ProtoUDP, nil)
	opts = append(append(opts[:20:20], 7, 7, 4, 0, 0, 0, 0, 1), igSum4(remoteIP, pubIP, hdr.ProtoUDP, igUDP(53, x.udp4, 10))...) // record route
	opts[0] = 0x47
	binary.BigEndian.PutUint16(opts[2:], uint16(len(opts)))
	hdr.IPv4(opts).ComputeChecksum()
	add("v4 ip options to the mapped port", []Reason{DropIPOptions}, wanIPFrame(t, opts))
	if x.adf {
		// With endpoint-independent filtering (the NAT's default, RFC
		// 4787 REQ-8) any remote may reach a mapped port; with
		// address-dependent filtering only the remotes it sent to.
		add("v4 udp to the mapped port, wrong remote (adf)", nat4, w4(igRemote2, hdr.ProtoUDP, igUDP(53, x.udp4, 10)))
		add("v4 tcp syn to the mapped port, wrong remote (adf)", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(443, x.tcp4, igSYN, 0)))
		add("v4 tcp ack to the mapped port, wrong remote (adf)", nat4, w4(igRemote2, hdr.ProtoTCP, igTCP(443, x.tcp4, igACK, 0)))
	}
	// IPv4 spoofed sources, to the mapped UDP port and to the forward.
	spoofs := []struct {
		name string
		a    uint32
	}{
		{"lan host 192.168.1.50", ip4(192, 168, 1, 50)},
		{"the router's lan address", routerIP},
		{"loopback 127.0.0.1", ip4(127, 0, 0, 1)},
		{"this network 0.1.2.3", ip4(0, 1, 2, 3)},
		{"multicast 224.0.0.5", ip4(224, 0, 0, 5)},
		{"reserved 240.0.0.1", ip4(240, 0, 0, 1)},
		{"broadcast 255.255.255.255", 0xffffffff},
		{"the session's own address", pubIP},
	}
	for _, s := range spoofs {
		add("v4 spoofed "+s.name+" to the mapped port", martian, w4(s.a, hdr.ProtoUDP, igUDP(53, x.udp4, 10)))
		add("v4 spoofed "+s.name+" to the forward", martian, w4(s.a, hdr.ProtoTCP, igTCP(40000, igFwdPort, igSYN, 0)))
	}
	// IPv4 ICMP errors quoting packets the LAN never sent.
	quote := func(src, dst uint32, sport, dport uint16) []byte {
		return igIPv4(src, dst, hdr.ProtoUDP, igSum4(src, dst, hdr.ProtoUDP, igUDP(sport, dport, 0)))
	}
	quoteTCP := func(src, dst uint32, sport, dport uint16) []byte {
		return igIPv4(src, dst, hdr.ProtoTCP, igSum4(src, dst, hdr.ProtoTCP, igTCP(sport, dport, igSYN, 0)))[:28]
	}
	add("v4 icmp error quoting an unmapped port", nat4,
		w4(remoteIP, hdr.ProtoICMP, igICMP(hdr.ICMPDestUnreach, 3, 0, quote(pubIP, remoteIP, igUnmapped, 53))))
	add("v4 icmp error quoting the mapped port to another remote", nat4,
		w4(igRemote2, hdr.ProtoICMP, igICMP(hdr.ICMPDestUnreach, 3, 0, quote(pubIP, igRemote2, x.udp4, 53))))
	add("v4 icmp error quoting another source", nat4,
		w4(remoteIP, hdr.ProtoICMP, igICMP(hdr.ICMPDestUnreach, 3, 0, quote(peerIP, remoteIP, x.udp4, 53))))
	add("v4 icmp error quoting the forward to a remote it never answered", nat4,
		w4(ip4(198, 18, 0, 1), hdr.ProtoICMP, igICMP(hdr.ICMPDestUnreach, 1, 0, quoteTCP(pubIP, ip4(198, 18, 0, 1), igFwdPort, 40000))))

	// IPv6, no state (the firewall keys on both addresses and ports).
	add("v6 udp to a closed port", fw, w6(remote6IP, nil, hdr.ProtoUDP, igUDP(53, 9999, 10)))
	add("v6 tcp syn to port 22", fw, w6(remote6IP, nil, hdr.ProtoTCP, igTCP(40000, 22, igSYN, 0)))
	add("v6 tcp ack without a flow", fw, w6(remote6IP, nil, hdr.ProtoTCP, igTCP(40000, 22, igACK, 0)))
	add("v6 udp to the live port, wrong remote", fw, w6(igRemote26, nil, hdr.ProtoUDP, igUDP(53, 6000, 10)))
	add("v6 tcp syn to the live port, wrong remote", fw, w6(igRemote26, nil, hdr.ProtoTCP, igTCP(443, 6001, igSYN, 0)))
	add("v6 echo reply, unknown id", fw, w6(remote6IP, nil, hdr.ProtoICMP6, igICMP(hdr.ICMP6EchoReply, 0, 0x77770001, nil)))
	// IPv6 spoofed sources, to the live UDP port.
	for _, s := range []struct{ name, a string }{
		{"lan prefix", "2001:db8:0:1::20"}, {"the lan host itself", "2001:db8:0:1::10"},
		{"link-local", "fe80::1"}, {"multicast ff02::1", "ff02::1"}, {"multicast ff0e::1", "ff0e::1"},
		{"loopback ::1", "::1"}, {"unspecified ::", "::"},
	} {
		add("v6 spoofed "+s.name, martian, w6(netip.MustParseAddr(s.a).As16(), nil, hdr.ProtoUDP, igUDP(53, 6000, 10)))
	}
	// IPv6 extension headers and fragments: a TCP SYN to port 22 of the
	// LAN host, from the remote it has a live UDP flow with.
	syn22 := func(n int) []byte { return igSum6(remote6IP, host6IP, hdr.ProtoTCP, igTCP(40000, 22, igSYN, n)) }
	add("v6 hop-by-hop, tcp syn :22", nil, w6(remote6IP, []igExt{igHBH()}, hdr.ProtoTCP, syn22(0)))
	add("v6 routing header, tcp syn :22", nil, w6(remote6IP, []igExt{igRH0(host6IP)}, hdr.ProtoTCP, syn22(0)))
	add("v6 destination options, tcp syn :22", nil, w6(remote6IP, []igExt{igDst()}, hdr.ProtoTCP, syn22(0)))
	add("v6 atomic fragment (off 0, M=0), tcp syn :22", nil, w6(remote6IP, []igExt{igFrag(0, false, 0x1001)}, hdr.ProtoTCP, syn22(0)))
	add("v6 first fragment (off 0, M=1), tcp syn :22", nil,
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(0, true, 0x1002)}, hdr.ProtoTCP, syn22(16)[:24])))
	add("v6 later fragment of that dropped first fragment", nil,
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(3, false, 0x1002)}, hdr.ProtoTCP, make([]byte, 16))))
	add("v6 later fragment without a first", nil,
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(3, false, 0x1003)}, hdr.ProtoTCP, make([]byte, 16))))
	add("v6 later fragment at offset 8 bytes (over the tcp flags)", nil,
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igFrag(1, false, 0x1004)}, hdr.ProtoTCP, []byte{0, 0, 0, 0, 0x50, igSYN, 0xff, 0xff})))
	add("v6 chain hbh+dst+rh+frag, tcp syn :22", nil,
		w6(remote6IP, []igExt{igHBH(), igDst(), igRH0(host6IP), igFrag(0, false, 0x1005)}, hdr.ProtoTCP, syn22(0)))
	add("v6 chain dst+dst+dst, tcp syn :22", nil,
		w6(remote6IP, []igExt{igDst(), igDst(), igDst()}, hdr.ProtoTCP, syn22(0)))
	trunc := igDst()
	trunc.b = append([]byte(nil), trunc.b...)
	trunc.b[1] = 10 // claims 88 bytes, 8 are there
	add("v6 truncated chain (hbh, then a destination options header cut short)", nil,
		wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igHBH(), trunc}, hdr.ProtoTCP, nil)))
	add("v6 hop-by-hop with no next header", nil, wanIPFrame(t, igIPv6(remote6IP, host6IP, []igExt{igHBH()}, igNoNext, nil)))
	// IPv6 ICMP errors quoting packets the LAN never sent.
	q6 := func(src, dst hdr.Addr6, sport, dport uint16) []byte {
		return igIPv6(src, dst, nil, hdr.ProtoUDP, igSum6(src, dst, hdr.ProtoUDP, igUDP(sport, dport, 0)))
	}
	icmp6err := func(from hdr.Addr6, typ uint8, quoted []byte) []byte {
		return w6(from, nil, hdr.ProtoICMP6, igICMP(typ, 0, 1280*uint32(igB2U(typ == hdr.ICMP6PacketTooBig)), quoted))
	}
	add("v6 icmp error quoting a flow to another remote", fw, icmp6err(igRemote26, hdr.ICMP6DestUnreach, q6(host6IP, igRemote26, 6000, 53)))
	add("v6 packet too big quoting a port never used", fw, icmp6err(remote6IP, hdr.ICMP6PacketTooBig, q6(host6IP, remote6IP, 7777, 53)))
	add("v6 icmp error quoting another lan host's packet", fw,
		icmp6err(remote6IP, hdr.ICMP6TimeExceeded, q6(netip.MustParseAddr("2001:db8:0:1::20").As16(), remote6IP, 6000, 53)))
	add("v6 icmp error with a truncated quote", fw, icmp6err(remote6IP, hdr.ICMP6DestUnreach, q6(host6IP, igRemote26, 6000, 53)[:30]))

	// Floods that try to evict state: IPsec and UDP to random ports
	// from random sources, IPv4 and IPv6.
	const flood = 20000
	rnd := rand.New(rand.NewPCG(1, 2))
	src4 := func() uint32 {
		for {
			if a := rnd.Uint32(); a != remoteIP && a != igRemote2 {
				return a
			}
		}
	}
	src6 := func() hdr.Addr6 {
		a := netip.MustParseAddr("2001:db8:ff00::").As16() // outside the LAN prefix
		binary.BigEndian.PutUint64(a[8:], rnd.Uint64())
		a[5] = byte(rnd.Uint32())
		return a
	}
	ipsec4 := make([][]byte, flood)
	ipsec6 := make([][]byte, flood)
	pass6 := 0
	for i := range ipsec4 {
		s4, s6 := src4(), src6()
		switch i % 4 {
		case 0:
			ipsec4[i] = w4(s4, igESP, igBE32(rnd.Uint32())) // SPI
			ipsec6[i] = w6(s6, nil, igESP, append(igBE32(rnd.Uint32()), make([]byte, 12)...))
		case 1:
			ipsec4[i] = w4(s4, igAH, make([]byte, 24))
			ipsec6[i] = w6(s6, nil, igAH, []byte{hdr.ProtoUDP, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
		case 2:
			ipsec4[i] = w4(s4, hdr.ProtoUDP, igUDP(500, 500, 28)) // IKE
			ipsec6[i] = w6(s6, nil, hdr.ProtoUDP, igUDP(500, 500, 28))
		case 3:
			ipsec4[i] = w4(s4, hdr.ProtoUDP, igUDP(4500, 4500, 28)) // IKE behind NAT
			ipsec6[i] = w6(s6, nil, hdr.ProtoUDP, igUDP(4500, 4500, 28))
		}
		if x.ipsec && i%4 != 3 {
			pass6++ // RFC 6092 REC-22..24: ESP, AH, IKE let in
		}
	}
	udp4 := make([][]byte, flood)
	udp6 := make([][]byte, flood)
	for i := range udp4 {
		p := uint16(rnd.Uint32())
		for p == x.udp4 || p == 500 || p < 1 {
			p++
		}
		udp4[i] = w4(src4(), hdr.ProtoUDP, igUDP(uint16(rnd.Uint32()), p, 8))
		udp6[i] = w6(src6(), nil, hdr.ProtoUDP, igUDP(uint16(rnd.Uint32()), p, 8))
	}
	rows = append(rows,
		igRow{name: "v4 flood: esp/ah/ike from random sources", frames: ipsec4},
		igRow{name: "v4 flood: udp to random ports", frames: udp4},
		igRow{name: "v6 flood: esp/ah/ike from random sources", frames: ipsec6, pass: pass6},
		igRow{name: "v6 flood: udp to random ports", frames: udp6})
	return rows
}

func igB2U(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// run sends a row's frames from the WAN and counts what left on the LAN,
// went to the control plane, left on the WAN, and was dropped.
func (x *igRig) run(r igRow) igResult {
	res := igResult{name: r.name, frames: len(r.frames), pass: r.pass}
	before := x.e.Totals()
	for i := 0; i < len(r.frames); {
		n := 0
		for ; i < len(r.frames) && n < 256; i, n = i+1, n+1 {
			x.wan.Inject(0, r.frames[i])
		}
		x.settle()
		for q := 0; q < x.lan.Queues(); q++ {
			res.lan += x.lan.Drain(q, func([]byte) {})
		}
		for q := 0; q < x.wan.Queues(); q++ {
			res.wanTx += x.wan.Drain(q, func([]byte) {})
		}
		res.exc += x.e.PollControl(func(Dir, []byte) {})
	}
	after := x.e.Totals()
	for i := range after.Drops {
		res.drops.Drops[i] = after.Drops[i] - before.Drops[i]
	}
	want := map[Reason]bool{}
	for _, w := range r.want {
		want[w] = true
	}
	res.ok = res.lan == r.pass && res.exc == 0 && res.drops.TotalDrops() == uint64(len(r.frames)-r.pass)
	for i, d := range res.drops.Drops {
		if d != 0 && len(want) > 0 && !want[Reason(i)] {
			res.ok = false
		}
	}
	return res
}

func (r igResult) dropString() string {
	m := r.drops.DropMap()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}

// TestIngressTable: nothing unsolicited reaches the LAN. With one and two
// workers, endpoint-independent (the NAT's default) and address-dependent
// NAT filtering, and with the IPv6 firewall closed or opened for IPsec as
// the router opens it, the LAN first gets live flows (IPv4 UDP and TCP
// through the NAT, a port forward, IPv6 UDP and TCP through the
// firewall) whose replies arrive; then every class of unsolicited WAN
// packet, one table row each, must leave nothing on the LAN and nothing
// for the control plane, and be counted as a drop under the row's reason;
// the live flows' replies still pass after each row, floods included.
// IPsec let in by policy (RFC 6092 REC-22..24) is counted as passed, not
// leaked; what matters there is that it evicts no live state.
func TestIngressTable(t *testing.T) {
	for _, workers := range []int{1, 2} {
		for _, cfg := range []struct{ adf, ipsec bool }{{false, false}, {true, true}} {
			x := newIgRig(t, workers, cfg.adf, cfg.ipsec)
			t.Run(x.name, func(t *testing.T) {
				x.open(t)
				var results []igResult
				for _, row := range x.rows(t) {
					res := x.run(row)
					results = append(results, res)
					if !res.ok {
						t.Errorf("%s: %d frames: %d reached the LAN (%d allowed), %d to the control plane, drops %s; want every other frame dropped as %v",
							row.name, res.frames, res.lan, row.pass, res.exc, res.dropString(), row.want)
					}
					x.checkLive(t, "after "+row.name)
				}
				var sb strings.Builder
				fmt.Fprintf(&sb, "%-70s %6s %5s %4s %4s  %s\n", "row ("+x.name+")", "frames", "lan", "exc", "wan", "drops")
				for _, r := range results {
					mark := ""
					if !r.ok {
						mark = "  FAIL"
					}
					fmt.Fprintf(&sb, "%-70s %6d %5d %4d %4d  %s%s\n", r.name, r.frames, r.lan, r.exc, r.wanTx, r.dropString(), mark)
				}
				t.Logf("\n%s", sb.String())
			})
		}
	}
}
