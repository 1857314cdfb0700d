package hdr

import (
	"encoding/binary"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A TCP SYN, 192.168.1.2:4001 -> 203.0.113.9:80, MSS 1460 (tshark:
// "Internet Protocol Version 4, Src: 192.168.1.2, Dst: 203.0.113.9;
// Transmission Control Protocol, Src Port: 4001, Dst Port: 80, Seq: 0,
// Len: 0; Options: (4 bytes), Maximum segment size").
var synFixture = []byte{
	0x45, 0x00, 0x00, 0x2c, 0x00, 0x07, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, // ver/ihl .. proto, checksum 0
	0xc0, 0xa8, 0x01, 0x02, 0xcb, 0x00, 0x71, 0x09, // src, dst
	0x0f, 0xa1, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // ports, seq, ack
	0x60, 0x02, 0x03, 0xe8, 0x00, 0x00, 0x00, 0x00, // offset 6, SYN, window 1000, checksum 0, urg
	0x02, 0x04, 0x05, 0xb4, // MSS 1460
}

func fixChecksums(b []byte) {
	ip := IPv4(b)
	ip.ComputeChecksum()
	pl := b[ip.HeaderLen():ip.TotalLen()]
	switch ip.Protocol() {
	case ProtoTCP:
		pl[16], pl[17] = 0, 0
		TCP(pl).SetChecksum(Checksum(pl, PseudoSum(b[12:16], b[16:20], ProtoTCP, len(pl))))
	case ProtoUDP:
		pl[6], pl[7] = 0, 0
		UDP(pl).SetChecksum(nonZero(Checksum(pl, PseudoSum(b[12:16], b[16:20], ProtoUDP, len(pl)))))
	}
}

func l4OK(b []byte) bool {
	ip := IPv4(b)
	pl := b[ip.HeaderLen():ip.TotalLen()]
	return Fold(Sum(pl, PseudoSum(b[12:16], b[16:20], ip.Protocol(), len(pl)))) == 0xffff
}

func TestFixtureAgainstGopacket(t *testing.T) {
	b := append([]byte(nil), synFixture...)
	fixChecksums(b)
	p := gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.Default)
	ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	tcp := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	v := IPv4(b)
	if !v.IsValid() || !v.HeaderChecksumOK() || v.Src() != binary.BigEndian.Uint32(ip.SrcIP) || v.TTL() != ip.TTL ||
		!v.DF() || v.IsFragment() || v.Protocol() != uint8(ip.Protocol) {
		t.Fatal("IPv4 view disagrees with gopacket")
	}
	tc := TCP(b[20:])
	if !tc.IsValid() || tc.SrcPort() != uint16(tcp.SrcPort) || tc.DstPort() != uint16(tcp.DstPort) || tc.HeaderLen() != int(tcp.DataOffset)*4 || tc.Flags()&TCPSyn == 0 {
		t.Fatal("TCP view disagrees with gopacket")
	}
	if !tc.ClampMSS(1452) || binary.BigEndian.Uint16(b[42:]) != 1452 || !l4OK(b) {
		t.Fatal("MSS clamp")
	}
	if tc.ClampMSS(1460) {
		t.Fatal("clamp raised the MSS")
	}
}

func TestIncrementalChecksums(t *testing.T) {
	b := append([]byte(nil), synFixture...)
	fixChecksums(b)
	ip := IPv4(b)
	ip.DecTTL()
	if !ip.HeaderChecksumOK() || ip.TTL() != 63 {
		t.Fatal("DecTTL")
	}
	old := ip.Src()
	ip.SetSrc(0x0a000001)
	TCP(b[20:]).UpdateAddr(old, 0x0a000001)
	TCP(b[20:]).SetSrcPort(55555)
	if !ip.HeaderChecksumOK() || !l4OK(b) {
		t.Fatal("address/port rewrite broke a checksum")
	}
	b[1] = 0x02 // ECT(0)
	fixChecksums(b)
	if !ip.SetECNCE() || b[1]&3 != 3 || !ip.HeaderChecksumOK() {
		t.Fatal("ECN CE")
	}
}

// FuzzRewrite: any rewrite through the views keeps every checksum valid,
// for any packet the views accept, and never panics on arbitrary bytes.
func FuzzRewrite(f *testing.F) {
	f.Add(append([]byte(nil), synFixture...), uint32(0x0a000001), uint16(1234), uint16(1400))
	udp := []byte{0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 53, 0, 53, 0, 8, 0, 0}
	f.Add(udp, uint32(7), uint16(0), uint16(536))
	f.Fuzz(func(t *testing.T, b []byte, addr uint32, port, mss uint16) {
		ip := IPv4(b)
		if !ip.IsValid() {
			return
		}
		b = b[:ip.TotalLen()]
		ip = IPv4(b)
		pl := b[ip.HeaderLen():]
		switch ip.Protocol() {
		case ProtoTCP:
			if !TCP(pl).IsValid() {
				return
			}
		case ProtoUDP:
			if !UDP(pl).IsValid() || UDP(pl).Length() != len(pl) {
				return
			}
		default:
			ip.ComputeChecksum()
			ip.DecTTL()
			if !ip.HeaderChecksumOK() {
				t.Fatal("DecTTL broke the header checksum")
			}
			return
		}
		fixChecksums(b)
		old := ip.Src()
		ip.SetSrc(addr)
		ip.DecTTL()
		if ip.Protocol() == ProtoTCP {
			tc := TCP(pl)
			tc.UpdateAddr(old, addr)
			tc.SetDstPort(port)
			tc.ClampMSS(mss)
		} else {
			u := UDP(pl)
			u.UpdateAddr(old, addr)
			u.SetSrcPort(port)
		}
		if !ip.HeaderChecksumOK() {
			t.Fatal("IPv4 header checksum broken")
		}
		if !l4OK(b) {
			t.Fatalf("L4 checksum broken: %x", b)
		}
	})
}

// FuzzViews: IsValid never panics and accessors stay in bounds when it
// says yes; the IPv4 view agrees with gopacket on what it accepts.
func FuzzViews(f *testing.F) {
	f.Add(append([]byte(nil), synFixture...))
	f.Add([]byte{0x11, 0, 0x12, 0x34, 0, 2, 0, 0x21})
	f.Fuzz(func(t *testing.T, b []byte) {
		if ip := IPv4(b); ip.IsValid() {
			_ = ip.Payload()
			_ = ip.HeaderChecksumOK()
			p := gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.DecodeOptions{NoCopy: true})
			g, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			if g != nil && p.ErrorLayer() == nil && (g.IHL*4 != uint8(ip.HeaderLen()) || int(g.Length) != ip.TotalLen() || g.TTL != ip.TTL()) {
				t.Fatalf("view and gopacket disagree: %v", p)
			}
		}
		if tc := TCP(b); tc.IsValid() {
			_ = tc.ClampMSS(536)
		}
		if u := UDP(b); u.IsValid() {
			_ = u.Length()
		}
		if p := PPPoE(b); p.IsValid() && p.Length() >= 2 {
			_ = p.PPPProto()
		}
		if ic := ICMP(b); ic.IsValid() {
			_ = ic.ID()
		}
	})
}

