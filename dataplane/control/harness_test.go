package control

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/pppfwd/pppfwd/dataplane"
	"github.com/pppfwd/pppfwd/hdr"
	"github.com/pppfwd/pppfwd/nic"
)

// The test network: the router's LAN 192.168.1.0/24 and 2001:db8:0:1::/64,
// one host on it, the session 198.51.100.7 to the AC, a remote server.
var (
	routerMAC  = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	gatewayMAC = [6]byte{0x02, 0, 0, 0, 0, 0x03} // Config.HostGateway
	hostMAC    = [6]byte{0x02, 0, 0, 0, 0, 0x10}
	wanMAC     = [6]byte{0x02, 0, 0, 0, 0, 0x20}
	acMAC      = [6]byte{0x02, 0, 0, 0, 0, 0x30}
	routerIP   = ip4(192, 168, 1, 1)
	lanNet     = ip4(192, 168, 1, 0)
	hostIP     = ip4(192, 168, 1, 2)
	pubIP      = ip4(198, 51, 100, 7)
	peerIP     = ip4(198, 51, 100, 1)
	remoteIP   = ip4(203, 0, 113, 9)
	lan6Prefix = netip.MustParseAddr("2001:db8:0:1::").As16()
	host6IP    = netip.MustParseAddr("2001:db8:0:1::10").As16()
	remote6IP  = netip.MustParseAddr("2001:db8:ffff::9").As16()
	routerLL6  = netip.MustParseAddr("fe80::ff:fe00:1").As16() // EUI-64 of routerMAC
)

func ip4(a, b, c, d byte) uint32 { return binary.BigEndian.Uint32([]byte{a, b, c, d}) }

func netIP(a uint32) net.IP { return binary.BigEndian.AppendUint32(nil, a) }

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

// testSession is the session to the AC (IPv4; IPv6 too with ipv6).
func testSession(ipv6 ...bool) *hdr.Session {
	return &hdr.Session{ID: 0x1234, LocalMAC: wanMAC, PeerMAC: acMAC, LocalAddr: pubIP, PeerAddr: peerIP,
		MTU: 1492, Gen: 1, IPv6: len(ipv6) > 0 && ipv6[0]}
}

// memEngine returns a one-worker engine over lan and wan (not started).
func memEngine(tb testing.TB, lan, wan nic.Port) *dataplane.Engine {
	tb.Helper()
	e, err := dataplane.New(dataplane.Config{Workers: 1, LAN: lan, WAN: wan, RouterMAC: routerMAC,
		RouterAddr: routerIP, LANNet: lanNet, LANBits: 24})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// startWith starts e and runs each of runs on a goroutine of its own; the
// test's cleanup cancels them, waits for them and stops e.
func startWith(t *testing.T, e *dataplane.Engine, runs ...func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	e.Start()
	for _, run := range runs {
		wg.Go(func() { _ = run(ctx) })
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pkt is an IPv4 packet: UDP or ICMP echo (icmpType, icmpID).
type pkt struct {
	src, dst     uint32
	sport, dport uint16
	proto        layers.IPProtocol
	ttl          uint8
	payload      int
	icmpType     uint8
	icmpID       uint16
}

// pkt6 is an IPv6 packet: UDP or ICMPv6 (echoType, echo request if 0;
// echoID).
type pkt6 struct {
	src, dst     hdr.Addr6
	sport, dport uint16
	proto        layers.IPProtocol
	payload      int
	echoType     uint8
	echoID       uint16
}

// transport returns the layer over ip for proto and the payload after it.
func transport(tb testing.TB, ip gopacket.NetworkLayer, proto layers.IPProtocol, sport, dport uint16, icmp gopacket.SerializableLayer, pl []byte) []gopacket.SerializableLayer {
	switch proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
		if err := u.SetNetworkLayerForChecksum(ip); err != nil {
			tb.Fatal(err)
		}
		return []gopacket.SerializableLayer{ip.(gopacket.SerializableLayer), u, gopacket.Payload(pl)}
	case layers.IPProtocolICMPv4, layers.IPProtocolICMPv6:
		return []gopacket.SerializableLayer{ip.(gopacket.SerializableLayer), icmp, gopacket.Payload(pl)}
	}
	tb.Fatalf("proto %v", proto)
	return nil
}

func (p pkt) layers(tb testing.TB) []gopacket.SerializableLayer {
	ip := &layers.IPv4{Version: 4, TTL: p.ttl, Protocol: p.proto, SrcIP: netIP(p.src), DstIP: netIP(p.dst), Id: 7}
	if ip.TTL == 0 {
		ip.TTL = 64
	}
	ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.icmpType, 0), Id: p.icmpID, Seq: 1}
	return transport(tb, ip, p.proto, p.sport, p.dport, ic, make([]byte, p.payload))
}

