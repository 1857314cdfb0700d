package ndp

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/hdr"
)

// gp is a frame as gopacket decodes it.
type gp struct {
	eth  *layers.Ethernet
	ip   *layers.IPv6
	icmp *layers.ICMPv6
	pkt  gopacket.Packet
}

// decodeGopacket decodes frame with gopacket, checks it decoded without
// error, that gopacket finds the ICMPv6 checksum valid, and that
// gopacket serializing the decoded layers back (lengths and checksum
// recomputed) gives frame byte for byte.
func decodeGopacket(t *testing.T, frame []byte) gp {
	t.Helper()
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if e := p.ErrorLayer(); e != nil {
		t.Fatalf("gopacket: %v\n%v", e.Error(), p)
	}
	g := gp{pkt: p}
	var ok1, ok2, ok3 bool
	g.eth, ok1 = p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	g.ip, ok2 = p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	g.icmp, ok3 = p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("gopacket layers missing: %v", p)
	}
	if err := g.icmp.SetNetworkLayerForChecksum(g.ip); err != nil {
		t.Fatal(err)
	}
	err, res := g.icmp.VerifyChecksum()
	if err != nil || !res.Valid {
		t.Fatalf("gopacket: checksum %#04x not valid (correct %#04x): %v", res.Actual, res.Correct, err)
	}
	if int(g.ip.Length) != len(frame)-headersLen || g.ip.NextHeader != layers.IPProtocolICMPv6 || g.eth.EthernetType != layers.EthernetTypeIPv6 {
		t.Fatalf("gopacket headers: %v", p)
	}

	// Serialize the decoded layers again with gopacket's lengths and
	// checksum. gopacket (v1.7.7) writes ND options by prepending each
	// in turn, so they come out in reverse order: serialize copies of
	// the ND layers with their options reversed.
	rev := func(o layers.ICMPv6Options) layers.ICMPv6Options {
		o = slices.Clone(o)
		slices.Reverse(o)
		return o
	}
	ser := []gopacket.SerializableLayer{g.eth, g.ip, g.icmp}
	for _, l := range p.Layers()[3:] {
		switch l := l.(type) {
		case *layers.ICMPv6NeighborSolicitation:
			c := *l
			c.Options = rev(c.Options)
			ser = append(ser, &c)
		case *layers.ICMPv6NeighborAdvertisement:
			c := *l
			c.Options = rev(c.Options)
			ser = append(ser, &c)
		case *layers.ICMPv6RouterAdvertisement:
			c := *l
			c.Options = rev(c.Options)
			ser = append(ser, &c)
		case gopacket.SerializableLayer:
			ser = append(ser, l)
		default:
			ser = append(ser, gopacket.Payload(l.LayerContents()))
		}
	}
	g.icmp.Checksum, g.ip.Length = 0, 0
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ser...); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), frame) {
		t.Fatalf("gopacket serializes the decoded frame as\n%x\nwe built\n%x", buf.Bytes(), frame)
	}
	return g
}

func ip6(a hdr.Addr6) net.IP { return net.IP(a[:]) }

// checkAddrs compares the Ethernet and IPv6 addresses and hop limit.
func checkAddrs(t *testing.T, g gp, srcMAC, dstMAC [6]byte, src, dst hdr.Addr6, hopLimit uint8) {
	t.Helper()
	if !bytes.Equal(g.eth.SrcMAC, srcMAC[:]) || !bytes.Equal(g.eth.DstMAC, dstMAC[:]) ||
		!g.ip.SrcIP.Equal(ip6(src)) || !g.ip.DstIP.Equal(ip6(dst)) || g.ip.HopLimit != hopLimit {
		t.Fatalf("gopacket sees %v > %v, %v > %v, hop limit %d", g.eth.SrcMAC, g.eth.DstMAC, g.ip.SrcIP, g.ip.DstIP, g.ip.HopLimit)
	}
}

// checkLLOption checks opts is exactly one link-layer option of type typ
// with mac.
func checkLLOption(t *testing.T, opts layers.ICMPv6Options, typ layers.ICMPv6Opt, mac [6]byte) {
	t.Helper()
	if len(opts) != 1 || opts[0].Type != typ || !bytes.Equal(opts[0].Data, mac[:]) {
		t.Fatalf("options %v, want %v %x", opts, typ, mac)
	}
}

