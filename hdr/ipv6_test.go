package hdr

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestICMP6ChecksumMatchesGopacket: an echo request checksummed here is
// what gopacket computes for the same message and addresses.
func TestICMP6ChecksumMatchesGopacket(t *testing.T) {
	src := netip.MustParseAddr("2001:db8::1").As16()
	dst := netip.MustParseAddr("fe80::2").As16()
	ip := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolICMPv6, HopLimit: 64, SrcIP: src[:], DstIP: dst[:]}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(ICMP6EchoRequest, 0)}
	if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	payload := gopacket.Payload([]byte{0, 1, 0, 2, 'p', 'p', 'p'})
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true, FixLengths: true}, ip, ic, payload); err != nil {
		t.Fatal(err)
	}
	pkt := IPv6(buf.Bytes())
	if !pkt.IsValid() || pkt.NextHeader() != ProtoICMP6 || pkt.HopLimit() != 64 || pkt.Src() != src || pkt.Dst() != dst {
		t.Fatalf("view of %x wrong", buf.Bytes())
	}
	msg := append([]byte(nil), pkt.Payload()...)
	want := [2]byte(msg[2:4])
	if !ICMP6ChecksumOK(msg, &src, &dst) {
		t.Fatal("gopacket's checksum does not verify")
	}
	ICMP6Checksum(msg, &src, &dst)
	if [2]byte(msg[2:4]) != want {
		t.Fatalf("checksum %x, gopacket %x", msg[2:4], want)
	}
	msg[9] ^= 1
	if ICMP6ChecksumOK(msg, &src, &dst) {
		t.Fatal("a changed message still verifies")
	}
}

func TestIPv6Helpers(t *testing.T) {
	p := func(s string) Addr6 { return netip.MustParseAddr(s).As16() }
	pre := p("2001:db8:1:2::")
	for _, c := range []struct {
		a    string
		bits int
		in   bool
	}{
		{"2001:db8:1:2::5", 64, true}, {"2001:db8:1:3::5", 64, false}, {"2001:db8:1:3::5", 48, true},
		{"2001:db9::", 32, false}, {"2001:db8:1:2::", 128, true}, {"2001:db8:1:2::1", 128, false},
		{"2001:db8:1:2::1", 127, true}, {"2001:db8:1:2::2", 127, false}, {"::", 0, true},
	} {
		a := p(c.a)
		if got := InPrefix6(&a, &pre, c.bits); got != c.in {
			t.Errorf("InPrefix6(%s, /%d) = %v", c.a, c.bits, got)
		}
	}
	mac := [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}
	if ll := LinkLocalEUI64(mac); ll != p("fe80::211:22ff:fe33:4455") || !IsLinkLocal6(&ll) {
		t.Errorf("link-local %x", ll)
	}
	a := p("2001:db8::12:3456")
	if sn := SolicitedNode(&a); sn != p("ff02::1:ff12:3456") || !IsMulticast6(&sn) {
		t.Errorf("solicited-node %x", sn)
	} else if m := MulticastMAC(&sn); m != [6]byte{0x33, 0x33, 0xff, 0x12, 0x34, 0x56} {
		t.Errorf("multicast MAC %x", m)
	}
	h := make(IPv6, IPv6Len+4)
	h.SetHeader(ProtoUDP, 1, 4, &a, &pre)
	h[1] |= 1 << 4 // ECT(1)
	if !h.IsValid() || !h.SetECNCE() || h[1]>>4&3 != 3 || h.TotalLen() != IPv6Len+4 {
		t.Fatalf("header %x", h)
	}
	h[1] &^= 3 << 4
	if h.SetECNCE() {
		t.Fatal("CE set on a not-ECT packet")
	}
	if h.SetPayloadLen(5); h.IsValid() {
		t.Fatal("payload beyond the buffer is valid")
	}
}
