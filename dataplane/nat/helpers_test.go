package nat

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/pppfwd/pppfwd/hdr"
)

func ip4(a, b, c, d byte) uint32 { return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d) }

func netIP(a uint32) net.IP {
	return net.IPv4(byte(a>>24), byte(a>>16), byte(a>>8), byte(a)).To4()
}

func ipU32(ip net.IP) uint32 { return binary.BigEndian.Uint32(ip.To4()) }

// tuple describes a packet the tests send or expect.
type tuple struct {
	proto uint8
	src   uint32
	sport uint16 // echo id for ICMP echo
	dst   uint32
	dport uint16
	flags uint8 // TCP flags
	icmp  uint8 // ICMP type (echo request by default for proto ICMP)
}

func serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// build serializes tu with gopacket (checksums computed).
func build(tb testing.TB, tu tuple) []byte {
	tb.Helper()
	ip := &layers.IPv4{Version: 4, TTL: 64, Id: 0x1234, SrcIP: netIP(tu.src), DstIP: netIP(tu.dst), Protocol: layers.IPProtocol(tu.proto)}
	payload := gopacket.Payload([]byte("pppfwd-nat"))
	switch tu.proto {
	case hdr.ProtoTCP:
		tc := &layers.TCP{SrcPort: layers.TCPPort(tu.sport), DstPort: layers.TCPPort(tu.dport), Seq: 1000, Window: 65535,
			FIN: tu.flags&hdr.TCPFin != 0, SYN: tu.flags&hdr.TCPSyn != 0, RST: tu.flags&hdr.TCPRst != 0,
			PSH: tu.flags&hdr.TCPPsh != 0, ACK: tu.flags&hdr.TCPAck != 0}
		if tc.ACK {
			tc.Ack = 77
		}
		if err := tc.SetNetworkLayerForChecksum(ip); err != nil {
			tb.Fatal(err)
		}
		return serialize(tb, ip, tc, payload)
	case hdr.ProtoUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(tu.sport), DstPort: layers.UDPPort(tu.dport)}
		if err := u.SetNetworkLayerForChecksum(ip); err != nil {
			tb.Fatal(err)
		}
		return serialize(tb, ip, u, payload)
	case hdr.ProtoICMP:
		ty := tu.icmp
		ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(ty, 0), Id: tu.sport, Seq: 7}
		return serialize(tb, ip, ic, payload)
	}
	tb.Fatalf("build: proto %d", tu.proto)
	return nil
}

// buildICMPError wraps the datagram orig into an ICMP error from src to dst.
func buildICMPError(tb testing.TB, src, dst uint32, typ, code uint8, orig []byte) []byte {
	tb.Helper()
	ip := &layers.IPv4{Version: 4, TTL: 64, SrcIP: netIP(src), DstIP: netIP(dst), Protocol: layers.IPProtocolICMPv4}
	ic := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(typ, code)}
	return serialize(tb, ip, ic, gopacket.Payload(orig))
}

// decoded is what gopacket sees in a packet.
type decoded struct {
	tuple
	inner *decoded // ICMP error: the embedded datagram
}

// decode parses b with gopacket, verifying every checksum, and returns
// its tuple. ICMP errors also decode (and verify) the embedded datagram
// when it is complete.
func decode(tb testing.TB, b []byte) decoded {
	tb.Helper()
	p := gopacket.NewPacket(b, layers.LayerTypeIPv4, gopacket.Default)
	ipl, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if ipl == nil {
		tb.Fatalf("decode: no IPv4 layer: %v", p.ErrorLayer())
	}
	// Application payload decode errors (our test payload on port 53,
	// ...) do not matter; the IP and transport layers must be there.
	switch tl := p.TransportLayer().(type) {
	case *layers.TCP:
		_ = tl.SetNetworkLayerForChecksum(ipl)
	case *layers.UDP:
		_ = tl.SetNetworkLayerForChecksum(ipl)
	default:
		if p.Layer(layers.LayerTypeICMPv4) == nil {
			tb.Fatalf("decode: no transport layer: %v", p.ErrorLayer())
		}
	}
	if err, bad := p.VerifyChecksums(); err != nil || len(bad) > 0 {
		tb.Fatalf("checksums: err %v mismatches %+v", err, bad)
	}
	var d decoded
	ip := ipl
	d.src, d.dst, d.proto = ipU32(ip.SrcIP), ipU32(ip.DstIP), uint8(ip.Protocol)
	switch l := p.TransportLayer().(type) {
	case *layers.TCP:
		d.sport, d.dport = uint16(l.SrcPort), uint16(l.DstPort)
		for _, f := range []struct {
			on  bool
			bit uint8
		}{{l.FIN, hdr.TCPFin}, {l.SYN, hdr.TCPSyn}, {l.RST, hdr.TCPRst}, {l.PSH, hdr.TCPPsh}, {l.ACK, hdr.TCPAck}} {
			if f.on {
				d.flags |= f.bit
			}
		}
	case *layers.UDP:
		d.sport, d.dport = uint16(l.SrcPort), uint16(l.DstPort)
	}
	if l := p.Layer(layers.LayerTypeICMPv4); l != nil {
		ic := l.(*layers.ICMPv4)
		d.icmp = ic.TypeCode.Type()
		switch d.icmp {
		case hdr.ICMPEcho, hdr.ICMPEchoReply:
			d.sport = ic.Id
		case hdr.ICMPDestUnreach, hdr.ICMPTimeExceeded, hdr.ICMPParamProblem:
			in := decode(tb, ic.Payload)
			d.inner = &in
		}
	}
	return d
}

// mustVerdict fails unless got == want.
func mustVerdict(tb testing.TB, got, want Verdict, tab *Table) {
	tb.Helper()
	if got != want {
		tb.Fatalf("verdict %v, want %v (stats %+v)", got, want, tab.Stats())
	}
}

const sec = int64(1e9)

var (
	pubA   = ip4(203, 0, 113, 7)
	pubB   = ip4(198, 51, 100, 9)
	lanNet = ip4(192, 168, 5, 0)
	hostA  = ip4(192, 168, 5, 10)
	hostB  = ip4(192, 168, 5, 20)
	hostC  = ip4(192, 168, 5, 30)
	srv1   = ip4(8, 8, 8, 8)
	srv2   = ip4(9, 9, 9, 9)
)

func baseConfig() Config {
	return Config{PublicAddr: pubA, LANAddr: lanNet, LANBits: 24, Ports: Range{Lo: 1024, Hi: 65535}, Capacity: 1024, HashSeed: 42}
}

func newTable(tb testing.TB, cfg Config) *Table {
	tb.Helper()
	tab, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return tab
}