func TestGopacketNA(t *testing.T) {
	ns, dadns := mustParse(t, nsFixture), mustParse(t, dadnsFixture)
	for _, c := range []struct {
		name           string
		frame          []byte
		dst            hdr.Addr6
		dstMAC         [6]byte
		target         hdr.Addr6
		r, s           bool
		wantFlagsOnTop uint8
	}{
		{"solicited", AppendNA(nil, &ns, rtrIP, rtrMAC, true), hostIP, hostMAC, rtrIP, true, true, 0xe0},
		{"solicited, not router", AppendNA(nil, &ns, rtrIP, rtrMAC, false), hostIP, hostMAC, rtrIP, false, true, 0x60},
		{"DAD", AppendNA(nil, &dadns, hostIP, rtrMAC, false), AllNodes(), AllNodesMAC(), hostIP, false, false, 0x20},
		{"unsolicited", AppendUnsolicitedNA(nil, rtrLL, rtrMAC, true), AllNodes(), AllNodesMAC(), rtrLL, true, false, 0xa0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := decodeGopacket(t, c.frame)
			checkAddrs(t, g, rtrMAC, c.dstMAC, c.target, c.dst, 255)
			na, ok := g.pkt.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
			if !ok {
				t.Fatalf("no NA layer: %v", g.pkt)
			}
			if g.icmp.TypeCode != layers.CreateICMPv6TypeCode(layers.ICMPv6TypeNeighborAdvertisement, 0) ||
				!na.TargetAddress.Equal(ip6(c.target)) || na.Router() != c.r || na.Solicited() != c.s || !na.Override() ||
				na.Flags != c.wantFlagsOnTop {
				t.Fatalf("gopacket NA %+v", na)
			}
			checkLLOption(t, na.Options, layers.ICMPv6OptTargetAddress, rtrMAC)
		})
	}
}

func TestGopacketNS(t *testing.T) {
	for _, c := range []struct {
		name string
		src  hdr.Addr6
	}{{"resolve", rtrIP}, {"resolve from link-local", rtrLL}, {"DAD", hdr.Addr6{}}} {
		t.Run(c.name, func(t *testing.T) {
			g := decodeGopacket(t, AppendNS(nil, c.src, hostIP, rtrMAC))
			checkAddrs(t, g, rtrMAC, [6]byte{0x33, 0x33, 0xff, 0, 1, 0}, c.src, addr("ff02::1:ff00:100"), 255)
			ns, ok := g.pkt.Layer(layers.LayerTypeICMPv6NeighborSolicitation).(*layers.ICMPv6NeighborSolicitation)
			if !ok || !ns.TargetAddress.Equal(ip6(hostIP)) {
				t.Fatalf("gopacket NS %v", g.pkt)
			}
			if c.src == (hdr.Addr6{}) {
				if len(ns.Options) != 0 {
					t.Fatalf("DAD NS with options %v", ns.Options)
				}
				return
			}
			checkLLOption(t, ns.Options, layers.ICMPv6OptSourceAddress, rtrMAC)
		})
	}
}

func TestGopacketEchoReply(t *testing.T) {
	for _, data := range []string{"", "x", "pppfwd!", string(bytes.Repeat([]byte{0xa5}, 1000))} {
		// The request, host to router, built as a reply from the host
		// to the router and relabelled.
		req := AppendEchoReply(nil, &Message{SrcMAC: rtrMAC, Src: rtrIP, EchoID: 0xbeef, EchoSeq: 0x0102,
			Body: append(make([]byte, 8), data...)}, hostIP, hostMAC)
		req[headersLen] = hdr.ICMP6EchoRequest
		m := mustParse(t, fixup(req))
		g := decodeGopacket(t, AppendEchoReply(nil, &m, rtrIP, rtrMAC))
		checkAddrs(t, g, rtrMAC, hostMAC, rtrIP, hostIP, 64)
		e, ok := g.pkt.Layer(layers.LayerTypeICMPv6Echo).(*layers.ICMPv6Echo)
		if !ok || g.icmp.TypeCode.Type() != layers.ICMPv6TypeEchoReply || e.Identifier != 0xbeef || e.SeqNumber != 0x0102 ||
			!bytes.Equal(e.Payload, []byte(data)) {
			t.Fatalf("gopacket echo %v", g.pkt)
		}
	}
}