func (p pkt6) layers(tb testing.TB) []gopacket.SerializableLayer {
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: p.proto, SrcIP: p.src[:], DstIP: p.dst[:]}
	typ := p.echoType
	if typ == 0 {
		typ = hdr.ICMP6EchoRequest
	}
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	pl := make([]byte, p.payload)
	if p.proto == layers.IPProtocolICMPv6 {
		if err := ic.SetNetworkLayerForChecksum(ip); err != nil {
			tb.Fatal(err)
		}
		pl = append([]byte{byte(p.echoID >> 8), byte(p.echoID), 0, 1}, pl...)
	}
	return transport(tb, ip, p.proto, p.sport, p.dport, ic, pl)
}

func serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// fromHost puts ls in an Ethernet frame from the LAN host to the router.
func fromHost(tb testing.TB, et layers.EthernetType, ls []gopacket.SerializableLayer) []byte {
	eth := &layers.Ethernet{SrcMAC: hostMAC[:], DstMAC: routerMAC[:], EthernetType: et}
	return serialize(tb, append([]gopacket.SerializableLayer{eth}, ls...)...)
}

func lanFrame(tb testing.TB, p pkt) []byte {
	return fromHost(tb, layers.EthernetTypeIPv4, p.layers(tb))
}

func lanFrame6(tb testing.TB, p pkt6) []byte {
	return fromHost(tb, layers.EthernetTypeIPv6, p.layers(tb))
}

// fromAC wraps an IP packet in a PPPoE session frame from the AC.
func fromAC(tb testing.TB, ipb []byte) []byte {
	f := nic.NewFrame()
	if !f.SetData(ipb) || !testSession().Encap(f) {
		tb.Fatal("encap")
	}
	b := append([]byte(nil), f.Data()...)
	hdr.Ethernet(b).SetAddrs(wanMAC, acMAC) // Encap wrote the uplink's
	return b
}

func wanFrame(tb testing.TB, p pkt) []byte { return fromAC(tb, serialize(tb, p.layers(tb)...)) }

func wanFrame6(tb testing.TB, p pkt6) []byte { return fromAC(tb, serialize(tb, p.layers(tb)...)) }

// l4ChecksumOK reports whether the transport checksum over pl (with the
// pseudo-header sum s, 0 for ICMPv4) is right.
func l4ChecksumOK(pl []byte, s uint32) bool { return hdr.Fold(hdr.Sum(pl, s)) == 0xffff }

// decodeIPv4 checks every checksum of an IPv4 packet and decodes it.
func decodeIPv4(t testing.TB, b []byte) gopacket.Packet {
	t.Helper()
	ip := hdr.IPv4(b)
	if !ip.IsValid() || !ip.HeaderChecksumOK() {
		t.Fatalf("invalid IPv4 or header checksum %x", b)
	}
	pl := ip.Payload()
	ok := true
	switch ip.Protocol() {
	case hdr.ProtoTCP, hdr.ProtoUDP:
		ok = ip.Protocol() == hdr.ProtoUDP && hdr.UDP(pl).Checksum() == 0 || // none
			l4ChecksumOK(pl, hdr.PseudoSum(b[12:16], b[16:20], ip.Protocol(), len(pl)))
	case hdr.ProtoICMP:
		ok = l4ChecksumOK(pl, 0)
	}
	if !ok {
		t.Fatalf("bad checksum (proto %d)", ip.Protocol())
	}
	return gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.Default)
}

// decodeIPv6 checks the transport checksum of an IPv6 packet and decodes
// it.
func decodeIPv6(t testing.TB, b []byte) gopacket.Packet {
	t.Helper()
	ip := hdr.IPv6(b)
	if !ip.IsValid() || ip.TotalLen() != len(b) {
		t.Fatalf("invalid IPv6 %x", b)
	}
	src, dst := ip.Src(), ip.Dst()
	if !l4ChecksumOK(ip.Payload(), hdr.PseudoSum6(&src, &dst, ip.NextHeader(), ip.PayloadLen())) {
		t.Fatalf("bad checksum (next header %d)", ip.NextHeader())
	}
	return gopacket.NewPacket(b, layers.LayerTypeIPv6, gopacket.Default)
}

// wan6Payload checks an uplink frame is PPPoE from us to the AC carrying
// PPP IPv6 and returns the IPv6 packet.
func wan6Payload(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(b) < 22 || be16(b[12:]) != hdr.EtherTypePPPoESess || be16(b[18:]) != uint16(len(b)-20) || be16(b[20:]) != hdr.PPPIPv6 {
		t.Fatalf("not PPPoE/PPP IPv6: %x", b)
	}
	if [6]byte(b[0:6]) != acMAC || [6]byte(b[6:12]) != wanMAC || be16(b[16:]) != testSession().ID {
		t.Fatalf("framing %x", b[:22])
	}
	return b[22:]
}