func TestUpdate16MatchesRecompute(t *testing.T) {
	b := []byte{0x12, 0x34, 0xab, 0xcd, 0x00, 0x01}
	sum := Checksum(b, 0)
	binary.BigEndian.PutUint16(b[2:], 0xffff)
	if Update16(sum, 0xabcd, 0xffff) != Checksum(b, 0) {
		t.Fatal("Update16")
	}
}

func BenchmarkChecksum20(b *testing.B) {
	buf := append([]byte(nil), synFixture[:20]...)
	for i := 0; i < b.N; i++ {
		IPv4(buf).HeaderChecksumOK()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
}

func TestFoldMatchesLoop(t *testing.T) {
	loop := func(s uint32) uint16 {
		for s > 0xffff {
			s = (s >> 16) + (s & 0xffff)
		}
		return uint16(s)
	}
	for _, s := range []uint32{0, 1, 0xffff, 0x10000, 0x1fffe, 0x1ffff, 0xfffeffff, 0xffff0000, 0xffffffff} {
		if Fold(s) != loop(s) {
			t.Fatalf("Fold(%#x) = %#x, want %#x", s, Fold(s), loop(s))
		}
	}
	for s := uint32(1); s != 0 && s < 0xfff00000; s += 0x10001 {
		if Fold(s) != loop(s) {
			t.Fatalf("Fold(%#x)", s)
		}
	}
}

func TestARPReplyInPlace(t *testing.T) {
	asker := [6]byte{2, 0, 0, 0, 0, 9}
	req := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(req, gopacket.SerializeOptions{},
		&layers.Ethernet{SrcMAC: asker[:], DstMAC: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: layers.ARPRequest, SourceHwAddress: asker[:], SourceProtAddress: []byte{192, 168, 1, 2},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{192, 168, 1, 1}}); err != nil {
		t.Fatal(err)
	}
	mac := [6]byte{2, 0, 0, 0, 0, 1}
	r := ARPReplyInPlace(append([]byte(nil), req.Bytes()...), mac, 0xc0a80101)
	p := gopacket.NewPacket(r, layers.LayerTypeEthernet, gopacket.Default)
	eth := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	arp, _ := p.Layer(layers.LayerTypeARP).(*layers.ARP)
	if arp == nil || arp.Operation != layers.ARPReply || [6]byte(eth.DstMAC) != asker || [6]byte(eth.SrcMAC) != mac ||
		[6]byte(arp.SourceHwAddress) != mac || binary.BigEndian.Uint32(arp.SourceProtAddress) != 0xc0a80101 ||
		[6]byte(arp.DstHwAddress) != asker || binary.BigEndian.Uint32(arp.DstProtAddress) != 0xc0a80102 {
		t.Fatalf("reply %v", p)
	}
}