func TestGopacketRA(t *testing.T) {
	many := make([]hdr.Addr6, 130) // two RDNSS options
	for i := range many {
		many[i] = addr("2001:db8:53::")
		many[i][15] = byte(i)
	}
	full := testRA()
	bare := RA{SrcMAC: rtrMAC, Src: rtrLL, Dst: hostLL, DstMAC: hostMAC, Managed: true, ReachableTime: 30 * time.Second,
		RetransTimer: 1500 * time.Millisecond, RDNSS: many, RDNSSLifetime: Infinity}
	for _, c := range []struct {
		name string
		ra   *RA
	}{{"full", &full}, {"unicast, M, many RDNSS, no MTU or prefixes", &bare}} {
		t.Run(c.name, func(t *testing.T) {
			ra := c.ra
			g := decodeGopacket(t, AppendRA(nil, ra))
			checkAddrs(t, g, ra.SrcMAC, ra.DstMAC, ra.Src, ra.Dst, 255)
			l, ok := g.pkt.Layer(layers.LayerTypeICMPv6RouterAdvertisement).(*layers.ICMPv6RouterAdvertisement)
			if !ok {
				t.Fatalf("no RA layer: %v", g.pkt)
			}
			if l.HopLimit != ra.CurHopLimit || l.ManagedAddressConfig() != ra.Managed || l.OtherConfig() != ra.Other ||
				time.Duration(l.RouterLifetime)*time.Second != ra.RouterLifetime ||
				time.Duration(l.ReachableTime)*time.Millisecond != ra.ReachableTime ||
				time.Duration(l.RetransTimer)*time.Millisecond != ra.RetransTimer {
				t.Fatalf("gopacket RA header %+v", l)
			}
			var prefixes []PrefixInfo
			var rdnss []hdr.Addr6
			var mtu uint32
			lt := func(b []byte) time.Duration { return lifetimeOf(binary.BigEndian.Uint32(b)) }
			for i, o := range l.Options {
				switch o.Type {
				case layers.ICMPv6OptSourceAddress:
					if i != 0 || !bytes.Equal(o.Data, ra.SrcMAC[:]) {
						t.Fatalf("source LL option %d: %x", i, o.Data)
					}
				case layers.ICMPv6OptMTU:
					mtu = binary.BigEndian.Uint32(o.Data[2:])
				case layers.ICMPv6OptPrefixInfo:
					prefixes = append(prefixes, PrefixInfo{
						Prefix: hdr.Addr6(o.Data[14:30]), Bits: o.Data[0], OnLink: o.Data[1]&0x80 != 0, Autonomous: o.Data[1]&0x40 != 0,
						Valid: lt(o.Data[2:]), Preferred: lt(o.Data[6:]),
					})
				case layers.ICMPv6OptRecursiveDNSServer:
					if lt(o.Data[2:]) != ra.RDNSSLifetime {
						t.Fatalf("RDNSS lifetime %v", lt(o.Data[2:]))
					}
					for a := o.Data[6:]; len(a) > 0; a = a[16:] {
						rdnss = append(rdnss, hdr.Addr6(a))
					}
				default:
					t.Fatalf("unexpected option %v", o)
				}
			}
			if mtu != ra.MTU || len(prefixes) != len(ra.Prefixes) || len(rdnss) != len(ra.RDNSS) {
				t.Fatalf("gopacket options: MTU %d, prefixes %v, RDNSS %v", mtu, prefixes, rdnss)
			}
			for i := range prefixes {
				if prefixes[i] != ra.Prefixes[i] {
					t.Fatalf("prefix %d: gopacket %+v, want %+v", i, prefixes[i], ra.Prefixes[i])
				}
			}
			for i := range rdnss {
				if rdnss[i] != ra.RDNSS[i] {
					t.Fatalf("RDNSS %d: %x", i, rdnss[i])
				}
			}
		})
	}
}

// TestParseGopacketBuilt: frames gopacket builds parse here to the same
// fields.
func TestParseGopacketBuilt(t *testing.T) {
	build := func(src, dst hdr.Addr6, dstMAC [6]byte, typ uint8, nd gopacket.SerializableLayer) []byte {
		eth := &layers.Ethernet{SrcMAC: hostMAC[:], DstMAC: dstMAC[:], EthernetType: layers.EthernetTypeIPv6}
		ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: 255, SrcIP: ip6(src), DstIP: ip6(dst)}
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, ic, nd); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	sn := hdr.SolicitedNode(&rtrIP)
	m := mustParse(t, build(hostIP, sn, hdr.MulticastMAC(&sn), layers.ICMPv6TypeNeighborSolicitation, &layers.ICMPv6NeighborSolicitation{
		TargetAddress: ip6(rtrIP),
		Options:       layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: hostMAC[:]}},
	}))
	if m.Type != hdr.ICMP6NeighborSol || m.Target != rtrIP || !m.HasSourceLL || m.SourceLL != hostMAC || m.Src != hostIP || m.Dst != sn {
		t.Fatalf("gopacket NS parsed as %+v", m)
	}
	m = mustParse(t, build(hostIP, rtrIP, rtrMAC, layers.ICMPv6TypeNeighborAdvertisement, &layers.ICMPv6NeighborAdvertisement{
		Flags: 0x40, TargetAddress: ip6(hostIP),
		Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: hostMAC[:]}},
	}))
	if m.Type != hdr.ICMP6NeighborAdv || m.Target != hostIP || m.Router || !m.Solicited || m.Override || m.TargetLL != hostMAC {
		t.Fatalf("gopacket NA parsed as %+v", m)
	}
	m = mustParse(t, build(hostLL, AllRouters(), AllRoutersMAC(), layers.ICMPv6TypeRouterSolicitation, &layers.ICMPv6RouterSolicitation{
		Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: hostMAC[:]}},
	}))
	if m.Type != hdr.ICMP6RouterSol || m.SourceLL != hostMAC {
		t.Fatalf("gopacket RS parsed as %+v", m)
	}
}
